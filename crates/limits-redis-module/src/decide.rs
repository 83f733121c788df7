//! One decision, apart from Redis: the key's stored value and the time in,
//! the answer and what to write out. The arithmetic is the core's
//! ([`Rule::decide_timed`]); what is here is the scripts' protocol around it.

use crate::layout;
use crate::request::Request;
use limits::{Decision, Mode, RetryAfter};
use std::time::Duration;

/// What a decision does to Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The answer, as the scripts pack it: the time decided at (µs), then
    /// per rate allowed, remaining, never, and (µs, ns) pairs for the
    /// retry, reset, refill and delay, each a little-endian double.
    pub answer: Vec<u8>,
    /// The key's new value and its time to live in milliseconds, when the
    /// decision recorded something.
    pub write: Option<(Vec<u8>, u64)>,
}

/// Decides `request` at `now` (microseconds) on the key's `stored` value.
///
/// ```
/// use limits_redis_module::{decide, Request};
///
/// let args: Vec<&[u8]> = ["fixed-window", "", "1", "1", "0", "1", "1", "1000000", "0"]
///     .iter()
///     .map(|a| a.as_bytes())
///     .collect();
/// let request = Request::parse(&args).unwrap();
/// let first = decide(&request, None, 5_000_000);
/// let (stored, ttl_ms) = first.write.unwrap();
/// assert_eq!(ttl_ms, 1001); // to the window's end, a millisecond to spare
/// // The second request in the same window finds the first counted.
/// let second = decide(&request, Some(&stored), 5_000_001);
/// assert!(second.write.is_none());
/// assert_ne!(first.answer, second.answer);
/// ```
pub fn decide(request: &Request, stored: Option<&[u8]>, now: u64) -> Outcome {
    let rule = &request.rule;
    let mut state = layout::read(rule, stored);
    let before = rule.encode_state(&state);
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
    let counted = decision.allowed || request.mode == Mode::RecordAlways;
    let records = request.mode.records() && request.cost > 0 && counted;
    let write = (records && rule.encode_state(&state) != before).then(|| {
        let ttl = ttl_ms(decision.reset_after).max(request.ttl_floor_ms);
        (layout::write(rule, &state), ttl)
    });
    Outcome { answer, write }
}

/// A key's time to live for a state back to full after `reset`, as the
/// scripts set it: whole milliseconds rounded up, one to spare.
fn ttl_ms(reset: Duration) -> u64 {
    let ms = reset.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX).saturating_add(1)
}
