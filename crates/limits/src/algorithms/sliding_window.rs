//! Sliding window counter: the cheap approximation of the sliding log.
//!
//! Two counts per key, the previous fixed window's and the current one's; the
//! previous count is weighed by how much of it still overlaps the last W:
//! `estimate = prev * (W - e) / W + curr`, with `e` the time elapsed in the
//! current window. Decided exactly, multiplied through by W; unlike PyPI
//! `limits`, the estimate is not floored before comparing (stricter, exact).

use super::{sat64, RateAlgorithm};
use crate::rule::{Admission, AdmitOne, DecideOne, Mode};
use crate::{Decision, Rate, RetryAfter};
use std::time::Duration;

/// Allowed iff `prev * (W - e) + (curr + cost) * W <= L * W`.
#[derive(Clone, Copy, Debug)]
pub struct SlidingWindow {
    limit: u64,
    window: u64,
}

/// The current window's index and the counts of it and of the one before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlidingWindowState {
    /// `floor(t / W)` of the current window.
    pub index: u64,
    /// Cost admitted in the previous window.
    pub previous: u64,
    /// Cost admitted in the current window.
    pub current: u64,
}

impl SlidingWindow {
    /// A sliding window counter for `rate`.
    pub fn new(rate: Rate) -> SlidingWindow {
        SlidingWindow {
            limit: rate.limit(),
            window: rate.window_nanos(),
        }
    }

    fn start(&self, index: u64) -> u128 {
        u128::from(index) * u128::from(self.window)
    }

    /// The estimate times W, at `now` inside the state's current window.
    fn scaled_estimate(&self, s: &SlidingWindowState, now: u64) -> u128 {
        let w = u128::from(self.window);
        let elapsed = u128::from(now) - self.start(s.index);
        u128::from(s.previous) * (w - elapsed) + u128::from(s.current) * w
    }

    /// The smallest elapsed time `e` in a window with counts (prev, curr) at
    /// which `prev * (W - e) + (curr + cost) * W <= L * W`, or `None` if no
    /// `e < W` will do.
    fn first_fit(&self, prev: u64, curr: u64, cost: u64) -> Option<u128> {
        let w = u128::from(self.window);
        let room = u128::from(self.limit).checked_sub(u128::from(curr) + u128::from(cost))?;
        if prev == 0 {
            return Some(0);
        }
        // prev * (W - e) <= room * W  <=>  W - e <= floor(room * W / prev)
        let slack = super::floor_div(room * w, u128::from(prev)).min(w);
        let e = w - slack;
        (e < w).then_some(e)
    }
}

impl RateAlgorithm for SlidingWindow {
    type State = SlidingWindowState;

    fn advance(&self, s: &mut SlidingWindowState, now: u64) -> u64 {
        let index = now / self.window;
        if index == s.index.saturating_add(1) {
            *s = SlidingWindowState {
                index,
                previous: s.current,
                current: 0,
            };
        } else if index > s.index {
            *s = SlidingWindowState {
                index,
                previous: 0,
                current: 0,
            };
        } else if index < s.index {
            return s.index * self.window;
        }
        now
    }

    fn check(&self, s: &SlidingWindowState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        if cost > self.limit {
            return Err(RetryAfter::Never);
        }
        let w = u128::from(self.window);
        let est = self.scaled_estimate(s, now);
        if est + u128::from(cost) * w <= u128::from(self.limit) * w {
            return Ok(());
        }
        let now = u128::from(now);
        // Later in this window, as the previous window's weight fades...
        if let Some(e) = self.first_fit(s.previous, s.current, cost) {
            return super::wait(self.start(s.index) + e - now);
        }
        // ...or in the next one, where the current count becomes the previous.
        // cost <= L, so some e <= W fits there (e = W is the window after).
        let next = self.start(s.index) + w;
        let e = self.first_fit(s.current, 0, cost).unwrap_or(w);
        super::wait(next + e - now)
    }

    fn record(&self, s: &mut SlidingWindowState, _: u64, cost: u64) {
        s.current += cost;
    }

    fn remaining(&self, s: &SlidingWindowState, now: u64) -> u64 {
        let w = u128::from(self.window);
        let room = (u128::from(self.limit) * w).saturating_sub(self.scaled_estimate(s, now));
        sat64(super::floor_div(room, w))
    }

