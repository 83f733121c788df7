//! The sketch: exact while each key's cells are its own, never admitting
//! what the sliding-window counter over a key's admitted requests would
//! deny, and over a key's own count by more than `e / w` of the traffic
//! no more often than `e^-rows`.

use limits::{Algorithm, KeyedLimiter, ManualClock, Rule, Sketch, SketchOptions};
use limits_conformance::{case, config};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn sketch(rule: Rule, memory: usize, rows: usize, shards: usize) -> Sketch<ManualClock> {
    let options = SketchOptions {
        rows,
        shards,
        seed: Some(7),
        ..SketchOptions::new(memory)
    };
    Sketch::with_clock(rule, options, ManualClock::new(0)).unwrap()
}

fn exact(rule: Rule) -> KeyedLimiter<u64, ManualClock> {
    KeyedLimiter::with_clock(rule, ManualClock::new(0))
}

/// splitmix64: a seeded stream of numbers, the same on every run.
fn numbers(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_roomy_sketch_decides_as_the_keyed_sliding_window(case in case(3)) {
        let rule = case.rule(Algorithm::SlidingWindow);
        let keyed: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule.clone(), ManualClock::new(0));
        let sketch = sketch(rule, 1 << 20, 4, 8);
        for e in &case.events {
            let key = format!("k{}", e.key);
            let mut each = Vec::new();
            let (decided, _) = sketch.decide(&key, Some(e.t), e.cost, limits::Mode::Record, |d| each.push(d));
            let mut expected = Vec::new();
            let want = keyed.decide(&key, Some(e.t), e.cost, limits::Mode::Record, |d| expected.push(d));
            prop_assert_eq!(decided, want, "at {} for {}", e.t, key);
            prop_assert_eq!(each, expected);
        }
    }
}

#[test]
fn a_crowded_sketch_denies_falsely_but_never_allows_falsely() {
    // 2,000 keys in 64 cells per row: most requests meet other keys' counts.
    let rule = Rule::new(Algorithm::SlidingWindow, "5/s".parse().unwrap());
    let crowded = sketch(rule.clone(), 2 * 64 * 16, 2, 1);
    assert_eq!(crowded.columns(), 64);
    let own = exact(rule);
    let mut next = numbers(11);
    let (mut t, mut false_denials, mut allowed) = (0, 0, 0);
    for _ in 0..50_000 {
        t += next() % (2 * MS);
        let key = next() % 2_000;
        let decided = crowded.check_at(&key, t, 1);
        let its_own = own.peek_at(&key, t, 1);
        if decided.allowed {
            assert!(
                its_own.allowed,
                "key {key} at {t}: the sketch admitted what its own window denies"
            );
            assert!(own.check_at(&key, t, 1).allowed);
            allowed += 1;
        } else if its_own.allowed {
            false_denials += 1;
        }
    }
    assert!(allowed > 1_000, "{allowed} admitted");
    assert!(
        false_denials > 1_000,
        "crowded, yet only {false_denials} false denials"
    );
}

#[test]
fn a_keys_excess_is_over_e_over_w_of_its_shards_traffic_at_most_e_to_the_minus_rows_of_the_time() {
    // Limits no key reaches, so every count is seen unsaturated in
    // `remaining`: the sketch's excess over the key's own estimate.
    let rule = Rule::new(Algorithm::SlidingWindow, "1000000/s".parse().unwrap());
    for rows in [1, 2, 4] {
        let sketch = sketch(rule.clone(), rows * 256 * 16, rows, 1);
        let w = sketch.columns() as f64;
        let own = exact(rule.clone());
        let mut next = numbers(rows as u64);
        let (mut t, mut index, mut current, mut previous) = (0, 0, 0u64, 0u64);
        let (mut over, mut asked, mut excess_in_means) = (0, 0, 0.0);
        for _ in 0..60_000 {
            t += next() % (100_000);
            if t / 1_000_000_000 != index {
                let gone = t / 1_000_000_000 - index;
                previous = if gone == 1 { current } else { 0 };
                (index, current) = (t / 1_000_000_000, 0);
            }
            let key = next() % 5_000;
            let mine = own.check_at(&key, t, 1).remaining;
            let seen = sketch.check_at(&key, t, 1).remaining;
            assert!(
                seen <= mine,
                "the sketch's count is never below the key's own"
            );
            current += 1;
            let bound = std::f64::consts::E / w * (current + previous) as f64;
            // `remaining` floors each estimate: one unit either way.
            if (mine - seen) as f64 > bound + 1.0 {
                over += 1;
            }
            // Each row's excess has mean at most N / w.
            excess_in_means += (mine - seen) as f64 / ((current + previous) as f64 / w);
            asked += 1;
        }
        let rate = f64::from(over) / f64::from(asked);
        let allowed = (-(rows as f64)).exp();
        let mean = excess_in_means / f64::from(asked);
        assert!(
            mean <= 1.0,
            "{rows} rows: the mean excess is {mean:.3} N/w, more than one"
        );
        assert!(
            rate <= allowed,
            "{rows} rows: over the bound {rate:.4} of the time, more than e^-{rows} = {allowed:.4}"
        );
    }
}

#[test]
fn what_a_sketch_cannot_keep_is_refused_with_the_reason() {
    let too_much = Rule::new(Algorithm::SlidingWindow, "5000000000/h".parse().unwrap());
    let why = Sketch::new(too_much, SketchOptions::new(1 << 20))
        .err()
        .unwrap();
    assert!(why.to_string().contains("4294967295"), "{why}");
    let rule = Rule::new(Algorithm::SlidingWindow, "5/s; 100/h".parse().unwrap());
    let why = Sketch::new(rule.clone(), SketchOptions::new(100))
        .err()
        .unwrap();
    assert!(why.to_string().contains("at least 128"), "{why}");
    let rows = SketchOptions {
        rows: 0,
        ..SketchOptions::new(1 << 20)
    };
    assert!(
        Sketch::new(rule, rows)
            .err()
            .unwrap()
            .to_string()
            .contains("1 to 16 rows")
    );
}

#[test]
fn a_small_sketch_uses_fewer_shards_not_narrower_rows() {
    let rule = Rule::new(Algorithm::SlidingWindow, "5/s".parse().unwrap());
    let small = sketch(rule.clone(), 4 * 2048 * 16, 4, 64);
    assert_eq!((small.shards(), small.columns()), (2, 1024));
    let large = sketch(rule, 16 << 20, 4, 8);
    assert_eq!((large.shards(), large.memory()), (8, 16 << 20));
}
