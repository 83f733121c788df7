//! A sliding log holds one entry per admitted decision, whatever its cost:
//! the entry carries the cost. Checked here: a cost of `u32::MAX` against a
//! limit of `u32::MAX`, in a `Rule` and in a `KeyedLimiter`, returns at once
//! and holds one inline entry (nothing allocated: what a cost of 1 holds);
//! a cost above the limit is denied without touching the state; a denied
//! request of cost L against a full log of L unit entries finds its wait
//! without walking the log; and decisions with costs up to limits of 2^40,
//! huge costs among unit ones, are those of a log of units by definition
//! (the small model below, itself held to the conformance crate's reference
//! model where that model's one entry per unit fits).

use limits::{
    Algorithm, Decision, KeyedLimiter, ManualClock, Options, Rate, Rates, RetryAfter, Rule,
};
use limits_conformance::{RuleModel, first_after};
use proptest::prelude::*;
use std::time::{Duration, Instant};

use crate::counting::counted;

fn log(rates: &[(u64, u64)]) -> Rule {
    let rates: Vec<Rate> = rates
        .iter()
        .map(|&(l, w)| Rate::new(l, Duration::from_nanos(w)).unwrap())
        .collect();
    Rule::new(Algorithm::SlidingLog, Rates::new(rates).unwrap())
}

fn keyed(rule: &Rule) -> KeyedLimiter<u64, ManualClock> {
    let options = Options {
        max_keys: None,
        shards: 1,
    };
    KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), options)
}

const SECOND: u64 = 1_000_000_000;
const HUGE: u64 = u32::MAX as u64;

/// The words of a one-rate log holding one entry of `cost` at `t`.
fn one_entry(rule: &Rule, t: u64, cost: u64) -> Vec<u64> {
    let tag = rule.encode_state(&rule.new_state())[0];
    vec![tag, 1, 1, t, cost]
}

#[test]
fn a_cost_of_u32_max_in_a_rule_allocated_a_unit_per_cost() {
    let rule = log(&[(HUGE, SECOND)]);
    let mut state = rule.new_state();
    let started = Instant::now();
    let (d, allocations) = counted(|| rule.check(&mut state, 5, HUGE));
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(d.allowed);
    assert_eq!(
        (d.remaining, d.reset_after),
        (0, Duration::from_nanos(SECOND))
    );
    assert_eq!(allocations, (0, 0, 0));
    assert_eq!(rule.heap_bytes(&state), 0);
    assert_eq!(rule.encode_state(&state), one_entry(&rule, 5, HUGE));
    // Full: a unit more waits for that one entry, to the nanosecond.
    let d = rule.check(&mut state, 6, 1);
    assert_eq!(
        d.retry_after,
        RetryAfter::After(Duration::from_nanos(SECOND - 1))
    );
    // A second huge decision once the first has gone: a ring of a few
    // entries at most, not one per unit.
    let d = rule.check(&mut state, 5 + SECOND, HUGE);
    assert!(d.allowed);
    assert_eq!(
        rule.encode_state(&state),
        one_entry(&rule, 5 + SECOND, HUGE)
    );
    assert!(rule.check(&mut state, 6 + SECOND, HUGE - 1).remaining == 0);
    assert!(rule.heap_bytes(&state) <= 64, "{}", rule.heap_bytes(&state));
}

#[test]
fn a_cost_of_u32_max_in_a_keyed_limiter_allocated_a_unit_per_cost() {
    let rule = log(&[(HUGE, SECOND)]);
    let (unit, huge) = (keyed(&rule), keyed(&rule));
    assert!(unit.check_at(&1, 5, 1).allowed);
    let started = Instant::now();
    let d = huge.check_at(&1, 5, HUGE);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(d.allowed);
    assert_eq!(d.remaining, 0);
    assert_eq!(huge.memory(), unit.memory());
    assert_eq!(huge.memory().keys, 1);
    let d = huge.check_at(&1, SECOND, 1);
    assert_eq!(d.retry_after, RetryAfter::After(Duration::from_nanos(5)));
}

