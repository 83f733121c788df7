//! The verdict-only fast path (`Rule::allow`, `KeyedLimiter::allow`) answers
//! exactly what the whole decision (`check`) does: the same verdict, the
//! same wait and delay to the nanosecond, the same state left behind, the
//! same keys tracked, dropped and evicted (issue 9). Every algorithm, one
//! rate and several, on random traces.

use limits::{Algorithm, Decision, KeyState, KeyedLimiter, ManualClock, Options, RetryAfter, Rule};
use limits_conformance::{case, config};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

/// The fields of a decision the fast path answers, in its form.
fn verdict_of(d: &Decision) -> Result<Duration, RetryAfter> {
    if d.allowed {
        Ok(d.delay)
    } else {
        Err(d.retry_after)
    }
}

fn limiter(rule: Rule, shards: usize, max_keys: Option<usize>) -> KeyedLimiter<u8, ManualClock> {
    KeyedLimiter::with_options(rule, ManualClock::new(0), Options { max_keys, shards })
}

/// Every key's state as numbers, sorted by key.
fn states(limiter: &KeyedLimiter<u8, ManualClock>) -> Vec<(u8, Vec<u64>)> {
    let mut all = limiter.export();
    all.sort();
    all
}

proptest! {
    #![proptest_config(config())]

    /// `Rule::allow` and `Rule::check` on twin states: the same answer and
    /// the same state after every request.
    #[test]
    fn rule_allow_equals_check(algorithm in algorithm(), case in case(3)) {
        let rule = case.rule(algorithm);
        let mut fast: BTreeMap<u8, KeyState> = BTreeMap::new();
        let mut full: BTreeMap<u8, KeyState> = BTreeMap::new();
        for (i, e) in case.events.iter().enumerate() {
            let f = fast.entry(e.key).or_insert_with(|| rule.new_state());
            let got = rule.allow(f, e.t, e.cost);
            let d = full.entry(e.key).or_insert_with(|| rule.new_state());
            let want = rule.check(d, e.t, e.cost);
            prop_assert_eq!(got, verdict_of(&want), "event #{} {:?}", i, e);
            prop_assert_eq!(rule.encode_state(f), rule.encode_state(d), "event #{}", i);
        }
    }

    /// `KeyedLimiter::allow_at` and `check_at` on twin limiters (one rate,
    /// then up to three): the same answers, the same keys tracked, the same
    /// states, the same evictions under a small key cap. One shard: each
    /// limiter seeds its own hasher, so with several the twins would put
    /// keys in different shards, sweep and evict different ones (losslessly,
    /// but the states' encodings and the counts would differ).
    #[test]
    fn keyed_allow_equals_check(
        algorithm in algorithm(),
        one in case(1),
        several in case(3),
        max_keys in prop::option::of(1usize..3),
    ) {
        for case in [one, several] {
            let rule = case.rule(algorithm);
            let fast = limiter(rule.clone(), 1, max_keys);
            let full = limiter(rule, 1, max_keys);
            for (i, e) in case.events.iter().enumerate() {
                let got = fast.allow_at(&e.key, e.t, e.cost);
                let want = full.check_at(&e.key, e.t, e.cost);
                prop_assert_eq!(got, verdict_of(&want), "event #{} {:?}", i, e);
                prop_assert_eq!(fast.len(), full.len(), "keys tracked after event #{}", i);
            }
            prop_assert_eq!(fast.evictions(), full.evictions());
            prop_assert_eq!(fast.limited_evictions(), full.limited_evictions());
            prop_assert_eq!(states(&fast), states(&full));
        }
    }

    /// Mixing the two on one limiter changes nothing: a caller may ask for
    /// the whole decision only when it sends headers.
    #[test]
    fn keyed_allow_and_check_mix(algorithm in algorithm(), case in case(3), pick in any::<u64>()) {
        let rule = case.rule(algorithm);
        let mixed = limiter(rule.clone(), 1, None);
        let full = limiter(rule, 1, None);
        for (i, e) in case.events.iter().enumerate() {
            let want = full.check_at(&e.key, e.t, e.cost);
            if pick >> (i % 64) & 1 == 1 {
                prop_assert_eq!(mixed.allow_at(&e.key, e.t, e.cost), verdict_of(&want));
            } else {
                prop_assert_eq!(mixed.check_at(&e.key, e.t, e.cost), want);
            }
        }
        prop_assert_eq!(states(&mixed), states(&full));
    }
}

/// A request too large for the rule is denied for ever, and does not make
/// a key tracked; an allowed one is held as the leaky bucket says.
#[test]
fn never_and_delay_as_check_says() {
    let rule = Rule::new(Algorithm::LeakyBucket, "2/s".parse().unwrap()).with_burst(2);
    let fast = limiter(rule.clone(), 1, None);
    let full = limiter(rule, 1, None);
    assert_eq!(fast.allow_at(&1, 0, 9), Err(RetryAfter::Never));
    assert_eq!(fast.len(), 0);
    let mut delays = Vec::new();
    for _ in 0..4 {
        let got = fast.allow_at(&1, 0, 1);
        assert_eq!(got, verdict_of(&full.check_at(&1, 0, 1)));
        delays.push(got);
    }
    let half = Duration::from_millis(500);
    assert_eq!(
        delays,
        [
            Ok(Duration::ZERO),
            Ok(half),
            Ok(2 * half),
            Err(RetryAfter::After(half))
        ]
    );
}
