//! The token bucket computes a decision's derived fields from one debt,
//! without the second `check` the default `refill_after` makes (issue 9):
//! they must equal the three separate functions, for any state and time,
//! the time before the state's (a clock read out of order) included.

use limits::algorithms::{RateAlgorithm, ScaledTime, TokenBucket, TokenBucketState};
use limits::Rate;
use limits_conformance::config;
use proptest::prelude::*;
use std::time::Duration;

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
        // Debts of every size: none, within the bucket, beyond it.
        let now = now >> 20;
        let scaled = u128::from(now) * u128::from(limit);
        let offset = match spread {
            0 => u128::from(full_at % 4),
            1 => u128::from(full_at) % (u128::from(limit) * u128::from(window) + 1),
            _ => u128::from(full_at) << 8,
        };
        let mut full_at = ScaledTime::default();
        full_at.set(scaled + offset);
        let state = TokenBucketState { full_at };
        let remaining = tb.remaining(&state, now);
        let want = (
            remaining,
            tb.reset_after(&state, now),
            tb.refill_after(&state, now, remaining),
        );
        prop_assert_eq!(tb.derived(&state, now), want);
    }
}
