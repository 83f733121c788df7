//! Leaky bucket as a queue, nginx-style: requests leave one unit every
//! T = W / L. Each unit of an admitted request takes the next departure slot,
//! `d = max(t, previous departure + T)`, and a request departs with its last
//! unit. It is admitted iff `departure - t <= burst * T`; it must then be held
//! for `departure - t` (its delay) before being served. An idle bucket hit by
//! a burst at one instant admits burst + 1: one leaves at once, burst wait.
//!
//! Times are kept multiplied by L, so that T is the integer W and departures
//! are exact rationals; delays and waits are rounded up to the nanosecond.

use super::gcra::{admit, charged, refunded};
use super::{CostBound, RateAlgorithm, ScaledTime, ceil_div, decide_by_steps, sat64, wait};
use crate::Mode;
use crate::{Decision, Rate, RetryAfter};

mod period;

/// A queue draining at L per W that holds at most `burst` waiting units.
#[derive(Clone, Copy, Debug)]
pub struct LeakyBucket {
    limit: u64,
    window: u64,
    burst: u64,
    /// What `decide_one`'s whole-period path needs, computed once.
    period: period::Period,
}

/// Per-key state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeakyBucketState {
    /// The earliest departure of the next unit: nanoseconds times L. Zero when never used (the next unit leaves at once).
    pub next_slot: ScaledTime,
}

impl LeakyBucket {
    /// A leaky bucket draining at `rate` with room for `burst` waiting units
    /// (nginx's `burst`; the usual choice is the rate's limit).
    pub fn new(rate: Rate, burst: u64) -> LeakyBucket {
        let (limit, window) = (rate.limit(), rate.window_nanos());
        let burst = burst.min(crate::MAX_LIMIT);
        LeakyBucket {
            limit,
            window,
            burst,
            period: period::Period::new(limit, window, burst),
        }
    }

    fn now_scaled(&self, now: u64) -> u128 {
        u128::from(now) * u128::from(self.limit)
    }

    /// What is queued ahead of a request at `now`, in ns times L.
    fn ahead(&self, s: &LeakyBucketState, now: u64) -> u128 {
        s.next_slot.get().saturating_sub(self.now_scaled(now))
    }

    /// How long (ns times L) after `now` a request of `cost` would depart.
    fn departure_wait(&self, s: &LeakyBucketState, now: u64, cost: u64) -> u128 {
        let now = self.now_scaled(now);
        s.next_slot.get().max(now) + u128::from(cost - 1) * u128::from(self.window) - now
    }
}

impl RateAlgorithm for LeakyBucket {
    type State = LeakyBucketState;

    fn advance(&self, _: &mut LeakyBucketState, now: u64) -> u64 {
        now
    }

    /// The GCRA test on what is queued ahead: a request's last unit
    /// departs within `burst * W` iff the queue ahead is at most `burst +
    /// 1 - cost` units (a cost of 0 is tested as 1).
    fn check(&self, s: &LeakyBucketState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        if CostBound::of(cost, self.capacity()) == CostBound::Never {
            return Err(RetryAfter::Never);
        }
        let window = u128::from(self.window);
        admit(self.ahead(s, now), window, self.capacity(), cost.max(1))
            .or_else(|excess| wait(ceil_div(excess, u128::from(self.limit))))
    }

    fn record(&self, s: &mut LeakyBucketState, now: u64, cost: u64) {
        if cost > 0 {
            let departs = self.departure_wait(s, now, cost);
            let next = self.now_scaled(now) + departs + u128::from(self.window);
            s.next_slot.set(next);
        }
    }

    fn refund(&self, s: &mut LeakyBucketState, now: u64, _: u64, units: u64) {
        let now_scaled = self.now_scaled(now);
        s.next_slot
            .set(refunded(s.next_slot.get(), now_scaled, units, self.window));
    }

    fn charge(&self, s: &mut LeakyBucketState, now: u64, units: u64) {
        let now_scaled = self.now_scaled(now);
        let next = charged(
            s.next_slot.get(),
            now_scaled,
            units,
            self.window,
            self.limit,
        );
        s.next_slot.set(next);
    }

    fn delay(&self, s: &LeakyBucketState, now: u64, cost: u64) -> u64 {
        if cost == 0 {
            return 0;
        }
        sat64(ceil_div(
            self.departure_wait(s, now, cost),
            u128::from(self.limit),
        ))
    }

