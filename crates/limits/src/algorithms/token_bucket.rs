//! Token bucket: capacity L, refilled at L per W continuously, full at a key's
//! first request. Burst-friendly: up to L at once, then L per W.
//!
//! Kept exact as GCRA: the theoretical arrival time (when the bucket would be
//! full again) is stored multiplied by L, so that adding `cost * W / L` is the
//! integer `cost * W` and nothing drifts when W is not divisible by L.

use super::gcra::{admit, charged, refunded};
use super::whole_period::WholePeriod;
use super::{CostBound, RateAlgorithm, ScaledTime, ceil_div, decide_by_steps, sat64, wait};
use crate::Mode;
use crate::{Decision, Rate, RetryAfter};
use std::time::Duration;

/// Allowed iff tokens >= cost; a denied request waits `(cost - tokens) * W / L`,
/// rounded up to the nanosecond.
#[derive(Clone, Copy, Debug)]
pub struct TokenBucket {
    limit: u64,
    window: u64,
    /// `decide_one`'s whole-period split.
    whole: WholePeriod,
}

/// Per-key state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenBucketState {
    /// When the bucket is full again: nanoseconds times L. Zero for a key never seen (full).
    pub full_at: ScaledTime,
}

impl TokenBucket {
    /// A token bucket for `rate`.
    pub fn new(rate: Rate) -> TokenBucket {
        let (limit, window) = (rate.limit(), rate.window_nanos());
        TokenBucket {
            limit,
            window,
            whole: WholePeriod::new(limit, window),
        }
    }

    /// How far the bucket is below full at `now`, in ns times L; tokens are
    /// `L - debt / W`.
    fn debt(&self, s: &TokenBucketState, now: u64) -> u128 {
        s.full_at
            .get()
            .saturating_sub(u128::from(now) * u128::from(self.limit))
    }
}

impl RateAlgorithm for TokenBucket {
    type State = TokenBucketState;

    fn advance(&self, _: &mut TokenBucketState, now: u64) -> u64 {
        now
    }

    fn check(&self, s: &TokenBucketState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        if CostBound::of(cost, self.limit) == CostBound::Never {
            return Err(RetryAfter::Never);
        }
        let debt = self.debt(s, now);
        admit(debt, u128::from(self.window), self.limit, cost)
            .or_else(|excess| wait(ceil_div(excess, u128::from(self.limit))))
    }

    fn record(&self, s: &mut TokenBucketState, now: u64, cost: u64) {
        let now_scaled = u128::from(now) * u128::from(self.limit);
        s.full_at
            .set(s.full_at.get().max(now_scaled) + u128::from(cost) * u128::from(self.window));
    }

    fn refund(&self, s: &mut TokenBucketState, now: u64, _: u64, units: u64) {
        let now_scaled = u128::from(now) * u128::from(self.limit);
        s.full_at
            .set(refunded(s.full_at.get(), now_scaled, units, self.window));
    }

    fn charge(&self, s: &mut TokenBucketState, now: u64, units: u64) {
        let now_scaled = u128::from(now) * u128::from(self.limit);
        let full_at = charged(s.full_at.get(), now_scaled, units, self.window, self.limit);
        s.full_at.set(full_at);
    }

    fn remaining(&self, s: &TokenBucketState, now: u64) -> u64 {
        let missing = ceil_div(self.debt(s, now), u128::from(self.window));
        self.limit.saturating_sub(sat64(missing))
    }

    fn reset_after(&self, s: &TokenBucketState, now: u64) -> u64 {
        sat64(ceil_div(self.debt(s, now), u128::from(self.limit)))
    }

    /// The three fields from one debt, without a second `check`: with
    /// `remaining` = r < L, `refill_after` is the wait of a request of cost
    /// r + 1, `check`'s formula for that cost (zero if it would pass).
    ///
    /// A debt of 64 bits (the usual case) takes three `u64` divisions: with
    /// `debt = q * W + r`, `remaining` is `L - ceil(debt / W)` from the one
    /// division's quotient and remainder, and the excess over the allowed
    /// debt of cost r + 1 is `r`, or `W` when `r` is 0.
    #[inline]
    fn derived(&self, s: &TokenBucketState, now: u64) -> (u64, u64, u64) {
        let debt = self.debt(s, now);
        if let Ok(d) = u64::try_from(debt) {
            let (q, r) = (d / self.window, d % self.window);
            let missing = q + u64::from(r > 0);
            if missing == 0 {
                return (self.limit, 0, 0);
            }
            if missing <= self.limit {
                let excess = if r > 0 { r } else { self.window };
                return (
                    self.limit - missing,
                    d.div_ceil(self.limit),
                    excess.div_ceil(self.limit),
                );
            }
        }
        let window = u128::from(self.window);
        let limit = u128::from(self.limit);
        let remaining = self.limit.saturating_sub(sat64(ceil_div(debt, window)));
        let reset = sat64(ceil_div(debt, limit));
        if remaining >= self.limit {
            return (remaining, reset, 0);
        }
        let refill = admit(debt, window, self.limit, remaining + 1)
            .map_or_else(|excess| sat64(ceil_div(excess, limit)), |()| 0);
        (remaining, reset, refill)
    }

