//! Sliding log: the exact limiter. Per key, the admitted requests in the
//! window (t - W, t], each an entry of its time and its cost: the log
//! counts units, and holds one entry per decision whatever its cost.
//!
//! An entry expires when `entry <= t - W`, as in the seed chapter's code.
//! Memory is bounded by the decisions in the window and by L entries: a
//! denied request records nothing, every entry holds at least one unit, and
//! a cost above L is denied before the log is touched.

use super::log_buffer::Log;
pub use super::log_state::SlidingLogState;
use super::{CostBound, RateAlgorithm, sat64};
use crate::Mode;
use crate::{Decision, Rate, RetryAfter};
use std::time::Duration;

/// Allowed iff count + cost <= L (count: the units held); a denied request
/// waits until the k-th oldest unit expires, k = count + cost - L.
#[derive(Clone, Copy, Debug)]
pub struct SlidingLog {
    limit: u64,
    window: u64,
}

impl SlidingLog {
    /// An exact sliding log for `rate`.
    pub fn new(rate: Rate) -> SlidingLog {
        SlidingLog {
            limit: rate.limit(),
            window: rate.window_nanos(),
        }
    }

    /// Nanoseconds from `now` until `entry` expires.
    fn until_expired(&self, entry: u64, now: u64) -> u128 {
        (u128::from(entry) + u128::from(self.window)).saturating_sub(u128::from(now))
    }

    /// [`until_expired`](Self::until_expired) saturated to `u64`, in `u64`
    /// unless `entry + W` is past the end of `u64` time.
    #[inline]
    fn expires_in(&self, entry: u64, now: u64) -> u64 {
        match entry.checked_add(self.window) {
            Some(end) => end.saturating_sub(now),
            None => sat64(self.until_expired(entry, now)),
        }
    }

    /// Makes room in `log` for `needed` entries: the smallest `2^k + 1`
    /// of them (3, 5, 9, 17, 33, ...) that holds them, but never past L
    /// entries. `8 (2^k + 1)` bytes and malloc's 8-byte header fill a
    /// 16-byte-aligned chunk exactly, and growing by less than double keeps
    /// a log of a few entries in a chunk near its size (the keyed table
    /// holds most keys' logs). Two entries are held inline (capacity 2, no
    /// allocation), so the third moves them to a ring of 3, the fourth to
    /// 5, the sixth to 9 ([`Log::room_for`]). Out of line: most records fit.
    #[cold]
    #[inline(never)]
    fn grow<L: Log>(&self, log: &mut L, needed: usize) {
        let target = log.room_for(needed, self.limit);
        log.resize(target);
    }

    /// `advance` on either shape: drops the expired entries, and gives
    /// memory back when a ring has shrunk to a quarter of it.
    // Written out: the expiry runs on every decision (as a hint, `check` cost more).
    #[inline(always)]
    fn advance_log<L: Log>(&self, log: &mut L, now: u64) -> u64 {
        let now = log.back().map_or(now, |newest| now.max(newest));
        if let Some(horizon) = now.checked_sub(self.window) {
            while log.front().is_some_and(|e| e <= horizon) {
                log.pop_front();
            }
        }
        if log.sparse() {
            log.resize(log.len() * 2);
        }
        now
    }

    /// `check` on either shape, the wait as plain nanoseconds (`None` for
    /// never): a `RetryAfter` is built once the shapes' paths have met
    /// ([`retry`]), where the caller's tests of it fold away.
    #[inline]
    fn check_log<L: Log>(&self, log: &L, now: u64, cost: u64) -> Result<(), Option<u64>> {
        if CostBound::of(cost, self.limit) == CostBound::Never {
            return Err(None);
        }
        let count = log.units();
        if count + cost <= self.limit {
            return Ok(());
        }
        // 1 <= k <= count, because cost <= limit < count + cost.
        let entry = log.unit(count + cost - self.limit);
        Err(Some(sat64(self.until_expired(entry, now))))
    }

    /// `record` on either shape: one entry, whatever the cost (0 records
    /// nothing).
    // Written out: every admitted decision records (as a hint, `check` cost more).
    #[inline(always)]
    fn record_log<L: Log>(&self, log: &mut L, now: u64, cost: u64) {
        if cost == 0 {
            return;
        }
        let needed = log.len() + 1;
        if needed > log.capacity() {
            self.grow(log, needed);
        }
        log.push(now, cost);
    }
}

impl RateAlgorithm for SlidingLog {
    type State = SlidingLogState;

