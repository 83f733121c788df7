//! Sliding log: the exact limiter. Per key, the timestamps of admitted
//! requests (one per unit of cost) in the window (t - W, t].
//!
//! An entry expires when `entry <= t - W`, as in the seed chapter's code.
//! Memory is bounded by L entries of 8 bytes: a denied request records
//! nothing, and the buffer never grows beyond L.

pub use super::log_buffer::SlidingLogState;
use super::{sat64, wait, RateAlgorithm};
use crate::rule::{DecideOne, Mode};
use crate::{Decision, Rate, RetryAfter};
use std::time::Duration;

/// Allowed iff count + cost <= L; a denied request waits until the k-th
/// oldest entry expires, k = count + cost - L.
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
    #[inline(always)]
    fn expires_in(&self, entry: u64, now: u64) -> u64 {
        match entry.checked_add(self.window) {
            Some(end) => end.saturating_sub(now),
            None => sat64(self.until_expired(entry, now)),
        }
    }

    /// Makes room in `log` for `needed` entries: at least doubling, to
    /// `2^k + 1` of them (3, 9, 17, 33, ...), but never past L entries.
    /// `8 (2^k + 1)` bytes and malloc's 8-byte header fill a 16-byte-aligned
    /// chunk exactly (a ring of 4 took a chunk of 48 bytes, for 32 of
    /// entries; one of 3 takes 32), and a log grows as often as it did
    /// (at 4 and 10 entries, where it grew at 5 and 9). Out of line: most
    /// records fit.
    #[cold]
    #[inline(never)]
    fn grow(&self, log: &mut SlidingLogState, needed: usize) {
        let target = needed
            .max(log.capacity() * 2)
            .saturating_sub(1)
            .checked_next_power_of_two()
            .map_or(needed, |p| p.max(2) + 1);
        let target = target.min(self.limit as usize).max(needed);
        log.resize(target);
    }
}

impl RateAlgorithm for SlidingLog {
    type State = SlidingLogState;

    /// Inlined (into `check`, `allow` and the sweep): a call was about 10
    /// instructions of each.
    #[inline(always)]
    fn advance(&self, log: &mut SlidingLogState, now: u64) -> u64 {
        let now = log.back().map_or(now, |newest| now.max(newest));
        if let Some(horizon) = now.checked_sub(self.window) {
            while log.front().is_some_and(|e| e <= horizon) {
                log.pop_front();
            }
        }
        // Give memory back when the log has shrunk to a quarter of it.
        if log.capacity() > 16 && log.len() < log.capacity() / 4 {
            log.resize(log.len() * 2);
        }
        now
    }

    fn check(&self, log: &SlidingLogState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        if cost > self.limit {
            return Err(RetryAfter::Never);
        }
        let count = log.len() as u64;
        if count + cost <= self.limit {
            return Ok(());
        }
        // 1 <= k <= count, because cost <= limit < count + cost.
        let k = (count + cost - self.limit) as usize;
        wait(self.until_expired(log.get(k - 1).unwrap_or(0), now))
    }

    #[inline(always)]
    fn record(&self, log: &mut SlidingLogState, now: u64, cost: u64) {
        let needed = log.len() + cost as usize;
        if needed > log.capacity() {
            self.grow(log, needed);
        }
        log.push_n(now, cost as usize);
    }

    fn remaining(&self, log: &SlidingLogState, _: u64) -> u64 {
        self.limit - log.len() as u64
    }

    fn reset_after(&self, log: &SlidingLogState, now: u64) -> u64 {
        log.back()
            .map_or(0, |newest| super::sat64(self.until_expired(newest, now)))
    }

    fn capacity(&self) -> u64 {
        self.limit
    }

    fn heap_bytes(log: &SlidingLogState) -> usize {
        log.capacity() * std::mem::size_of::<u64>()
    }

    /// Idle iff the newest entry has expired: `advance` then `reset_after`
    /// would say the same (advancing pops only entries older than the
    /// newest, and moves `now` to the newest entry at most, where a window
    /// longer than zero has not passed), but this reads only the newest
    /// entry, not the oldest too, and writes nothing: the keyed limiter's
    /// sweep calls it for keys it is not deciding (issue 9).
    fn is_idle(&self, log: &mut SlidingLogState, now: u64) -> bool {
        log.back()
            .is_none_or(|newest| self.until_expired(newest, now) == 0)
    }
}

/// `Rule::check`'s and `Rule::peek`'s one pass for a single rate: `advance`
/// (which drops the expired entries), the count against the limit, the
/// record (in `Record` mode), then the derived fields from the log left:
/// `remaining` is `L - len`, `reset_after` the time until the newest entry
/// expires and `refill_after` until the oldest does (the wait of
/// `remaining + 1`, for which the oldest entry must go), without a second
/// `check` (`tests/other_limiters_decide.rs`).
impl DecideOne for SlidingLog {
    #[inline(always)]
    fn decide_one(&self, log: &mut SlidingLogState, now: u64, cost: u64, mode: Mode) -> Decision {
        let t = self.advance(log, now);
        let mut decision = Decision::allow(0);
        if cost.wrapping_sub(1) < self.limit {
            let count = log.len() as u64;
            if count + cost <= self.limit {
                if mode == Mode::Record {
                    self.record(log, t, cost);
                }
            } else {
                // 1 <= k <= count, as in `check`.
                let k = (count + cost - self.limit) as usize;
                let entry = log.get(k - 1).unwrap_or(0);
                decision.allowed = false;
                decision.retry_after = RetryAfter::from_nanos(self.expires_in(entry, t));
            }
        } else if cost != 0 {
            decision.allowed = false;
            decision.retry_after = RetryAfter::Never;
        }
        decision.remaining = self.limit - log.len() as u64;
        if let (Some(oldest), Some(newest)) = (log.front(), log.back()) {
            let reset = self.expires_in(newest, t);
            decision.reset_after = Duration::from_nanos(reset);
            let refill = self.expires_in(oldest, t);
            decision.refill_after = Duration::from_nanos(refill);
        }
        decision
    }
}