    fn remaining(&self, s: &LeakyBucketState, now: u64) -> u64 {
        let queued = self.ahead(s, now);
        let slots = ceil_div(queued, u128::from(self.window));
        self.capacity().saturating_sub(sat64(slots))
    }

    fn reset_after(&self, s: &LeakyBucketState, now: u64) -> u64 {
        let queued = self.ahead(s, now);
        sat64(ceil_div(queued, u128::from(self.limit)))
    }

    fn capacity(&self) -> u64 {
        self.burst + 1
    }

    /// Empty iff nothing is queued: `reset_after` is `ceil(queued / L)`,
    /// zero exactly when `queued` is, so no division is needed.
    fn is_idle(&self, s: &mut LeakyBucketState, now: u64) -> bool {
        s.next_slot.get() <= self.now_scaled(now)
    }

    /// The three fields from what is queued, without a second `check`
    /// (`derived_of`, whose doc gives the arithmetic).
    fn derived(&self, s: &LeakyBucketState, now: u64) -> (u64, u64, u64) {
        self.derived_of(self.ahead(s, now))
    }

    /// The whole decision: with a whole number of nanoseconds per unit
    /// (the usual rate), in one pass in `u64` by `decide_whole`; otherwise
    /// the steps composed.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    fn decide_one(&self, s: &mut LeakyBucketState, now: u64, cost: u64, mode: Mode) -> Decision {
        let now_scaled = self.now_scaled(now);
        let ahead = s.next_slot.get().saturating_sub(now_scaled);
        match self.period.split(ahead) {
            Some(whole) => self.decide_whole(s, now_scaled + ahead, whole, cost, mode),
            None => decide_by_steps(self, s, now, cost, mode),
        }
    }
}

impl LeakyBucket {
    /// `ceil(scaled / L)` nanoseconds, saturating: one `u64` division when
    /// `scaled` fits (`ceil_div` is a call).
    #[inline]
    fn ceil_nanos(&self, scaled: u128) -> u64 {
        match u64::try_from(scaled) {
            Ok(a) => a.div_ceil(self.limit),
            Err(_) => sat64(ceil_div(scaled, u128::from(self.limit))),
        }
    }

    /// `remaining`, `reset_after` and `refill_after` of a queue `queued`
    /// (ns times L) long, `queued = q * W + r`: the `slots` it holds are
    /// `ceil(queued / W)`; `remaining` is `burst + 1 - slots`,
    /// `reset_after` is `ceil(queued / L)`, and `refill_after` is the wait
    /// of a request of `remaining + 1` units, whose last unit departs
    /// `queued + remaining * W` after now: over `burst * W` by `r`, or by
    /// `W` when `r` is 0 (the token bucket's `derived`, with the burst + 1
    /// for the limit). Three `u64` divisions when `queued` fits; otherwise
    /// two in `u128`.
    #[inline]
    fn derived_of(&self, queued: u128) -> (u64, u64, u64) {
        let capacity = self.capacity();
        if let Ok(d) = u64::try_from(queued) {
            let (q, r) = (d / self.window, d % self.window);
            let slots = q + u64::from(r > 0);
            if slots == 0 {
                return (capacity, 0, 0);
            }
            if slots <= capacity {
                let excess = if r > 0 { r } else { self.window };
                return (
                    capacity - slots,
                    d.div_ceil(self.limit),
                    excess.div_ceil(self.limit),
                );
            }
        }
        // Past `u64`: the same fields from one `u128` division by W (its
        // remainder by a multiplication) and one by L.
        let window = u128::from(self.window);
        let q = queued / window;
        let r = (queued - q * window) as u64;
        let slots = q + u128::from(r > 0);
        let reset = self.ceil_nanos(queued);
        if slots <= u128::from(capacity) {
            let excess = if r > 0 { r } else { self.window };
            return (capacity - slots as u64, reset, excess.div_ceil(self.limit));
        }
        // More queued than the burst allows (a state file's): nothing left,
        // and one unit waits as `check` says.
        let excess = admit(queued, window, capacity, 1).err().unwrap_or(0);
        (0, reset, self.ceil_nanos(excess))
    }
}
