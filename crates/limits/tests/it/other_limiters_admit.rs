//! The fixed window's, the leaky bucket's and the sliding window's fused
//! admissions (`Rule::allow` for a one-rate rule: the roll, the check, the
//! record, the idle test and a denial's wait in one pass) answer what the
//! whole decision does at the edges random traces rarely reach: costs of 0,
//! 1, L and L + 1 (burst + 1 and burst + 2 for the leaky bucket); limits,
//! windows and bursts up to their maxima; times near zero and near the end of
//! `u64` nanoseconds, and one nanosecond either side of a window boundary;
//! counts and queue ends either side of where a request just fits; a time
//! before the state's (issue 9).

use limits::{Algorithm, Rate, RetryAfter, Rule};
use proptest::prelude::*;
use std::time::Duration;

use crate::edges;
use edges::{cost, count_near_fit, leaky_queue_end, limit, near, same_as_check, tag, time, window};

/// Times around the state's window `index`: its start, its end and the
/// next one's, each ± 1 ns, plus `at`.
fn window_times(index: u64, window: u64, d: i128, at: u64) -> Vec<u64> {
    let most = u128::from(u64::MAX);
    (0..3u128)
        .map(|k| near((u128::from(index) + k) * u128::from(window), d, most) as u64)
        .chain([at])
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The fixed window from any valid state: the count anywhere or within
    /// 1 of where `cost` just fits, at window boundaries ± 1 ns and anywhere.
    #[test]
    fn fixed_window_admission_equals_check(
        (limit, window, cost) in (limit(), window())
            .prop_flat_map(|(l, w)| (Just(l), Just(w), cost(l))),
        raw in any::<u64>(),
        fit in prop::option::of(-1i128..=1),
        at in time(),
        d in -1i128..=1,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::FixedWindow, rate.into());
        let index = at / window;
        let count = count_near_fit(raw, fit, limit, cost);
        let words = [tag(&rule), 1, index, count];
        let busy = [tag(&rule), 1, u64::MAX / window, limit];
        same_as_check(&rule, &words, &busy, &window_times(index, window, d, raw), cost)?;
    }

    /// The sliding window from any valid state: counts anywhere or the
    /// current one within 1 of where `cost` fits with no previous weight, at
    /// window boundaries ± 1 ns and anywhere.
    #[test]
    fn sliding_window_admission_equals_check(
        (limit, window, cost) in (limit(), window())
            .prop_flat_map(|(l, w)| (Just(l), Just(w), cost(l))),
        (raw_prev, raw_curr) in (any::<u64>(), any::<u64>()),
        fit in prop::option::of(-1i128..=1),
        at in time(),
        d in -1i128..=1,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::SlidingWindow, rate.into());
        let index = at / window;
        let previous = raw_prev % (limit + 1);
        let current = count_near_fit(raw_curr, fit, limit, cost);
        let words = [tag(&rule), 1, index, previous, current];
        let busy = [tag(&rule), 1, u64::MAX / window, limit, limit];
        let times = window_times(index.saturating_sub(1), window, d, raw_prev);
        same_as_check(&rule, &words, &busy, &times, cost)?;
    }

    /// The leaky bucket, burst included, from any queue end the state file
    /// accepts or one within 2 of where `at` decides (the queue empty at
    /// `at`, or a request of `cost` departing just within the burst).
    #[test]
    fn leaky_bucket_admission_equals_check(
        (limit, window, burst, cost) in (limit(), window(), prop_oneof![Just(0u64), limit()])
            .prop_flat_map(|(l, w, b)| (Just(l), Just(w), Just(b), cost(b + 1))),
        raw in any::<u128>(),
        edge in prop::option::of((any::<bool>(), -2i128..=2)),
        at in time(),
        then in time(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::LeakyBucket, rate.into()).with_burst(burst);
        let (next_slot, most) = leaky_queue_end((limit, window, burst, cost), at, raw, edge);
        let words = [tag(&rule), 1, (next_slot >> 64) as u64, next_slot as u64];
        let busy = [tag(&rule), 1, (most >> 64) as u64, most as u64];
        same_as_check(&rule, &words, &busy, &[at, then], cost)?;
    }
}

/// Written out: 3 per 10 ns, each answer the decision's.
#[test]
fn fused_admissions_at_written_edges() {
    let rate = || Rate::new(3, Duration::from_nanos(10)).unwrap().into();
    let never = Err(RetryAfter::Never);
    let after = |n| Err(RetryAfter::After(Duration::from_nanos(n)));
    let ok = |n| Ok(Duration::from_nanos(n));

    let fixed = Rule::new(Algorithm::FixedWindow, rate());
    let mut s = fixed.new_state();
    assert_eq!(fixed.allow(&mut s, 19, 4), never);
    assert_eq!(fixed.allow(&mut s, 19, 3), ok(0));
    assert_eq!(fixed.allow(&mut s, 19, 0), ok(0));
    assert_eq!(fixed.allow(&mut s, 19, 1), after(1));
    // Earlier than the state's window: decided at its start.
    assert_eq!(fixed.allow(&mut s, 5, 1), after(10));
    assert_eq!(fixed.allow(&mut s, 20, 3), ok(0));

    let sliding = Rule::new(Algorithm::SlidingWindow, rate());
    let mut s = sliding.new_state();
    assert_eq!(sliding.allow(&mut s, 10, 4), never);
    assert_eq!(sliding.allow(&mut s, 10, 3), ok(0));
    // At 20 the previous 3 weigh 3 * 10 / 10: full until 3 * (10 - e) <= 20.
    assert_eq!(sliding.allow(&mut s, 20, 1), after(4));
    assert_eq!(sliding.allow(&mut s, 24, 1), ok(0));
    assert_eq!(sliding.allow(&mut s, 24, 0), ok(0));

    // One unit leaves every 10 / 3 ns; a burst of 1 waits at most one slot.
    let leaky = Rule::new(Algorithm::LeakyBucket, rate()).with_burst(1);
    let mut s = leaky.new_state();
    assert_eq!(leaky.allow(&mut s, 10, 3), never);
    assert_eq!(leaky.allow(&mut s, 10, 2), ok(4));
    assert_eq!(leaky.allow(&mut s, 10, 0), ok(0));
    assert_eq!(leaky.allow(&mut s, 10, 1), after(4));
    assert_eq!(leaky.allow(&mut s, 14, 1), ok(3));
}
