//! The keyed sliding log's rings between the powers of two (issue 9,
//! `keyed/log_view.rs`' `shape`): 3, 6, 12, 24, ... entries, in the shard's
//! arena of threes. Checked here: every decision is the reference model's
//! while logs wrap around rings of 3, 6 and 12 and move between the two
//! arenas (2 -> 3 -> 4 -> 6 -> 8 -> 12 -> 16 -> 24, and shrinking back from
//! 24 and 32) with their entries wrapped, through reloads; a table of keys
//! of n entries holds a ring of the next size of the ladder each, its
//! entries alone (3 entries 24 bytes, not a block of 4's 32); and keys
//! leaving by every way (swept, evicted, replaced on import) give both
//! arenas' blocks back.

use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Options, Rate, Rule};
use limits_conformance::RuleModel;
use proptest::prelude::*;
use std::time::Duration;

fn log(limit: u64, window: u64) -> Rule {
    let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
    Rule::new(Algorithm::SlidingLog, rate.into())
}

fn limiter(rule: &Rule, max_keys: Option<usize>) -> KeyedLimiter<u64, ManualClock> {
    let options = Options {
        max_keys,
        shards: 1,
    };
    KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), options)
}

/// Steps of one key's trace: a wait and a cost. Waits near `W / L` keep a
/// log near a steady length whose oldest entry expires as a new one comes
/// (the ring's head goes round); bursts grow it, long waits drain it.
fn steps() -> impl Strategy<Value = Vec<(u8, u64, u64)>> {
    let step = (0..4u64, 0..8u8, any::<u64>(), 0..10u8).prop_map(|(key, kind, x, cost)| {
        let wait = match kind {
            0 => 0,
            1..=4 => x % 120,
            5 | 6 => x % 400,
            _ => x % 3_000,
        };
        let cost = match cost {
            0 => 0,
            1..=6 => 1,
            7 | 8 => 2 + x % 4,
            _ => x % 30,
        };
        (key as u8, wait, cost)
    });
    prop::collection::vec(step, 1..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Logs of limits that cross 3, 6, 12 and 24, on four keys: every
    /// `check` and `peek` the model's, and a reload midway keeps them so.
    #[test]
    fn rings_of_three_decide_as_the_model(
        limit in prop_oneof![3..=4u64, 5..=8u64, 9..=14u64, 20..=40u64],
        steps in steps(),
        reload_at in 0..400usize,
    ) {
        let window = 1_000;
        let rule = log(limit, window);
        let mut keyed = limiter(&rule, None);
        let fresh = || RuleModel::new(Algorithm::SlidingLog, &[(limit, window)], None);
        let mut models: Vec<RuleModel> = (0..4).map(|_| fresh()).collect();
        let mut now = 0;
        for (i, &(key, wait, cost)) in steps.iter().enumerate() {
            if i == reload_at {
                let again = limiter(&rule, None);
                let exported = keyed.export();
                prop_assert_eq!(again.import(exported.clone()), exported.len());
                let (mut back, mut want) = (again.export(), exported);
                back.sort();
                want.sort();
                prop_assert_eq!(back, want);
                keyed = again;
            }
            now += wait;
            keyed.clock().set(now);
            let model = &mut models[key as usize];
            let k = u64::from(key);
            if i % 5 == 4 {
                let (want, _) = model.decide_each(now, cost, Mode::Peek);
                prop_assert_eq!(keyed.peek(&k, cost), want, "step {} peek", i);
            }
            let want = model.decide(now, cost);
            prop_assert_eq!(keyed.check_at(&k, now, cost), want, "step {} key {} cost {}", i, key, cost);
        }
    }
}

/// `keys` keys of `n` entries each (a window that never ends), in one
/// shard: `memory()` bytes.
fn bytes_at(keys: u64, n: u64) -> usize {
    let keyed = limiter(&log(64, 1 << 40), Some(usize::MAX));
    for t in 0..n {
        for key in 0..keys {
            assert!(keyed.check_at(&key, t, 1).allowed);
        }
    }
    keyed.memory().bytes
}

#[test]
fn a_key_of_n_entries_holds_the_next_ring_of_the_ladder() {
    // n entries: a ring of `ring` entries, 8 bytes each, per key, for as
    // many keys as fill 2^15 entries, so that the arena's capacity (its
    // length doubled up to a power of two) is its length; within a tenth
    // (the free bits). A ring of 3 carved out of a block of 4 (its last
    // entry free, taken by no one here) would hold 32 bytes a key, and
    // the arena twice the bound at 3 entries.
    for (n, ring) in [
        (2, 2),
        (3, 3),
        (4, 4),
        (5, 6),
        (6, 6),
        (7, 8),
        (12, 12),
        (13, 16),
    ] {
        let keys = (1 << 15) / ring;
        let arena = keys as usize * ring as usize * 8;
        let got = bytes_at(keys, n) - bytes_at(keys, 1);
        assert!(
            got >= arena && got <= arena * 11 / 10,
            "{n} entries: {got} bytes for {arena}"
        );
    }
}

#[test]
fn keys_crossing_both_arenas_give_their_rings_back() {
    // Rounds of keys that grow to 24 entries, then drain to a few (the
    // ring shrinks 24 -> 12 or 6, moving between the arenas) and expire:
    // half are swept, half evicted by the next round's keys.
    let rule = log(24, 1_000);
    let keyed = limiter(&rule, Some(300));
    let mut held = Vec::new();
    for round in 0..30u64 {
        let start = round * 100_000;
        for key in round * 300..(round + 1) * 300 {
            let n = 1 + (key % 24);
            for i in 0..n {
                assert!(keyed.check_at(&key, start + i * 10, 1).allowed);
            }
        }
        // Most entries expire; one more request leaves each key a few,
        // and its ring shrinks from 24 to one of the smaller sizes.
        for key in round * 300..(round + 1) * 300 {
            keyed.check_at(&key, start + 1_005, 1);
        }
        held.push(keyed.memory().bytes);
        if round % 2 == 0 {
            keyed.sweep_at(start + 50_000);
            assert!(keyed.is_empty());
        } else {
            let exported = keyed.export();
            assert_eq!(keyed.import(exported), 300);
        }
    }
    // The rounds alternate the ways keys leave; neither leaves a block
    // behind (about 20 kB a round leaked otherwise). The bytes held go
    // round a cycle of 9 rounds (where the arenas' free blocks fall), so
    // the first 10 rounds bound the rest.
    let first = *held[..10].iter().max().unwrap();
    assert!(held[10..].iter().all(|&b| b <= first), "{held:?}");
}
