//! The core's own driver: a keyed limiter with a manual clock, compared with
//! the models decision by decision, synchronously, as proptest properties.
//! (Any [`Store`](limits::Store) is held to the same models by the
//! [`suite`](crate::suite).)

use crate::{Case, RuleModel};
use limits::{Algorithm, KeyedLimiter, ManualClock, Options, RetryAfter};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A keyed limiter for `case` with few shards and a manual clock.
pub fn limiter(case: &Case, algorithm: Algorithm) -> KeyedLimiter<u8, ManualClock> {
    let options = Options {
        max_keys: None,
        shards: 2,
    };
    KeyedLimiter::with_options(case.rule(algorithm), ManualClock::new(0), options)
}

/// Runs `case` through the real keyed limiter and through the reference
/// models, and fails at the first decision where any field differs.
pub fn compare_with_model(algorithm: Algorithm, case: &Case) -> Result<(), TestCaseError> {
    let real = limiter(case, algorithm);
    let mut models: BTreeMap<u8, RuleModel> = BTreeMap::new();
    for (i, e) in case.events.iter().enumerate() {
        let got = real.check_at(&e.key, e.t, e.cost);
        let model = models
            .entry(e.key)
            .or_insert_with(|| RuleModel::new(algorithm, &case.rates, case.burst));
        let want = model.decide(e.t, e.cost);
        prop_assert_eq!(got, want, "event #{} {:?} of {:?}", i, e, case);
    }
    Ok(())
}

/// Checks, for every denial in `case`, that the same request passes at exactly
/// now + retry_after and not one nanosecond earlier, with nothing else arriving.
pub fn check_retry_is_exact(algorithm: Algorithm, case: &Case) -> Result<(), TestCaseError> {
    let rule = case.rule(algorithm);
    let mut states: BTreeMap<u8, limits::KeyState> = BTreeMap::new();
    for e in &case.events {
        let state = states.entry(e.key).or_insert_with(|| rule.new_state());
        let d = rule.check(state, e.t, e.cost);
        if d.allowed {
            continue;
        }
        match d.retry_after {
            RetryAfter::Never => prop_assert!(e.cost > rule.max_cost()),
            RetryAfter::After(wait) => {
                let wait = wait.as_nanos() as u64;
                prop_assert!(wait >= 1);
                let mut later = state.clone();
                prop_assert!(
                    rule.peek(&mut later, e.t + wait, e.cost).allowed,
                    "{:?} at +{}",
                    e,
                    wait
                );
                let mut sooner = state.clone();
                prop_assert!(
                    !rule.peek(&mut sooner, e.t + wait - 1, e.cost).allowed,
                    "{:?} at +{}-1",
                    e,
                    wait
                );
            }
        }
    }
    Ok(())
}

/// Per key, the (time, cost) of every allowed request of `case`; the time is
/// the departure (arrival + delay), which differs only for the leaky bucket.
pub fn allowed_by_key(algorithm: Algorithm, case: &Case) -> BTreeMap<u8, Vec<(u64, u64)>> {
    let real = limiter(case, algorithm);
    let mut out: BTreeMap<u8, Vec<(u64, u64)>> = BTreeMap::new();
    for e in &case.events {
        let d = real.check_at(&e.key, e.t, e.cost);
        if d.allowed && e.cost > 0 {
            out.entry(e.key)
                .or_default()
                .push((e.t + d.delay.as_nanos() as u64, e.cost));
        }
    }
    out
}

/// Proptest settings for these suites.
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}
