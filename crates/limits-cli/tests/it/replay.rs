//! `limits replay`, run as a real binary on CSV traces and access logs,
//! including every kind of bad input.

use crate::common;

use common::{limits, write};
use limits::{format_seconds, Algorithm, KeyedLimiter, ManualClock, Rule};
use std::time::Duration;

/// The rows `--decisions` should write for `events` (ns, key, cost), from
/// the core's own KeyedLimiter: every field of each Decision, formatted.
fn expected_rows(limiter: &str, rates: &str, events: &[(u64, &str, u64)]) -> Vec<String> {
    let algorithm: Algorithm = limiter.parse().unwrap();
    let rule = Rule::new(algorithm, rates.parse().unwrap());
    let keyed: KeyedLimiter<String, ManualClock> =
        KeyedLimiter::with_clock(rule, ManualClock::new(0));
    events
        .iter()
        .map(|&(t, key, cost)| {
            let d = keyed.check_at(key, t, cost);
            let retry = d
                .retry_after
                .duration()
                .map_or(String::new(), format_seconds);
            format!(
                "{},{key},{cost},{},{},{retry},{},{}",
                format_seconds(Duration::from_nanos(t)),
                d.allowed,
                d.remaining,
                format_seconds(d.reset_after),
                format_seconds(d.refill_after),
            )
        })
        .collect()
}

