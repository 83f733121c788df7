//! The sliding log keeps a key's first two entries inline (most keys hold
//! one or two), and a decision chooses the state's shape once, then runs
//! that shape's own code. Checked here: each transition (first and second
//! entry, a third moving to a ring of 3, a second of another cost to a ring
//! of two, expiry in the ring down to one entry and to none, the inline
//! entries expiring, drop) allocates and frees what it should, by an allocation-counting allocator; both shapes export and
//! import as themselves (one entry loads inline) and leak nothing; and every
//! decision, through `check`, `allow` and a rule of two rates (which reads
//! the state through its shape at each step), is the reference model's.

use limits::{Algorithm, KeyedLimiter, ManualClock, Options, Rate, Rates, RetryAfter, Rule};
use limits_conformance::RuleModel;
use proptest::prelude::*;
use std::time::Duration;

use crate::counting;
use counting::counted;

fn log(rates: &[(u64, u64)]) -> Rule {
    let rates: Vec<Rate> = rates
        .iter()
        .map(|&(l, w)| Rate::new(l, Duration::from_nanos(w)).unwrap())
        .collect();
    Rule::new(Algorithm::SlidingLog, Rates::new(rates).unwrap())
}

/// The verdict `allow` must give for a decision.
fn verdict(d: &limits::Decision) -> Result<Duration, RetryAfter> {
    if d.allowed {
        Ok(d.delay)
    } else {
        Err(d.retry_after)
    }
}

#[test]
fn each_transition_allocates_and_frees_what_it_should() {
    let rule = log(&[(10, 1_000)]);
    let mut model = RuleModel::new(Algorithm::SlidingLog, &[(10, 1_000)], None);
    let mut state = rule.new_state();
    let mut step = |state: &mut _, t, cost| {
        let (d, n) = counted(|| rule.check(state, t, cost));
        assert_eq!(d, model.decide(t, cost), "at {t}, cost {cost}");
        n
    };
    // The first entry: inline, nothing allocated; a denied cost (past L)
    // and a cost of 0 change nothing.
    assert_eq!(step(&mut state, 0, 1), (0, 0, 0));
    assert_eq!(step(&mut state, 0, 11), (0, 0, 0));
    assert_eq!(step(&mut state, 0, 0), (0, 0, 0));
    assert_eq!(rule.heap_bytes(&state), 0);
    // The inline entry expires (at 1000): empty, still nothing allocated,
    // and the next entry is inline again.
    assert_eq!(step(&mut state, 1_000, 1), (0, 0, 0));
    assert_eq!(rule.heap_bytes(&state), 0);
    // A second entry of cost 1: inline too.
    assert_eq!(step(&mut state, 1_500, 1), (0, 0, 0));
    assert_eq!(rule.heap_bytes(&state), 0);
    // A third: a ring of 3 (24 bytes, a 32-byte malloc chunk).
    assert_eq!(step(&mut state, 1_600, 1), (1, 0, 24));
    assert_eq!(rule.heap_bytes(&state), 24);
    // The first two expire (at 2000 and 2500): one entry left in the
    // ring, which stays (a ring's path never changes shape), then none.
    assert_eq!(step(&mut state, 2_000, 0), (0, 0, 0));
    assert_eq!(step(&mut state, 2_500, 0), (0, 0, 0));
    assert_eq!(step(&mut state, 2_600, 0), (0, 0, 0));
    assert_eq!(rule.heap_bytes(&state), 24);
    // An empty ring takes entries again without allocating.
    assert_eq!(step(&mut state, 2_600, 1), (0, 0, 0));
    // An entry of cost 3: the ring's three times, their running counts
    // and the count before them (7 words) replace its times alone.
    assert_eq!(step(&mut state, 2_700, 3), (1, 1, 56 - 24));
    // Dropping a ring frees it; an inline log frees nothing.
    let (_, n) = counted(|| drop(state));
    assert_eq!(n, (0, 1, -56));
    let mut one = rule.new_state();
    rule.check(&mut one, 0, 1);
    let (_, n) = counted(|| drop(one));
    assert_eq!(n, (0, 0, 0));
    // A first request of cost 2 or more is one inline entry too.
    let mut two = rule.new_state();
    let (_, n) = counted(|| rule.check(&mut two, 0, 10));
    assert_eq!((n, rule.heap_bytes(&two)), ((0, 0, 0), 0));
    // A second entry beside one of another cost than 1, or of another
    // cost itself: a ring of exactly the two, weighted (two times, two
    // running counts and the count before them).
    for costs in [(2, 1), (1, 2)] {
        let mut state = rule.new_state();
        rule.check(&mut state, 0, costs.0);
        let (d, n) = counted(|| rule.check(&mut state, 1, costs.1));
        assert!(d.allowed);
        assert_eq!((n, rule.heap_bytes(&state)), ((1, 0, 40), 40), "{costs:?}");
        // The next grows it as any ring: to 3.
        let (_, n) = counted(|| rule.check(&mut state, 2, 1));
        assert_eq!(n, (1, 1, 56 - 40), "{costs:?}");
    }
    // Two inline entries free nothing either.
    let mut pair = rule.new_state();
    rule.check(&mut pair, 0, 1);
    rule.check(&mut pair, 1, 1);
    let (_, n) = counted(|| drop(pair));
    assert_eq!(n, (0, 0, 0));
    // L = 1: a log never holds more than its one inline entry.
    let rule = log(&[(1, 1_000)]);
    let mut state = rule.new_state();
    for t in [0, 10, 999, 1_000, 1_001, 5_000] {
        let (_, n) = counted(|| rule.check(&mut state, t, 1));
        assert_eq!((n, rule.heap_bytes(&state)), ((0, 0, 0), 0), "at {t}");
    }
}

