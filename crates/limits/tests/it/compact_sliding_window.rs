//! A keyed sliding window whose rule bounds its states to 96 bits keeps
//! them packed in a 24-byte slot, and any other rule in the
//! 40-byte slot of its three words: `n + 2b <= 96`, with `b` the bits of
//! the limit (both counts stay at most L) and `n` those of `u64::MAX / W`
//! (the largest index whose window starts within time). Either way every
//! key decides as the rule does on a `KeyState` of its own: every field of
//! `check`, `peek` and `allow`, through the clock or at given times, and
//! `export` / `import`; on random traces of rules on both sides of the
//! bound (windows at and around the powers of two where `n` steps, limits
//! at the largest that fits and the next, times up to the end of `u64`
//! nanoseconds), and from loaded states at the decoder's bound (the last
//! index, both counts at L).

use limits::{Algorithm, Rate, Rule};
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

use crate::keyed_trace;
use keyed_trace::{Op, expected_export, limiter, ops, run, start};

/// The bits of `x`.
fn bits(x: u64) -> u32 {
    u64::BITS - x.leading_zeros()
}

/// The largest limit whose states pack at window `w` (0 if none), capped
/// at `limits::MAX_LIMIT`.
fn most_compact(w: u64) -> u64 {
    let count_bits = (96 - bits(u64::MAX / w)) / 2;
    ((1u64 << count_bits) - 1).min(limits::MAX_LIMIT)
}

fn longest() -> u64 {
    limits::MAX_WINDOW.as_nanos() as u64
}

/// A window: short, about 1 s, or at a power of two (give or take 1),
/// where the index's bits step.
fn window() -> impl Strategy<Value = u64> {
    let longest = longest();
    prop_oneof![
        1..=10u64,
        999_999_990..=1_000_000_010u64,
        (0..=62u32, -1i64..=1)
            .prop_map(move |(k, d)| (1u64 << k).saturating_add_signed(d).clamp(1, longest)),
        longest - 2..=longest,
    ]
}

/// A sliding window rule: a small limit, or the largest that packs at its
/// window (give or take 2), past which it takes the wide slot.
fn rule() -> impl Strategy<Value = Rule> {
    window()
        .prop_flat_map(|w| {
            let most = most_compact(w);
            let limit = prop_oneof![
                1..=10u64,
                (1 << 16) - 2..=(1u64 << 16) + 1,
                (-2i64..=2)
                    .prop_map(move |d| most.saturating_add_signed(d).clamp(1, limits::MAX_LIMIT)),
            ];
            (Just(w), limit)
        })
        .prop_map(|(w, l)| {
            let rate = Rate::new(l, Duration::from_nanos(w)).unwrap();
            Rule::new(Algorithm::SlidingWindow, rate.into())
        })
}

/// A `u64` key's slot under `rule`: 4096 keys' bytes in one shard, less a
/// token bucket's (24-byte slots) at the same count, per key.
fn slot_of(rule: Rule) -> f64 {
    fn bytes(rule: Rule) -> usize {
        let limiter = limiter(&rule, 0, 1);
        for key in 0..4096 {
            limiter.check_at(&key, 0, 1);
        }
        assert_eq!(limiter.len(), 4096);
        limiter.memory().bytes
    }
    let token = Rule::new(Algorithm::TokenBucket, "10/hour".parse().unwrap());
    let table = bytes(token) - 4096 * 24;
    (bytes(rule) - table) as f64 / 4096.0
}

fn window_slot(limit: u64, window: u64) -> f64 {
    let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
    slot_of(Rule::new(Algorithm::SlidingWindow, rate.into()))
}

