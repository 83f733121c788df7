//! The keyed limiter: lossless dropping of idle keys, peeks, memory,
//! threads, and saved states (the key cap is `keyed_cap.rs`).

use limits::{Algorithm, KeyState, KeyedLimiter, ManualClock, Options, Rule};
use limits_conformance::{case, config};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

fn one_shard(rule: Rule, max_keys: Option<usize>) -> KeyedLimiter<u64, ManualClock> {
    KeyedLimiter::with_options(
        rule,
        ManualClock::new(0),
        Options {
            max_keys,
            shards: 1,
        },
    )
}

proptest! {
    #![proptest_config(config())]

    /// Dropping idle keys (as every operation's sweep and `sweep_at` do) must
    /// never change a decision: compare with states that are never dropped.
    #[test]
    fn keyed_dropping_idle_keys_is_lossless(algorithm in algorithm(), case in case(2), sweep_every in 1usize..5) {
        let rule = case.rule(algorithm);
        let limiter = one_shard(rule.clone(), None);
        let mut kept: BTreeMap<u8, KeyState> = BTreeMap::new();
        for (i, e) in case.events.iter().enumerate() {
            let got = limiter.check_at(&u64::from(e.key), e.t, e.cost);
            let state = kept.entry(e.key).or_insert_with(|| rule.new_state());
            let want = rule.check(state, e.t, e.cost);
            prop_assert_eq!(got, want, "event #{}", i);
            if i % sweep_every == 0 {
                limiter.sweep_at(e.t);
            }
        }
    }

    /// A peek answers what a check would, and records nothing.
    #[test]
    fn keyed_peek_predicts_check_and_records_nothing(algorithm in algorithm(), case in case(2)) {
        let limiter = limits_conformance::limiter(&case, algorithm);
        for e in &case.events {
            let peeked = limiter.peek_at(&e.key, e.t, e.cost);
            let again = limiter.peek_at(&e.key, e.t, e.cost);
            prop_assert_eq!(peeked, again);
            let checked = limiter.check_at(&e.key, e.t, e.cost);
            prop_assert_eq!(peeked.allowed, checked.allowed);
            prop_assert_eq!(peeked.retry_after, checked.retry_after);
            prop_assert_eq!(peeked.delay, checked.delay);
        }
    }
}

#[test]
fn keyed_idle_keys_are_dropped_without_traffic_on_them() {
    let rule = Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap());
    let limiter = one_shard(rule, None);
    for key in 0..1000 {
        assert!(limiter.check_at(&key, 0, 1).allowed);
    }
    assert_eq!(limiter.len(), 1000);
    // One window later every one of them is idle; traffic on a single other
    // key sweeps them away, two slots per operation.
    for i in 0..600 {
        limiter.check_at(&5000, 1_000_000_000 + i, 1);
    }
    assert_eq!(limiter.len(), 1);
    assert_eq!(limiter.evictions(), 0, "idle keys are dropped, not evicted");
}

#[test]
fn keyed_sweep_drops_every_idle_key_and_gives_memory_back() {
    let rule = Rule::new(Algorithm::TokenBucket, "10/s".parse().unwrap());
    let limiter: KeyedLimiter<u64, ManualClock> =
        KeyedLimiter::with_options(rule, ManualClock::new(0), Options::default());
    for key in 0..10_000 {
        limiter.check_at(&key, 0, 1);
    }
    let full = limiter.memory();
    assert_eq!(full.keys, 10_000);
    // A token bucket is full again 100 ms after one request.
    assert_eq!(limiter.sweep_at(99_999_999), 0);
    assert_eq!(limiter.sweep_at(100_000_000), 10_000);
    let empty = limiter.memory();
    assert_eq!(empty.keys, 0);
    assert!(empty.bytes < full.bytes / 10, "{empty:?} after {full:?}");
}

#[test]
fn keyed_memory_reports_bytes_per_key() {
    for (algorithm, most) in [
        // A 24-byte slot and the table's share.
        (Algorithm::FixedWindow, 40),
        (Algorithm::TokenBucket, 40),
        (Algorithm::SlidingWindow, 40),
        (Algorithm::LeakyBucket, 40),
        // 10 entries in a ring of 12 in the shard's arena of threes, 8 bytes
        // each, the arena's capacity a power of two.
        (Algorithm::SlidingLog, 40 + 16 * 8),
    ] {
        let rule = Rule::new(algorithm, "10/hour".parse().unwrap());
        let limiter = one_shard(rule, None);
        for key in 0..4096 {
            for _ in 0..10 {
                limiter.check_at(&key, 0, 1);
            }
        }
        let report = limiter.memory();
        assert_eq!(report.keys, 4096);
        let per_key = report.bytes_per_key();
        println!("{algorithm}: {per_key} bytes per key");
        assert!(
            per_key > 8 && per_key <= most,
            "{algorithm}: {per_key} bytes per key"
        );
    }
}

