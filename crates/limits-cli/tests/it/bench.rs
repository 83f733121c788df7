//! `limits bench`: runs for every limiter on small inputs, in memory and in a
//! real redis-server, and prints a well-formed table and consistent JSON;
//! refuses bad flags with a reason. No speed is asserted: only that the
//! figures are there and agree with each other.

use crate::common;
use crate::redis_server;

use common::limits;
use redis_server::RedisServer;
use serde_json::Value;
use std::collections::HashMap;

const LIMITERS: [&str; 5] = [
    "token-bucket",
    "sliding-log",
    "fixed-window",
    "sliding-window",
    "leaky-bucket",
];

/// `limits bench ARGS --json`, parsed; fails the test on an error.
fn bench_json(args: &[&str]) -> Value {
    let mut all = vec!["bench", "--json"];
    all.extend_from_slice(args);
    let (out, err, code) = limits(&all);
    assert_eq!(code, 0, "limits {all:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn u(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

fn f(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

/// What holds of every result, wherever it was measured.
fn consistent(r: &Value, keys: u64, decisions: u64) {
    assert_eq!(u(r, "decisions"), decisions, "{r}");
    assert_eq!(u(r, "allowed") + u(r, "denied"), decisions, "{r}");
    assert_eq!(u(r, "keys"), keys, "{r}");
    assert!(u(r, "bytes_per_key") > 0, "{r}");
    assert!(f(r, "ns_per_decision") > 0.0, "{r}");
    assert!(f(r, "decisions_per_sec") > 0.0, "{r}");
    assert!(u(r, "elapsed_ns") > 0, "{r}");
}

fn allowed_fraction(r: &Value) -> f64 {
    u(r, "allowed") as f64 / u(r, "decisions") as f64
}

/// Whether `r`'s measured run kept the pace of the calibration run its rule
/// was sized from, within 2x either way. A derived rule aims at an outcome
/// through that pace: when another process takes the core for part of the
/// run, one key's checks come further apart than the rule assumed and more
/// pass (0.41 of a "denied" run was seen), or closer and fewer do. Such a
/// run says nothing about the sizing, so it is run again rather than judged.
fn kept_pace(r: &Value) -> bool {
    let ratio = f(r, "ns_per_decision") / f(r, "calibration_ns_per_decision");
    (0.5..=2.0).contains(&ratio)
}

/// Asserts that `r`, run for `outcome`, was mostly allowed (and remembers
/// its share by limiter) or mostly denied: a derived rule aims at about
/// 90% of one or the other.
fn mostly(outcome: &str, r: &Value, allowed_shares: &mut HashMap<String, f64>) {
    let share = allowed_fraction(r);
    let limiter = r["limiter"].as_str().unwrap().to_owned();
    if outcome == "allowed" {
        assert!(share > 0.7, "{share}: {r}");
        allowed_shares.insert(limiter, share);
    } else {
        let allowed = allowed_shares[&limiter];
        assert!(
            share < 0.6 && share < allowed - 0.3,
            "{share} (the allowed run: {allowed}): {r}"
        );
    }
}

fn results(report: &Value) -> &Vec<Value> {
    report["results"].as_array().expect("results")
}

/// Runs of each outcome before giving up on a limiter that never kept pace.
const PACE_TRIES: usize = 6;

#[test]
fn every_limiter_in_memory_mostly_allowed_and_mostly_denied() {
    let mut allowed_shares = HashMap::new();
    for (outcome, threads) in [("allowed", "1"), ("denied", "2")] {
        let mut judged = Vec::new();
        for _ in 0..PACE_TRIES {
            let report = bench_json(&[
                "--keys",
                "500",
                "--decisions",
                "5000",
                "--threads",
                threads,
                "--outcome",
                outcome,
            ]);
            assert_eq!(report["store"], "memory");
            assert!(report["clock"].as_str().unwrap().contains("SystemClock"));
            assert!(u(&report["machine"], "cores") >= 1);
            let rows = results(&report);
            let names: Vec<&str> = rows
                .iter()
                .map(|r| r["limiter"].as_str().unwrap())
                .collect();
            assert_eq!(names, LIMITERS);
            for r in rows {
                consistent(r, 500, 5000);
                assert_eq!(r["outcome"], outcome);
                assert_eq!(u(r, "threads"), threads.parse::<u64>().unwrap());
                assert_eq!(u(r, "keys_resident"), 500, "{r}");
                assert!(r["rss_bytes_per_key"].is_number(), "{r}");
                assert!(f(r, "calibration_ns_per_decision") > 0.0, "{r}");
                // The deciding threads' CPU time: some, and no more than all
                // the threads running for the whole wall time.
                let cpu = f(r, "cpu_ns_per_decision") * u(r, "decisions") as f64;
                let most = u(r, "threads") as f64 * u(r, "elapsed_ns") as f64;
                assert!(cpu > 0.0 && cpu <= most * 1.01, "{cpu} of {most}: {r}");
                let limiter = r["limiter"].as_str().unwrap().to_owned();
                if !judged.contains(&limiter) && kept_pace(r) {
                    mostly(outcome, r, &mut allowed_shares);
                    judged.push(limiter);
                }
            }
            if judged.len() == LIMITERS.len() {
                break;
            }
        }
        assert_eq!(
            judged.len(),
            LIMITERS.len(),
            "{outcome}: only {judged:?} kept their calibration's pace in {PACE_TRIES} runs"
        );
    }
}

#[test]
fn the_table_has_the_machine_and_a_row_per_limiter() {
    let (out, err, code) = limits(&["bench", "--keys", "200", "--decisions", "2000"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("machine: ") && lines[0].contains("cores"),
        "{out}"
    );
    assert!(lines[1].starts_with("clock: SystemClock"), "{out}");
    assert_eq!(lines[2], "store: memory");
    let header = lines
        .iter()
        .position(|l| l.starts_with("limiter"))
        .expect("a header");
    for column in [
        "ns/decision",
        "CPU ns/decision",
        "decisions/s",
        "B/key",
        "RSS B/key",
        "allowed",
    ] {
        assert!(lines[header].contains(column), "{column}: {out}");
    }
    for (i, name) in LIMITERS.iter().enumerate() {
        let row: Vec<&str> = lines[header + 1 + i].split_whitespace().collect();
        assert_eq!(row[0], *name, "{out}");
        // keys threads decisions allowed% ns/decision CPU-ns/decision
        // decisions/s B/key RSS
        let tail = &row[row.len() - 9..];
        assert_eq!(&tail[..3], ["200", "1", "2000"], "{out}");
        assert!(tail[3].ends_with('%'), "{out}");
        for n in &tail[4..8] {
            assert!(n.parse::<f64>().unwrap() > 0.0, "{n}: {out}");
        }
    }
    assert!(out.contains("KeyedLimiter::memory()") && out.contains("/proc/self/statm"));
}

#[test]
fn a_given_rule_is_benched_as_given() {
    let report = bench_json(&[
        "--limiter",
        "sliding-log",
        "--limit",
        "5",
        "--window",
        "1s",
        "--keys",
        "50",
        "--decisions",
        "1000",
    ]);
    let r = &results(&report)[0];
    consistent(r, 50, 1000);
    assert_eq!(r["rule"], "5/s");
    assert!(r["outcome"].is_null());
    // 50 keys x 5 per second, and the run takes far less than a second.
    assert_eq!(u(r, "allowed"), 250 - 50, "{r}");
}

#[test]
fn a_duration_bounds_the_run() {
    let report = bench_json(&[
        "--limiter",
        "token-bucket",
        "--keys",
        "100",
        "--duration",
        "200ms",
    ]);
    let r = &results(&report)[0];
    assert!(u(r, "decisions") > 0);
    assert_eq!(u(r, "allowed") + u(r, "denied"), u(r, "decisions"));
    assert!(u(r, "elapsed_ns") >= 200_000_000, "{r}");
}

#[test]
fn bad_flags_are_refused_with_a_reason() {
    for (args, expect) in [
        (&["--keys", "0"][..], "at least 1"),
        (&["--threads", "0"], "at least 1"),
        (&["--decisions", "0"], "at least 1"),
        (&["--keys", "many"], "--keys"),
        (&["--limiter", "gcra"], "sliding-log"),
        (&["--outcome", "maybe"], "allowed"),
        (
            &["--limit", "5", "--outcome", "denied"],
            "cannot be used with",
        ),
        (
            &["--duration", "1s", "--decisions", "10"],
            "cannot be used with",
        ),
        (&["--duration", "0s"], "greater than zero"),
        (&["--duration", "soon"], "--duration"),
        (&["--limit", "5/s", "--window", "1s"], "plain --limit N"),
        (&["--limit", "0"], "--limit 0"),
        (
            &["--store", "ftp://x", "--decisions", "10"],
            "expected memory",
        ),
        (
            &["--store", "redis://127.0.0.1:1", "--decisions", "10"],
            "--store",
        ),
    ] {
        let mut all = vec!["bench"];
        all.extend_from_slice(args);
        let (out, err, code) = limits(&all);
        assert_ne!(code, 0, "{args:?} was accepted: {out}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn the_redis_store_decides_reports_memory_and_leaves_no_keys() {
    let redis = RedisServer::start();
    let url = redis.url();
    let mut allowed_shares = HashMap::new();
    for outcome in ["allowed", "denied"] {
        let report = bench_json(&[
            "--store",
            &url,
            "--keys",
            "100",
            "--decisions",
            "1000",
            "--concurrency",
            "4",
            "--outcome",
            outcome,
        ]);
        assert_eq!(report["store"], url.as_str());
        assert!(report["clock"].as_str().unwrap().contains("Redis's clock"));
        let rows = results(&report);
        assert_eq!(rows.len(), 5);
        for r in rows {
            consistent(r, 100, 1000);
            assert_eq!(u(r, "threads"), 4);
            assert_eq!(u(r, "keys_resident"), 100, "{r}");
            let (p50, p99) = (f(r, "p50_us"), f(r, "p99_us"));
            assert!(p50 > 0.0 && p50 <= p99, "{r}");
            mostly(outcome, r, &mut allowed_shares);
        }
        let left = redis.command(&["DBSIZE"]).unwrap();
        assert_eq!(
            left.trim(),
            ":0",
            "keys left behind after --outcome {outcome}"
        );
    }
    // The table names the Redis columns.
    let (out, err, code) = limits(&[
        "bench",
        "--store",
        &url,
        "--limiter",
        "sliding-log",
        "--keys",
        "20",
        "--decisions",
        "100",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("p99 us") && out.contains("Redis B/key"),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("sliding-log")), "{out}");
    assert_eq!(redis.command(&["DBSIZE"]).unwrap().trim(), ":0");
}
