//! The exact sliding log against its reference model, its invariants, and the
//! seed documents' examples.

use limits::{Algorithm, KeyedLimiter, ManualClock, Rule};
use limits_conformance::{
    allowed_by_key, case, check_retry_is_exact, compare_with_model, config, worst_window,
};
use proptest::prelude::*;
use std::time::Duration;

const SEC: u64 = 1_000_000_000;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sliding_log_matches_reference(case in case(1)) {
        compare_with_model(Algorithm::SlidingLog, &case)?;
    }

    #[test]
    fn sliding_log_with_several_rates_matches_reference(case in case(3)) {
        compare_with_model(Algorithm::SlidingLog, &case)?;
    }

    #[test]
    fn sliding_log_retry_after_is_exact(case in case(2)) {
        check_retry_is_exact(Algorithm::SlidingLog, &case)?;
    }

    #[test]
    fn sliding_log_never_exceeds_limit_in_any_window(case in case(1)) {
        let (limit, window) = case.rates[0];
        for (key, allowed) in allowed_by_key(Algorithm::SlidingLog, &case) {
            let worst = worst_window(&allowed, window);
            prop_assert!(worst <= limit, "key {} let {} through in one window", key, worst);
        }
    }

    #[test]
    fn sliding_log_memory_stays_within_limit_entries(case in case(1)) {
        let rule = case.rule(Algorithm::SlidingLog);
        let limit = case.rates[0].0 as usize;
        let mut state = rule.new_state();
        for e in case.events.iter().filter(|e| e.key == 0) {
            let before = rule.heap_bytes(&state);
            let d = rule.check(&mut state, e.t, e.cost);
            let after = rule.heap_bytes(&state);
            // At most L entries, each a time and (once a cost is not 1) a
            // running count, and one count before them.
            prop_assert!(after <= 16 * limit + 8, "{} bytes for a limit of {}", after, limit);
            if !d.allowed {
                prop_assert!(after <= before, "a denial grew the log");
            }
        }
    }
}

#[test]
fn sliding_log_rejected_requests_do_not_grow_the_log() {
    let rule = Rule::new(Algorithm::SlidingLog, "10/s".parse().unwrap());
    let mut state = rule.new_state();
    for i in 0..10 {
        assert!(rule.check(&mut state, i, 1).allowed);
    }
    let full = rule.heap_bytes(&state);
    for i in 0..10_000 {
        assert!(!rule.check(&mut state, 10 + i, 1).allowed);
    }
    assert_eq!(rule.heap_bytes(&state), full);
    assert_eq!(rule.peek(&mut state, 20_000, 1).remaining, 0);
}

#[test]
fn sliding_log_article_example_five_per_minute() {
    // Requests at 0, 10, 20, 30, 40 s pass; the sixth at 50 s is denied; at
    // 61 s the entry from 0 s has left the window and a request passes.
    let rule = Rule::new(Algorithm::SlidingLog, "5/minute".parse().unwrap());
    let mut state = rule.new_state();
    for t in [0, 10, 20, 30, 40] {
        assert!(rule.check(&mut state, t * SEC, 1).allowed);
    }
    let denied = rule.check(&mut state, 50 * SEC, 1);
    assert!(!denied.allowed);
    assert_eq!(denied.retry_after.duration(), Some(Duration::from_secs(10)));
    assert!(rule.check(&mut state, 61 * SEC, 1).allowed);
}

#[test]
fn sliding_log_entry_exactly_one_window_old_has_expired() {
    // The window is (t - W, t]: an entry at 0 no longer counts at t = W.
    let rule = Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap());
    let mut state = rule.new_state();
    assert!(rule.check(&mut state, 0, 1).allowed);
    assert!(!rule.check(&mut state, SEC - 1, 1).allowed);
    assert!(rule.check(&mut state, SEC, 1).allowed);
}

#[test]
fn sliding_log_threads_on_one_key_allow_exactly_the_limit() {
    let rule = Rule::new(Algorithm::SlidingLog, "1000/hour".parse().unwrap());
    let limiter: KeyedLimiter<String> = KeyedLimiter::new(rule);
    let allowed = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..500 {
                    if limiter.check("shared", 1).allowed {
                        allowed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(allowed.into_inner(), 1000);
}

#[test]
fn sliding_log_cost_above_limit_is_never_allowed() {
    let clock = ManualClock::new(0);
    let rule = Rule::new(Algorithm::SlidingLog, "3/s".parse().unwrap());
    let limiter: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule, clock);
    let d = limiter.check("k", 4);
    assert!(!d.allowed);
    assert!(d.retry_after.is_never());
    assert_eq!(d.remaining, 3);
    assert!(limiter.is_empty(), "a denied request must not create state");
}
