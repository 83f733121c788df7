//! One decision, apart from Redis: the key's stored value and the time in,
//! the answer and what to write out. The arithmetic is the core's
//! ([`Rule::decide_timed`]); what is here is the scripts' protocol around it.

use crate::layout;
use crate::request::Request;
use limits::{Decision, KeyState, Mode, RetryAfter, Rule};
use std::time::Duration;

/// What a decision does to Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The answer, as the scripts pack it: the time decided at (µs), then
    /// per rate allowed, remaining, never, and (µs, ns) pairs for the
    /// retry, reset, refill and delay, each a little-endian double.
    pub answer: Vec<u8>,
    /// Each key's new value and its time to live in milliseconds, when the
    /// decision recorded something (else none).
    pub writes: Vec<(Vec<u8>, u64)>,
    /// The decision, as the core made it (every rate's combined).
    pub decision: Decision,
}

/// Decides `request` at `now` (microseconds) on its keys' `stored` values
/// (`None` for a key that does not exist).
///
/// ```
/// use limits_redis_module::{decide, Request};
///
/// let args: Vec<&[u8]> = ["fixed-window", "", "1", "1", "0", "1", "1", "1000000", "0"]
///     .iter()
///     .map(|a| a.as_bytes())
///     .collect();
/// let request = Request::parse(&args).unwrap();
/// let first = decide(&request, &[None], 5_000_000);
/// let (stored, ttl_ms) = &first.writes[0];
/// assert_eq!(*ttl_ms, 1001); // to the window's end, a millisecond to spare
/// // The second request in the same window finds the first counted.
/// let second = decide(&request, &[Some(stored)], 5_000_001);
/// assert!(second.writes.is_empty());
/// assert_ne!(first.answer, second.answer);
/// ```
pub fn decide(request: &Request, stored: &[Option<&[u8]>], now: u64) -> Outcome {
    let rule = &request.rule;
    let mut state = layout::read(rule, stored);
    let before = state.clone();
    let mut rows: Vec<Decision> = Vec::with_capacity(rule.rates().len());
    let (decision, at) = rule.decide_timed(
        &mut state,
        now.saturating_mul(1000),
        request.cost,
        request.mode,
        |d| rows.push(d),
    );
    let mut answer = Vec::with_capacity(8 * (1 + 11 * rows.len()));
    let mut push = |n: u64| answer.extend_from_slice(&(n as f64).to_le_bytes());
    push(at / 1000);
    for row in &rows {
        push(u64::from(decision.allowed));
        push(row.remaining);
        push(u64::from(row.retry_after == RetryAfter::Never));
        let retry = row.retry_after.duration().unwrap_or_default();
        for wait in [retry, row.reset_after, row.refill_after, row.delay] {
            let nanos = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
            push(nanos / 1000);
            push(nanos % 1000);
        }
    }
    if !recorded(request, decision.allowed, before, &state, now) {
        return Outcome {
            answer,
            writes: Vec::new(),
            decision,
        };
    }
    let writes = written(
        rule,
        &state,
        stored,
        (decision, &rows),
        request.ttl_floor_ms,
    );
    Outcome {
        answer,
        writes,
        decision,
    }
}

/// Whether a decision that left `state` recorded anything, as the scripts
/// write only then: an admitted request of some cost, unless only looked
/// at; a denied one only if counted ([`Mode::RecordAlways`]) by a limiter
/// that keeps such counts, which a look from the state `before` tells.
fn recorded(
    request: &Request,
    allowed: bool,
    before: KeyState,
    state: &KeyState,
    now: u64,
) -> bool {
    let (rule, cost) = (&request.rule, request.cost);
    if cost == 0 || !request.mode.records() {
        return false;
    }
    if allowed {
        return true;
    }
    if request.mode != Mode::RecordAlways {
        return false;
    }
    let mut looked = before;
    rule.decide_timed(
        &mut looked,
        now.saturating_mul(1000),
        cost,
        Mode::Peek,
        |_| {},
    );
    rule.encode_state(&looked) != rule.encode_state(state)
}

/// The keys' values holding `state` (of `rule`, read from `stored`), each
/// with its time to live: as long as its rate's state matters, by
/// `decided` (the decision, and each rate's), a key per rate; one key for
/// all as long as the longest; never below `floor_ms`.
pub(crate) fn written(
    rule: &Rule,
    state: &KeyState,
    stored: &[Option<&[u8]>],
    (decision, rows): (Decision, &[Decision]),
    floor_ms: u64,
) -> Vec<(Vec<u8>, u64)> {
    let resets: Vec<Duration> = match layout::keys(rule) {
        1 => vec![decision.reset_after],
        _ => rows.iter().map(|row| row.reset_after).collect(),
    };
    let values = layout::write(rule, state, stored);
    values
        .into_iter()
        .zip(resets)
        .map(|(value, reset)| (value, ttl_ms(reset).max(floor_ms)))
        .collect()
}

/// A key's time to live for a state back to full after `reset`, as the
/// scripts set it: whole milliseconds rounded up, one to spare.
fn ttl_ms(reset: Duration) -> u64 {
    let ms = reset.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX).saturating_add(1)
}