#[test]
fn rules_past_96_bits_keep_the_wide_slot() {
    // W = 1 s: u64::MAX / W < 2^35 (35 bits), so counts of 30 bits pack.
    let second = 1_000_000_000;
    assert_eq!(window_slot(1, second), 24.0);
    assert_eq!(window_slot((1 << 30) - 1, second), 24.0);
    assert_eq!(window_slot(1 << 30, second), 40.0);
    // W = 2^k: u64::MAX / W = 2^(64 - k) - 1, 64 - k bits; one less than a
    // power of two takes one bit more.
    for k in [0u32, 1, 20, 30, 31, 40, 50] {
        let w = 1u64 << k;
        let counts = (96 - (64 - k)) / 2;
        if (1u64 << counts) - 1 > limits::MAX_LIMIT {
            continue;
        }
        assert_eq!(window_slot((1 << counts) - 1, w), 24.0, "W = 2^{k}");
        assert_eq!(window_slot(1 << counts, w), 40.0, "W = 2^{k}");
        if k > 1 && (64 - k) % 2 == 0 {
            // n = 65 - k is odd: the same limit no longer packs.
            assert_eq!(window_slot((1 << counts) - 1, w - 1), 40.0, "W = 2^{k} - 1");
            assert_eq!(
                window_slot((1 << (counts - 1)) - 1, w - 1),
                24.0,
                "W = 2^{k} - 1"
            );
        }
    }
    // The longest window packs any limit up to 2^(96 - n) / 2.
    let w = longest();
    let most = most_compact(w);
    assert_eq!(window_slot(most, w), 24.0);
    if most < limits::MAX_LIMIT {
        assert_eq!(window_slot(most + 1, w), 40.0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// A random trace, an export, an import into a new limiter, and a second
    /// trace there: every answer the rule's own.
    #[test]
    fn a_keyed_sliding_window_decides_as_the_rule(
        rule in rule(),
        from in start(),
        first in ops(),
        second in ops(),
        shards in 1..=2usize,
    ) {
        let keyed = limiter(&rule, from, shards);
        let mut model = HashMap::new();
        let now = run(&rule, &keyed, &mut model, from, &first, 3)?;

        keyed.clock().set(now);
        let mut exported = keyed.export();
        exported.sort();
        let want = expected_export(&rule, &mut model, now);
        prop_assert_eq!(&exported, &want);
        let loaded = limiter(&rule, now, shards);
        prop_assert_eq!(loaded.import(exported), want.len());
        let end = run(&rule, &loaded, &mut model, now, &second, 3)?;
        loaded.clock().set(end);
        let mut again = loaded.export();
        again.sort();
        prop_assert_eq!(again, expected_export(&rule, &mut model, end));
    }

    /// A state loaded at the largest the decoder accepts, or near it (the
    /// last index whose window starts within time, counts at or near L),
    /// imports and decides as the rule's; one count past L is refused.
    #[test]
    fn loaded_states_at_the_decoder_s_bound_decide_as_the_rule(
        rule in rule(),
        below in (0..=2u64, 0..=2u64, 0..=2u64),
        at in u64::MAX - (1 << 34)..=u64::MAX,
        trace in ops(),
    ) {
        let rate = rule.rates().as_slice()[0];
        let (l, w) = (rate.limit(), rate.window_nanos());
        let tag = rule.encode_state(&rule.new_state())[0];
        let last = u64::MAX / w;
        let words = |index: u64, previous: u64, current: u64| {
            vec![tag, 1, index, previous, current]
        };
        // A current count of at least 1: a state of no count in a window
        // after the clock's is idle, and `import` drops it as the sweep
        // would (a fresh key then decides from the clock's window, the
        // rule's state from its own), in either table.
        let most = words(
            last.saturating_sub(below.0),
            l.saturating_sub(below.1),
            l.saturating_sub(below.2).max(1),
        );
        prop_assert!(rule.decode_state(&words(last, l + 1, 0)).is_none());
        prop_assert!(rule.decode_state(&words(last, 0, l + 1)).is_none());
        if let Some(past) = last.checked_add(1) {
            prop_assert!(rule.decode_state(&words(past, 0, 0)).is_none());
        }
        let mut state = rule.decode_state(&most).unwrap();
        prop_assert_eq!(rule.encode_state(&state), most.clone());

        let keyed = limiter(&rule, at, 1);
        let idle = rule.is_idle(&mut state, at);
        prop_assert_eq!(keyed.import([(7, most)]), usize::from(!idle));
        let mut model = HashMap::from([(7, state)]);
        let trace: Vec<Op> = trace.into_iter().map(|(_, step, cost, call)| (7, step, cost, call)).collect();
        let end = run(&rule, &keyed, &mut model, at, &trace, 3)?;
        keyed.clock().set(end);
        let mut exported = keyed.export();
        exported.sort();
        prop_assert_eq!(exported, expected_export(&rule, &mut model, end));
    }
}