    fn reset_after(&self, s: &SlidingWindowState, now: u64) -> u64 {
        let w = u128::from(self.window);
        let end = if s.current > 0 {
            self.start(s.index) + 2 * w
        } else if s.previous > 0 {
            self.start(s.index) + w
        } else {
            return 0;
        };
        sat64(end - u128::from(now))
    }

    fn capacity(&self) -> u64 {
        self.limit
    }

    /// Idle iff both counts are zero: at a time inside the state's window (where
    /// `advance` leaves it), `reset_after` is zero exactly then, so no
    /// subtraction of times is needed.
    fn is_idle_at(&self, state: &SlidingWindowState, _: u64) -> bool {
        state.previous == 0 && state.current == 0
    }

    /// As [`is_idle_at`](Self::is_idle_at), after the roll (without a
    /// division for a key seen within two windows); inlined into the
    /// sweep, as the fixed window's is (a call was 10 instructions of every
    /// check and allow).
    #[inline(always)]
    fn is_idle(&self, state: &mut SlidingWindowState, now: u64) -> bool {
        self.roll(state, now);
        self.is_idle_at(state, now)
    }
}

/// `Rule::allow`'s one pass for a single rate: the roll of `advance`, the
/// estimate against the limit, the record and the idle test (both counts
/// zero, what a zero `reset_after` says); a denial's wait is `check`'s own
/// search, but for the common case of a current count that leaves no room
/// this window, where it is one division (`tests/other_limiters_admit.rs`).
impl AdmitOne for SlidingWindow {
    #[inline(always)]
    fn admit_one(&self, s: &mut SlidingWindowState, now: u64, cost: u64) -> Admission {
        let t = self.advance(s, now);
        if cost.wrapping_sub(1) < self.limit {
            // The room left under L by the current count and the cost,
            // against the previous count's weight at `t`.
            let w = u128::from(self.window);
            let room = self.limit.checked_sub(s.current.saturating_add(cost));
            let Some(room) = room else {
                // The current count alone leaves no room this window: it
                // fits in the next once the count's weight is at most
                // L - cost, whose first_fit is W - floor((L - cost) * W /
                // current), below W as current > L - cost.
                let slack = super::floor_div(u128::from(self.limit - cost) * w, s.current.into());
                let at = self.start(s.index) + 2 * w - slack;
                return Admission {
                    verdict: Err(RetryAfter::from_nanos(sat64(at - u128::from(t)))),
                    idle: false,
                };
            };
            let elapsed = u128::from(t) - self.start(s.index);
            if u128::from(s.previous) * (w - elapsed) <= u128::from(room) * w {
                s.current += cost;
                return Admission {
                    verdict: Ok(Duration::ZERO),
                    idle: false,
                };
            }
            // Denied with cost <= L: the estimate is above L - cost >= 0, so
            // some count is not zero (not idle).
            return Admission {
                verdict: self.check(s, t, cost).map(|()| Duration::ZERO),
                idle: false,
            };
        }
        Admission::without_room(cost, s.previous == 0 && s.current == 0)
    }
}

