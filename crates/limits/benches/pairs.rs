//! `check` against governor's `check_key` in wall time on the real clocks,
//! in short interleaved slices (scripts/bench-check): on a machine shared
//! with other work, the load moves over seconds, so a ratio of two runs
//! taken seconds apart (criterion's groups) moves with it; two slices of a
//! few milliseconds each, taken one after the other, see the same load.
//!
//! For every limiter and key count: ours and governor's built side by side
//! with the rule of `Scenario::real` (1, 10k or 1M keys resident, mostly
//! allowed), then `ROUNDS` rounds, each timing one slice of ours and one of
//! governor's over the same checks of the key stream, in alternating order.
//! A slice is best shorter than the scheduler's time slice (the default,
//! 10,000 checks, is under a millisecond up to 10k keys), so that most
//! slices run whole; the median leaves out those that did not.
//! Printed per case: the median over rounds of each side's ns per check and
//! of the per-round ratio, the ratios' quartiles, and the 1-minute load
//! average before and after.
//!
//! `pairs [ROUNDS] [SLICE_CHECKS] [ALGORITHM|all] [KEYS...]` (defaults: 201
//! rounds, 10000 checks per slice, all, 1 10000 1000000).

mod common;

use common::{ALGORITHMS, Governor, KeyStream, Ours, Scenario};
use limits::Algorithm;
use std::hint::black_box;
use std::time::Instant;

/// Checks in one pass of a key stream.
const STREAM: usize = 1 << 20;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let rounds: usize = args
        .first()
        .map_or(41, |a| a.parse().expect("a number of rounds"));
    let slice: usize = args
        .get(1)
        .map_or(10_000, |a| a.parse().expect("checks per slice"));
    let algorithms: Vec<Algorithm> = match args.get(2).map(String::as_str) {
        None | Some("all") => ALGORITHMS.to_vec(),
        Some(name) => vec![name.parse().expect("an algorithm")],
    };
    let key_counts: Vec<usize> = if args.len() > 3 {
        args[3..]
            .iter()
            .map(|k| k.parse().expect("a key count"))
            .collect()
    } else {
        vec![1, 10_000, 1_000_000]
    };
    println!(
        "| case | rounds | limits (ns) | governor (ns) | limits / governor, median | quartiles | load |"
    );
    println!("|---|---:|---:|---:|---:|---|---|");
    for &algorithm in &algorithms {
        for &keys in &key_counts {
            let row = case(algorithm, keys, rounds, slice.min(STREAM / 2));
            println!("{row}");
        }
    }
}

/// One limiter at one key count: its row of the table.
fn case(algorithm: Algorithm, keys: usize, rounds: usize, slice: usize) -> String {
    let load_before = load();
    let ks = KeyStream::new(keys, STREAM, 0x5eed + keys as u64);
    let s = Scenario::real(algorithm, &ks);
    let ours = Ours::real(&s, &ks.keys);
    let gov = Governor::real(&s, &ks.keys);
    let (mut ours_ns, mut gov_ns, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut pos = 0;
    for round in 0..rounds {
        if pos + 2 * slice > ks.stream.len() {
            pos = 0;
        }
        let warm = &ks.stream[pos..pos + slice];
        let checks = &ks.stream[pos + slice..pos + 2 * slice];
        pos += 2 * slice;
        // Each side's slice follows an untimed one of its own, so that it
        // finds its table where a steady stream of checks keeps it (in the
        // cache, up to 10k keys), not where the other side left it.
        let time = |run: &dyn Fn(&[u64]) -> u64| {
            black_box(run(warm));
            let start = Instant::now();
            black_box(run(checks));
            start.elapsed().as_nanos() as f64 / slice as f64
        };
        let (o, g) = if round % 2 == 0 {
            let o = time(&|k| ours.run(k));
            (o, time(&|k| gov.run(k)))
        } else {
            let g = time(&|k| gov.run(k));
            (time(&|k| ours.run(k)), g)
        };
        ours_ns.push(o);
        gov_ns.push(g);
        ratios.push(o / g);
    }
    let name = format!("{}/{}", algorithm.name(), keys_name(keys));
    format!(
        "| {name} | {rounds} | {:.1} | {:.1} | **{:.2}x** | {:.2}-{:.2} | {load_before}-{} |",
        quantile(&mut ours_ns, 0.5),
        quantile(&mut gov_ns, 0.5),
        quantile(&mut ratios, 0.5),
        quantile(&mut ratios, 0.25),
        quantile(&mut ratios, 0.75),
        load(),
    )
}

/// The `q` quantile of `v` (nearest rank).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// 1, 10k, 1M.
fn keys_name(keys: usize) -> String {
    match keys {
        k if k >= 1_000_000 && k % 1_000_000 == 0 => format!("{}M", k / 1_000_000),
        k if k >= 1_000 && k % 1_000 == 0 => format!("{}k", k / 1_000),
        k => k.to_string(),
    }
}

/// The 1-minute load average, as text.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}