fn sample_log() -> String {
    format!("{}/tests/data/access.log", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn replay_csv_with_header_costs_and_exact_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let events = [
        (0, "a", 1),
        (1, "a", 2),
        (500_000_000, "a", 1),
        (999_999_999, "a", 1),
        (1_000_000_001, "a", 1),
        (2_000_000_000, "b", 4),
    ];
    let trace = write(
        dir.path(),
        "t.csv",
        "time,key,cost\n0,a\n0.000000001,a,2\n0.5,a\n0.999999999,a\n1.000000001,a\n2,b,4\n",
    );
    let out_csv = dir.path().join("out.csv");
    let (out, err, code) = limits(&[
        "replay",
        "--limiter",
        "sliding-log",
        "--limit",
        "3",
        "--window",
        "1s",
        trace.to_str().unwrap(),
        "--decisions",
        out_csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("replay "), "{out}");
    let rows = std::fs::read_to_string(&out_csv).unwrap();
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(
        rows,
        [
            "time,key,cost,allowed,remaining,retry_after,reset_after,refill_after",
            // back to full and one more free when the entry at 0 leaves, at 1s
            "0,a,1,true,2,0,1,1",
            "0.000000001,a,2,true,0,0,1,0.999999999",
            // full: the entry at 0 leaves the window (t - 1s, t] at t = 1s
            "0.5,a,1,false,0,0.5,0.500000001,0.5",
            "0.999999999,a,1,false,0,0.000000001,0.000000002,0.000000001",
            // at 1.000000001 the entry at 0 is gone and those at 1ns leave now
            "1.000000001,a,1,true,2,0,1,1",
            // cost above the limit: never; the key is untouched, so full
            "2,b,4,false,3,,0,0",
        ]
    );
    assert_eq!(rows[1..], expected_rows("sliding-log", "3/s", &events));
    assert!(
        out.contains("limited most (sliding-log): a (2 rejected), b (1 rejected)"),
        "{out}"
    );
}

#[test]
fn replay_access_log_sample_with_all_limiters() {
    let (out, err, code) = limits(&["replay", "--limiter", "all", "--limit", "5", &sample_log()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(": 68 requests, limit 5 per second"), "{out}");
    let sliding = out.lines().find(|l| l.starts_with("sliding-log")).unwrap();
    let cols: Vec<&str> = sliding.split_whitespace().collect();
    assert_eq!(
        cols[3], "5",
        "the sliding log never lets 6 through in a second: {sliding}"
    );
    assert!(
        out.contains("limited most (sliding-log): 203.0.113.7"),
        "{out}"
    );
    for name in [
        "none",
        "fixed-window",
        "token-bucket",
        "sliding-window",
        "leaky-bucket",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{out}"
        );
    }
}

#[test]
fn replay_access_log_out_of_order_beyond_the_window_names_the_line() {
    // The sample is up to 2 s out of order: fine with the default 5 s window,
    // an error naming the line with a 1 s window.
    let (_, err, code) = limits(&["replay", "--reorder-window", "1s", &sample_log()]);
    assert_ne!(code, 0);
    assert!(err.contains("access.log:"), "{err}");
    assert!(err.contains("more than the reorder window of 1s"), "{err}");
    let (out, _, code) = limits(&[
        "replay",
        "--reorder-window",
        "1s",
        "--skip-bad",
        &sample_log(),
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("skipped "), "{out}");
}

#[test]
fn replay_bad_csv_lines_stop_with_file_and_line_or_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        (
            "0,a\n0.5\n",
            ":2: expected time,key[,cost[,value]], found 1 field",
        ),
        ("0,a\nsoon,a\n", ":2: time \"soon\" is not decimal seconds"),
        (
            "0,a\n0.1,a,0\n",
            ":2: cost \"0\" is not a positive whole number",
        ),
        ("0,a\n0.1,a,x\n", ":2: cost \"x\""),
        ("0,a\n-1,a\n", ":2: time \"-1\""),
        ("0,a\n0.0000000001,a\n", ":2: time"),
        ("0,a\n1,a\n0.5,b\n", ":3: time goes backwards"),
        ("0,a\n1,,1\n", ":2: the key is empty"),
        (
            "0,a\n1,a,1,value,extra\n",
            ":2: expected time,key[,cost[,value]], found 5 fields",
        ),
    ] {
        let trace = write(dir.path(), "bad.csv", text);
        let (_, err, code) = limits(&["replay", trace.to_str().unwrap()]);
        assert_ne!(code, 0, "{text:?}");
        assert!(err.contains(&format!("bad.csv{says}")), "{text:?}: {err}");
        let (out, err, code) = limits(&["replay", "--skip-bad", trace.to_str().unwrap()]);
        assert_eq!(code, 0, "{text:?}: {err}");
        assert!(out.contains("skipped 1 bad line:"), "{text:?}: {out}");
    }
}

#[test]
fn replay_empty_missing_and_garbage_files_get_clear_messages() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.csv", "");
    let (_, err, code) = limits(&["replay", empty.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("empty"), "{err}");
    let header_only = write(dir.path(), "header.csv", "time,key\n");
    let (_, err, code) = limits(&["replay", header_only.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("no events"), "{err}");
    let (_, err, code) = limits(&["replay", "/nonexistent/trace.csv"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("/nonexistent/trace.csv") && err.contains("No such file"),
        "{err}"
    );
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let path = dir.path().join("garbage.bin");
    std::fs::write(&path, garbage).unwrap();
    let (_, err, code) = limits(&["replay", path.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("garbage.bin:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn replay_decisions_take_one_limiter() {
    let (_, err, code) = limits(&[
        "replay",
        "--limiter",
        "all",
        "--decisions",
        "x.csv",
        &sample_log(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--decisions takes one limiter"), "{err}");
}

#[test]
fn replay_decisions_keep_input_order_when_the_log_is_reordered() {
    let dir = tempfile::tempdir().unwrap();
    let out_csv = dir.path().join("out.csv");
    let (_, err, code) = limits(&[
        "replay",
        "--limit",
        "5",
        &sample_log(),
        "--decisions",
        out_csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let rows = std::fs::read_to_string(&out_csv).unwrap();
    let log = std::fs::read_to_string(sample_log()).unwrap();
    assert_eq!(rows.lines().count(), log.lines().count() + 1);
    // Row i is line i: same client, same time.
    for (row, line) in rows.lines().skip(1).zip(log.lines()) {
        let key = row.split(',').nth(1).unwrap();
        assert!(line.starts_with(&format!("{key} ")), "{row} vs {line}");
    }
}

#[test]
fn replay_decisions_carry_reset_and_refill_of_every_limiter() {
    let dir = tempfile::tempdir().unwrap();
    let events = [
        (0, "a", 1),
        (0, "a", 1),
        (250_000_000, "a", 1),
        (250_000_000, "b", 2),
        (400_000_000, "a", 1),
        (1_100_000_000, "a", 1),
        (1_100_000_001, "b", 1),
    ];
    let text: String = events
        .iter()
        .map(|&(t, key, cost)| {
            format!("{},{key},{cost}\n", format_seconds(Duration::from_nanos(t)))
        })
        .collect();
    let trace = write(dir.path(), "t.csv", &text);
    let out_csv = dir.path().join("out.csv");
    for limiter in Algorithm::ALL.map(|a| a.name()) {
        let (_, err, code) = limits(&[
            "replay",
            "--limiter",
            limiter,
            "--limit",
            "2/s",
            trace.to_str().unwrap(),
            "--decisions",
            out_csv.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{limiter}: {err}");
        let rows = std::fs::read_to_string(&out_csv).unwrap();
        let rows: Vec<&str> = rows.lines().skip(1).collect();
        assert_eq!(rows, expected_rows(limiter, "2/s", &events), "{limiter}");
        if limiter == "leaky-bucket" {
            // A queue of 2 draining one per 0.5s: the first request leaves
            // at once, the second at 0.5s, so one place is left; the bucket
            // is full again one period after that departure (1s), and one
            // more place frees at it (0.5s).
            assert_eq!(rows[1], "0,a,1,true,1,0,1,0.5");
        }
    }
}

#[test]
fn replay_reads_standard_input_as_it_reads_a_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let text = "0,a\n0.1,a\n0.2,a\n0.3,b\n";
    let trace = write(dir.path(), "t.csv", text);
    let args = ["replay", "--limiter", "sliding-log", "--limit", "2"];
    let (from_file, err, code) = limits(&[&args[..], &[trace.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{err}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_limits"))
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same summary, but for the trace's name.
    let from_stdin = String::from_utf8_lossy(&out.stdout);
    let name = trace.display().to_string();
    assert_eq!(
        from_stdin.replace(" -", ""),
        from_file.replace(&format!(" {name}"), "")
    );
    assert!(from_stdin.contains("sliding-log"), "{from_stdin}");
}

#[test]
fn replay_names_a_gzipped_trace_and_how_to_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log.gz");
    // A gzip member's header: the magic, then deflate, no flags.
    std::fs::write(
        &path,
        [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 0, 0, 0xff, 0xff],
    )
    .unwrap();
    let (out, err, code) = limits(&["replay", path.to_str().unwrap()]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("gzip") && err.contains("zcat"), "{err}");
}

/// One logged decision costs one entry whatever its cost: a line of cost
/// 6,858,357,388,212 against 9*10^12 per second once made the replayed
/// sliding log allocate 8 bytes per unit (about 55 TB) and abort.
#[test]
fn replay_a_cost_of_trillions_allocated_a_log_entry_per_unit() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(
        dir.path(),
        "huge.csv",
        "1,a,6858357388212\n1.5,a,6858357388212\n2.000000001,a,6858357388212\n",
    );
    let out_csv = dir.path().join("out.csv");
    let started = std::time::Instant::now();
    let (out, err, code) = limits(&[
        "replay",
        "--limiter",
        "sliding-log",
        "--limit",
        "9000000000000",
        "--window",
        "1s",
        trace.to_str().unwrap(),
        "--decisions",
        out_csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(out.starts_with("replay "), "{out}");
    let rows = std::fs::read_to_string(&out_csv).unwrap();
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(
        rows,
        [
            "time,key,cost,allowed,remaining,retry_after,reset_after,refill_after",
            "1,a,6858357388212,true,2141642611788,0,1,1",
            // the first entry's units must leave: at 2s
            "1.5,a,6858357388212,false,2141642611788,0.5,0.5,0.5",
            "2.000000001,a,6858357388212,true,2141642611788,0,1,1",
        ]
    );
    let events = [
        (1_000_000_000, "a", 6_858_357_388_212),
        (1_500_000_000, "a", 6_858_357_388_212),
        (2_000_000_001, "a", 6_858_357_388_212),
    ];
    assert_eq!(
        rows[1..],
        expected_rows("sliding-log", "9000000000000/s", &events)
    );
}

/// `--report`: one page that fetches and runs nothing, well-formed, whose
/// numbers are the text's: each limiter's row, its chart's totals, who it
/// limited most, and the key whose fate differed most between them.
#[test]
fn the_report_is_one_self_contained_page_with_the_texts_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let log = sample_log();
    let args = [
        "replay",
        "--limiter",
        "all",
        "--limit",
        "5",
        &log,
        "--report",
    ];
    let (out, err, code) = limits(&[&args[..], &[page.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("report written to"), "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>\n"), "{html}");
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(&html, options).expect("well-formed");
    for node in doc.descendants().filter(|n| n.is_element()) {
        let name = node.tag_name().name();
        let fetches_or_runs = [
            "script", "link", "img", "iframe", "object", "embed", "image", "use",
        ];
        assert!(!fetches_or_runs.contains(&name), "<{name}>");
        for a in node.attributes() {
            assert!(!a.name().starts_with("on"), "a handler: {}", a.name());
            assert!(!a.value().contains("://"), "{}={}", a.name(), a.value());
            if a.name() == "href" {
                assert!(a.value().starts_with('#'), "a link out: {}", a.value());
            }
        }
    }
    assert!(!html.contains("url("), "CSS that fetches");
    let text = |node: roxmltree::Node| -> String {
        node.descendants()
            .filter(|n| n.is_text())
            .filter_map(|n| n.text())
            .collect()
    };
    let cells = |row: roxmltree::Node| -> Vec<String> {
        row.children()
            .filter(|n| n.is_element())
            .map(text)
            .collect()
    };
    // The table, row for row, and each chart's totals.
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(3)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), limits::Algorithm::ALL.len(), "{out}");
    for row in &rows {
        let limiter = row[0];
        let tr = doc
            .descendants()
            .find(|n| n.attribute("data-limiter") == Some(limiter))
            .unwrap_or_else(|| panic!("no row for {limiter}"));
        assert_eq!(cells(tr), *row);
        let label = format!("{limiter}: ");
        let svg = doc
            .descendants()
            .find(|n| {
                n.attribute("aria-label")
                    .is_some_and(|l| l.starts_with(&label))
            })
            .unwrap_or_else(|| panic!("no chart for {limiter}"));
        let totals = (svg.attribute("data-allowed"), svg.attribute("data-limited"));
        assert_eq!(totals, (Some(row[1]), Some(row[2])), "{limiter}");
    }
    // Who each limiter limited most: the first row after its heading.
    let mut counts = Vec::new();
    for line in out.lines().filter(|l| l.starts_with("limited most (")) {
        let (limiter, said) = line["limited most (".len()..].split_once("): ").unwrap();
        let heading = doc
            .descendants()
            .find(|n| n.tag_name().name() == "h2" && n.attribute("id") == Some(limiter))
            .unwrap();
        let table = heading
            .next_siblings()
            .find(|n| {
                n.tag_name().name() == "table"
                    || n.tag_name().name() == "p" && text(*n).starts_with("Limited")
            })
            .unwrap();
        if said == "nobody" {
            assert_eq!(text(table), "Limited nobody.");
            counts.push("0".to_string());
            continue;
        }
        let first = table
            .descendants()
            .filter(|n| n.tag_name().name() == "tr")
            .nth(1)
            .unwrap();
        let (key, n) = said.split_once(" (").unwrap();
        let n = n.trim_end_matches(" rejected)");
        assert_eq!(
            cells(first)[..2],
            [key.to_string(), n.to_string()],
            "{limiter}"
        );
        counts.push(n.to_string());
    }
    // The one limited client's fate differed: none refused it 0 times, the
    // sliding window 33.
    let fates = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("fates-table"))
        .unwrap();
    let first = fates
        .descendants()
        .filter(|n| n.tag_name().name() == "tr")
        .nth(1)
        .unwrap();
    let mut want = vec!["203.0.113.7".to_string()];
    want.extend(counts);
    want.push("33".to_string());
    assert_eq!(cells(first), want);
}