#[test]
fn both_shapes_export_and_import_as_themselves() {
    let rule = log(&[(10, 1_000)]);
    // Inline: one entry, no heap, loads inline.
    let mut one = rule.new_state();
    rule.check(&mut one, 5, 1);
    let words = rule.encode_state(&one);
    let loaded = rule.decode_state(&words).unwrap();
    assert_eq!(
        (rule.heap_bytes(&loaded), rule.encode_state(&loaded)),
        (0, words.clone())
    );
    // Two entries of cost 1: inline, and they load inline.
    let mut pair = rule.new_state();
    rule.check(&mut pair, 3, 1);
    rule.check(&mut pair, 5, 1);
    let pair_words = rule.encode_state(&pair);
    let (loaded, n) = counted(|| rule.decode_state(&pair_words).unwrap());
    assert_eq!((rule.heap_bytes(&pair), rule.heap_bytes(&loaded)), (0, 0));
    assert_eq!(n.0, n.1, "the load's own allocations, all freed: {n:?}");
    assert_eq!(rule.encode_state(&loaded), pair_words);
    // A ring of 3 holding one entry after expiry: the same words as the
    // inline entry, and it loads inline.
    let mut ring = rule.new_state();
    rule.check(&mut ring, 0, 1);
    rule.check(&mut ring, 3, 1);
    rule.check(&mut ring, 5, 1);
    rule.peek(&mut ring, 1_004, 0);
    assert_eq!(rule.heap_bytes(&ring), 24);
    let ring_words = rule.encode_state(&ring);
    assert_eq!(ring_words, words);
    let loaded = rule.decode_state(&ring_words).unwrap();
    assert_eq!(rule.heap_bytes(&loaded), 0);
    // Several entries: a ring of exactly their number (two, one of cost
    // 3: two times, two running counts and the count before them).
    rule.check(&mut ring, 1_001, 3);
    let words = rule.encode_state(&ring);
    let (loaded, n) = counted(|| rule.decode_state(&words).unwrap());
    assert_eq!((rule.heap_bytes(&loaded), n.2), (40, 40));
    assert_eq!(rule.encode_state(&loaded), words);
}

