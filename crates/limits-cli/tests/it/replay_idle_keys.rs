//! `limits replay` forgets a key once it is idle in every limiter and tally,
//! and a key that comes back gets a fresh number: none of that may show. On
//! a trace whose keys go idle and come back many times (some exactly when
//! they become idle, some a nanosecond before), with costs, every limiter's
//! `--decisions` rows equal the core's `KeyedLimiter<String>` run directly,
//! and with `--limiter all` every row of the summary (the worst window
//! included) and the most-limited keys are what the requests say.

use crate::common;

use common::replay::{decision_row, keyed};
use common::{limits, write};
use limits::{format_seconds, Algorithm};
use std::collections::HashMap;
use std::time::Duration;

const LINES: u64 = 30_000;
const RATE: &str = "4/s";
const WINDOW: u64 = 1_000_000_000;

/// One generated request: (ns, key, cost).
type Request = (u64, String, u64);

/// 600 keys, each coming in short bursts between long idle gaps: times on a
/// 250 ms grid (the limit's own step, so that keys come back exactly when
/// they are full again) and a nanosecond either side of it.
fn trace() -> (String, Vec<Request>) {
    let mut text = String::from("time,key,cost\n");
    let mut requests = Vec::new();
    let mut state = 11u64;
    let mut t = 0u64;
    for i in 0..LINES {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let r = state >> 33;
        t += [0, 1, 250_000_000, 0, 249_999_999, 0][(r % 6) as usize];
        // A key of the current "era": eras of 2 s, so that most keys are
        // idle for several windows before they come back.
        let era = t / 2_000_000_000;
        let n = (era * 37 + (r >> 5) % 9) % 600;
        let key = if n % 3 == 0 {
            format!("a-long-shared-prefix-{n}")
        } else {
            format!("k{n}")
        };
        let cost = if i % 5 == 0 { 1 + (r >> 20) % 3 } else { 1 };
        let time = format_seconds(Duration::from_nanos(t));
        text.push_str(&format!("{time},{key},{cost}\n"));
        requests.push((t, key, cost));
    }
    (text, requests)
}

/// What the core decides for `algorithm` on `requests`: the `--decisions`
/// rows, [allowed, rejected, worst window, false allows, false denies] and
/// the rejections per key.
fn expected(
    algorithm: Algorithm,
    requests: &[Request],
) -> (Vec<Vec<String>>, [u64; 5], HashMap<String, u64>) {
    let (limiter, exact) = (keyed(algorithm, RATE), keyed(Algorithm::SlidingLog, RATE));
    let mut rows = Vec::new();
    let mut counts = [0; 5];
    let mut rejected = HashMap::new();
    let mut released: HashMap<&str, Vec<(u64, u64)>> = HashMap::new();
    for (t, key, cost) in requests {
        let d = limiter.check_at(key.as_str(), *t, *cost);
        let reference = exact.check_at(key.as_str(), *t, *cost).allowed;
        if d.allowed {
            counts[0] += 1;
            let release = t + u64::try_from(d.delay.as_nanos()).unwrap();
            released.entry(key).or_default().push((release, *cost));
        } else {
            counts[1] += 1;
            *rejected.entry(key.clone()).or_default() += 1;
        }
        counts[3] += u64::from(d.allowed && !reference);
        counts[4] += u64::from(!d.allowed && reference);
        rows.push(decision_row(*t, key, *cost, &d));
    }
    // The worst window, by brute force: the most cost one key had released
    // in any [s, s + W) starting at one of its releases.
    for times in released.values_mut() {
        times.sort();
        for (i, &(s, _)) in times.iter().enumerate() {
            let sum: u64 = times[i..]
                .iter()
                .take_while(|&&(r, _)| r < s + WINDOW)
                .map(|&(_, c)| c)
                .sum();
            counts[2] = counts[2].max(sum);
        }
    }
    (rows, counts, rejected)
}

fn read_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    csv::Reader::from_path(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

#[test]
fn keys_that_go_idle_and_come_back_decide_as_the_core_does() {
    let dir = tempfile::tempdir().unwrap();
    let (text, requests) = trace();
    let path = write(dir.path(), "idle.csv", &text);
    let mut comebacks = 0;
    let mut last: HashMap<&str, u64> = HashMap::new();
    for (t, key, _) in &requests {
        if last.insert(key, *t).is_some_and(|s| s + 2 * WINDOW <= *t) {
            comebacks += 1;
        }
    }
    assert!(comebacks > 2000, "keys come back after idling: {comebacks}");
    for algorithm in Algorithm::ALL {
        let out_csv = dir.path().join(format!("{algorithm}.csv"));
        let (_, err, code) = limits(&[
            "replay",
            "--limiter",
            algorithm.name(),
            "--limit",
            RATE,
            "--decisions",
            out_csv.to_str().unwrap(),
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let (want, _, _) = expected(algorithm, &requests);
        let got = read_rows(&out_csv);
        assert_eq!(got.len(), want.len(), "{algorithm}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{algorithm}: event {i}");
        }
    }
}

#[test]
fn the_summary_of_every_limiter_counts_keys_across_their_idle_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let (text, requests) = trace();
    let path = write(dir.path(), "idle.csv", &text);
    let (out, err, code) = limits(&[
        "replay",
        "--limiter",
        "all",
        "--limit",
        RATE,
        "--top",
        "6",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for algorithm in Algorithm::ALL {
        let (_, counts, rejected) = expected(algorithm, &requests);
        let row = out
            .lines()
            .find(|l| l.starts_with(algorithm.name()))
            .unwrap_or_else(|| panic!("no {algorithm} row in {out}"));
        let numbers: Vec<u64> = row
            .split_whitespace()
            .skip(1)
            .take(5)
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(numbers, counts, "{algorithm}: {row}");
        if rejected.is_empty() {
            assert!(out.contains(&format!("limited most ({algorithm}): nobody")));
            continue;
        }
        let mut most: Vec<(&String, &u64)> = rejected.iter().collect();
        most.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let names: Vec<String> = most
            .iter()
            .take(6)
            .map(|(k, n)| format!("{k} ({n} rejected)"))
            .collect();
        let line = format!("limited most ({algorithm}): {}", names.join(", "));
        assert!(out.contains(&line), "{out}\nwanted: {line}");
    }
}
