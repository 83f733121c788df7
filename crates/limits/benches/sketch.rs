//! The sketch against the sliding-window counter it approximates, in a
//! fixed memory whatever the number of keys: how often it denies what the
//! key's own window would allow, how far its counts run over the key's own
//! against the bound `e / w * N`, the memory of both; then its time per
//! check beside the keyed sliding window's and governor's `check_key`.
//!
//! `cargo bench -p limits --bench sketch` (optionally `-- KEYS:BYTES...`,
//! or `-- time` for the times alone).

mod common;

use common::{BATCH, Governor, KeyStream, Outcome, STEP, Scenario, Tick, XorShift};
use limits::{Algorithm, KeyedLimiter, ManualClock, Rule, Sketch, SketchOptions};
use std::hint::black_box;
use std::time::Instant;

const MEMORY: usize = 16_000_000;
const ROWS: usize = 4;
const LIMIT: &str = "60/min";
const MINUTE: u64 = 60_000_000_000;
/// Requests per key, on average, over the trace's two minutes.
const PER_KEY: u64 = 3;

fn main() {
    let parse = |a: &str| -> Option<(u64, usize)> {
        let (keys, bytes) = a.split_once(':')?;
        Some((keys.parse().ok()?, bytes.parse().ok()?))
    };
    let time_only = std::env::args().any(|a| a == "time");
    let args: Vec<(u64, usize)> = std::env::args().skip(1).filter_map(|a| parse(&a)).collect();
    let cases = match args.is_empty() {
        true => vec![
            (10_000, MEMORY),
            (1_000_000, MEMORY),
            (10_000_000, MEMORY),
            (10_000_000, 8 * MEMORY),
        ],
        false => args,
    };
    println!(
        "sketches of {ROWS} rows, one shard, against the sliding window over each key's admitted requests;"
    );
    println!(
        "{PER_KEY} requests per key over two minutes, a tenth of them from 100 scrapers; limit {LIMIT}"
    );
    println!(
        "{:>10} {:>12} {:>10} {:>11} {:>10} {:>9} {:>12} {:>14}",
        "keys",
        "requests",
        "sketch",
        "false-deny",
        "e/w*N",
        "over it",
        "excess/(N/w)",
        "exact's bytes"
    );
    for (keys, memory) in cases.into_iter().filter(|_| !time_only) {
        error(keys, memory);
    }
    println!();
    println!(
        "time per check, virtual clocks, sliding window 'mostly allowed' as `cargo bench --bench keyed` sizes it"
    );
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>16}",
        "keys", "sketch", "keyed", "governor", "sketch/governor"
    );
    for keys in [10_000, 1_000_000] {
        time(keys);
    }
}

/// `keys` keys' trace: (time, key) in time order, `PER_KEY` requests a key
/// on average, one in ten from 100 heavy keys.
fn trace(keys: u64) -> impl Iterator<Item = (u64, u64)> {
    let requests = keys * PER_KEY;
    let mut rng = XorShift(keys | 1);
    (0..requests).map(move |i| {
        let t = i * 2 * MINUTE / requests;
        let r = rng.next_u64();
        let key = if r % 10 == 0 { r % 100 } else { 100 + r % keys };
        (t, key)
    })
}

fn error(keys: u64, memory: usize) {
    let sketch = |limit: &str| {
        let rule = Rule::new(Algorithm::SlidingWindow, limit.parse().unwrap());
        let options = SketchOptions {
            rows: ROWS,
            shards: 1,
            seed: Some(1),
            ..SketchOptions::new(memory)
        };
        let sketch =
            Sketch::with_clock(rule.clone(), options, ManualClock::new(0)).expect("a valid sketch");
        let exact: KeyedLimiter<u64, ManualClock> =
            KeyedLimiter::with_clock(rule, ManualClock::new(0));
        (sketch, exact)
    };
    // At the limit: the false denials.
    let (limited, own) = sketch(LIMIT);
    let (mut false_denies, mut requests) = (0u64, 0u64);
    for (t, key) in trace(keys) {
        requests += 1;
        let fits = own.peek_at(&key, t, 1).allowed;
        let decided = limited.check_at(&key, t, 1);
        assert!(
            !decided.allowed || fits,
            "the sketch admitted what the key's own window denies"
        );
        if decided.allowed {
            own.check_at(&key, t, 1);
        } else if fits {
            false_denies += 1;
        }
    }
    let exact_bytes = own.memory().bytes;
    drop(own);
    // Far from any limit: each count seen whole, the excess over the key's own.
    let (counting, own) = sketch("4000000000/min");
    let w = counting.columns() as f64;
    let (mut index, mut current, mut previous) = (0, 0u64, 0u64);
    let (mut over, mut in_means, mut bound) = (0u64, 0.0, 0.0);
    for (t, key) in trace(keys) {
        if t / MINUTE != index {
            previous = if t / MINUTE == index + 1 { current } else { 0 };
            (index, current) = (t / MINUTE, 0);
        }
        let mine = own.check_at(&key, t, 1).remaining;
        let seen = counting.check_at(&key, t, 1).remaining;
        current += 1;
        let n = (current + previous) as f64;
        bound = std::f64::consts::E / w * n;
        let excess = (mine - seen) as f64;
        over += u64::from(excess > bound + 1.0);
        in_means += excess / (n / w);
    }
    println!(
        "{keys:>10} {requests:>12} {:>10} {:>10.4}% {bound:>10.1} {:>8.4}% {:>12.3} {exact_bytes:>14}",
        limited.memory(),
        100.0 * false_denies as f64 / requests as f64,
        100.0 * over as f64 / requests as f64,
        in_means / requests as f64,
    );
}

/// Median of 21 interleaved rounds of 200,000 checks each.
fn time(keys: usize) {
    let ks = KeyStream::new(keys, 200_000 * 4, 7);
    let scenario = Scenario::new(Algorithm::SlidingWindow, keys, Outcome::Allowed);
    let clock = ManualClock::new(1);
    let sketch = Sketch::with_clock(scenario.rule(), SketchOptions::new(MEMORY), clock.clone())
        .expect("valid");
    let keyed: KeyedLimiter<u64, ManualClock> =
        KeyedLimiter::with_clock(scenario.rule(), clock.clone());
    let gov = Governor::new(&scenario, &ks.keys);
    for k in &ks.keys {
        sketch.check(k, scenario.warm_cost);
        keyed.check(k, scenario.warm_cost);
    }
    let run = |check: &dyn Fn(&u64) -> bool, slice: &[u64]| {
        let start = Instant::now();
        let mut allowed = 0u64;
        for chunk in slice.chunks(BATCH as usize) {
            clock.tick(STEP * BATCH);
            for k in chunk {
                allowed += u64::from(check(k));
            }
        }
        black_box(allowed);
        start.elapsed().as_nanos() as f64 / slice.len() as f64
    };
    let (mut s, mut k, mut g) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..21 {
        let slice = &ks.stream[(round % 4) * 200_000..][..200_000];
        s.push(run(&|key| sketch.check(key, 1).allowed, slice));
        k.push(run(&|key| keyed.check(key, 1).allowed, slice));
        let start = Instant::now();
        black_box(gov.run(slice));
        g.push(start.elapsed().as_nanos() as f64 / slice.len() as f64);
    }
    let ratios: Vec<f64> = s.iter().zip(&g).map(|(s, g)| s / g).collect();
    println!(
        "{keys:>10} {:>8.0}ns {:>8.0}ns {:>8.0}ns {:>15.2}x",
        median(s),
        median(k),
        median(g),
        median(ratios)
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
