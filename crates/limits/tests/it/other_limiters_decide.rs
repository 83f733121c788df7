//! The fixed window's, the leaky bucket's, the sliding window's and the
//! sliding log's fused decisions (`Rule::check` and `Rule::peek` of a
//! one-rate rule: the roll, the check, the record and the derived fields in
//! one pass) answer what the general path answers, field by field, and
//! leave the same state, over sequences of checks, peeks and allows from
//! states at the edges random traces rarely reach: costs of 0, 1, the
//! capacity and one more; limits, windows and bursts up to their maxima
//! (where `L * W` and the scaled times overflow 64 bits); times near zero and
//! the end of `u64` nanoseconds and one nanosecond either side of a window
//! boundary, of the queue's end or of a log entry's expiry; counts within 1
//! of where a request just fits.
//!
//! The general path is written out here from the algorithm's public steps,
//! as `Rule::decide` runs them for a rate without a fused pass: `advance`,
//! `check` (skipped for cost 0), `delay` and `record` if it passes, then
//! `remaining`, `reset_after` and `refill_after` (a second `check`) of the
//! state left.

use limits::algorithms::{
    FixedWindow, FixedWindowState, LeakyBucket, LeakyBucketState, RateAlgorithm, ScaledTime,
    SlidingLog, SlidingLogState, SlidingWindow, SlidingWindowState,
};
use limits::{Algorithm, Rate, Rule};
use proptest::prelude::*;
use std::time::Duration;

use crate::edges;
use edges::{
    cost, count_near_fit, general, leaky_queue_end, limit, near, tag, time, verdict_of, window,
};

/// One step of a sequence: a check, a peek or an allow, at a time picked by
/// `when` among the edges the test gives, of the cost picked by `how_much`.
#[derive(Clone, Debug)]
struct Step {
    kind: u8,
    when: usize,
    how_much: u8,
    raw: u64,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step =
        (0u8..3, any::<usize>(), 0u8..6, any::<u64>()).prop_map(|(kind, when, how_much, raw)| {
            Step {
                kind,
                when,
                how_much,
                raw,
            }
        });
    prop::collection::vec(step, 1..6)
}

/// Runs `steps` from the state `words` encode on `rule` (the fused path)
/// and from `state` through [`general`], comparing every decision (an
/// allow's verdict) and the state words after each step. `times` are the
/// edges a step picks from (or, picked past them, the previous step's time
/// plus 0 to 2 ns); `costs` maps a step's pick and its raw number to a cost.
fn same_path<A: RateAlgorithm>(
    rule: &Rule,
    a: &A,
    mut state: A::State,
    words: impl Fn(&A::State) -> Vec<u64>,
    times: &[u64],
    costs: impl Fn(u8, u64) -> u64,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let fused = rule.decode_state(&words(&state));
    prop_assume!(fused.is_some());
    let mut fused = fused.unwrap();
    let mut last = times[0];
    for step in steps {
        let now = match times.get(step.when % (times.len() + 1)) {
            Some(&t) => t,
            None => last.saturating_add(step.raw % 3),
        };
        last = now;
        let cost = costs(step.how_much, step.raw);
        let want = general(a, &mut state, now, cost, step.kind != 1);
        match step.kind {
            0 => prop_assert_eq!(
                rule.check(&mut fused, now, cost),
                want,
                "check {} at {}",
                cost,
                now
            ),
            1 => prop_assert_eq!(
                rule.peek(&mut fused, now, cost),
                want,
                "peek {} at {}",
                cost,
                now
            ),
            _ => prop_assert_eq!(
                rule.allow(&mut fused, now, cost),
                verdict_of(&want),
                "allow at {}",
                now
            ),
        }
        prop_assert_eq!(
            rule.encode_state(&fused),
            words(&state),
            "state after {:?}",
            step
        );
    }
    Ok(())
}

/// Window boundaries around window `index` (its start, the next two's),
/// each -1, 0 and +1 ns, then `at` and the end of time.
fn boundaries(index: u64, window: u64, at: u64) -> Vec<u64> {
    let most = u128::from(u64::MAX);
    let mut times = vec![at];
    for k in 0..3u128 {
        for d in -1..=1 {
            times.push(near((u128::from(index) + k) * u128::from(window), d, most) as u64);
        }
    }
    times.push(u64::MAX);
    times
}

