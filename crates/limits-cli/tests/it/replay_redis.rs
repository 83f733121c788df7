//! `limits replay --store redis://...` on a real redis-server: the same
//! decisions, row for row, and the same summary as the memory replay on a
//! microsecond-aligned trace; a fresh key prefix per run; trace times below
//! the microsecond floored, and said so.

use crate::common;
use crate::redis_server;

use common::{limits, write};
use redis_server::RedisServer;
use std::path::Path;

/// A CSV trace of `n` events on 5 keys over about 6 s, costs 1 to 3, with
/// bursts at one instant and gaps; each time is a whole microsecond plus
/// `sub_us` nanoseconds. Deterministic (a fixed LCG).
pub(crate) fn trace(n: usize, sub_us: u64) -> String {
    let mut seed: u64 = 0x5eed_1234;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut out = String::from("time,key,cost\n");
    let mut t_us: u64 = 0;
    for _ in 0..n {
        // One event in four at the same microsecond as the previous one.
        if next() % 4 != 0 {
            t_us += next() % 5_000;
        }
        let key = ["alice", "bob", "carol", "dave", "eve"][(next() % 5) as usize];
        let cost = 1 + next() % 3;
        let ns = t_us * 1000 + sub_us;
        out.push_str(&format!(
            "{}.{:09},{key},{cost}\n",
            ns / 1_000_000_000,
            ns % 1_000_000_000
        ));
    }
    out
}

