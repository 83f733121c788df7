//! The token bucket's fused decision (`Rule::check` and `Rule::peek` of a
//! one-rate token bucket: the GCRA test, the record and the derived fields
//! in one pass) answers what the general, several-rate path answers for the
//! same rate, field by field, at the edges random traces rarely reach:
//! costs of 0, 1, L and L + 1; limits and windows up to `MAX_LIMIT` and
//! `MAX_WINDOW`; times near 0 and the end of `u64` nanoseconds; any full
//! time a state file may hold, and full times within 2 of where the verdict,
//! `remaining` and the idle answer turn.
//!
//! The general path is reached through a two-rate rule whose second rate
//! never binds (`MAX_LIMIT` per nanosecond, its state empty): its first
//! rate's own decision, as `decide` reports it to `each`, is computed by
//! the step-by-step functions, and its state is the first rate's.

use limits::MAX_LIMIT;
use limits::algorithms::{RateAlgorithm, ScaledTime, TokenBucket, TokenBucketState};
use limits::{Algorithm, Decision, Mode, Rate, Rates, Rule};
use proptest::prelude::*;
use std::time::Duration;

use crate::edges;
use edges::{cost, limit, time, window};

/// The one-rate rule's decision and state words, and the general path's
/// decision of the same rate and its state words, from `full_at` at `now`.
fn both(
    rate: Rate,
    full_at: u128,
    now: u64,
    cost: u64,
    mode: Mode,
) -> Option<[(Decision, Vec<u64>); 2]> {
    let one = Rule::new(Algorithm::TokenBucket, rate.into());
    let never_binds = Rate::new(MAX_LIMIT, Duration::from_nanos(1)).unwrap();
    let two = Rule::new(
        Algorithm::TokenBucket,
        Rates::new(vec![rate, never_binds]).unwrap(),
    );
    let tag = one.encode_state(&one.new_state())[0];
    let (hi, lo) = ((full_at >> 64) as u64, full_at as u64);

    let mut state = one.decode_state(&[tag, 1, hi, lo])?;
    let fused = one.decide(&mut state, now, cost, mode, |_| {});
    let fused_words = one.encode_state(&state);

    let mut state = two.decode_state(&[tag, 2, hi, lo, 0, 0])?;
    let mut first = None;
    two.decide(&mut state, now, cost, mode, |d| {
        first.get_or_insert(d);
    });
    let words = two.encode_state(&state);
    let general_words = vec![tag, 1, words[2], words[3]];
    Some([(fused, fused_words), (first?, general_words)])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every field of the decision and the state left, checked and peeked.
    #[test]
    fn fused_decision_equals_general_path(
        (limit, window, cost) in (limit(), window())
            .prop_flat_map(|(l, w)| (Just(l), Just(w), cost(l))),
        raw in any::<u128>(),
        near in prop::option::of((0u8..3, -2i128..=2)),
        now in time(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let (l, w) = (u128::from(limit), u128::from(window));
        // A reachable full time: at most the end of time's, plus a full bucket.
        let most = u128::from(u64::MAX) * l + l * w;
        // Anywhere, or within 2 of an edge at `now`: full (idle), the pass
        // test of `cost`, or a whole number of tokens missing (`remaining`).
        let now_scaled = u128::from(now) * l;
        let full_at = match near {
            None => raw % (most + 1),
            Some((edge, d)) => {
                let base = match edge {
                    0 => now_scaled,
                    1 => now_scaled + u128::from(limit.saturating_sub(cost)) * w,
                    _ => now_scaled + (raw % (l + 1)) * w,
                };
                base.saturating_add_signed(d).min(most)
            }
        };
        for mode in [Mode::Record, Mode::Peek] {
            let got = both(rate, full_at, now, cost, mode);
            prop_assume!(got.is_some());
            let [fused, general] = got.unwrap();
            prop_assert_eq!(&fused, &general, "{:?} at {}", mode, now);
            // The derived fields, each from its own step function (the
            // refill through a second `check`) on the state left.
            let (d, words) = fused;
            let tb = TokenBucket::new(rate);
            let s = TokenBucketState { full_at: ScaledTime([words[2], words[3]]) };
            let remaining = tb.remaining(&s, now);
            prop_assert_eq!(d.remaining, remaining);
            prop_assert_eq!(d.reset_after, Duration::from_nanos(tb.reset_after(&s, now)));
            prop_assert_eq!(
                d.refill_after,
                Duration::from_nanos(tb.refill_after(&s, now, remaining))
            );
        }
    }
}

/// Written out: a bucket of 3 per 3 ns (one token per ns), each field.
#[test]
fn fused_decision_at_written_edges() {
    let rule = Rule::new(
        Algorithm::TokenBucket,
        Rate::new(3, Duration::from_nanos(3)).unwrap().into(),
    );
    let mut state = rule.new_state();
    let ns = Duration::from_nanos;
    let d = rule.check(&mut state, 10, 2);
    assert!(d.allowed);
    assert_eq!(
        (d.remaining, d.reset_after, d.refill_after),
        (1, ns(2), ns(1))
    );
    let d = rule.check(&mut state, 10, 2);
    assert!(!d.allowed);
    assert_eq!(d.retry_after.duration(), Some(ns(1)));
    assert_eq!(
        (d.remaining, d.reset_after, d.refill_after),
        (1, ns(2), ns(1))
    );
    let d = rule.peek(&mut state, 12, 0);
    assert!(d.allowed);
    assert_eq!(
        (d.remaining, d.reset_after, d.refill_after),
        (3, ns(0), ns(0))
    );
    let d = rule.check(&mut state, 12, 4);
    assert!(!d.allowed && d.retry_after.duration().is_none());
}
