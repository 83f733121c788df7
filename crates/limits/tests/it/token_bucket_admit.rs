//! The token bucket's fused admission (`Rule::allow` for a one-rate token
//! bucket: one comparison of the full time against now plus the tolerance,
//! then the record and the idle test in the same pass) answers what the
//! whole decision does at the edges random traces rarely reach: costs of 0,
//! exactly L and above L; limits and windows up to `MAX_LIMIT` and
//! `MAX_WINDOW`; times up to the end of `u64` nanoseconds; any full time a
//! state file may hold; a time before the state's (issue 9).

use limits::{Algorithm, Rate, RetryAfter, Rule};
use proptest::prelude::*;
use std::time::Duration;

use crate::edges;
use edges::{cost, limit, same_as_check, time, window};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// From a state holding any full time the state file accepts, a request
    /// of any cost at any time: `allow` answers `check`'s verdict and leaves
    /// its state, and the key is kept by a keyed limiter exactly when
    /// `check`'s limiter keeps it (the admission's idle answer).
    #[test]
    fn fused_admission_equals_check(
        (limit, window, cost) in (limit(), window())
            .prop_flat_map(|(l, w)| (Just(l), Just(w), cost(l))),
        raw in any::<u128>(),
        near in prop::option::of((any::<bool>(), -2i128..=2)),
        at in time(),
        then in time(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::TokenBucket, rate.into());
        let tag = rule.encode_state(&rule.new_state())[0];
        // A reachable full time: at most the end of time's, plus a full bucket.
        let most = u128::from(u64::MAX) * u128::from(limit) + u128::from(limit) * u128::from(window);
        // Anywhere, or within 2 of where `at` decides: the full time at `at`
        // (idle or not) or at `at` plus the tolerance of `cost` (pass or not).
        let full_at = match near {
            None => raw % (most + 1),
            Some((edge, d)) => {
                let mut base = u128::from(at) * u128::from(limit);
                if edge {
                    base += u128::from(limit.saturating_sub(cost)) * u128::from(window);
                }
                base.saturating_add_signed(d).min(most)
            }
        };
        let words = [tag, 1, (full_at >> 64) as u64, full_at as u64];
        // A key that stays busy at any time.
        let busy = [tag, 1, (most >> 64) as u64, most as u64];
        same_as_check(&rule, &words, &busy, &[at, then], cost)?;
    }
}

/// Written out: a bucket of 3 per 3 ns (one token per ns) at the edges of
/// cost and time, each answer the decision's.
#[test]
fn fused_admission_at_written_edges() {
    let rule = Rule::new(
        Algorithm::TokenBucket,
        Rate::new(3, Duration::from_nanos(3)).unwrap().into(),
    );
    let mut state = rule.new_state();
    let never = Err(RetryAfter::Never);
    let after = |n| Err(RetryAfter::After(Duration::from_nanos(n)));
    assert_eq!(rule.allow(&mut state, 10, 4), never);
    assert_eq!(rule.allow(&mut state, 10, 0), Ok(Duration::ZERO));
    assert_eq!(rule.allow(&mut state, 10, 3), Ok(Duration::ZERO));
    assert_eq!(rule.allow(&mut state, 10, 0), Ok(Duration::ZERO));
    assert_eq!(rule.allow(&mut state, 10, 1), after(1));
    assert_eq!(rule.allow(&mut state, 10, 3), after(3));
    // Earlier than the state's time: decided at it, as `check` does.
    assert_eq!(rule.allow(&mut state, 5, 1), after(6));
    assert_eq!(rule.allow(&mut state, 11, 1), Ok(Duration::ZERO));
    assert_eq!(rule.allow(&mut state, 13, 3), after(1));
    assert_eq!(rule.allow(&mut state, 14, 3), Ok(Duration::ZERO));
    assert_eq!(rule.allow(&mut state, u64::MAX, 3), Ok(Duration::ZERO));
    assert_eq!(rule.allow(&mut state, u64::MAX, 1), after(1));
}
