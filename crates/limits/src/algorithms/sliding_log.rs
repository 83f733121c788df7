//! Sliding log: the exact limiter. Per key, the timestamps of admitted
//! requests (one per unit of cost) in the window (t - W, t].
//!
//! An entry expires when `entry <= t - W`, as in the seed chapter's code.
//! Memory is bounded by L entries of 8 bytes: a denied request records
//! nothing, and the buffer never grows beyond L.

use super::log_buffer::Log;
pub use super::log_state::SlidingLogState;
use super::{sat64, RateAlgorithm};
use crate::Mode;
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
    /// entries; one of 3 takes 32). A first entry is held inline (capacity
    /// 1, no allocation), so the second moves it to a ring of 3, the fourth
    /// to 9, the tenth to 33 (the log's [`Log::room_for`]: the keyed
    /// arena's rings are 2, 3, 4, 6, 8, 12, ..., `keyed/log_view.rs`). Out
    /// of line: most records fit.
    #[cold]
    #[inline(never)]
    fn grow<L: Log>(&self, log: &mut L, needed: usize) {
        let target = log.room_for(needed, self.limit);
        log.resize(target);
    }

    /// `advance` on either shape: drops the expired entries, and gives
    /// memory back when a ring has shrunk to a quarter of it.
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
    #[inline(always)]
    fn check_log<L: Log>(&self, log: &L, now: u64, cost: u64) -> Result<(), Option<u64>> {
        if cost > self.limit {
            return Err(None);
        }
        let count = log.len() as u64;
        if count + cost <= self.limit {
            return Ok(());
        }
        // 1 <= k <= count, because cost <= limit < count + cost.
        let k = (count + cost - self.limit) as usize;
        let entry = log.get(k - 1).unwrap_or(0);
        Err(Some(sat64(self.until_expired(entry, now))))
    }

    /// `record` on either shape.
    #[inline(always)]
    fn record_log<L: Log>(&self, log: &mut L, now: u64, cost: u64) {
        let needed = log.len() + cost as usize;
        if needed > log.capacity() {
            self.grow(log, needed);
        }
        log.push_n(now, cost as usize);
    }
}

impl RateAlgorithm for SlidingLog {
    type State = SlidingLogState;

    /// Inlined into `check` and the sweep, where it runs per decision. The
    /// shape is chosen once.
    #[inline(always)]
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

    #[inline(always)]
    fn record(&self, log: &mut SlidingLogState, now: u64, cost: u64) {
        match log.ring_mut() {
            Some(ring) => self.record_log(ring, now, cost),
            None => self.record_log(log, now, cost),
        }
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
        log.heap_bytes()
    }

    /// Idle iff the newest entry has expired: `advance` then `reset_after`
    /// would say the same (advancing pops only entries older than the
    /// newest, and moves `now` to the newest entry at most, where a window
    /// longer than zero has not passed), but this reads only the newest
    /// entry, not the oldest too, and writes nothing: the keyed limiter's
    /// sweep calls it for keys it is not deciding (issue 9).
    fn is_idle(&self, log: &mut SlidingLogState, now: u64) -> bool {
        self.is_idle_log(log, now)
    }

    /// `Rule::check`'s and `Rule::peek`'s one pass for a single rate: `advance`
    /// (which drops the expired entries), the count against the limit, the
    /// record (in `Record` mode), then the derived fields from the log left:
    /// `remaining` is `L - len`, `reset_after` the time until the newest entry
    /// expires and `refill_after` until the oldest does (the wait of
    /// `remaining + 1`, for which the oldest entry must go), without a second
    /// `check` (`tests/it/other_limiters_decide.rs`).
    /// The shape chosen once, then each shape's straight-line pass.
    #[inline(always)]
    fn decide_one(&self, log: &mut SlidingLogState, now: u64, cost: u64, mode: Mode) -> Decision {
        match log.ring_mut() {
            Some(ring) => self.decide_log(ring, now, cost, mode),
            None => self.decide_log(log, now, cost, mode),
        }
    }
}

/// A wait of `check_log`'s as a `RetryAfter`.
#[inline(always)]
fn retry(wait: Option<u64>) -> RetryAfter {
    wait.map_or(RetryAfter::Never, RetryAfter::from_nanos)
}

impl SlidingLog {
    /// [`RateAlgorithm::decide_one`] on either shape.
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
        if cost.wrapping_sub(1) < self.limit {
            let count = log.len() as u64;
            if count + cost <= self.limit {
                if mode == Mode::Record {
                    self.record_log(log, t, cost);
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

/// What the keyed arena's table (`keyed/compact_log.rs`) asks of a log it
/// holds in its own way: the same steps as on a [`SlidingLogState`].
impl SlidingLog {
    /// [`RateAlgorithm::is_idle`] on either shape: the newest entry has
    /// expired (or there is none).
    #[inline(always)]
    pub(crate) fn is_idle_log<L: Log>(&self, log: &L, now: u64) -> bool {
        log.back()
            .is_none_or(|newest| self.until_expired(newest, now) == 0)
    }

    /// `Rule::used_permille` of a single-rate sliding log, on either shape:
    /// its steps (advance; nothing used if the reset is zero; else the
    /// share of L held) on this algorithm's own functions.
    pub(crate) fn used_permille_log<L: Log>(&self, log: &mut L, now: u64) -> u16 {
        let t = self.advance_log(log, now);
        let reset = log
            .back()
            .map_or(0, |newest| sat64(self.until_expired(newest, t)));
        if reset == 0 {
            return 0;
        }
        let capacity = self.limit.max(1);
        let left = (self.limit - log.len() as u64).min(capacity);
        let share = u128::from(capacity - left) * 1000 / u128::from(capacity);
        u16::try_from(share).unwrap_or(1000)
    }

    /// The limit, L.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }
}
