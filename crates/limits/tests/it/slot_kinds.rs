//! A keyed limiter keeps a single-rate rule's states in slots sized for its
//! algorithm, and a rule of several rates in whole `KeyState`s:
//! whichever its table, every key decides as the rule does on a state of its
//! own, through eviction's weighing of the keys (which lends a slot's state
//! to the rule and takes it back) and through export and import.

use limits::{Algorithm, KeyState, KeyedLimiter, ManualClock, Options, Rule};
use std::collections::HashMap;

const MS: u64 = 1_000_000;

fn rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    for algorithm in Algorithm::ALL {
        for rates in ["3/s", "3/s; 5/minute"] {
            rules.push(Rule::new(algorithm, rates.parse().unwrap()));
        }
    }
    rules
}

/// A limiter of `rule` in one shard of at most `max_keys` keys.
fn limiter(rule: &Rule, max_keys: usize) -> KeyedLimiter<u64, ManualClock> {
    let options = Options {
        max_keys: Some(max_keys),
        shards: 1,
    };
    KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), options)
}

#[test]
fn limited_keys_weighed_for_eviction_keep_their_exact_state() {
    for rule in rules() {
        let keyed = limiter(&rule, 64);
        let mut model: HashMap<u64, KeyState> = HashMap::new();
        let mut check = |key: u64, t: u64| {
            let state = model.entry(key).or_insert_with(|| rule.new_state());
            let want = rule.check(state, t, 1);
            let got = keyed.check_at(&key, t, 1);
            (got, want)
        };
        // 16 keys at their limit (and denied once), then a flood of one-off
        // keys that fills the shard and makes it weigh every key many times
        // (times in order: the limiter decides an earlier time at its
        // shard's latest).
        for key in 0..16 {
            for i in 0..4 {
                let (got, want) = check(key, (key * 4 + i) * MS);
                assert_eq!(got, want, "{rule:?} key {key}");
            }
        }
        for (i, key) in (1000..1400).enumerate() {
            let (got, want) = check(key, 100 * MS + i as u64);
            assert_eq!(got.allowed, want.allowed, "{rule:?} key {key}");
        }
        if rule.algorithm() != Algorithm::None {
            assert!(keyed.evictions() > 0, "{rule:?}");
            assert_eq!(keyed.limited_evictions(), 0, "{rule:?}");
        }
        // The limited keys were weighed, never evicted: their own states,
        // to the nanosecond.
        for key in 0..16 {
            let (got, want) = check(key, 200 * MS);
            assert_eq!(got, want, "{rule:?} key {key}");
        }
    }
}

#[test]
fn exported_states_are_the_rule_s_and_load_back_the_same() {
    for rule in rules() {
        let keyed = limiter(&rule, 1000);
        let mut model: HashMap<u64, KeyState> = HashMap::new();
        for key in 0..50u64 {
            let state = model.entry(key).or_insert_with(|| rule.new_state());
            for i in 0..=(key % 4) {
                let t = key * MS + i;
                assert_eq!(keyed.check_at(&key, t, 1), rule.check(state, t, 1));
            }
        }
        // `export` reads the limiter's clock (0): every key's state is later.
        let mut saved = keyed.export();
        saved.sort();
        let mut want: Vec<(u64, Vec<u64>)> = model
            .iter()
            .filter(|(_, s)| !rule.is_idle(&mut (*s).clone(), 0))
            .map(|(&k, s)| (k, rule.encode_state(s)))
            .collect();
        want.sort();
        assert_eq!(saved, want, "{rule:?}");
        let restored = limiter(&rule, 1000);
        assert_eq!(restored.import(saved.clone()), saved.len(), "{rule:?}");
        for key in 0..50u64 {
            let t = 400 * MS;
            let d = restored.check_at(&key, t, 1);
            let state = model.get_mut(&key).unwrap();
            assert_eq!(d, rule.check(state, t, 1), "{rule:?} key {key}");
        }
    }
}