/// `limits replay` with `args`; its stdout and stderr (it must succeed).
fn replay(args: &[&str]) -> (String, String) {
    let mut all = vec!["replay"];
    all.extend(args);
    let (out, err, code) = limits(&all);
    assert_eq!(code, 0, "limits {all:?}: {err}");
    (out, err)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The key prefix a `--store` replay announced on stderr.
fn prefix(stderr: &str) -> String {
    let line = stderr
        .lines()
        .find(|l| l.contains("keys under "))
        .unwrap_or_else(|| panic!("no prefix on stderr: {stderr}"));
    line.rsplit("keys under ").next().unwrap().trim().to_owned()
}

#[test]
fn every_limiter_decides_in_redis_as_in_memory_row_for_row() {
    let redis = RedisServer::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.csv", &trace(3000, 0));
    let trace = trace.to_str().unwrap();
    // Two rates, all-or-nothing; a burst below the limit for the leaky
    // bucket (the others have no queue, and refuse --burst).
    let rate = |limiter| match limiter {
        "leaky-bucket" => vec!["--limit", "10/s; 25/3s", "--burst", "6"],
        _ => vec!["--limit", "10/s; 25/3s"],
    };
    for limiter in [
        "fixed-window",
        "sliding-log",
        "sliding-window",
        "token-bucket",
        "leaky-bucket",
        "none",
    ] {
        let memory_csv = dir.path().join(format!("{limiter}-memory.csv"));
        let redis_csv = dir.path().join(format!("{limiter}-redis.csv"));
        let common = ["--limiter", limiter, trace, "--decisions"];
        let mut args = common.to_vec();
        args.extend([memory_csv.to_str().unwrap()]);
        args.extend(rate(limiter));
        let (memory_out, _) = replay(&args);
        let mut args = common.to_vec();
        args.extend([redis_csv.to_str().unwrap(), "--store", &url]);
        args.extend(rate(limiter));
        let (redis_out, redis_err) = replay(&args);
        assert_eq!(redis_out, memory_out, "{limiter}: the summary");
        let (memory_rows, redis_rows) = (read(&memory_csv), read(&redis_csv));
        assert_eq!(memory_rows.lines().count(), 3001);
        for (i, (m, r)) in memory_rows.lines().zip(redis_rows.lines()).enumerate() {
            assert_eq!(r, m, "{limiter}: row {i}");
        }
        // Something was limited, and something passed: the trace tests both.
        let denied = memory_rows
            .lines()
            .filter(|l| l.contains(",false,"))
            .count();
        if limiter != "none" {
            assert!(denied > 100 && denied < 2900, "{limiter}: {denied} denied");
        }
        let prefix = prefix(&redis_err);
        let keys = redis.integer(&[
            "EVAL",
            "return #redis.call('KEYS', ARGV[1])",
            "0",
            &format!("{prefix}*"),
        ]);
        if limiter == "none" {
            assert_eq!(keys, 0, "none needs no state");
        } else {
            assert!(
                keys >= 5,
                "{limiter}: state in Redis under {prefix}: {keys} keys"
            );
        }
    }
}

/// The limits Redis module decides the trace as the Lua scripts do, row
/// for row (`--redis-module on` and `off` on one Redis with the module).
#[test]
fn the_redis_module_decides_a_trace_as_the_scripts_row_for_row() {
    let redis = RedisServer::start_with_module(&[]);
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.csv", &trace(2000, 0));
    let trace = trace.to_str().unwrap();
    for limiter in [
        "fixed-window",
        "sliding-log",
        "sliding-window",
        "token-bucket",
        "leaky-bucket",
    ] {
        let rows = |module: &str| {
            let csv = dir.path().join(format!("{limiter}-{module}.csv"));
            let csv_arg = csv.to_str().unwrap();
            let args = [
                "--limiter",
                limiter,
                trace,
                "--limit",
                "10/s; 25/3s",
                "--decisions",
                csv_arg,
                "--store",
                &url,
                "--redis-module",
                module,
            ];
            let (summary, _) = replay(&args);
            (summary, read(&csv))
        };
        let (scripts, module) = (rows("off"), rows("on"));
        assert_eq!(module.0, scripts.0, "{limiter}: the summary");
        assert_eq!(module.1.lines().count(), 2001);
        for (i, (m, s)) in module.1.lines().zip(scripts.1.lines()).enumerate() {
            assert_eq!(m, s, "{limiter}: row {i}");
        }
    }
    let stats = redis.command(&["INFO", "commandstats"]).unwrap();
    assert!(
        stats.contains("cmdstat_limits.decide:calls=10000,"),
        "{stats}"
    );
}

#[test]
fn two_runs_do_not_share_state_and_all_limiters_summarise_alike() {
    let redis = RedisServer::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.csv", &trace(1500, 0));
    let trace = trace.to_str().unwrap();
    let args = ["--limiter", "all", "--limit", "8/s", trace];
    let (memory, _) = replay(&args);
    let mut with_store = args.to_vec();
    with_store.extend(["--store", &url]);
    let (first, first_err) = replay(&with_store);
    let (second, second_err) = replay(&with_store);
    // Redis decides every limiter but the smoothed rate, which it names.
    let memory: String = memory
        .lines()
        .filter(|l| !l.contains("smoothed-rate"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        first_err.contains("left out: --store: smoothed-rate: the Redis store has no script"),
        "{first_err}"
    );
    assert_eq!(first, memory);
    // Had the second run seen the first's state, it would limit far more.
    assert_eq!(second, memory);
    assert_ne!(prefix(&first_err), prefix(&second_err));
}

#[test]
fn times_below_the_microsecond_are_floored_and_counted() {
    let redis = RedisServer::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    // The same trace with 999 ns added to every time, and without.
    let fine = write(dir.path(), "fine.csv", &trace(800, 999));
    let aligned = write(dir.path(), "aligned.csv", &trace(800, 0));
    let (fine_csv, aligned_csv) = (dir.path().join("fine.out"), dir.path().join("aligned.out"));
    let run = |trace: &Path, out: &Path, store: &[&str]| {
        let mut args = vec![
            "--limiter",
            "sliding-log",
            "--limit",
            "5/s",
            trace.to_str().unwrap(),
            "--decisions",
            out.to_str().unwrap(),
        ];
        args.extend(store);
        replay(&args).0
    };
    let fine_out = run(&fine, &fine_csv, &["--store", &url]);
    assert!(
        fine_out.contains("800 events had a time below the microsecond"),
        "{fine_out}"
    );
    let aligned_out = run(&aligned, &aligned_csv, &[]);
    // Apart from the trace's name and the note, the floored replay is the
    // aligned trace's memory replay, decision for decision.
    let body = |s: &str| {
        s.lines()
            .skip(1)
            .take_while(|l| !l.contains("below the microsecond"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&fine_out).trim_end(), body(&aligned_out).trim_end());
    assert_eq!(read(&fine_csv), read(&aligned_csv));
    // In memory, the same fine trace is decided at its nanoseconds: no note.
    let memory = run(&fine, &fine_csv, &[]);
    assert!(!memory.contains("below the microsecond"), "{memory}");
}
