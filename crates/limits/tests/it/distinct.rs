//! The limit on distinct values against its reference model, field for
//! field on random traces with times on the window's edges; its promise
//! (never more than N distinct values admitted within any window) as a
//! property; and forgetting idle keys, lossless.

use limits::{Distinct, DistinctLimiter, ManualClock, Mode, RetryAfter, Seen};
use limits_conformance::{DistinctModel, config};
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

/// A trace: (key, value, gap to the previous request, peek?), with gaps
/// of 0, W - 1, W, W + 1 and in between.
fn trace(window: u64) -> impl Strategy<Value = Vec<(u8, u64, u64, bool)>> {
    let gap = prop_oneof![
        3 => Just(0u64),
        1 => Just(window - 1),
        1 => Just(window),
        1 => Just(window + 1),
        1 => Just(1u64),
        4 => 0..window,
    ];
    prop::collection::vec((0u8..3, 0u64..6, gap, prop::bool::weighted(0.15)), 1..80)
}

fn answer(d: limits::Decision) -> limits_conformance::DistinctAnswer {
    limits_conformance::DistinctAnswer {
        allowed: d.allowed,
        remaining: d.remaining,
        retry_after: match d.retry_after {
            RetryAfter::After(w) if !d.allowed => Some(w),
            _ => None,
        },
        reset_after: d.reset_after,
        refill_after: d.refill_after,
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn distinct_matches_its_model(at_most in 1u64..5, window in 2u64..50, steps in trace(50)) {
        let rule = Distinct::new(at_most, Duration::from_nanos(window)).unwrap();
        let mut seen: HashMap<u8, Seen> = HashMap::new();
        let mut models: HashMap<u8, DistinctModel> = HashMap::new();
        let mut t = 0;
        for (key, value, gap, peek) in steps {
            t += gap;
            let mode = if peek { Mode::Peek } else { Mode::Record };
            let got = rule.decide(seen.entry(key).or_default(), value, t, mode);
            let want = models.entry(key).or_default().decide(at_most, window, value, t, !peek);
            prop_assert_eq!(answer(got), want, "key {} value {} at {}", key, value, t);
        }
    }

    #[test]
    fn never_more_than_at_most_distinct_values_in_any_window(
        at_most in 1u64..5, window in 2u64..50, steps in trace(50),
    ) {
        let rule = Distinct::new(at_most, Duration::from_nanos(window)).unwrap();
        let mut seen = Seen::default();
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        let mut t = 0;
        for (_, value, gap, _) in steps {
            t += gap;
            if rule.decide(&mut seen, value, t, Mode::Record).allowed {
                admitted.push((t, value));
            }
        }
        // Every window (s - W, s] ending at an admission.
        for &(end, _) in &admitted {
            let mut values: Vec<u64> = (admitted.iter())
                .filter(|&&(at, _)| at + window > end && at <= end)
                .map(|&(_, v)| v)
                .collect();
            values.sort();
            values.dedup();
            prop_assert!(values.len() as u64 <= at_most, "{:?} within {} of {}", values, window, end);
        }
    }

    #[test]
    fn sweeping_idle_keys_changes_no_decision(at_most in 1u64..4, steps in trace(30)) {
        let rule = Distinct::new(at_most, Duration::from_nanos(30)).unwrap();
        let swept: DistinctLimiter<u8, _> = DistinctLimiter::with_clock(rule, ManualClock::new(0));
        let kept: DistinctLimiter<u8, _> = DistinctLimiter::with_clock(rule, ManualClock::new(0));
        let mut t = 0;
        for (key, value, gap, _) in steps {
            t += gap;
            swept.sweep_at(t);
            prop_assert_eq!(swept.check_at(&key, &value, t), kept.check_at(&key, &value, t));
        }
    }
}

#[test]
fn a_repeated_value_is_free_and_keeps_counting_from_its_last_use() {
    let clock = ManualClock::new(0);
    let rule = Distinct::new(2, Duration::from_secs(10)).unwrap();
    let logins: DistinctLimiter<String, _> = DistinctLimiter::with_clock(rule, clock.clone());
    assert!(logins.check("ip", "alice").allowed);
    clock.advance(Duration::from_secs(6));
    assert!(logins.check("ip", "bob").allowed);
    assert!(
        logins.check("ip", "alice").allowed,
        "repeated: free, and refreshed"
    );
    let refused = logins.check("ip", "carol");
    assert_eq!(
        refused.retry_after.duration(),
        Some(Duration::from_secs(10)),
        "bob leaves at 16 s"
    );
    assert_eq!(refused.remaining, 0);
    clock.advance(Duration::from_secs(10));
    assert!(logins.check("ip", "carol").allowed);
    assert_eq!(logins.len(), 1);
    assert!(logins.value_bytes() >= 2 * 16);
}
