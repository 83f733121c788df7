//! A keyed token bucket, leaky bucket or fixed window whose states the rule
//! bounds to 12 bytes keeps them packed in a 24-byte slot, and
//! any other rule in the 16-byte state's (`tests/it/slot_layout.rs` pins
//! which). Either way every key decides as the rule does on a `KeyState`
//! of its own (the wide arithmetic): every field of every decision,
//! `check`, `peek` and `allow`, through the clock or at given times, and
//! `export` / `import`; on random traces of rules on both sides of the
//! bounds (limits near 2^31 and 2^32, windows at the largest that fits and
//! just past it, the longest window, bursts likewise, times up to the end
//! of `u64` nanoseconds), and from loaded states at the decoder's bound.

use limits::{Algorithm, MAX_WINDOW, Rate, Rule};
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

use crate::keyed_trace;
use keyed_trace::{Op, expected_export, limiter, ops, run, start};

/// The largest window whose full times fit in 96 bits at `limit` (0 if
/// none does): `(u64::MAX + 2W) x L <= 2^96 - 1`.
fn widest_compact(limit: u64) -> u64 {
    let room = ((1u128 << 96) - 1) / u128::from(limit);
    (room.saturating_sub(u128::from(u64::MAX)) / 2).min(u128::from(u64::MAX)) as u64
}

fn limit() -> impl Strategy<Value = u64> {
    prop_oneof![
        1..=10u64,
        1..=1_000_000u64,
        (1 << 31) - 4..=(1u64 << 31) + 4,
        (1 << 32) - 4..=(1u64 << 32) + 2,
        (1 << 40)..=(1u64 << 41),
    ]
}

/// A window for `limit`: short, at the widest that fits in 96 bits (give
/// or take 2), or the longest there is.
fn window(limit: u64) -> impl Strategy<Value = u64> {
    let widest = widest_compact(limit);
    let longest = MAX_WINDOW.as_nanos() as u64;
    prop_oneof![
        1..=10u64,
        1..=2_000_000_000u64,
        (-2i64..=2).prop_map(move |d| widest.saturating_add_signed(d).clamp(1, longest)),
        longest - 2..=longest,
    ]
}

/// A single-rate rule of one of the three algorithms with 16-byte states;
/// a leaky bucket's burst is the limit, small, or about the largest whose
/// queue ends fit in 96 bits (give or take 2), or past it.
fn rule() -> impl Strategy<Value = Rule> {
    let algorithm = prop_oneof![
        Just(Algorithm::TokenBucket),
        Just(Algorithm::LeakyBucket),
        Just(Algorithm::FixedWindow),
    ];
    (algorithm, limit().prop_flat_map(|l| (Just(l), window(l))))
        .prop_flat_map(|(algorithm, (limit, window))| {
            // u64::MAX x L + (burst + 1) x W <= 2^96 - 1.
            let room = ((1u128 << 96) - 1).saturating_sub(u128::from(u64::MAX) * u128::from(limit));
            let widest = (room / u128::from(window)).min(u128::from(limits::MAX_LIMIT)) as u64;
            let burst = prop_oneof![
                Just(None),
                (0..=3u64).prop_map(Some),
                (-3i64..=1).prop_map(move |d| Some(widest.saturating_add_signed(d))),
            ];
            (Just(algorithm), Just(limit), Just(window), burst)
        })
        .prop_map(|(algorithm, limit, window, burst)| {
            let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
            let rule = Rule::new(algorithm, rate.into());
            match burst {
                Some(burst) if algorithm == Algorithm::LeakyBucket => rule.with_burst(burst),
                _ => rule,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// A random trace, an export, an import into a new limiter, and a second
    /// trace there: every answer the rule's own.
    #[test]
    fn a_keyed_limiter_decides_as_the_rule(
        rule in rule(),
        from in start(),
        first in ops(),
        second in ops(),
        shards in 1..=2usize,
    ) {
        let keyed = limiter(&rule, from, shards);
        let mut model = HashMap::new();
        let now = run(&rule, &keyed, &mut model, from, &first, 2)?;

        keyed.clock().set(now);
        let mut exported = keyed.export();
        exported.sort();
        let want = expected_export(&rule, &mut model, now);
        prop_assert_eq!(&exported, &want);

        // The rule's decoder reads every state back, a leaky bucket of burst
        // above 2L - 1 queued near the end of time included (regression: it
        // refused those past (u64::MAX + 2W) x L).
        for (key, words) in &want {
            prop_assert!(rule.decode_state(words).is_some(), "key {} not loadable: {:?}", key, words);
        }
        let loaded = limiter(&rule, now, shards);
        prop_assert_eq!(loaded.import(exported), want.len());
        let end = run(&rule, &loaded, &mut model, now, &second, 2)?;
        loaded.clock().set(end);
        let mut again = loaded.export();
        again.sort();
        prop_assert_eq!(again, expected_export(&rule, &mut model, end));
    }

    /// A state loaded at the largest the decoder accepts, or near it,
    /// decides as the rule's: at the edge of the compact bounds (where it
    /// holds 96 bits, or a count of 32) and past them (the wide table).
    #[test]
    fn loaded_states_at_the_decoder_s_bound_decide_as_the_rule(
        rule in rule(),
        below in 0..=3u64,
        at in u64::MAX - (1 << 34)..=u64::MAX,
        trace in ops(),
    ) {
        let rate = rule.rates().as_slice()[0];
        let (limit, window) = (rate.limit(), rate.window_nanos());
        // The most the decoder accepts, and one more: a bucket's scaled time
        // up to (u64::MAX + 2W) x L, or a leaky bucket's u64::MAX x L +
        // (burst + 1) x W if more; a window's count up to L, in any window
        // that starts within time.
        let (most, past) = if rule.algorithm() == Algorithm::FixedWindow {
            let index = u64::MAX / window - u64::min(below, u64::MAX / window);
            (vec![1, 1, index, limit], vec![1, 1, index, limit + 1])
        } else {
            let tag = if rule.algorithm() == Algorithm::TokenBucket { 3 } else { 5 };
            let (end, w, l) = (u128::from(u64::MAX), u128::from(window), u128::from(limit));
            let burst = rule.burst().unwrap_or(limit).min(limits::MAX_LIMIT);
            let queued = match rule.algorithm() {
                Algorithm::LeakyBucket => end * l + u128::from(burst + 1) * w,
                _ => 0,
            };
            let most = ((end + 2 * w) * l).max(queued);
            let words = |t: u128| vec![tag, 1, (t >> 64) as u64, t as u64];
            (words(most - u128::from(below)), words(most + 1))
        };
        // The decoder's bound is the one the compact tables were sized for.
        prop_assert!(rule.decode_state(&past).is_none());
        let mut state = rule.decode_state(&most).unwrap();
        prop_assert_eq!(rule.encode_state(&state), most.clone());

        let keyed = limiter(&rule, at, 1);
        let idle = rule.is_idle(&mut state, at);
        prop_assert_eq!(keyed.import([(7, most)]), usize::from(!idle));
        let mut model = HashMap::from([(7, state)]);
        let trace: Vec<Op> = trace.into_iter().map(|(_, step, cost, call)| (7, step, cost, call)).collect();
        let end = run(&rule, &keyed, &mut model, at, &trace, 2)?;
        keyed.clock().set(end);
        let mut exported = keyed.export();
        exported.sort();
        prop_assert_eq!(exported, expected_export(&rule, &mut model, end));
    }
}
