//! A keyed sliding log decides as the reference model, and a key leaving
//! gives its ring back. Checked here: every decision (`check`, `peek`,
//! `allow`) is the reference model's on random traces of many keys whose
//! logs grow and shrink across ring sizes, with sweeps, export and import
//! into a new limiter midway; with `max_keys`, each key decides as the
//! model of its history since it was last evicted; and a churn of keys,
//! swept, evicted or replaced on import, does not grow the memory held.

use limits::{Algorithm, Clock, KeyedLimiter, ManualClock, Mode, Options, Rate, RetryAfter, Rule};
use limits_conformance::RuleModel;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

fn log(limit: u64, window: u64) -> Rule {
    let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
    Rule::new(Algorithm::SlidingLog, rate.into())
}

/// A limiter of two shards, or with `max_keys` of one (so that a reload
/// of at most that many keys evicts none).
fn limiter(rule: &Rule, now: u64, max_keys: Option<usize>) -> KeyedLimiter<u64, ManualClock> {
    let options = Options {
        max_keys,
        shards: if max_keys.is_some() { 1 } else { 2 },
    };
    KeyedLimiter::with_options(rule.clone(), ManualClock::new(now), options)
}

/// One step of a trace: a call on a key, a sweep, or a reload (export,
/// then import into a new limiter).
#[derive(Clone, Debug)]
enum Step {
    Call {
        key: u64,
        wait: u64,
        cost: u64,
        call: u8,
    },
    Sweep,
    Reload,
}

fn steps(keys: u64) -> impl Strategy<Value = Vec<Step>> {
    let call = (0..keys, 0..4u8, any::<u64>(), 0..6u8, any::<u64>(), 0..4u8).prop_map(
        |(key, wait_kind, wait, cost_kind, cost, call)| Step::Call {
            key,
            // Waits within a window mostly, and past it at times.
            wait: match wait_kind {
                0 => 0,
                1 | 2 => wait % 200,
                _ => wait % 2_500,
            },
            cost: match cost_kind {
                0 => 0,
                1..=3 => 1,
                4 => 1 + cost % 6,
                _ => cost % 40,
            },
            call,
        },
    );
    let step = prop_oneof![30 => call, 1 => Just(Step::Sweep), 1 => Just(Step::Reload)];
    prop::collection::vec(step, 1..300)
}

/// The verdict `allow` must give for a decision.
fn verdict(d: &limits::Decision) -> Result<Duration, RetryAfter> {
    if d.allowed {
        Ok(d.delay)
    } else {
        Err(d.retry_after)
    }
}

