//! The sliding window counter against its reference model, and the bound of
//! the seed chapter's exercise: never more than 2L in any window.

use limits::{Algorithm, Rule};
use limits_conformance::{
    allowed_by_key, case, check_retry_is_exact, compare_with_model, config, worst_window,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sliding_window_matches_reference(case in case(1)) {
        compare_with_model(Algorithm::SlidingWindow, &case)?;
    }

    #[test]
    fn sliding_window_with_several_rates_matches_reference(case in case(3)) {
        compare_with_model(Algorithm::SlidingWindow, &case)?;
    }

    #[test]
    fn sliding_window_retry_after_is_exact(case in case(2)) {
        check_retry_is_exact(Algorithm::SlidingWindow, &case)?;
    }

    #[test]
    fn sliding_window_never_exceeds_twice_the_limit_in_any_window(case in case(1)) {
        let (limit, window) = case.rates[0];
        for allowed in allowed_by_key(Algorithm::SlidingWindow, &case).values() {
            prop_assert!(worst_window(allowed, window) <= 2 * limit);
        }
    }
}

#[test]
fn sliding_window_weighs_the_previous_window_exactly() {
    // 10 in the first window; a quarter into the next, the estimate is
    // 10 * 3/4 = 7.5, so 2 more pass (9.5 <= 10) and the third does not.
    let rule = Rule::new(Algorithm::SlidingWindow, "10/s".parse().unwrap());
    let mut state = rule.new_state();
    for i in 0..10 {
        assert!(rule.check(&mut state, i, 1).allowed);
    }
    let quarter = 1_250_000_000;
    assert!(rule.check(&mut state, quarter, 1).allowed);
    let d = rule.check(&mut state, quarter, 1);
    assert!(d.allowed);
    assert_eq!(d.remaining, 0); // floor(10 - 9.5)
    let denied = rule.check(&mut state, quarter, 1);
    assert!(!denied.allowed);
    // 10 * (1 - e) + 2 + 1 <= 10  <=>  e >= 0.3: 50 ms later.
    assert_eq!(denied.retry_after.duration().unwrap().as_millis(), 50);
}

/// Regression: at the last window of time (index u64::MAX, as with a 1 ns
/// window at t = u64::MAX), the window after the state's saturated to the
/// state's own, so every request was taken for the first of a new window
/// and none was ever denied.
#[test]
fn sliding_window_limits_in_the_last_window_of_time() {
    let rule = Rule::new(Algorithm::SlidingWindow, "2/1ns".parse().unwrap());
    let mut state = rule.new_state();
    let keyed = limits::KeyedLimiter::new(rule.clone());
    let mut allowed = Vec::new();
    for _ in 0..5 {
        let one = rule.check(&mut state, u64::MAX, 1);
        let by_key = keyed.check_at("k", u64::MAX, 1);
        assert_eq!(one, by_key);
        allowed.push(one.allowed);
    }
    assert_eq!(allowed, [true, true, false, false, false]);
}
