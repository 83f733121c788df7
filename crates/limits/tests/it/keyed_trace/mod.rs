//! A keyed limiter against the rule's own decisions on a state per key,
//! on random traces: what the compact-slot tests share.

use limits::{KeyState, KeyedLimiter, ManualClock, Mode, Options, Rule};
use proptest::prelude::*;
use std::collections::HashMap;

pub fn start() -> impl Strategy<Value = u64> {
    prop_oneof![0..=1000u64, any::<u64>(), u64::MAX - (1 << 40)..=u64::MAX]
}

/// One request: key, time step, cost and call, as raw numbers the trace
/// scales to the rule.
pub type Op = (u64, (u8, u64), (u8, u64), u8);

pub fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = (
        0..4u64,
        (0..4u8, any::<u64>()),
        (0..5u8, any::<u64>()),
        0..4u8,
    );
    prop::collection::vec(op, 1..60)
}

/// Runs `ops` from `now` on `keyed` (clock included) against `model`, the
/// rule's own decisions on a state per key, steps up to `far` windows;
/// returns the last time.
pub fn run(
    rule: &Rule,
    keyed: &KeyedLimiter<u64, ManualClock>,
    model: &mut HashMap<u64, KeyState>,
    mut now: u64,
    ops: &[Op],
    far: u64,
) -> Result<u64, TestCaseError> {
    let rate = rule.rates().as_slice()[0];
    let (l, w) = (rate.limit(), rate.window_nanos());
    for &(key, (step_kind, step), (cost_kind, cost), call) in ops {
        let step = match step_kind {
            0 => 0,
            1 => step % (w / l + 2),
            2 => step % (w.saturating_mul(far).saturating_add(1)),
            _ => step % 1000,
        };
        now = now.saturating_add(step);
        let cost = match cost_kind {
            0 => 0,
            1 => 1,
            2 => l,
            3 => l + 1,
            _ => cost % (l + 2),
        };
        let state = model.entry(key).or_insert_with(|| rule.new_state());
        let what = format!("key {key} at {now} cost {cost} call {call}");
        match call {
            0 => {
                let want = rule.decide(state, now, cost, Mode::Record, |_| {});
                prop_assert_eq!(keyed.check_at(&key, now, cost), want, "{}", what);
            }
            1 => {
                let want = rule.decide(state, now, cost, Mode::Peek, |_| {});
                prop_assert_eq!(keyed.peek_at(&key, now, cost), want, "{}", what);
            }
            2 => {
                let want = rule.allow(state, now, cost);
                prop_assert_eq!(keyed.allow_at(&key, now, cost), want, "{}", what);
            }
            _ => {
                keyed.clock().set(now);
                let want = rule.decide(state, now, cost, Mode::Record, |_| {});
                prop_assert_eq!(keyed.check(&key, cost), want, "{}", what);
            }
        }
    }
    Ok(now)
}

pub fn limiter(rule: &Rule, now: u64, shards: usize) -> KeyedLimiter<u64, ManualClock> {
    let options = Options {
        max_keys: None,
        shards,
    };
    KeyedLimiter::with_options(rule.clone(), ManualClock::new(now), options)
}

/// What `export` at `now` must say: every key of `model` not idle, as the
/// rule encodes its state.
pub fn expected_export(
    rule: &Rule,
    model: &mut HashMap<u64, KeyState>,
    now: u64,
) -> Vec<(u64, Vec<u64>)> {
    let mut out: Vec<_> = model
        .iter_mut()
        .filter_map(|(&key, state)| {
            (!rule.is_idle(state, now)).then(|| (key, rule.encode_state(state)))
        })
        .collect();
    out.sort();
    out
}
