//! The smoothed rate against its reference model, its window bound, and
//! what it promises in the large: a burst of the limit, then about the
//! limit per window.

use limits::{Algorithm, Rule};
use limits_conformance::{
    allowed_by_key, case, check_rate, check_retry_is_exact, compare_with_model, config,
};
use proptest::prelude::*;

const SECOND: u64 = 1_000_000_000;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn smoothed_rate_matches_reference(case in case(1)) {
        compare_with_model(Algorithm::SmoothedRate, &case)?;
    }

    #[test]
    fn smoothed_rate_with_several_rates_matches_reference(case in case(3)) {
        compare_with_model(Algorithm::SmoothedRate, &case)?;
    }

    #[test]
    fn smoothed_rate_retry_after_is_exact(case in case(2)) {
        check_retry_is_exact(Algorithm::SmoothedRate, &case)?;
    }

    #[test]
    fn smoothed_rate_never_passes_much_more_than_twice_the_limit_in_a_window(case in case(1)) {
        let (limit, window) = case.rates[0];
        for allowed in allowed_by_key(Algorithm::SmoothedRate, &case).values() {
            let checked = check_rate(Algorithm::SmoothedRate, allowed, limit, window);
            prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        }
    }
}

#[test]
fn a_burst_of_the_limit_passes_at_once_and_no_more() {
    let rule = Rule::new(Algorithm::SmoothedRate, "100/s".parse().unwrap());
    let mut state = rule.new_state();
    for i in 0..100 {
        assert!(rule.check(&mut state, 0, 1).allowed, "request {i}");
    }
    let denied = rule.check(&mut state, 0, 1);
    assert!(!denied.allowed);
    assert_eq!(denied.remaining, 0);
    // 100 decays to 99 in ln(100 / 99) of a second, 10.050 ms, and the
    // estimate decays by whole ticks of 10.58 us (a 65,536th of 0.693 s).
    let wait = denied.retry_after.duration().unwrap().as_nanos();
    assert!((10_050_000..10_061_000).contains(&wait), "{wait}");
}

#[test]
fn requests_as_fast_as_allowed_pass_at_about_the_limit_per_window() {
    // Each request as soon as it may: after the first burst, the estimate
    // decays by about the limit per window, and that is what passes.
    let rule = Rule::new(Algorithm::SmoothedRate, "100/s".parse().unwrap());
    let mut state = rule.new_state();
    let (mut now, mut passed_after_first_second) = (0, 0);
    while now < 11 * SECOND {
        let decision = rule.check(&mut state, now, 1);
        if decision.allowed {
            passed_after_first_second += u64::from(now >= SECOND);
        } else {
            now += decision.retry_after.duration().unwrap().as_nanos() as u64;
        }
    }
    // Ten seconds at 99.5 a second (the estimate between 99 and 100).
    assert!(
        (990..=1000).contains(&passed_after_first_second),
        "{passed_after_first_second}"
    );
}

#[test]
fn an_idle_key_is_forgotten_after_the_estimate_falls_below_a_sixteenth() {
    let rule = Rule::new(Algorithm::SmoothedRate, "10/s".parse().unwrap());
    let mut state = rule.new_state();
    assert!(rule.check(&mut state, 0, 8).allowed);
    let peek = rule.peek(&mut state.clone(), 0, 1);
    // 8 requests to a sixteenth: 7 half-lives of 0.693 s.
    let reset = peek.reset_after.as_nanos();
    assert!((4_852_000_000..4_853_000_000).contains(&reset), "{reset}");
    let fresh = rule.peek(&mut rule.new_state(), reset as u64, 10);
    let held = rule.peek(&mut state, reset as u64, 10);
    assert_eq!(held, fresh);
}
