//! Counting denied hits, call for call with envoyproxy/ratelimit's Redis
//! counter (`src/redis/fixed_cache_impl.go` and its tests). Its arithmetic,
//! as its fixed-cache tests state it: one counter per window of the unit
//! (the key ends in `now / divider * divider`); every call adds its hits
//! (`INCRBY`, denied or not); with `after` the counter's new value, the
//! answer is OVER_LIMIT when `after > limit` and OK otherwise, with
//! `limit_remaining` `limit - after` when OK and 0 when over, and
//! `duration_until_reset` the time to the window's end. Our fixed window in
//! `Mode::RecordAlways` must give those answers to every call; the
//! conformance model, which keeps the counter as the reference does (past
//! the limit), must too.

use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rate, Rule};
use limits_conformance::RuleModel;
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

/// The reference's counter for one key: the count of each window.
struct ReferenceCounter {
    limit: u64,
    window: u64,
    counts: HashMap<u64, u64>,
}

/// What the reference answers one call: over or not, `limit_remaining`,
/// `duration_until_reset` in nanoseconds.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    over: bool,
    remaining: u64,
    until_reset: u64,
}

impl ReferenceCounter {
    fn new(limit: u64, window: u64) -> ReferenceCounter {
        ReferenceCounter {
            limit,
            window,
            counts: HashMap::new(),
        }
    }

    fn call(&mut self, now: u64, hits: u64) -> Answer {
        let index = now / self.window;
        let after = self.counts.entry(index).or_default();
        *after += hits;
        let over = *after > self.limit;
        Answer {
            over,
            remaining: if over { 0 } else { self.limit - *after },
            until_reset: (index + 1) * self.window - now,
        }
    }
}

/// Our answer to the same call, read as the reference's fields.
fn ours(limiter: &KeyedLimiter<String, ManualClock>, now: u64, hits: u64) -> Answer {
    let d = limiter.decide("k", Some(now), hits, Mode::RecordAlways, |_| {});
    Answer {
        over: !d.allowed,
        remaining: d.remaining,
        until_reset: d.reset_after.as_nanos() as u64,
    }
}

fn fixed_window(limit: u64, window: u64) -> KeyedLimiter<String, ManualClock> {
    let rate = Rate::new(limit, Duration::from_nanos(window)).expect("a rate");
    KeyedLimiter::with_clock(
        Rule::new(Algorithm::FixedWindow, rate.into()),
        ManualClock::new(0),
    )
}

/// Replays `calls` (time, hits) through the reference's counter, our fixed
/// window and the conformance model, and compares every answer.
fn replay(limit: u64, window: u64, calls: &[(u64, u64)]) -> Result<(), String> {
    let mut reference = ReferenceCounter::new(limit, window);
    let limiter = fixed_window(limit, window);
    let mut model = RuleModel::new(Algorithm::FixedWindow, &[(limit, window)], None);
    for (i, &(now, hits)) in calls.iter().enumerate() {
        let want = reference.call(now, hits);
        let got = ours(&limiter, now, hits);
        if got != want {
            return Err(format!(
                "call #{i} ({hits} at {now}): ours {got:?}, the reference's {want:?}"
            ));
        }
        let (d, _) = model.decide_each(now, hits, Mode::RecordAlways);
        let modelled = Answer {
            over: !d.allowed,
            remaining: d.remaining,
            until_reset: d.reset_after.as_nanos() as u64,
        };
        if modelled != want {
            return Err(format!(
                "call #{i} ({hits} at {now}): the model {modelled:?}, the reference's {want:?}"
            ));
        }
    }
    Ok(())
}

const HOUR: u64 = 3_600_000_000_000;
const SECOND: u64 = 1_000_000_000;

#[test]
fn the_references_over_limit_sequence_is_answered_as_it_states_it() {
    // TestOverLimit: 15 per hour, the counter at 11, 13, then 16 (over,
    // remaining 0), then over again; all in one window.
    let now = 1_000_000 * SECOND;
    let calls = [(now, 11), (now, 2), (now, 3), (now, 1)];
    replay(15, HOUR, &calls).unwrap();
    let limiter = fixed_window(15, HOUR);
    let answers: Vec<(bool, u64)> = calls
        .iter()
        .map(|&(t, hits)| ours(&limiter, t, hits))
        .map(|a| (a.over, a.remaining))
        .collect();
    assert_eq!(answers, [(false, 4), (false, 2), (true, 0), (true, 0)]);
}

#[test]
fn a_denied_call_closes_the_window_for_every_later_call_until_it_ends() {
    // The regression that counting denials exists for: 8 of 10 used, a
    // call of 5 denied; with the reference's count (13) a call of 1 is now
    // denied too, where a limiter that never counts a denial admits it.
    let now = 5 * SECOND + 1;
    replay(
        10,
        SECOND,
        &[(now, 8), (now, 5), (now + 1, 1), (6 * SECOND, 1)],
    )
    .unwrap();
    let limiter = fixed_window(10, SECOND);
    ours(&limiter, now, 8);
    ours(&limiter, now, 5);
    assert!(ours(&limiter, now + 1, 1).over);
    assert!(
        !ours(&limiter, 6 * SECOND, 1).over,
        "a new window starts afresh"
    );
}

#[test]
fn hits_above_the_limit_count_as_the_reference_counts_them() {
    // TestNearLimit's last case: 3 hits on a limit of 10 with 27 before.
    replay(
        10,
        SECOND,
        &[(0, 27), (1, 3), (2, 1), (SECOND, 11), (SECOND + 1, 1)],
    )
    .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn every_call_is_answered_as_the_reference_counter_answers_it(
        limit in 1u64..20,
        window in 1u64..50,
        steps in prop::collection::vec((0u64..30, 0u64..25), 1..60),
    ) {
        let mut now = 0;
        let calls: Vec<(u64, u64)> = steps
            .into_iter()
            .map(|(dt, hits)| {
                now += dt;
                // The protocol's hits_addend of 0 means 1.
                (now, hits.max(1))
            })
            .collect();
        replay(limit, window, &calls).map_err(TestCaseError::fail)?;
    }
}
