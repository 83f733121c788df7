//! The keyed limiter under a key cap (`Options::max_keys`): eviction keeps
//! the cap, counts what it gives up, and never forgives a limited client.

use limits::{Algorithm, KeyState, KeyedLimiter, ManualClock, Options, Rule};
use limits_conformance::{case, config};
use proptest::prelude::*;

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

#[test]
fn keyed_cap_evicts_cold_keys_and_counts_them() {
    let rule = Rule::new(Algorithm::SlidingLog, "5/hour".parse().unwrap());
    let limiter = KeyedLimiter::with_options(
        rule,
        ManualClock::new(0),
        Options {
            max_keys: Some(1000),
            shards: 8,
        },
    );
    for _ in 0..5 {
        assert!(limiter.check_at(&u64::MAX, 0, 1).allowed);
    }
    for key in 0..100_000u64 {
        limiter.check_at(&key, key, 1);
        assert!(limiter.len() <= 1000);
        // The hot key keeps being used, so CLOCK keeps it: it stays limited.
        if key % 100 == 0 {
            assert!(
                !limiter.check_at(&u64::MAX, key, 1).allowed,
                "hot key forgotten at {key}"
            );
        }
    }
    assert!(
        limiter.evictions() >= 99_000,
        "{} evictions",
        limiter.evictions()
    );
    assert!(limiter.evictions() <= 100_000);
}

/// Regression (issue 7, "memory cap without amnesty"): under `--max-keys`, a
/// flood of distinct keys sending two requests each evicted clients that
/// started during the flood, limited ones too, and each came back with a
/// fresh limit (28 of one client's requests passed a limit of 10). Eviction
/// must forget the least: every client must get exactly what it would get
/// with no cap at all, and no key at its limit may be evicted.
#[test]
fn keyed_cap_does_not_forgive_limited_clients_during_a_flood_of_distinct_keys() {
    const MINUTE: u64 = 60_000_000_000;
    const FLOOD_KEYS: u64 = 30_000;
    const CLIENTS: u64 = 10;
    for algorithm in Algorithm::ALL {
        let rule = Rule::new(algorithm, "10/minute".parse().unwrap());
        let limiter = KeyedLimiter::with_options(
            rule.clone(),
            ManualClock::new(0),
            Options {
                max_keys: Some(1000),
                shards: 4,
            },
        );
        // The clients' own states, as a limiter that forgets nothing keeps
        // them. Client `c` starts once the flood has sent `c` thousand
        // requests and asks once every 50 flood requests; once denied, it
        // comes back only every 1,500, slower than the flood turns the
        // table over.
        let mut reference: Vec<KeyState> = (0..CLIENTS).map(|_| rule.new_state()).collect();
        let mut denied = vec![false; CLIENTS as usize];
        let mut admitted = vec![0u64; CLIENTS as usize];
        let requests = 2 * FLOOD_KEYS;
        let mut sent = 0;
        for key in 0..FLOOD_KEYS {
            // Every flood key sends twice, in a row.
            for flood in [key, key] {
                let t = sent * (MINUTE - 1) / requests;
                limiter.check_at(&flood, t, 1);
                assert!(limiter.len() <= 1000);
                sent += 1;
                for c in 0..CLIENTS {
                    let i = c as usize;
                    let every = if denied[i] { 1500 } else { 50 };
                    if sent < c * 1000 || (sent + c) % every != 0 {
                        continue;
                    }
                    let got = limiter.check_at(&(u64::MAX - c), t, 1).allowed;
                    let want = rule.check(&mut reference[i], t, 1).allowed;
                    assert_eq!(got, want, "{algorithm}: client {c} at t = {t}");
                    admitted[i] += u64::from(got);
                    denied[i] |= !got;
                }
            }
        }
        if algorithm == Algorithm::SlidingLog {
            assert_eq!(admitted, vec![10; CLIENTS as usize]);
        }
        if algorithm != Algorithm::None {
            assert!(limiter.evictions() > 0, "{algorithm}: the cap was reached");
        }
        assert_eq!(limiter.limited_evictions(), 0, "{algorithm}");
    }
}

proptest! {
    #![proptest_config(config())]

    /// Whatever the traffic, a capped limiter never holds more than its cap,
    /// and counts no more limited evictions than evictions.
    #[test]
    fn keyed_key_count_never_exceeds_max_keys(
        algorithm in algorithm(),
        max_keys in 1usize..40,
        shards in 1usize..9,
        events in prop::collection::vec((0u64..200, 0u64..3, 0u64..50_000_000), 1..400),
    ) {
        let rule = Rule::new(algorithm, "3/s; 5/10s".parse().unwrap());
        let limiter = KeyedLimiter::with_options(
            rule,
            ManualClock::new(0),
            Options { max_keys: Some(max_keys), shards },
        );
        let mut t = 0;
        for (key, cost, step) in events {
            t += step;
            limiter.check_at(&key, t, cost);
            prop_assert!(limiter.len() <= max_keys, "{} keys", limiter.len());
            prop_assert!(limiter.limited_evictions() <= limiter.evictions());
        }
    }

    /// What eviction weighs: a key's used share is 1000 exactly when it has
    /// nothing left, and 0 when it is back to full.
    #[test]
    fn keyed_used_share_is_full_exactly_at_the_limit(algorithm in algorithm(), case in case(2)) {
        let rule = case.rule(algorithm);
        let mut state = rule.new_state();
        for e in &case.events {
            rule.check(&mut state, e.t, e.cost);
            let used = rule.used_permille(&mut state, e.t);
            prop_assert!(used <= 1000);
            if algorithm != Algorithm::None {
                let left = rule.peek(&mut state, e.t, 1).remaining;
                prop_assert_eq!(used == 1000, left == 0, "used {} left {}", used, left);
            }
            if rule.is_idle(&mut state, e.t) {
                prop_assert_eq!(used, 0);
            }
        }
    }
}

#[test]
fn a_small_cap_holds_its_keys_and_keeps_a_limited_client() {
    // `--max-keys 10` on a machine of many cores: the cap was split over
    // eight shards of one key each, so eight keys were held and a limited
    // client's shard had no other key to give up.
    for max_keys in [1, 2, 10, 63, 100, 130, 1001] {
        let rule = Rule::new(Algorithm::FixedWindow, "2/hour".parse().unwrap());
        let limiter = KeyedLimiter::with_options(
            rule,
            ManualClock::new(0),
            Options {
                max_keys: Some(max_keys),
                shards: 64,
            },
        );
        // The limited client: its two requests, then a denial; each key of
        // the flood that follows uses half its quota.
        assert!(limiter.check_at(&u64::MAX, 0, 2).allowed);
        assert!(!limiter.check_at(&u64::MAX, 0, 1).allowed);
        for key in 0..(max_keys as u64 * 4) {
            limiter.check_at(&key, 1, 1);
            assert!(
                limiter.len() <= max_keys,
                "cap {max_keys}: {} keys",
                limiter.len()
            );
        }
        // Every slot was filled, exactly up to the cap.
        assert_eq!(limiter.len(), max_keys, "cap {max_keys}");
        if max_keys > 1 {
            assert_eq!(limiter.limited_evictions(), 0, "cap {max_keys}");
            assert!(
                !limiter.check_at(&u64::MAX, 2, 1).allowed,
                "cap {max_keys}: forgiven"
            );
        }
    }
}
