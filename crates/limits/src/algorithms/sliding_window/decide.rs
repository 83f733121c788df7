//! The sliding window's whole decision for a single rate (`Rule::check`,
//! `Rule::peek`, through `RateAlgorithm::decide_one`), in one pass: the roll of `advance`, the fit, the record
//! (in `Record` mode) and the derived fields, from one number: the units
//! the previous count still weighs, `units = ceil(previous * left / W)`,
//! with `left = W - elapsed` (1 to W) the time left in the window.
//!
//! - A request of `cost` fits iff `previous * left + (current + cost) * W
//!   <= L * W`, iff `units <= L - current - cost` (for a whole `m`, `x <= m
//!   * W` iff `ceil(x / W) <= m`).
//! - `remaining`, the largest `c` with the estimate plus `c * W` at most
//!   `L * W`, is `(L - current) - units`, 0 if negative.
//! - `refill_after`, the wait of `remaining + 1`, when `1 <= units <= L -
//!   current`: its room this window is `units - 1`, so it fits once
//!   `previous * (W - e) <= (units - 1) * W`, at `left - slack` from now
//!   with `slack = floor((units - 1) * W / previous)` (below `left`), when
//!   `slack > 0`; else in the next window, as `wait_after` finds it. With
//!   `units = 0` (no previous count) it is the next window's. Other cases
//!   (nothing left: `remaining` 0) are `wait_after`'s.
//!
//! Products are taken in `u64` when they fit, in `u128` otherwise
//! (`tests/it/other_limiters_decide.rs`).

use super::super::{CostBound, sat64};
use super::{SlidingWindow, SlidingWindowState};
use crate::duration::of_nanos;
use crate::{Decision, Mode, RetryAfter};
use std::time::Duration;

impl SlidingWindow {
    /// The decision in one pass (see the module).
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    pub(super) fn decide_fused(
        &self,
        s: &mut SlidingWindowState,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Decision {
        let elapsed = self.roll(s, now);
        let left = self.window - elapsed;
        let mut decision = Decision::allow(0);
        // A denial's wait, and the cost it is the wait of.
        let mut denied = (0, Duration::ZERO);
        // `units`, once found (the record leaves it as it is).
        let mut units = None;
        match CostBound::of(cost, self.limit) {
            CostBound::Decided => {
                let free = self.limit.saturating_sub(s.current);
                let fits = cost <= free && {
                    let u = self.units(s.previous, left);
                    units = Some(u);
                    u <= free - cost
                };
                if fits {
                    if mode.records() {
                        s.current += cost;
                    }
                } else {
                    if mode == Mode::RecordAlways {
                        // Counted up to the limit; the wait is then the
                        // same request's after what it added.
                        s.current = s.current.saturating_add(cost).min(self.limit);
                        units = None;
                    }
                    denied = (cost, of_nanos(self.wait_after(s, elapsed, cost)));
                    decision.allowed = false;
                    decision.retry_after = RetryAfter::After(denied.1);
                }
            }
            CostBound::Free => {}
            CostBound::Never => {
                decision.allowed = false;
                decision.retry_after = RetryAfter::Never;
                if mode == Mode::RecordAlways {
                    s.current = self.limit;
                }
            }
        }
        let free = self.limit.saturating_sub(s.current);
        // `units` when there is something for it to take from.
        let units = if free == 0 {
            None
        } else {
            Some(units.unwrap_or_else(|| self.units(s.previous, left)))
        };
        let remaining = units.map_or(0, |u| free.saturating_sub(u));
        decision.remaining = remaining;
        let reset = if s.current > 0 {
            self.window + left
        } else if s.previous > 0 {
            left
        } else {
            return decision;
        };
        decision.reset_after = Duration::from_nanos(reset);
        if remaining < self.limit {
            let want = remaining + 1;
            // The usual denial (cost 1, nothing left) has just found it.
            if denied.0 == want {
                decision.refill_after = denied.1;
                return decision;
            }
            let refill = match units {
                Some(0) => self.next_window(s, elapsed, want),
                Some(u) if u <= free => {
                    let slack = mul_div(u - 1, self.window, s.previous);
                    if slack > 0 {
                        left - slack
                    } else {
                        self.next_window(s, elapsed, want)
                    }
                }
                _ => self.wait_after(s, elapsed, want),
            };
            decision.refill_after = of_nanos(refill);
        }
        decision
    }
}

impl SlidingWindow {
    /// `ceil(previous * left / W)`: at most `previous`.
    #[inline]
    fn units(&self, previous: u64, left: u64) -> u64 {
        if previous == 0 {
            return 0;
        }
        match previous.checked_mul(left) {
            Some(x) => x.div_ceil(self.window),
            None => sat64((u128::from(previous) * u128::from(left)).div_ceil(self.window.into())),
        }
    }

    /// `check`'s wait for a request of `cost` (1 to L) that does not fit at
    /// `elapsed` into the state's window: the first later time in this
    /// window at which the previous count's weight leaves room for it,
    /// else the first in the next (where the current count becomes the
    /// previous, and some time up to its end fits, as `cost <= L`), less
    /// `elapsed`.
    #[inline]
    pub(super) fn wait_after(&self, s: &SlidingWindowState, elapsed: u64, cost: u64) -> u64 {
        // This window: with room at the previous count's weight 0, that
        // count is not zero (the request did not fit); tested all the same.
        let room = self.limit.checked_sub(s.current.saturating_add(cost));
        if let (Some(room), true) = (room, s.previous > 0) {
            let slack = mul_div(room, self.window, s.previous);
            if slack > 0 {
                // slack <= W - elapsed - 1 < W: the fit is later in this window.
                let e = self.window - slack.min(self.window);
                return e - elapsed;
            }
        }
        self.next_window(s, elapsed, cost)
    }

    /// The wait of a request of `cost` (1 to L) in the next window: at `W +
    /// e` with `e = W - slack`, `slack = floor((L - cost) * W / current)`
    /// (at most W), W when the current count is zero; less `elapsed`.
    #[inline]
    fn next_window(&self, s: &SlidingWindowState, elapsed: u64, cost: u64) -> u64 {
        let slack = if s.current == 0 {
            self.window
        } else {
            mul_div(self.limit - cost, self.window, s.current).min(self.window)
        };
        2 * self.window - slack - elapsed
    }
}

/// `floor(a * b / d)` for `d > 0`, saturating: one `u64` division when the
/// product fits.
#[inline]
fn mul_div(a: u64, b: u64, d: u64) -> u64 {
    match a.checked_mul(b) {
        Some(x) => x / d,
        None => sat64(u128::from(a) * u128::from(b) / u128::from(d)),
    }
}
