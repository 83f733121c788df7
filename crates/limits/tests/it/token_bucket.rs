//! The token bucket against its reference model, its burst invariant, and
//! exactness when the window is not divisible by the limit.

use limits::{Algorithm, Rule};
use limits_conformance::{allowed_by_key, case, check_retry_is_exact, compare_with_model, config};
use proptest::prelude::*;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn token_bucket_matches_reference(case in case(1)) {
        compare_with_model(Algorithm::TokenBucket, &case)?;
    }

    #[test]
    fn token_bucket_with_several_rates_matches_reference(case in case(3)) {
        compare_with_model(Algorithm::TokenBucket, &case)?;
    }

    #[test]
    fn token_bucket_retry_after_is_exact(case in case(2)) {
        check_retry_is_exact(Algorithm::TokenBucket, &case)?;
    }

    #[test]
    fn token_bucket_never_exceeds_burst_plus_refill_over_any_span(case in case(1)) {
        // Over any span [a, b]: allowed cost <= L + L * (b - a) / W.
        let (limit, window) = case.rates[0];
        for allowed in allowed_by_key(Algorithm::TokenBucket, &case).values() {
            for i in 0..allowed.len() {
                let mut sum = 0u128;
                for &(t, c) in &allowed[i..] {
                    sum += u128::from(c);
                    let span = u128::from(t - allowed[i].0);
                    let bound_times_w = u128::from(limit) * u128::from(window) + u128::from(limit) * span;
                    prop_assert!(sum * u128::from(window) <= bound_times_w);
                }
            }
        }
    }
}

#[test]
fn token_bucket_does_not_drift_when_window_is_not_divisible_by_limit() {
    // 3 per second: a token every 333,333,333 1/3 ns. A rounded emission
    // interval would drift by a nanosecond every three tokens; the exact one
    // hands out token k at exactly ceil(k * 10^9 / 3), for ever.
    let rule = Rule::new(Algorithm::TokenBucket, "3/s".parse().unwrap());
    let mut state = rule.new_state();
    for _ in 0..3 {
        assert!(rule.check(&mut state, 0, 1).allowed);
    }
    for k in 1..=3000u64 {
        let due = (k * 1_000_000_000).div_ceil(3);
        let early = rule.check(&mut state, due - 1, 1);
        assert!(!early.allowed, "token {k} early");
        assert_eq!(early.retry_after.duration().unwrap().as_nanos(), 1);
        assert!(rule.check(&mut state, due, 1).allowed, "token {k} late");
    }
}

#[test]
fn token_bucket_steady_twice_the_limit_allows_39_of_60() {
    // The seed chapter's steady pattern: 60 requests every 50 ms, 10 per s.
    let rule = Rule::new(Algorithm::TokenBucket, "10/s".parse().unwrap());
    let mut state = rule.new_state();
    let allowed = (0..60u64)
        .filter(|i| rule.check(&mut state, i * 50_000_000, 1).allowed)
        .count();
    assert_eq!(allowed, 39);
}
