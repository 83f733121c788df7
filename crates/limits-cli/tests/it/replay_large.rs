//! `limits replay` on a large generated CSV trace gives, line for line, the
//! decisions of the core's `KeyedLimiter` keyed by `String` run directly on
//! the same events: the fast path (interned keys, a reused record, fields
//! trimmed as slices, the replayed sliding log as its own reference) changes
//! nothing a user can see, nor the summary's counts and most-limited keys.

use crate::common;

use common::replay::{decision_row, keyed};
use common::{limits, write};
use limits::{format_seconds, Algorithm};
use std::collections::HashMap;
use std::time::Duration;

const LINES: u64 = 60_000;
const RATE: &str = "5/s";

/// One generated request: (ns, key as decided, cost).
type Request = (u64, String, u64);

/// The trace's text and its requests. Keys are short, long with a shared
/// 20-byte start (longer than what the interner keeps inline), quoted with
/// a comma, or padded with spaces; times repeat now and then; some lines
/// have a cost; a header, comments and blank lines are mixed in.
fn trace() -> (String, Vec<Request>) {
    let mut text = String::from("time, key, cost\n# generated\n");
    let mut requests = Vec::new();
    let mut state = 7u64;
    let mut t = 0u64;
    for i in 0..LINES {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let r = state >> 33;
        t += [0, 1, 999, 1_000_000, 7_000_001][(r % 5) as usize];
        let n = (r >> 3) % 1500 * ((r >> 13) % 3) / 2; // skewed toward 0
        let (written, key) = match n % 4 {
            0 => (format!("k{n}"), format!("k{n}")),
            1 => (
                format!("a-long-shared-prefix-{n}"),
                format!("a-long-shared-prefix-{n}"),
            ),
            2 => (format!("\"x,{n}\""), format!("x,{n}")),
            _ => (format!("  pad{n} "), format!("pad{n}")),
        };
        let time = format_seconds(Duration::from_nanos(t));
        match i % 7 {
            0 => text.push_str(&format!("{time},{written},{}\n", 1 + r % 3)),
            _ => text.push_str(&format!(" {time} ,{written}\n")),
        }
        requests.push((t, key, if i % 7 == 0 { 1 + r % 3 } else { 1 }));
        if i % 5000 == 4999 {
            text.push_str("\n# a comment\n");
        }
    }
    (text, requests)
}

/// `--decisions` rows as the core decides them, and the counts the summary
/// shows: (allowed, rejected, false allows, false denies, rejected per key).
struct Expected {
    rows: Vec<Vec<String>>,
    counts: [u64; 4],
    rejected: HashMap<String, u64>,
}

fn expected(algorithm: Algorithm, requests: &[Request]) -> Expected {
    let (limiter, exact) = (keyed(algorithm, RATE), keyed(Algorithm::SlidingLog, RATE));
    let mut e = Expected {
        rows: Vec::new(),
        counts: [0; 4],
        rejected: HashMap::new(),
    };
    for (t, key, cost) in requests {
        let d = limiter.check_at(key.as_str(), *t, *cost);
        let reference = exact.check_at(key.as_str(), *t, *cost).allowed;
        let i = if d.allowed { 0 } else { 1 };
        e.counts[i] += 1;
        e.counts[2] += u64::from(d.allowed && !reference);
        e.counts[3] += u64::from(!d.allowed && reference);
        if !d.allowed {
            *e.rejected.entry(key.clone()).or_default() += 1;
        }
        e.rows.push(decision_row(*t, key, *cost, &d));
    }
    e
}

#[test]
fn a_large_trace_replays_to_the_core_limiters_own_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let (text, requests) = trace();
    let path = write(dir.path(), "large.csv", &text);
    // The sliding log is its own reference; the token bucket has one beside it.
    for algorithm in [Algorithm::SlidingLog, Algorithm::TokenBucket] {
        let out_csv = dir.path().join(format!("{algorithm}.csv"));
        let (out, err, code) = limits(&[
            "replay",
            "--limiter",
            algorithm.name(),
            "--limit",
            RATE,
            "--top",
            "4",
            "--decisions",
            out_csv.to_str().unwrap(),
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let want = expected(algorithm, &requests);
        let mut rows = csv::Reader::from_path(&out_csv).unwrap();
        let got: Vec<Vec<String>> = rows
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(got.len(), want.rows.len(), "{algorithm}");
        for (i, (g, w)) in got.iter().zip(&want.rows).enumerate() {
            assert_eq!(g, w, "{algorithm}: event {i}");
        }

        assert!(out.contains(&format!(": {LINES} requests,")), "{out}");
        let row = out
            .lines()
            .find(|l| l.starts_with(algorithm.name()))
            .unwrap_or_else(|| panic!("no {algorithm} row in {out}"));
        let numbers: Vec<u64> = row
            .split_whitespace()
            .skip(1)
            .map(|n| n.parse().unwrap())
            .collect();
        let [allowed, rejected, false_allows, false_denies] = want.counts;
        assert_eq!(
            [numbers[0], numbers[1], numbers[3], numbers[4]],
            [allowed, rejected, false_allows, false_denies],
            "{algorithm}: {row}"
        );
        assert!(rejected > 1000, "{algorithm}: the trace limits someone");

        let mut most: Vec<(&String, &u64)> = want.rejected.iter().collect();
        most.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let names: Vec<String> = most[..4]
            .iter()
            .map(|(k, n)| format!("{k} ({n} rejected)"))
            .collect();
        let line = format!("limited most ({algorithm}): {}", names.join(", "));
        assert!(out.contains(&line), "{out}\nwanted: {line}");
    }
}
