//! Fixed window: one counter per window index `floor(t / W)`, windows aligned
//! to the clock's zero (the Unix epoch for the system clock).
//!
//! Cheap (two numbers per key) but leaky at the edges: up to 2L requests can
//! pass within one window length that straddles a boundary.

use super::{CostBound, RateAlgorithm, sat64, wait};
use crate::Mode;
use crate::{Decision, Rate, RetryAfter};
use std::time::Duration;

/// Allowed iff the current window's count + cost <= L.
#[derive(Clone, Copy, Debug)]
pub struct FixedWindow {
    limit: u64,
    window: u64,
}

/// The current window's index and how much cost it has taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedWindowState {
    /// `floor(t / W)` of the window `count` belongs to.
    pub index: u64,
    /// Cost admitted in that window.
    pub count: u64,
}

impl FixedWindow {
    /// A fixed window for `rate`.
    pub fn new(rate: Rate) -> FixedWindow {
        FixedWindow {
            limit: rate.limit(),
            window: rate.window_nanos(),
        }
    }

    /// Nanoseconds from `now` to the end of the state's window.
    fn until_window_end(&self, state: &FixedWindowState, now: u64) -> u128 {
        (u128::from(state.index) + 1) * u128::from(self.window) - u128::from(now)
    }
}

impl RateAlgorithm for FixedWindow {
    type State = FixedWindowState;

    fn advance(&self, state: &mut FixedWindowState, now: u64) -> u64 {
        let index = now / self.window;
        if index > state.index {
            *state = FixedWindowState { index, count: 0 };
            now
        } else if index < state.index {
            state.index * self.window
        } else {
            now
        }
    }

    fn check(&self, state: &FixedWindowState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        if CostBound::of(cost, self.limit) == CostBound::Never {
            return Err(RetryAfter::Never);
        }
        if state.count + cost <= self.limit {
            return Ok(());
        }
        wait(self.until_window_end(state, now))
    }

    fn record(&self, state: &mut FixedWindowState, _: u64, cost: u64) {
        state.count += cost;
    }

    fn record_denied(&self, state: &mut FixedWindowState, _: u64, cost: u64) {
        state.count = state.count.saturating_add(cost).min(self.limit);
    }

    /// The count of the request's window, while it is the state's.
    fn refund(&self, state: &mut FixedWindowState, _: u64, at: u64, units: u64) {
        if at / self.window == state.index {
            state.count -= units.min(state.count);
        }
    }

    fn charge(&self, state: &mut FixedWindowState, now: u64, units: u64) {
        self.record_denied(state, now, units);
    }

    fn remaining(&self, state: &FixedWindowState, _: u64) -> u64 {
        self.limit - state.count
    }

    fn reset_after(&self, state: &FixedWindowState, now: u64) -> u64 {
        if state.count == 0 {
            0
        } else {
            sat64(self.until_window_end(state, now))
        }
    }

    fn capacity(&self) -> u64 {
        self.limit
    }

    /// Idle iff the count is zero after the roll: at a time inside the
    /// state's window, where the roll leaves it, `reset_after` is zero
    /// exactly then, so no subtraction of times is needed.
    fn is_idle(&self, state: &mut FixedWindowState, now: u64) -> bool {
        self.roll(state, now);
        state.count == 0
    }

    /// `Rule::check`'s and `Rule::peek`'s one pass for a single rate: the roll,
    /// the fit, the record (in `Record` mode) and the derived fields, all in
    /// `u64`. The time to the window's end is `W - elapsed`, with `elapsed` the
    /// time from the window's start to `t` (the roll): `check`'s wait, and
    /// with a count left both `reset_after` and `refill_after` (the wait of
    /// `remaining + 1`, which never fits this window). `tests/it/other_limiters_decide.rs`.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    fn decide_one(&self, s: &mut FixedWindowState, now: u64, cost: u64, mode: Mode) -> Decision {
        let elapsed = self.roll(s, now);
        let until_end = Duration::from_nanos(self.window - elapsed);
        let mut decision = Decision::allow(0);
        match CostBound::of(cost, self.limit) {
            CostBound::Decided => {
                let count = s.count + cost;
                if count <= self.limit {
                    if mode.records() {
                        s.count = count;
                    }
                } else {
                    decision.allowed = false;
                    decision.retry_after = RetryAfter::After(until_end);
                    if mode == Mode::RecordAlways {
                        s.count = self.limit;
                    }
                }
            }
            CostBound::Free => {}
            CostBound::Never => {
                decision.allowed = false;
                decision.retry_after = RetryAfter::Never;
                if mode == Mode::RecordAlways {
                    s.count = self.limit;
                }
            }
        }
        decision.remaining = self.limit - s.count;
        if s.count != 0 {
            decision.reset_after = until_end;
            decision.refill_after = until_end;
        }
        decision
    }
}

impl FixedWindow {
    /// [`advance`](RateAlgorithm::advance)'s roll, returning the time from
    /// the window's start to the time decided at (below W; 0 for a time
    /// before the state's window, decided at its start). A time in the
    /// state's window is placed from its start without a division (the
    /// usual case for a busy key).
    #[inline]
    fn roll(&self, s: &mut FixedWindowState, now: u64) -> u64 {
        // `index * W` fits: a state's window starts within time.
        match now.checked_sub(s.index * self.window) {
            None => 0,
            Some(elapsed) if elapsed < self.window => elapsed,
            Some(_) => {
                *s = FixedWindowState {
                    index: now / self.window,
                    count: 0,
                };
                now % self.window
            }
        }
    }
}
