//! The sliding log's ring grows to capacities whose malloc chunk holds
//! nothing but entries: `2^k + 1` entries (3, 5, 9, 17, 33, ...:
//! `8 (2^k + 1)` bytes and malloc's 8-byte header make a multiple of 16),
//! the smallest that holds them, never past L. An allocation-
//! counting allocator checks each transition (first entry, growth, expiry
//! and shrink, drop, export and import) for what it allocates and frees,
//! and every decision is the reference model's.

use limits::{Algorithm, KeyedLimiter, ManualClock, Options, Rate, Rule};
use limits_conformance::RuleModel;
use proptest::prelude::*;
use std::time::Duration;

use crate::counting;
use counting::counted;

fn log(limit: u64, window: u64) -> Rule {
    let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
    Rule::new(Algorithm::SlidingLog, rate.into())
}

#[test]
fn each_transition_allocates_and_frees_what_it_should() {
    let rule = log(100, 1_000);
    let mut state = rule.new_state();
    // The first entry: inline, nothing allocated.
    let (d, n) = counted(|| rule.check(&mut state, 0, 1));
    assert!(d.allowed);
    assert_eq!(n, (0, 0, 0));
    assert_eq!(rule.heap_bytes(&state), 0);
    // The second: inline too. The third: a ring of 3 (24 bytes, a
    // 32-byte malloc chunk); the fourth grows it to 5 (the old ring
    // freed), the sixth to 9, the tenth to 17 (the next `2^k + 1` each
    // time).
    let (_, n) = counted(|| rule.check(&mut state, 1, 1));
    assert_eq!(n, (0, 0, 0));
    let (_, n) = counted(|| rule.check(&mut state, 1, 1));
    assert_eq!(n, (1, 0, 24));
    let (_, n) = counted(|| rule.check(&mut state, 2, 1));
    assert_eq!(n, (1, 1, 40 - 24));
    let (_, n) = counted(|| rule.check(&mut state, 3, 1));
    assert_eq!(n, (0, 0, 0));
    let (_, n) = counted(|| rule.check(&mut state, 4, 1));
    assert_eq!(n, (1, 1, 72 - 40));
    for t in 5..8 {
        let (_, n) = counted(|| rule.check(&mut state, t, 1));
        assert_eq!(n, (0, 0, 0), "at {t}");
    }
    let (_, n) = counted(|| rule.check(&mut state, 8, 1));
    assert_eq!(n, (1, 1, 8 * 17 - 72));
    assert_eq!(rule.heap_bytes(&state), 8 * 17);
    // At 1008 all 10 entries (0 to 8) have expired: a ring of more than 16
    // below a quarter full shrinks to twice its length, none (freed), and
    // the new entry grows a ring of 3 again.
    let (d, n) = counted(|| rule.check(&mut state, 1_008, 1));
    assert!(d.allowed);
    assert_eq!(n, (1, 1, 24 - 8 * 17));
    // Dropping a log frees its ring.
    let (_, n) = counted(|| drop(state));
    assert_eq!(n, (0, 1, -24));
    // Never past L: a log of 4 per window grows from 3 to 4, not 5.
    let rule = log(4, 1_000);
    let mut state = rule.new_state();
    for t in 0..3 {
        rule.check(&mut state, t, 1);
    }
    let (_, n) = counted(|| rule.check(&mut state, 3, 1));
    assert_eq!(n, (1, 1, 32 - 24));
    // An entry of a cost other than 1: the ring of 5 then holds each
    // entry's running count of units beside its time, and the count
    // before the oldest (11 words), in place of the times alone.
    let rule = log(100, 1_000);
    let mut state = rule.new_state();
    for t in 0..4 {
        rule.check(&mut state, t, 1);
    }
    assert_eq!(rule.heap_bytes(&state), 40);
    let (_, n) = counted(|| rule.check(&mut state, 4, 7));
    assert_eq!(n, (1, 1, 8 * 11 - 40));
}

#[test]
fn export_and_import_leak_nothing() {
    let rule = log(10, 1_000_000);
    let (_, n) = counted(|| {
        let keyed: KeyedLimiter<u64, ManualClock> = KeyedLimiter::with_options(
            rule.clone(),
            ManualClock::new(0),
            Options {
                max_keys: None,
                shards: 1,
            },
        );
        for key in 0..64u64 {
            for i in 0..=key % 3 {
                assert!(keyed.check_at(&key, i, 1).allowed);
            }
        }
        let one_each = keyed.memory().bytes;
        let exported = keyed.export();
        let again: KeyedLimiter<u64, ManualClock> = KeyedLimiter::with_options(
            rule.clone(),
            ManualClock::new(0),
            Options {
                max_keys: None,
                shards: 1,
            },
        );
        assert_eq!(again.import(exported.clone()), 64);
        let mut back = again.export();
        back.sort();
        let mut want = exported;
        want.sort();
        assert_eq!(back, want);
        // Loaded logs are sized to their entries: no more than decided ones.
        assert!(
            again.memory().bytes <= one_each,
            "{} > {one_each}",
            again.memory().bytes
        );
    });
    // Everything allocated was freed.
    assert_eq!(n.2, 0, "bytes left: {n:?}");
    assert_eq!(n.0, n.1, "allocations and frees: {n:?}");
}

/// Steps of (time to wait, cost): bursts that grow the ring, long waits
/// that empty it and shrink it.
fn trace() -> impl Strategy<Value = Vec<(u64, u64)>> {
    let wait = prop_oneof![8 => 0..40u64, 1 => 600..3_000u64];
    proptest::collection::vec((wait, 0..=6u64), 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Growing to `2^k + 1`, capped at L, shrinking back: the model's
    /// decisions, the heap within L entries, and a round trip through the
    /// state's words at each step keeps them.
    #[test]
    fn a_ring_sized_for_its_chunk_decides_as_the_model(
        limit in prop_oneof![1..=3u64, 4..=40u64],
        steps in trace(),
    ) {
        let rule = log(limit, 1_000);
        let mut model = RuleModel::new(Algorithm::SlidingLog, &[(limit, 1_000)], None);
        let mut state = rule.new_state();
        let mut t = 0;
        for (i, (wait, cost)) in steps.into_iter().enumerate() {
            t += wait;
            let want = model.decide(t, cost);
            prop_assert_eq!(rule.check(&mut state, t, cost), want, "step {} at {}", i, t);
            prop_assert!(rule.heap_bytes(&state) <= 16 * limit as usize + 8);
            let words = rule.encode_state(&state);
            let loaded = rule.decode_state(&words).unwrap();
            prop_assert_eq!(rule.encode_state(&loaded), words);
            if i % 2 == 0 {
                state = loaded;
            }
        }
    }
}
