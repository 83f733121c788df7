//! Strategies for the edges random traces rarely reach, shared by the
//! fused-path tests (`token_bucket_admit.rs`, `token_bucket_decide.rs`,
//! `other_limiters_admit.rs`): limits and windows up to their maxima, times
//! near zero and the end of `u64` nanoseconds, costs around 0, 1 and the
//! most that can pass.

#![allow(dead_code)]

use limits::{Decision, RetryAfter};
use limits::{MAX_LIMIT, MAX_WINDOW};
use proptest::prelude::*;
use std::time::Duration;

/// What `allow` answers, read from a whole decision.
pub fn verdict_of(d: &Decision) -> Result<Duration, RetryAfter> {
    if d.allowed {
        Ok(d.delay)
    } else {
        Err(d.retry_after)
    }
}

/// A limit (or burst): small, the largest, or anything in between.
pub fn limit() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..=4, Just(MAX_LIMIT), 1..=MAX_LIMIT]
}

/// A window in nanoseconds: one, the longest, or anything in between.
pub fn window() -> impl Strategy<Value = u64> {
    let max = MAX_WINDOW.as_nanos() as u64;
    prop_oneof![Just(1u64), 1u64..=1_000, Just(max), 1..=max]
}

/// A time: near zero, near the end of time, or anywhere.
pub fn time() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..=10, u64::MAX - 10..=u64::MAX, any::<u64>()]
}

/// A cost around the edges 0, 1, `cap` (the largest that can pass) and
/// `cap + 1`.
pub fn cost(cap: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(cap),
        Just(cap.saturating_add(1)),
        0..=cap.saturating_add(1)
    ]
}
