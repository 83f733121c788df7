//! The GCRA admission test, by which both buckets decide.
//!
//! A bucket of capacity C (the token bucket's limit, the leaky bucket's
//! burst + 1) keeps how far it is below full, its debt: the token bucket's
//! tokens missing, the leaky bucket's queue, as time. A request of `cost`
//! passes iff the debt is at most the tolerance, `C - cost` periods of one
//! unit each; a denied one waits for the excess to drain. One test for
//! every path of both buckets (the steps a rule of several rates composes,
//! the fused single-rate pass, its whole-period form, and the wait behind
//! `refill_after`), so that they cannot drift apart.

use std::ops::{Mul, Sub};

/// The GCRA test: `Ok` if a request of `cost` (at most `capacity`) passes
/// a bucket `debt` below full, else `Err` with the debt's excess over the
/// tolerance `(capacity - cost) * period`.
///
/// `debt` and `period` are in one unit: nanoseconds times L with a period
/// of W (any rate), or whole nanoseconds with a period of T = W / L (a
/// rate whose period is whole): the test is the same in both, as the
/// tolerance is a whole number of periods.
#[inline]
pub(crate) fn admit<N>(debt: N, period: N, capacity: u64, cost: u64) -> Result<(), N>
where
    N: Copy + PartialOrd + From<u64> + Mul<Output = N> + Sub<Output = N>,
{
    let tolerance = N::from(capacity - cost) * period;
    if debt <= tolerance {
        Ok(())
    } else {
        Err(debt - tolerance)
    }
}

/// A bucket's level (the time, scaled by L, at which it is full again, or
/// its queue ends) after `units` are given back at `now_scaled`: lowered by
/// `units` periods, never below now (full, or an empty queue). A bucket
/// already full stays as it is.
pub(crate) fn refunded(level: u128, now_scaled: u128, units: u64, window: u64) -> u128 {
    if level <= now_scaled {
        return level;
    }
    let back = u128::from(units) * u128::from(window);
    level.saturating_sub(back).max(now_scaled)
}

/// A bucket's level after `units` more are taken at `now_scaled`, whether
/// or not they fit: raised by `units` periods from no earlier than now, up
/// to two windows past now (`2 L` periods; see `RateAlgorithm::charge`).
pub(crate) fn charged(level: u128, now_scaled: u128, units: u64, window: u64, limit: u64) -> u128 {
    let window = u128::from(window);
    let most = now_scaled + 2 * u128::from(limit) * window;
    (level.max(now_scaled) + u128::from(units) * window).min(most)
}