/// `Rule::check`'s and `Rule::peek`'s one pass for a single rate: the roll
/// of `advance`, the estimate against the limit, the record (in `Record`
/// mode), then the derived fields from the counts left and `elapsed` (the
/// time from the window's start to `t`, below W): `remaining` is the
/// largest count `c` with `estimate + c * W <= L * W`, `reset_after` the
/// end of the window the last nonzero count weighs in, and `refill_after`
/// the wait of `remaining + 1` (which never fits at `t`), by
/// [`SlidingWindow::wait_after`], as a denial's is. Times are kept relative
/// to the window's start, so they are `u64` (W <= 2^62); products are
/// `u128`, divided in `u64` when they fit (`tests/other_limiters_decide.rs`).
impl DecideOne for SlidingWindow {
    #[inline(always)]
    fn decide_one(&self, s: &mut SlidingWindowState, now: u64, cost: u64, mode: Mode) -> Decision {
        let elapsed = self.roll(s, now);
        let w = u128::from(self.window);
        let weight = u128::from(s.previous) * u128::from(self.window - elapsed);
        let mut decision = Decision::allow(0);
        // A denial's wait, and the cost it is the wait of.
        let mut denied = (0, 0);
        if cost.wrapping_sub(1) < self.limit {
            // `weight + (current + cost) * W <= L * W`, with the room left
            // by the counts alone tested first.
            let room = self.limit.checked_sub(s.current + cost);
            if room.is_some_and(|room| weight <= u128::from(room) * w) {
                if mode == Mode::Record {
                    s.current += cost;
                }
            } else {
                denied = (cost, self.wait_after(s, elapsed, cost));
                decision.allowed = false;
                decision.retry_after = RetryAfter::from_nanos(denied.1);
            }
        } else if cost != 0 {
            decision.allowed = false;
            decision.retry_after = RetryAfter::Never;
        }
        // `floor((L * W - estimate) / W)`, 0 if negative, with `estimate =
        // weight + current * W`: what the current count leaves, less the
        // previous count's weight.
        let free = self.limit.saturating_sub(s.current);
        let remaining = if s.previous == 0 || free == 0 {
            free
        } else {
            let room = (u128::from(free) * w).saturating_sub(weight);
            sat64(super::floor_div(room, w))
        };
        decision.remaining = remaining;
        let reset = if s.current > 0 {
            2 * self.window - elapsed
        } else if s.previous > 0 {
            self.window - elapsed
        } else {
            return decision;
        };
        decision.reset_after = Duration::from_nanos(reset);
        if remaining < self.limit {
            // The usual denial (cost 1, nothing left) has just found it.
            let refill = if denied.0 == remaining + 1 {
                denied.1
            } else {
                self.wait_after(s, elapsed, remaining + 1)
            };
            decision.refill_after = Duration::from_nanos(refill);
        }
        decision
    }
}

impl SlidingWindow {
    /// [`advance`](RateAlgorithm::advance)'s roll, returning the time from
    /// the window's start to the time decided at: a time in the state's
    /// window, the next or before it is placed from the window's start
    /// without a division (the usual case: a key seen within two windows);
    /// anything else, and the last index (where `advance` rolls every
    /// time), is `advance`'s.
    #[inline(always)]
    fn roll(&self, s: &mut SlidingWindowState, now: u64) -> u64 {
        if s.index < u64::MAX {
            // `index * W` fits: a state's window starts within time.
            let start = s.index * self.window;
            let Some(elapsed) = now.checked_sub(start) else {
                return 0; // before the state's window: decided at its start
            };
            if elapsed < self.window {
                return elapsed;
            }
            if elapsed - self.window < self.window {
                *s = SlidingWindowState {
                    index: s.index + 1,
                    previous: s.current,
                    current: 0,
                };
                return elapsed - self.window;
            }
        }
        let t = self.advance(s, now);
        t - s.index * self.window
    }

    /// `check`'s wait for a request of `cost` (1 to L) that does not fit at
    /// `elapsed` into the state's window: the first later time in this
    /// window at which the previous count's weight leaves room for it,
    /// else the first in the next (where the current count becomes the
    /// previous, and some time up to its end fits, as `cost <= L`), less
    /// `elapsed`.
    #[inline(always)]
    fn wait_after(&self, s: &SlidingWindowState, elapsed: u64, cost: u64) -> u64 {
        let w = u128::from(self.window);
        // This window: with room at the previous count's weight 0, that
        // count is not zero (the request did not fit); tested all the same.
        let room = self.limit.checked_sub(s.current.saturating_add(cost));
        if let (Some(room), true) = (room, s.previous > 0) {
            let slack = super::floor_div(u128::from(room) * w, u128::from(s.previous));
            if slack > 0 {
                // slack <= W - elapsed - 1 < W: the fit is later in this window.
                let e = self.window - sat64(slack.min(w));
                return e - elapsed;
            }
        }
        // The next window: at W + e with e = W - slack, slack = W when the
        // current count is zero.
        let slack = if s.current == 0 {
            self.window
        } else {
            sat64(super::floor_div(u128::from(self.limit - cost) * w, u128::from(s.current)).min(w))
        };
        2 * self.window - slack - elapsed
    }
}