#[test]
fn a_cost_above_the_limit_touches_no_state() {
    let rule = log(&[(10, SECOND)]);
    let mut state = rule.new_state();
    for (t, cost) in [(1, 3), (2, 1), (3, 4)] {
        assert!(rule.check(&mut state, t, cost).allowed);
    }
    let before = rule.encode_state(&state);
    for cost in [11, HUGE, u64::MAX] {
        let (d, allocations) = counted(|| rule.check(&mut state, 4, cost));
        assert_eq!(d.retry_after, RetryAfter::Never, "cost {cost}");
        assert_eq!((d.remaining, allocations), (2, (0, 0, 0)), "cost {cost}");
        assert_eq!(rule.encode_state(&state), before, "cost {cost}");
    }
    let limiter = keyed(&rule);
    for cost in [11, HUGE, u64::MAX] {
        let d = limiter.check_at(&7, 4, cost);
        assert_eq!(d.retry_after, RetryAfter::Never, "cost {cost}");
        assert_eq!(limiter.len(), 0, "a denied cost made a key");
    }
}

/// `checks` denied requests of cost `cost` at times after `from`, each
/// asserted to wait until `entry` leaves the window `window`; returns how
/// long they took.
fn denied_waits(
    decide: &mut dyn FnMut(u64, u64) -> Decision,
    from: u64,
    cost: u64,
    entry: u64,
    window: u64,
) -> Duration {
    let started = Instant::now();
    for j in 0..10_000 {
        let d = decide(from + j, cost);
        assert!(!d.allowed);
        let want = entry + window - (from + j);
        assert_eq!(
            d.retry_after,
            RetryAfter::After(Duration::from_nanos(want)),
            "at {}",
            from + j
        );
    }
    started.elapsed()
}

#[test]
fn a_denied_cost_of_l_against_a_full_log_walked_its_entries() {
    const L: u64 = 1 << 20;
    const W: u64 = 1 << 40;
    let rule = log(&[(L, W)]);
    let limiter = keyed(&rule);
    let mut state = rule.new_state();
    // A full log of L unit entries at 0, 1, ..., L - 1.
    for t in 0..L {
        assert!(rule.check(&mut state, t, 1).allowed);
        assert!(limiter.check_at(&1, t, 1).allowed);
    }
    // Cost L waits for every unit: the newest entry's. Ten thousand walks
    // of a million entries would take minutes; binary searches take
    // milliseconds.
    let mut rule_check = |t, c| rule.check(&mut state, t, c);
    let took = denied_waits(&mut rule_check, L, L, L - 1, W);
    assert!(took < Duration::from_secs(5), "rule: {took:?}");
    let mut keyed_check = |t, c| limiter.check_at(&1, t, c);
    let took = denied_waits(&mut keyed_check, L, L, L - 1, W);
    assert!(took < Duration::from_secs(5), "keyed: {took:?}");

    // Weighted: L / 4 entries of 1 and 3 units in turn (entry i at time i).
    let mut state = rule.new_state();
    for i in 0..L / 2 {
        assert!(rule.check(&mut state, i, 1 + 2 * (i % 2)).allowed);
    }
    // Cost L / 2 waits for half the units: those of the first L / 4
    // entries, the last of which is at L / 4 - 1.
    let mut rule_check = |t, c| rule.check(&mut state, t, c);
    let took = denied_waits(&mut rule_check, L / 2, L / 2, L / 4 - 1, W);
    assert!(took < Duration::from_secs(5), "weighted: {took:?}");
}

/// A log of units by definition: entries (time, cost), a unit counting
/// while its time + W is after now; every field of a decision derived from
/// that count alone, as the conformance crate's model derives them.
#[derive(Clone, Debug)]
struct Units {
    limit: u64,
    window: u64,
    entries: Vec<(u64, u64)>,
}

impl Units {
    fn live(&self, t: u64) -> u64 {
        let live = |&&(e, _): &&(u64, u64)| u128::from(e) + u128::from(self.window) > u128::from(t);
        self.entries.iter().filter(live).map(|e| e.1).sum()
    }

    fn allows(&self, t: u64, cost: u64) -> bool {
        cost == 0 || self.live(t) + cost <= self.limit
    }

