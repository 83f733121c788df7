//! The limit on distinct values: time per check and bytes per key, exact
//! (N = 20, usernames per address) and sketched (N = 10,000, pages per
//! address, HyperLogLogs of 1,024 registers in 8 sub-windows past 16
//! values: the warm-up's 20 values a key in each sub-window sketch every
//! key, all eight live), beside governor's `check_key` on the same keys in
//! the same run, virtual clocks, interleaved rounds.
//!
//! `cargo bench -p limits --bench distinct`.

mod common;

use common::{Governor, KeyStream, Outcome, Scenario, XorShift};
use limits::{Algorithm, Distinct, DistinctLimiter, DistinctSketch, ManualClock};
use std::hint::black_box;
use std::time::{Duration, Instant};

const KEYS: usize = 10_000;
const CHECKS: usize = 200_000;

fn main() {
    let ks = KeyStream::new(KEYS, CHECKS, 11);
    let mut rng = XorShift(5);
    // Each check's value: one of 30 per key (so exact keys fill to 20 and
    // repeat), or one of a million (the sketched keys' pages).
    let few: Vec<u64> = (0..CHECKS).map(|_| rng.next_u64() % 30).collect();
    let many: Vec<u64> = (0..CHECKS).map(|_| rng.next_u64() % 1_000_000).collect();
    let hour = Duration::from_secs(3600);
    let clock = ManualClock::new(1);
    let exact: DistinctLimiter<u64, _> =
        DistinctLimiter::with_clock(Distinct::new(20, hour).unwrap(), clock.clone());
    let sketch = DistinctSketch {
        from: 16,
        registers: 1024,
        sub_windows: 8,
    };
    let rule = Distinct::new(10_000, hour)
        .unwrap()
        .with_sketch(sketch)
        .unwrap();
    let sketched: DistinctLimiter<u64, _> = DistinctLimiter::with_clock(rule, clock.clone());
    let gov = Governor::new(
        &Scenario::new(Algorithm::TokenBucket, KEYS, Outcome::Allowed),
        &ks.keys,
    );
    // Warm: every key holds its values (the sketched ones past the
    // threshold), met in each of the eight sub-windows of the hour, as a
    // scraper at work is.
    for pass in 0..8 {
        for (i, k) in ks.stream.iter().enumerate() {
            exact.check(k, &few[i]);
            sketched.check(k, &many[(i + pass * 7_919) % CHECKS]);
        }
        clock.advance(hour / 8);
    }
    let time = |f: &dyn Fn() -> u64| {
        let start = Instant::now();
        black_box(f());
        start.elapsed().as_nanos() as f64 / CHECKS as f64
    };
    let (mut e, mut s, mut g) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..11 {
        e.push(time(&|| {
            ks.stream
                .iter()
                .zip(&few)
                .map(|(k, v)| u64::from(exact.check(k, v).allowed))
                .sum()
        }));
        s.push(time(&|| {
            ks.stream
                .iter()
                .zip(&many)
                .map(|(k, v)| u64::from(sketched.check(k, v).allowed))
                .sum()
        }));
        g.push(time(&|| gov.run(&ks.stream)));
    }
    let keys = KEYS as f64;
    println!(
        "{KEYS} keys, {CHECKS} checks a round, 11 rounds (median ns per check; bytes per key: the values' heap)"
    );
    println!(
        "exact, N = 20:          {:>7.0} ns  {:>6.0} B/key",
        median(e),
        exact.value_bytes() as f64 / keys
    );
    println!(
        "sketched, N = 10,000:   {:>7.0} ns  {:>6.0} B/key",
        median(s),
        sketched.value_bytes() as f64 / keys,
    );
    println!("governor check_key:     {:>7.0} ns", median(g));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
