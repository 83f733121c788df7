//! Strategies for the edges random traces rarely reach, shared by the
//! fused-path tests (`token_bucket_decide.rs`, `other_limiters_decide.rs`,
//! `decide_fast_path_edges.rs`): limits and
//! windows up to their maxima, times near zero and the end of `u64`
//! nanoseconds, costs around 0, 1 and the most that can pass, and states
//! either side of where a request just fits.

#![allow(dead_code)]

use limits::algorithms::RateAlgorithm;
use limits::{Decision, KeyedLimiter, ManualClock, Options, RetryAfter, Rule};
use limits::{MAX_LIMIT, MAX_WINDOW};
use proptest::prelude::*;
use std::time::Duration;

/// What `allow` answers, read from a whole decision.
pub fn verdict_of(d: &Decision) -> Result<Duration, RetryAfter> {
    if d.allowed {
        Ok(d.delay)
    } else {
        Err(d.retry_after)
    }
}

/// A limit (or burst): small, the largest, or anything in between.
pub fn limit() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..=4, Just(MAX_LIMIT), 1..=MAX_LIMIT]
}

/// A window in nanoseconds: one, the longest, or anything in between.
pub fn window() -> impl Strategy<Value = u64> {
    let max = MAX_WINDOW.as_nanos() as u64;
    prop_oneof![Just(1u64), 1u64..=1_000, Just(max), 1..=max]
}

/// A time: near zero, near the end of time, or anywhere.
pub fn time() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..=10, u64::MAX - 10..=u64::MAX, any::<u64>()]
}

/// A cost around the edges 0, 1, `cap` (the largest that can pass) and
/// `cap + 1`.
pub fn cost(cap: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(cap),
        Just(cap.saturating_add(1)),
        0..=cap.saturating_add(1)
    ]
}

/// `base` moved by `d`, kept within `0..=most`.
pub fn near(base: u128, d: i128, most: u128) -> u128 {
    base.saturating_add_signed(d).min(most)
}

/// A rule's tag word, the first of any state it encodes.
pub fn tag(rule: &Rule) -> u64 {
    rule.encode_state(&rule.new_state())[0]
}

/// A window's count: anywhere in `0..=limit` (from `raw`), or with `fit`,
/// within 1 of where `cost` just fits (`limit - cost`).
pub fn count_near_fit(raw: u64, fit: Option<i128>, limit: u64, cost: u64) -> u64 {
    match fit {
        None => raw % (limit + 1),
        Some(d) => near(u128::from(limit.saturating_sub(cost)), d, limit.into()) as u64,
    }
}

/// A leaky bucket's queue end (ns x L) and the largest one its state
/// accepts: anywhere (from `raw`), or with `edge` within 2 of where `at`
/// decides: the queue empty at `at`, or (`edge.0`) a request of `cost`
/// departing just within the burst, at `at + burst * T`.
pub fn leaky_queue_end(
    (limit, window, burst, cost): (u64, u64, u64, u64),
    at: u64,
    raw: u128,
    edge: Option<(bool, i128)>,
) -> (u128, u128) {
    let (l, w) = (u128::from(limit), u128::from(window));
    let most = (u128::from(u64::MAX) + 2 * w) * l;
    let end = match edge {
        None => raw % (most + 1),
        Some((fits, d)) => {
            let mut base = u128::from(at) * l;
            if fits {
                base = (base + u128::from(burst) * w)
                    .saturating_sub(u128::from(cost.saturating_sub(1)) * w);
            }
            near(base, d, most)
        }
    };
    (end, most)
}

/// `allow` from the state `words` encode (if the rule accepts them) at each
/// of `times` answers `check`'s verdict, leaves its state, and keeps the key
/// in a keyed limiter exactly when `check` does (the admission's idle
/// answer), and `Rule::is_idle` says a cost-0 check's `reset_after` is
/// zero; `busy` encodes a state that stays busy at any time.
pub fn same_as_check(
    rule: &Rule,
    words: &[u64],
    busy: &[u64],
    times: &[u64],
    cost: u64,
) -> Result<(), TestCaseError> {
    let state = rule.decode_state(words);
    prop_assume!(state.is_some());
    let state = state.unwrap();
    for &now in times {
        let (mut fast, mut full) = (state.clone(), state.clone());
        let got = rule.allow(&mut fast, now, cost);
        let want = rule.check(&mut full, now, cost);
        prop_assert_eq!(got, verdict_of(&want), "at {}", now);
        prop_assert_eq!(rule.encode_state(&fast), rule.encode_state(&full));

        let twin = |allow: bool| {
            let one_shard = Options {
                max_keys: None,
                shards: 1,
            };
            let limiter: KeyedLimiter<u8, _> =
                KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), one_shard);
            // A busy key first in the table, so that the sweep after the
            // request stops at it and what drops key 1 is the admission's
            // own idle answer.
            limiter.import([(0u8, busy.to_vec()), (1u8, words.to_vec())]);
            if allow {
                let _ = limiter.allow_at(&1, now, cost);
            } else {
                limiter.check_at(&1, now, cost);
            }
            let mut states = limiter.export();
            states.sort();
            (limiter.len(), states)
        };
        prop_assert_eq!(twin(true), twin(false), "at {}", now);

        // The sweep's idle test is a zero `reset_after`, and rolls the
        // state as a cost-0 check does.
        let (mut swept, mut full) = (state.clone(), state.clone());
        let idle = rule.is_idle(&mut swept, now);
        prop_assert_eq!(idle, rule.check(&mut full, now, 0).reset_after.is_zero());
        prop_assert_eq!(rule.encode_state(&swept), rule.encode_state(&full));
    }
    Ok(())
}

/// The general path's decision for one rate: its steps, one by one.
pub fn general<A: RateAlgorithm>(
    a: &A,
    s: &mut A::State,
    now: u64,
    cost: u64,
    record: bool,
) -> Decision {
    let t = a.advance(s, now);
    let verdict = if cost == 0 {
        Ok(())
    } else {
        a.check(s, t, cost)
    };
    let mut d = Decision::allow(0);
    match verdict {
        Ok(()) => {
            d.delay = Duration::from_nanos(a.delay(s, t, cost));
            if record && cost > 0 {
                a.record(s, t, cost);
            }
        }
        Err(wait) => {
            d.allowed = false;
            d.retry_after = wait;
        }
    }
    d.remaining = a.remaining(s, t);
    d.reset_after = Duration::from_nanos(a.reset_after(s, t));
    d.refill_after = Duration::from_nanos(a.refill_after(s, t, d.remaining));
    d
}