    fn decide(&mut self, t: u64, cost: u64) -> Decision {
        let allowed = self.allows(t, cost);
        let retry_after = if allowed {
            RetryAfter::ZERO
        } else if cost > self.limit {
            RetryAfter::Never
        } else {
            RetryAfter::After(Duration::from_nanos(first_after(t, |s| {
                self.allows(s, cost)
            })))
        };
        if allowed && cost > 0 {
            self.entries.push((t, cost));
        }
        let live = self.live(t);
        let (reset, refill) = if live == 0 {
            (0, 0)
        } else {
            (
                first_after(t, |s| self.live(s) == 0),
                first_after(t, |s| self.live(s) < live),
            )
        };
        Decision {
            allowed,
            remaining: self.limit - live,
            retry_after,
            reset_after: Duration::from_nanos(reset),
            delay: Duration::ZERO,
            refill_after: Duration::from_nanos(refill),
        }
    }
}

/// Steps of (wait, cost) for a limit: unit costs, the whole limit, any
/// cost up to it, half of it, zero and one past it.
fn steps(limit: u64, window: u64) -> impl Strategy<Value = Vec<(u64, u64)>> {
    let cost = prop_oneof![
        4 => Just(1),
        2 => 1..=limit,
        1 => Just(limit),
        1 => Just(limit.div_ceil(2)),
        1 => Just(0),
        1 => Just(limit + 1),
    ];
    let wait = prop_oneof![3 => 0..=window / 8, 1 => 0..=window * 2];
    proptest::collection::vec((wait, cost), 1..80)
}

fn limit_window(most: u64) -> impl Strategy<Value = (u64, u64)> {
    (1..=most, 1..=1u64 << 40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The small model is the reference model where the reference's one
    /// entry per unit fits: limits up to 64, costs up to the limit and past
    /// it, through a rule of one rate and a rule of two (whose steps
    /// check and record apart).
    #[test]
    fn costs_up_to_the_limit_decide_as_the_reference_model(
        (l, w, trace) in (1..=64u64, 1..=5_000u64)
            .prop_flat_map(|(l, w)| (Just(l), Just(w), steps(l, w))),
        second in 1..=64u64,
    ) {
        let rule = log(&[(l, w)]);
        let two = log(&[(l, w), (second, w * 3)]);
        let mut model = RuleModel::new(Algorithm::SlidingLog, &[(l, w)], None);
        let mut two_model = RuleModel::new(Algorithm::SlidingLog, &[(l, w), (second, w * 3)], None);
        let mut units = Units { limit: l, window: w, entries: Vec::new() };
        let (mut state, mut two_state) = (rule.new_state(), two.new_state());
        let mut t = 0;
        for (i, &(wait, cost)) in trace.iter().enumerate() {
            t += wait;
            let want = model.decide(t, cost);
            prop_assert_eq!(units.decide(t, cost), want, "step {} at {} cost {}", i, t, cost);
            prop_assert_eq!(rule.check(&mut state, t, cost), want, "step {}", i);
            let want = two_model.decide(t, cost);
            prop_assert_eq!(two.check(&mut two_state, t, cost), want, "two rates, step {}", i);
        }
    }

    /// Limits up to 2^40, costs up to them: a `Rule` and a `KeyedLimiter`
    /// (its state exported and imported midway) decide as the log of units,
    /// to the nanosecond, and hold at most one entry per admitted decision.
    #[test]
    fn huge_costs_among_unit_costs_decide_as_a_log_of_units(
        ((l, w), trace) in limit_window(1 << 40)
            .prop_flat_map(|(l, w)| (Just((l, w)), steps(l, w))),
    ) {
        let rule = log(&[(l, w)]);
        let mut units = Units { limit: l, window: w, entries: Vec::new() };
        let mut state = rule.new_state();
        let mut limiter = keyed(&rule);
        let mut t = 0;
        for (i, &(wait, cost)) in trace.iter().enumerate() {
            t += wait;
            let want = units.decide(t, cost);
            prop_assert_eq!(rule.check(&mut state, t, cost), want, "step {} at {} cost {}", i, t, cost);
            prop_assert_eq!(limiter.check_at(&3, t, cost), want, "keyed, step {}", i);
            let words = rule.encode_state(&state);
            let admitted = units.entries.len() as u64;
            prop_assert!(words[2] <= admitted.min(l), "{} entries", words[2]);
            if i == trace.len() / 2 {
                let saved = limiter.export();
                limiter = keyed(&rule);
                limiter.import(saved);
            }
        }
    }
}
