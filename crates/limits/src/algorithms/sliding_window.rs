//! Sliding window counter: the cheap approximation of the sliding log.
//!
//! Two counts per key, the previous fixed window's and the current one's; the
//! previous count is weighed by how much of it still overlaps the last W:
//! `estimate = prev * (W - e) / W + curr`, with `e` the time elapsed in the
//! current window. Decided exactly, multiplied through by W; unlike PyPI
//! `limits`, the estimate is not floored before comparing (stricter, exact).

use super::{CostBound, RateAlgorithm, sat64};
use crate::{Decision, Mode, Rate, RetryAfter};

mod decide;

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
    /// Moves a state on to window `index` (a later one; an earlier or the
    /// same leaves it as it is): the current count becomes the previous
    /// one if `index` is the next window, and both are gone if it is later.
    ///
    /// ```
    /// use limits::algorithms::{SlidingWindow, SlidingWindowState};
    ///
    /// let counter = SlidingWindow::new("10/s".parse().unwrap());
    /// let mut s = SlidingWindowState { index: 4, previous: 2, current: 3 };
    /// counter.roll_to(&mut s, 5);
    /// assert_eq!((s.previous, s.current), (3, 0));
    /// counter.roll_to(&mut s, 7);
    /// assert_eq!(s, SlidingWindowState { index: 7, previous: 0, current: 0 });
    /// ```
    pub fn roll_to(&self, s: &mut SlidingWindowState, index: u64) {
        if s.index.checked_add(1) == Some(index) {
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
        }
    }

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
        if index < s.index {
            return s.index * self.window;
        }
        self.roll_to(s, index);
        now
    }

    fn check(&self, s: &SlidingWindowState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        if CostBound::of(cost, self.limit) == CostBound::Never {
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

    fn record_denied(&self, s: &mut SlidingWindowState, _: u64, cost: u64) {
        s.current = s.current.saturating_add(cost).min(self.limit);
    }

    /// The count of the request's window, while it is the current or the
    /// previous one.
    fn refund(&self, s: &mut SlidingWindowState, _: u64, at: u64, units: u64) {
        let index = at / self.window;
        let count = if index == s.index {
            &mut s.current
        } else if index.checked_add(1) == Some(s.index) {
            &mut s.previous
        } else {
            return;
        };
        *count -= units.min(*count);
    }

    fn charge(&self, s: &mut SlidingWindowState, now: u64, units: u64) {
        self.record_denied(s, now, units);
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

    /// Idle iff both counts are zero after the roll (without a division
    /// for a key seen within two windows): at a time inside the state's
    /// window, where the roll leaves it, `reset_after` is zero exactly
    /// then, so no subtraction of times is needed.
    #[inline]
    fn is_idle(&self, state: &mut SlidingWindowState, now: u64) -> bool {
        self.roll(state, now);
        state.previous == 0 && state.current == 0
    }

    /// The one-pass decision of `decide.rs`.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    fn decide_one(&self, s: &mut SlidingWindowState, now: u64, cost: u64, mode: Mode) -> Decision {
        self.decide_fused(s, now, cost, mode)
    }
}

impl SlidingWindow {
    /// [`advance`](RateAlgorithm::advance)'s roll, returning the time from
    /// the window's start to the time decided at: a time in the state's
    /// window, the next or before it is placed from the window's start
    /// without a division (the usual case: a key seen within two windows);
    /// anything else, and the last index (whose next window would not fit
    /// in time), is `advance`'s.
    #[inline]
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
}