    /// Inlined into `check` and the sweep, where it runs per decision. The
    /// shape is chosen once.
    #[inline]
    fn advance(&self, log: &mut SlidingLogState, now: u64) -> u64 {
        match log.ring_mut() {
            Some(ring) => self.advance_log(ring, now),
            None => self.advance_log(log, now),
        }
    }

    fn check(&self, log: &SlidingLogState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        let verdict = match log.ring() {
            Some(ring) => self.check_log(ring, now, cost),
            None => self.check_log(log, now, cost),
        };
        verdict.map_err(retry)
    }

    #[inline]
    fn record(&self, log: &mut SlidingLogState, now: u64, cost: u64) {
        match log.ring_mut() {
            Some(ring) => self.record_log(ring, now, cost),
            None => self.record_log(log, now, cost),
        }
    }

    /// Takes the units from the entries of the request's time, while they
    /// are in the window.
    fn refund(&self, log: &mut SlidingLogState, _: u64, at: u64, units: u64) {
        log.take_units_at(at, units);
    }

    /// An entry at `now` of what fits under the limit.
    fn charge(&self, log: &mut SlidingLogState, now: u64, units: u64) {
        let room = self.limit.saturating_sub(log.units());
        self.record(log, now, units.min(room));
    }

    fn remaining(&self, log: &SlidingLogState, _: u64) -> u64 {
        self.limit - log.units()
    }

    fn reset_after(&self, log: &SlidingLogState, now: u64) -> u64 {
        log.back()
            .map_or(0, |newest| super::sat64(self.until_expired(newest, now)))
    }

    fn capacity(&self) -> u64 {
        self.limit
    }

    fn heap_bytes(log: &SlidingLogState) -> usize {
        log.heap_bytes()
    }

    /// Idle iff the newest entry has expired: `advance` then `reset_after`
    /// would say the same (advancing pops only entries older than the
    /// newest, and moves `now` to the newest entry at most, where a window
    /// longer than zero has not passed), but this reads only the newest
    /// entry, not the oldest too, and writes nothing: the keyed limiter's
    /// sweep calls it for keys it is not deciding.
    fn is_idle(&self, log: &mut SlidingLogState, now: u64) -> bool {
        log.back()
            .is_none_or(|newest| self.until_expired(newest, now) == 0)
    }

    /// `Rule::check`'s and `Rule::peek`'s one pass for a single rate: `advance`
    /// (which drops the expired entries), the count against the limit, the
    /// record (in `Record` mode), then the derived fields from the log left:
    /// `remaining` is `L - units`, `reset_after` the time until the newest entry
    /// expires and `refill_after` until the oldest does (the wait of
    /// `remaining + 1`, for which the oldest entry must go), without a second
    /// `check` (`tests/it/other_limiters_decide.rs`).
    /// The shape chosen once, then each shape's straight-line pass.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    fn decide_one(&self, log: &mut SlidingLogState, now: u64, cost: u64, mode: Mode) -> Decision {
        match log.ring_mut() {
            Some(ring) => self.decide_log(ring, now, cost, mode),
            None => self.decide_log(log, now, cost, mode),
        }
    }
}

/// A wait of `check_log`'s as a `RetryAfter`.
#[inline]
fn retry(wait: Option<u64>) -> RetryAfter {
    wait.map_or(RetryAfter::Never, RetryAfter::from_nanos)
}

impl SlidingLog {
    /// [`RateAlgorithm::decide_one`] on either shape.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    pub(crate) fn decide_log<L: Log>(
        &self,
        log: &mut L,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Decision {
        let t = self.advance_log(log, now);
        let mut decision = Decision::allow(0);
        match CostBound::of(cost, self.limit) {
            CostBound::Decided => {
                let count = log.units();
                if count + cost <= self.limit {
                    if mode.records() {
                        self.record_log(log, t, cost);
                    }
                } else {
                    // 1 <= k <= count, as in `check`.
                    let entry = log.unit(count + cost - self.limit);
                    decision.allowed = false;
                    decision.retry_after = RetryAfter::from_nanos(self.expires_in(entry, t));
                }
            }
            CostBound::Free => {}
            CostBound::Never => {
                decision.allowed = false;
                decision.retry_after = RetryAfter::Never;
            }
        }
        decision.remaining = self.limit - log.units();
        if let (Some(oldest), Some(newest)) = (log.front(), log.back()) {
            let reset = self.expires_in(newest, t);
            decision.reset_after = Duration::from_nanos(reset);
            let refill = self.expires_in(oldest, t);
            decision.refill_after = Duration::from_nanos(refill);
        }
        decision
    }
}
