//! Both buckets compute a decision's derived fields from one debt (the
//! token bucket's tokens missing, the leaky bucket's queue), without the
//! second `check` the default `refill_after` makes: they must equal the
//! three separate functions, for any state and time, the time before the
//! state's (a clock read out of order) included.

use limits::Rate;
use limits::algorithms::{
    LeakyBucket, LeakyBucketState, RateAlgorithm, ScaledTime, TokenBucket, TokenBucketState,
};
use limits_conformance::config;
use proptest::prelude::*;
use std::time::Duration;

/// A scaled time `offset` away from `now * L`, for debts of every size:
/// none, within the bucket, beyond it.
fn scaled_at(now: u64, limit: u64, window: u64, raw: u64, spread: u32) -> ScaledTime {
    let scaled = u128::from(now) * u128::from(limit);
    let offset = match spread {
        0 => u128::from(raw % 4),
        1 => u128::from(raw) % (u128::from(limit) * u128::from(window) + 1),
        _ => u128::from(raw) << 8,
    };
    let mut t = ScaledTime::default();
    t.set(scaled + offset);
    t
}

/// `derived` against `remaining`, `reset_after` and `refill_after`.
fn separately<A: RateAlgorithm>(a: &A, state: &A::State, now: u64) -> (u64, u64, u64) {
    let remaining = a.remaining(state, now);
    (
        remaining,
        a.reset_after(state, now),
        a.refill_after(state, now, remaining),
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn derived_fields_equal_the_separate_functions(
        limit in 1u64..2_000,
        window in 1u64..10_000_000_000,
        full_at in any::<u64>(),
        now in any::<u64>(),
        spread in 0u32..3,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let tb = TokenBucket::new(rate);
        let now = now >> 20;
        let state = TokenBucketState { full_at: scaled_at(now, limit, window, full_at, spread) };
        prop_assert_eq!(tb.derived(&state, now), separately(&tb, &state, now));
    }

    #[test]
    fn leaky_derived_fields_equal_the_separate_functions(
        limit in 1u64..2_000,
        window in 1u64..10_000_000_000,
        burst in 0u64..3_000,
        next_slot in any::<u64>(),
        now in any::<u64>(),
        spread in 0u32..3,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let lb = LeakyBucket::new(rate, burst);
        let now = now >> 20;
        let state = LeakyBucketState { next_slot: scaled_at(now, limit, window, next_slot, spread) };
        prop_assert_eq!(lb.derived(&state, now), separately(&lb, &state, now));
    }
}
