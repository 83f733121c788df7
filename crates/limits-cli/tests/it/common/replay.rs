//! What `limits replay` should print, computed with the core's own
//! `KeyedLimiter`: the reference the replay tests compare against.

use limits::{format_seconds, Algorithm, Decision, KeyedLimiter, ManualClock, Rule};
use std::time::Duration;

/// A keyed limiter of `algorithm` at `rate`, on a manual clock (replay
/// passes each line's time explicitly).
pub fn keyed(algorithm: Algorithm, rate: &str) -> KeyedLimiter<String, ManualClock> {
    KeyedLimiter::with_clock(
        Rule::new(algorithm, rate.parse().unwrap()),
        ManualClock::new(0),
    )
}

/// The `--decisions` row of decision `d` for a request at `t` ns.
pub fn decision_row(t: u64, key: &str, cost: u64, d: &Decision) -> Vec<String> {
    let retry = d
        .retry_after
        .duration()
        .map_or(String::new(), format_seconds);
    vec![
        format_seconds(Duration::from_nanos(t)),
        key.to_string(),
        cost.to_string(),
        d.allowed.to_string(),
        d.remaining.to_string(),
        retry,
        format_seconds(d.reset_after),
        format_seconds(d.refill_after),
    ]
}