#[test]
fn keyed_threads_on_distinct_keys_each_get_their_own_limit() {
    let rule = Rule::new(Algorithm::TokenBucket, "100/hour".parse().unwrap());
    let limiter: KeyedLimiter<u64> = KeyedLimiter::new(rule);
    let allowed: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|s| {
        for (key, count) in allowed.iter().enumerate() {
            let limiter = &limiter;
            s.spawn(move || {
                for _ in 0..300 {
                    if limiter.check(&(key as u64), 1).allowed {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    for count in &allowed {
        assert_eq!(count.load(Ordering::Relaxed), 100);
    }
}

#[test]
fn keyed_none_limiter_always_allows_and_keeps_no_state() {
    let rule = Rule::new(Algorithm::None, "1/hour".parse().unwrap());
    let limiter = one_shard(rule, None);
    for t in 0..100 {
        let d = limiter.check_at(&1, t, 1_000);
        assert!(d.allowed);
    }
    assert!(limiter.is_empty());
}

#[test]
fn keyed_state_of_another_rule_shape_is_replaced_not_misread() {
    let one = Rule::new(Algorithm::SlidingLog, "1/hour".parse().unwrap());
    let two = Rule::new(Algorithm::TokenBucket, "1/hour; 2/day".parse().unwrap());
    let mut state = one.new_state();
    assert!(one.check(&mut state, 0, 1).allowed);
    // Handing the state to a different rule starts that key afresh.
    assert!(two.check(&mut state, 0, 1).allowed);
    assert!(!two.check(&mut state, 0, 1).allowed);
}

proptest! {
    #![proptest_config(config())]

    /// Saving every key's state and loading it into a new limiter (a server
    /// restart with --state) changes no later decision.
    #[test]
    fn keyed_export_import_changes_no_decision(algorithm in algorithm(), case in case(2), split in 0usize..60) {
        let rule = case.rule(algorithm);
        let before = one_shard(rule.clone(), None);
        let split = split.min(case.events.len());
        for e in &case.events[..split] {
            before.check_at(&u64::from(e.key), e.t, e.cost);
        }
        let after = one_shard(rule, None);
        after.import(before.export());
        for e in &case.events[split..] {
            let key = u64::from(e.key);
            prop_assert_eq!(before.check_at(&key, e.t, e.cost), after.check_at(&key, e.t, e.cost));
        }
    }

    /// Decoding arbitrary numbers never panics, and only yields states that
    /// fit the rule.
    #[test]
    fn keyed_decoding_garbage_state_never_panics(
        algorithm in algorithm(),
        tag in 0u64..6,
        words in prop::collection::vec(prop_oneof![0u64..8, any::<u64>()], 0..12),
    ) {
        let rule = Rule::new(algorithm, "3/s; 5/m".parse().unwrap());
        let words: Vec<u64> = [tag, 2].into_iter().chain(words).collect();
        if let Some(mut state) = rule.decode_state(&words) {
            let d = rule.check(&mut state, 1_000, 1);
            prop_assert!(d.remaining <= rule.max_cost().saturating_add(1));
        }
    }
}

/// Regression: a fixed or sliding window index from a state file whose
/// window starts past the end of time (here index 307,445,735 of a one-minute
/// rate: 1.8e19 ns) decoded, and the next check overflowed `index * window`
/// (a panic in a debug build, a wrapped time in a release one). Found by
/// `keyed_decoding_garbage_state_never_panics`; such words are not a state.
#[test]
fn keyed_window_index_past_the_end_of_time_is_not_a_state() {
    for (algorithm, tag, fields) in [
        (Algorithm::FixedWindow, 1, 2),
        (Algorithm::SlidingWindow, 4, 3),
    ] {
        let rule = Rule::new(algorithm, "3/s; 5/m".parse().unwrap());
        let state = |index: u64| {
            let mut words = vec![tag, 2];
            words.extend(std::iter::repeat_n(0, fields));
            words.push(index);
            words.extend(std::iter::repeat_n(0, fields - 1));
            rule.decode_state(&words)
        };
        assert!(state(307_445_735).is_none(), "{algorithm}");
        // The last index that still starts within u64 nanoseconds decodes,
        // and a check on it (its counts are zero) allows without overflow.
        let mut last = state(u64::MAX / 60_000_000_000).expect("in time");
        assert!(rule.check(&mut last, 1_000, 1).allowed, "{algorithm}");
    }
}
