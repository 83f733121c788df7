//! Bytes per key at 1M keys, ours next to governor's: the growth of the
//! process's resident set while the keys are added, each case in a child
//! process of its own (so that no freed memory is counted twice), and ours
//! also as `KeyedLimiter::memory()` says.
//!
//! `cargo bench -p limits --bench memory` (optionally `-- KEYS`).

mod common;

use common::{ALGORITHMS, Governor, KeyStream, Ours, Outcome, Scenario, rss_bytes};
use limits::Algorithm;
use std::process::Command;

/// Sliding-log requests per key in the "more entries" case.
const LOG_ENTRIES: u64 = 8;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--case") {
        return case(&args[1..]);
    }
    let keys: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let me = std::env::current_exe().expect("own path");
    println!("bytes per key at {keys} keys (RSS growth; ours also by memory())");
    println!(
        "{:<28} {:>10} {:>10} {:>12} {:>8}",
        "limiter", "limits", "governor", "memory()", "ratio"
    );
    let mut cases: Vec<(Algorithm, u64)> = ALGORITHMS.iter().map(|&a| (a, 1)).collect();
    cases.insert(2, (Algorithm::SlidingLog, LOG_ENTRIES));
    for (algorithm, per_key) in cases {
        let run = |side: &str| -> Vec<f64> {
            let out = Command::new(&me)
                .args([
                    "--case",
                    side,
                    algorithm.name(),
                    &keys.to_string(),
                    &per_key.to_string(),
                ])
                .output()
                .expect("child runs");
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        };
        let ours = run("limits");
        let gov = run("governor");
        let (Some(&o), Some(&g)) = (ours.first(), gov.first()) else {
            println!("{}: a child failed", algorithm.name());
            continue;
        };
        let label = format!("{} ({per_key} per key)", algorithm.name());
        let reported = ours.get(1).copied().unwrap_or(0.0);
        println!(
            "{label:<28} {o:>10.1} {g:>10.1} {reported:>12.1} {:>7.2}x",
            o / g
        );
    }
}

/// One side of one case: prints the RSS growth per key (and for ours what
/// `memory()` reports per key).
fn case(args: &[String]) {
    let [side, algorithm, keys, per_key] = args else {
        panic!("usage: --case limits|governor ALGORITHM KEYS PER_KEY");
    };
    let algorithm: Algorithm = algorithm.parse().expect("an algorithm");
    let keys: usize = keys.parse().expect("a key count");
    let per_key: u64 = per_key.parse().expect("requests per key");
    // The scenario's rule, with a window so long that nothing expires.
    let mut s = Scenario::new(algorithm, keys, Outcome::Allowed);
    s.warm_cost = 1;
    let ks = KeyStream::new(keys, 0, 7);
    let before = rss_bytes().expect("RSS on Linux");
    let per = |after: u64| (after - before) as f64 / keys as f64;
    if side == "limits" {
        let ours = Ours::new(&s, &ks.keys);
        for _ in 1..per_key {
            for k in &ks.keys {
                ours.limiter.check(k, 1);
            }
        }
        let grown = per(rss_bytes().expect("RSS"));
        let m = ours.limiter.memory();
        println!("{grown:.1} {:.1}", m.bytes as f64 / m.keys.max(1) as f64);
    } else {
        let gov = Governor::new(&s, &ks.keys);
        for _ in 1..per_key {
            for k in &ks.keys {
                let _ = gov.limiter.check_key(k);
            }
        }
        println!("{:.1}", per(rss_bytes().expect("RSS")));
    }
}
