//! `limits replay --distinct N/W`: a limit on distinct values as a row
//! beside the rate limiters, on a real access log's paths (a CSV trace's
//! fourth field): a scraper walking the catalogue is stopped after N
//! pages, a user reloading one page never is, the reverse of what a
//! request rate does.

use crate::common::{limits, write};

/// A user reloading `/p/1` 30 times and a scraper visiting `/p/1` ...
/// `/p/10` once each, a second apart, in one hour; a query never makes a
/// new page.
fn access_log() -> String {
    let mut lines = Vec::new();
    for i in 0..30 {
        lines.push(format!(
            "198.51.100.1 - - [01/Jan/2024:00:00:{:02} +0000] \"GET /p/1?visit={i} HTTP/1.1\" 200 10 \"-\" \"Mozilla\"",
            i
        ));
    }
    for page in 1..=10 {
        lines.push(format!(
            "203.0.113.9 - - [01/Jan/2024:00:01:{:02} +0000] \"GET /p/{page} HTTP/1.1\" 200 10 \"-\" \"bot\"",
            page
        ));
    }
    lines.join("\n") + "\n"
}

/// The first two numbers (allowed, rejected) of the row that starts with
/// `name`.
fn allowed_rejected(out: &str, name: &str) -> (u64, u64) {
    let line = out
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no {name} row:\n{out}"));
    let numbers: Vec<u64> = line[name.len()..]
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

fn replay(trace: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec!["replay", "--limit", "12", "--window", "1h", "--top", "3"];
    args.extend_from_slice(extra);
    args.push(trace.to_str().unwrap());
    let (out, err, code) = limits(&args);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn distinct_pages_stop_the_scraper_and_a_request_rate_the_reloader() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(dir.path(), "access.log", &access_log());
    let out = replay(&log, &["--distinct", "4/h"]);
    // The rate: 12 of the user's 30 reloads, all 10 of the scraper's pages.
    assert_eq!(allowed_rejected(&out, "sliding-log"), (22, 18), "{out}");
    // Four pages each: the user's one page 30 times, the scraper's first four.
    assert_eq!(allowed_rejected(&out, "distinct 4/h"), (34, 6), "{out}");
    assert!(
        out.contains("limited most (distinct 4/h): 203.0.113.9 (6 rejected)"),
        "{out}"
    );
}

#[test]
fn a_csv_trace_gives_its_values_in_a_fourth_field_or_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "0.0,alice,1,a\n1.0,alice,1,b\n2.0,alice,1,a\n3.0,alice,1,c\n";
    let trace = write(dir.path(), "t.csv", csv);
    let out = replay(&trace, &["--distinct", "2/h"]);
    assert_eq!(allowed_rejected(&out, "distinct 2/h"), (3, 1), "{out}");
    let valueless = write(dir.path(), "v.csv", "0.0,alice\n1.0,alice\n");
    let (_, err, code) = limits(&["replay", "--distinct", "2/h", valueless.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("line 1: --distinct needs each request's value"),
        "{err}"
    );
}