#[test]
fn a_keyed_export_and_import_of_both_shapes_leak_nothing() {
    let rule = log(&[(1 << 27, 1_000_000)]);
    let options = || Options {
        max_keys: None,
        shards: 1,
    };
    let (_, n) = counted(|| {
        let keyed: KeyedLimiter<u64, ManualClock> =
            KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), options());
        // Keys of 1 and 2 entries (inline), 3 and 4 (rings).
        for key in 0..60u64 {
            for i in 0..=key % 4 {
                assert!(keyed.check_at(&key, i, 1).allowed);
            }
        }
        let exported = keyed.export();
        let again: KeyedLimiter<u64, ManualClock> =
            KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), options());
        assert_eq!(again.import(exported.clone()), 60);
        // Decided, the keys of 4 entries have rings of 5; loaded, of 4 (those
        // of 3 have 3 either way, those of 1 and 2 are inline either way).
        assert_eq!(again.memory().bytes + 15 * 8, keyed.memory().bytes);
        let mut back = again.export();
        back.sort();
        let mut want = exported;
        want.sort();
        assert_eq!(back, want);
        // Each key decides on from what it loaded as from what it had.
        for key in 0..60u64 {
            assert_eq!(again.check_at(&key, 10, 1), keyed.check_at(&key, 10, 1));
        }
    });
    assert_eq!(n.2, 0, "bytes left: {n:?}");
    assert_eq!(n.0, n.1, "allocations and frees: {n:?}");
}

/// Steps of (time to wait, cost): mostly single requests a window or so
/// apart (one entry, inline), some bursts (rings), long waits (expiry).
fn trace() -> impl Strategy<Value = Vec<(u64, u64)>> {
    let wait = prop_oneof![4 => 0..40u64, 4 => 900..1_100u64, 1 => 1_100..5_000u64];
    let cost = prop_oneof![6 => 0..=1u64, 1 => 2..=5u64];
    proptest::collection::vec((wait, cost), 1..100)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// One rate, through `check` and `allow` alternately (each path's
    /// shape chosen once), with a round trip through the state's words
    /// every other step: the model's decisions and verdicts.
    #[test]
    fn check_and_allow_on_either_shape_decide_as_the_model(
        limit in prop_oneof![1..=3u64, 4..=20u64],
        steps in trace(),
    ) {
        let rule = log(&[(limit, 1_000)]);
        let mut model = RuleModel::new(Algorithm::SlidingLog, &[(limit, 1_000)], None);
        let mut state = rule.new_state();
        let mut t = 0;
        for (i, (wait, cost)) in steps.into_iter().enumerate() {
            t += wait;
            let want = model.decide(t, cost);
            if i % 3 == 0 {
                prop_assert_eq!(rule.allow(&mut state, t, cost), verdict(&want), "step {} at {}", i, t);
            } else {
                prop_assert_eq!(rule.check(&mut state, t, cost), want, "step {} at {}", i, t);
            }
            prop_assert!(rule.heap_bytes(&state) <= 16 * limit as usize + 8);
            if i % 2 == 0 {
                state = rule.decode_state(&rule.encode_state(&state)).unwrap();
            }
        }
    }

    /// Two rates: every step reads the state through its shape (the
    /// all-or-nothing path), the model's decisions still.
    #[test]
    fn two_rates_on_either_shape_decide_as_the_model(
        short in 1..=4u64,
        long in 2..=12u64,
        steps in trace(),
    ) {
        let rates = [(short, 1_000), (long, 3_000)];
        let rule = log(&rates);
        let mut model = RuleModel::new(Algorithm::SlidingLog, &rates, None);
        let mut state = rule.new_state();
        let mut t = 0;
        for (i, (wait, cost)) in steps.into_iter().enumerate() {
            t += wait;
            let want = model.decide(t, cost);
            if i % 3 == 0 {
                prop_assert_eq!(rule.allow(&mut state, t, cost), verdict(&want), "step {} at {}", i, t);
            } else {
                prop_assert_eq!(rule.check(&mut state, t, cost), want, "step {} at {}", i, t);
            }
        }
    }
}
