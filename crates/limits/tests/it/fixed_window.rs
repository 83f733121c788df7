//! The fixed window against its reference model and its invariant.

use limits::{Algorithm, Rule};
use limits_conformance::{
    allowed_by_key, case, check_retry_is_exact, compare_with_model, config, worst_window,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fixed_window_matches_reference(case in case(1)) {
        compare_with_model(Algorithm::FixedWindow, &case)?;
    }

    #[test]
    fn fixed_window_with_several_rates_matches_reference(case in case(3)) {
        compare_with_model(Algorithm::FixedWindow, &case)?;
    }

    #[test]
    fn fixed_window_retry_after_is_exact(case in case(2)) {
        check_retry_is_exact(Algorithm::FixedWindow, &case)?;
    }

    #[test]
    fn fixed_window_never_exceeds_twice_the_limit_in_any_window(case in case(1)) {
        let (limit, window) = case.rates[0];
        for allowed in allowed_by_key(Algorithm::FixedWindow, &case).values() {
            prop_assert!(worst_window(allowed, window) <= 2 * limit);
        }
    }
}

#[test]
fn fixed_window_lets_twice_the_limit_through_across_an_edge() {
    // The hole the sliding log closes: 10 at the end of one window and 10 at
    // the start of the next all pass, 20 within 200 ms.
    let rule = Rule::new(Algorithm::FixedWindow, "10/s".parse().unwrap());
    let mut state = rule.new_state();
    let ms = 1_000_000;
    let passed = (0..10)
        .map(|i| 900 * ms + i * 10 * ms)
        .chain((0..10).map(|i| 1000 * ms + i * 10 * ms))
        .filter(|&t| rule.check(&mut state, t, 1).allowed)
        .count();
    assert_eq!(passed, 20);
}

#[test]
fn fixed_window_windows_are_aligned_to_the_clock_zero() {
    let rule = Rule::new(Algorithm::FixedWindow, "1/s".parse().unwrap());
    let mut state = rule.new_state();
    assert!(rule.check(&mut state, 1_500_000_000, 1).allowed);
    let d = rule.check(&mut state, 1_600_000_000, 1);
    assert_eq!(d.retry_after.duration().unwrap().as_millis(), 400);
    assert!(rule.check(&mut state, 2_000_000_000, 1).allowed);
}