    fn capacity(&self) -> u64 {
        self.limit
    }

    /// Full again iff there is no debt (`reset_after` is `ceil(debt / L)`,
    /// zero exactly when the debt is): one comparison, no division.
    fn is_idle(&self, s: &mut TokenBucketState, now: u64) -> bool {
        s.full_at.get() <= u128::from(now) * u128::from(self.limit)
    }

    /// The whole decision: with a whole period, in one pass in `u64` by
    /// `decide_whole`; otherwise (or past its bounds) the steps composed,
    /// whose `derived` takes the fields from one debt.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    fn decide_one(&self, s: &mut TokenBucketState, now: u64, cost: u64, mode: Mode) -> Decision {
        let now_scaled = u128::from(now) * u128::from(self.limit);
        match self.decide_whole(s, now_scaled, cost, mode) {
            Some(decision) => decision,
            None => decide_by_steps(self, s, now, cost, mode),
        }
    }
}

impl TokenBucket {
    /// The whole decision when the period T = W / L is whole
    /// (`whole_period`), in `u64` nanoseconds from the debt `a * L + b` (`f
    /// = 1` if `b > 0`): a request of `cost` (1 to L) passes iff the debt is
    /// at most the tolerance `(L - cost) * W`, iff `a + f <= (L - cost) *
    /// T`, which is a denial's wait when over; recorded, the debt grows by
    /// `cost * W` (`a` by `cost * T`). Of the debt left, with `a = qt * T +
    /// rt`: `reset_after` is `a + f`, the tokens missing `qt + (rt + f >
    /// 0)`, and `refill_after` (the excess over the allowed debt of
    /// `remaining + 1`, `r` or `W`, divided by L) `rt + f`, or `min(a, T)`
    /// when the debt is a whole number of tokens (T, or 0 when full). Two
    /// `u64` divisions; `None` (no whole period, a debt too large, or more
    /// than L tokens missing) leaves it to the general path. `(L - cost) *
    /// T <= W <= 2^62` and `a < 2^62`: nothing overflows.
    // Written out: as a hint, the usual rate's pass stayed a call.
    #[inline(always)]
    fn decide_whole(
        &self,
        s: &mut TokenBucketState,
        now_scaled: u128,
        cost: u64,
        mode: Mode,
    ) -> Option<Decision> {
        let full_at = s.full_at.get();
        let (mut a, b, nt) = self.whole.split(full_at.saturating_sub(now_scaled))?;
        let t = nt.get();
        let f = u64::from(b > 0);
        let mut decision = Decision::allow(0);
        let mut recorded = None;
        match CostBound::of(cost, self.limit) {
            CostBound::Decided => match admit(a + f, t, self.limit, cost) {
                Ok(()) => {
                    if mode.records() {
                        a += cost * t;
                        recorded = Some(
                            full_at.max(now_scaled) + u128::from(cost) * u128::from(self.window),
                        );
                    }
                }
                Err(excess) => {
                    decision.allowed = false;
                    decision.retry_after = RetryAfter::from_nanos(excess);
                }
            },
            CostBound::Free => {}
            CostBound::Never => {
                decision.allowed = false;
                decision.retry_after = RetryAfter::Never;
            }
        }
        let qt = a / nt;
        let rf = a - qt * t + f;
        let missing = qt + u64::from(rf > 0);
        if missing > self.limit {
            return None;
        }
        if let Some(full_at) = recorded {
            s.full_at.set(full_at);
        }
        decision.remaining = self.limit - missing;
        decision.reset_after = Duration::from_nanos(a + f);
        decision.refill_after = crate::duration::of_nanos(if rf > 0 { rf } else { a.min(t) });
        Some(decision)
    }
}