/// A cost for pick `how_much`: 0, 1, `cap`, `cap + 1`, `fit` (one that
/// just fits the initial state) or anything up to `cap + 1`.
fn cost_of(cap: u64, fit: u64) -> impl Fn(u8, u64) -> u64 {
    move |how_much, raw| match how_much {
        0 => 0,
        1 => 1,
        2 => cap,
        3 => cap.saturating_add(1),
        4 => fit,
        _ => raw % cap.saturating_add(2),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The fixed window from any valid state, the count anywhere or within
    /// 1 of where `cost` just fits.
    #[test]
    fn fixed_window_decision_equals_general_path(
        (limit, window, cost) in (limit(), window())
            .prop_flat_map(|(l, w)| (Just(l), Just(w), cost(l))),
        (raw, fit) in (any::<u64>(), prop::option::of(-1i128..=1)),
        at in time(),
        steps in steps(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::FixedWindow, rate.into());
        let index = at / window;
        let count = count_near_fit(raw, fit, limit, cost);
        let tag = tag(&rule);
        let words = |s: &FixedWindowState| vec![tag, 1, s.index, s.count];
        same_path(&rule, &FixedWindow::new(rate), FixedWindowState { index, count }, words,
            &boundaries(index, window, at), cost_of(limit, cost), &steps)?;
    }

    /// The sliding window from any valid state: both counts anywhere, or
    /// the current one within 1 of where `cost` fits with no previous weight.
    #[test]
    fn sliding_window_decision_equals_general_path(
        (limit, window, cost) in (limit(), window())
            .prop_flat_map(|(l, w)| (Just(l), Just(w), cost(l))),
        (raw_prev, raw_curr) in (any::<u64>(), any::<u64>()),
        fit in prop::option::of(-1i128..=1),
        at in time(),
        steps in steps(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::SlidingWindow, rate.into());
        let index = at / window;
        let previous = raw_prev % (limit + 1);
        let current = count_near_fit(raw_curr, fit, limit, cost);
        let tag = tag(&rule);
        let words = |s: &SlidingWindowState| vec![tag, 1, s.index, s.previous, s.current];
        let state = SlidingWindowState { index, previous, current };
        same_path(&rule, &SlidingWindow::new(rate), state, words,
            &boundaries(index.saturating_sub(1), window, at), cost_of(limit, cost), &steps)?;
    }

    /// The leaky bucket, burst included, from any queue end the state file
    /// accepts or one within 2 of where `at` decides (the queue empty at
    /// `at`, or a request of `cost` departing just within the burst).
    #[test]
    fn leaky_bucket_decision_equals_general_path(
        (limit, window, burst, cost) in (limit(), window(), prop_oneof![Just(0u64), limit()])
            .prop_flat_map(|(l, w, b)| (Just(l), Just(w), Just(b), cost(b + 1))),
        raw in any::<u128>(),
        edge in prop::option::of((any::<bool>(), -2i128..=2)),
        (at, then) in (time(), time()),
        steps in steps(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::LeakyBucket, rate.into()).with_burst(burst);
        let (next_slot, _) = leaky_queue_end((limit, window, burst, cost), at, raw, edge);
        let (l, w) = (u128::from(limit), u128::from(window));
        let tag = tag(&rule);
        let words = |s: &LeakyBucketState| vec![tag, 1, s.next_slot.0[0], s.next_slot.0[1]];
        let state = LeakyBucketState { next_slot: ScaledTime([(next_slot >> 64) as u64, next_slot as u64]) };
        // When the queue empties (± 1 ns) and when its units leave.
        let empties = (next_slot / l) as u64;
        let mut times = vec![at, then, empties.saturating_sub(1), empties, empties.saturating_add(1)];
        times.extend((1..=3).map(|k| ((next_slot.saturating_sub(k * w)) / l) as u64));
        same_path(&rule, &LeakyBucket::new(rate, burst), state, words, &times,
            cost_of(burst + 1, cost), &steps)?;
    }

    /// The sliding log from up to 6 sorted entries at or near `at - W`
    /// (± 1 ns of expiring) or anywhere before `at`; the limit small, or
    /// large with small costs (a log holds one entry per unit admitted).
    #[test]
    fn sliding_log_decision_equals_general_path(
        (limit, small) in prop_oneof![(1u64..=8).prop_map(|l| (l, l)), limit().prop_map(|l| (l, 3))],
        window in window(),
        at in time(),
        offsets in prop::collection::vec((any::<bool>(), -1i128..=1, any::<u64>()), 0..=6),
        fit in 0u64..=2,
        steps in steps(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::SlidingLog, rate.into());
        let (at128, w) = (u128::from(at), u128::from(window));
        let mut entries: Vec<u64> = offsets
            .iter()
            .map(|&(expiring, d, raw)| {
                let base = if expiring { at128.saturating_sub(w) } else { at128.saturating_sub(u128::from(raw) % (2 * w)) };
                near(base, d, at128) as u64
            })
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .collect();
        entries.sort_unstable();
        let tag = tag(&rule);
        let words = |s: &SlidingLogState| {
            let mut v = vec![tag, 1, s.len() as u64];
            s.iter().for_each(|(t, cost)| v.extend([t, cost]));
            v
        };
        // Each entry's expiry ± 1 ns, `at` and the end of time.
        let mut times = vec![at, u64::MAX];
        for &e in entries.iter().take(3) {
            let expiry = u128::from(e) + w;
            times.extend((-1..=1).map(|d| near(expiry, d, u64::MAX.into()) as u64));
        }
        let room = limit.saturating_sub(entries.len() as u64).min(small);
        let state: SlidingLogState = entries.into_iter().collect();
        same_path(&rule, &SlidingLog::new(rate), state, words, &times,
            cost_of(small, room.saturating_add(fit).min(small + 1)), &steps)?;
    }
}