/// Runs `steps` on `keyed` against a model per key; with `evicting`, a key
/// the limiter no longer holds starts afresh in the model too.
fn run(
    rule: &Rule,
    mut keyed: KeyedLimiter<u64, ManualClock>,
    (limit, window): (u64, u64),
    steps: &[Step],
    evicting: bool,
) -> Result<KeyedLimiter<u64, ManualClock>, TestCaseError> {
    let fresh = || RuleModel::new(Algorithm::SlidingLog, &[(limit, window)], None);
    let mut models: HashMap<u64, RuleModel> = HashMap::new();
    let mut now = keyed.clock().now();
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Call {
                key,
                wait,
                cost,
                call,
            } => {
                now += wait;
                keyed.clock().set(now);
                let model = models.entry(key).or_insert_with(fresh);
                let what = format!("step {i}: key {key} at {now} cost {cost} call {call}");
                match call {
                    0 => {
                        let want = model.decide(now, cost);
                        prop_assert_eq!(keyed.check_at(&key, now, cost), want, "{}", what);
                    }
                    1 => {
                        let (want, _) = model.decide_each(now, cost, Mode::Peek);
                        prop_assert_eq!(keyed.peek(&key, cost), want, "{}", what);
                    }
                    2 => {
                        let want = verdict(&model.decide(now, cost));
                        prop_assert_eq!(keyed.allow_at(&key, now, cost), want, "{}", what);
                    }
                    _ => {
                        let want = verdict(&model.decide(now, cost));
                        prop_assert_eq!(keyed.allow(&key, cost), want, "{}", what);
                    }
                }
            }
            Step::Sweep => {
                keyed.sweep_at(now);
                // What is left: the keys whose newest entry has not expired.
                let busy = models.values().filter(|m| m.remaining(now) < limit).count();
                prop_assert_eq!(keyed.len(), busy, "step {}", i);
            }
            Step::Reload => {
                let exported = keyed.export();
                let again = limiter(rule, now, if evicting { Some(8) } else { None });
                prop_assert_eq!(again.import(exported.clone()), exported.len());
                let mut back = again.export();
                back.sort();
                let mut want = exported;
                want.sort();
                prop_assert_eq!(back, want);
                keyed = again;
            }
        }
        if evicting {
            // A key no longer held was idle (the same as fresh) or evicted:
            // either way it starts afresh.
            let held: HashSet<u64> = keyed.export().into_iter().map(|(k, _)| k).collect();
            prop_assert!(held.len() <= 8);
            for (key, model) in models.iter_mut() {
                if !held.contains(key) {
                    *model = fresh();
                }
            }
        }
    }
    Ok(keyed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Many keys, sweeps and reloads: every answer the model's, and at the
    /// end every key's exported state is what its log holds.
    #[test]
    fn a_keyed_log_decides_as_the_model(
        limit in prop_oneof![1..=3u64, 4..=40u64],
        keys in 1..40u64,
        steps in steps(40),
    ) {
        let rule = log(limit, 1_000);
        let steps: Vec<Step> = steps
            .into_iter()
            .map(|s| match s {
                Step::Call { key, wait, cost, call } => Step::Call { key: key % keys, wait, cost, call },
                other => other,
            })
            .collect();
        run(&rule, limiter(&rule, 0, None), (limit, 1_000), &steps, false)?;
    }

    /// With `max_keys`, keys are evicted; each key decides as the model of
    /// what it did since it was last held afresh.
    #[test]
    fn an_evicting_keyed_log_decides_as_the_model(
        limit in 1..=20u64,
        steps in steps(24),
    ) {
        let rule = log(limit, 1_000);
        let keyed = run(&rule, limiter(&rule, 0, Some(8)), (limit, 1_000), &steps, true)?;
        prop_assert!(keyed.len() <= 8);
    }
}

#[test]
fn a_churn_of_keys_takes_back_the_rings_of_keys_gone() {
    let rule = log(16, 1_000);
    // One shard, and the same numbers of entries each round: the slots,
    // the table and the rings are the same size each round.
    let keyed = limiter(&rule, 0, Some(usize::MAX));
    let mut held = Vec::new();
    for round in 0..40u64 {
        let now = round * 10_000;
        // 500 keys of 1 to 16 entries, new each round; the last round's
        // have expired and are swept.
        for key in round * 500..(round + 1) * 500 {
            for i in 0..=(key - round * 500) % 16 {
                assert!(keyed.check_at(&key, now + i, 1).allowed);
            }
        }
        held.push(keyed.memory().bytes);
        keyed.sweep_at(now + 5_000);
        assert!(keyed.is_empty());
    }
    // The first rounds set the table's size; later ones reuse it.
    let first = held[..10].iter().max();
    assert!(held[10..].iter().max() <= first, "{held:?}");
}

#[test]
fn evicted_and_replaced_keys_give_their_rings_back() {
    // A window that never ends: no key is idle, so a full table evicts.
    let rule = log(16, 1 << 60);
    let keyed = limiter(&rule, 0, Some(200));
    let mut held = Vec::new();
    for round in 0..30u64 {
        for key in round * 200..(round + 1) * 200 {
            for i in 0..=(key - round * 200) % 16 {
                keyed.check_at(&key, i, 1);
            }
        }
        // Each round's keys loaded again over themselves: the rings they
        // replace are given back.
        let exported = keyed.export();
        assert_eq!(keyed.import(exported), 200);
        held.push(keyed.memory().bytes);
    }
    assert!(keyed.evictions() >= 29 * 200, "{}", keyed.evictions());
    // Settled (a ring leaked per eviction would add kilobytes a round),
    // each round from the 16th within a tenth of a new limiter's holding
    // the last round's keys (eviction keeps the heavier keys, so the keys
    // held are not the first round's: mostly logs of 16).
    assert!(held[25..].iter().all(|&b| b == held[25]), "{held:?}");
    let fresh = limiter(&rule, 0, Some(200));
    assert_eq!(fresh.import(keyed.export()), 200);
    let fresh = fresh.memory().bytes;
    assert!(
        held[15..].iter().all(|&b| b <= fresh * 11 / 10),
        "{held:?} against {fresh}"
    );
}
