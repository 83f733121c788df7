//! Smoothed rate: one estimate per key that decays exponentially with a
//! time constant of W (it halves every `W * ln 2`) and grows by each
//! admitted request's cost; a request passes if the estimate with its cost
//! stays within L. Sixteen bytes per key whatever the limit: the seed's
//! "counters with exponential smoothing".
//!
//! What it promises: up to L at once from rest, then about L per W (at an
//! estimate near L, its decay frees L per W); at most 2L in any window of W
//! (the cost admitted over a window is what the estimate gained, at most
//! L, plus what it lost to decay, at most L per W), plus the fractions it
//! forgets (below). With a limit of a few, the estimate must decay nearly
//! to nothing before a request of the whole limit passes, so it admits
//! well under L per W: a token bucket suits such limits better.
//!
//! Kept in integers: the estimate is in units of `cost * 2^scale`, the
//! largest power of two that keeps `2L` of them in 64 bits, and decays by
//! whole ticks of a 65,536th of a half-life (`decay.rs`); a part of one
//! request smaller than 1/16 is forgotten when the state is next written,
//! so that an idle key's state drops without changing a decision.

use super::{CostBound, RateAlgorithm, floor_div, sat64};
use crate::{Decision, Mode, Rate, RetryAfter};
use std::time::Duration;

mod decay;

use decay::ticks_until_below;
pub use decay::{TICKS_PER_HALF_LIFE, smoothed_decay};

/// ln 2 in Q64.
const LN_2: u128 = 0xB172_17F7_D1CF_79AB;

/// An estimate below `1 / 2^FORGET_BITS` of one request is forgotten.
const FORGET_BITS: u32 = 4;

/// Allowed iff `estimate + cost <= L`; a denied request waits until the
/// estimate has decayed that far, to the nanosecond.
///
/// ```
/// use limits::{Algorithm, Rule};
/// let rule = Rule::new(Algorithm::SmoothedRate, "2/s".parse().unwrap());
/// let mut state = rule.new_state();
/// assert!(rule.check(&mut state, 0, 1).allowed);
/// assert!(rule.check(&mut state, 0, 1).allowed);
/// let denied = rule.check(&mut state, 0, 1);
/// assert!(!denied.allowed);
/// // Two requests decay to one in one half-life: 1 s * ln 2.
/// let wait = denied.retry_after.duration().unwrap();
/// assert_eq!(wait.as_nanos(), 693_147_180);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SmoothedRate {
    limit: u64,
    /// `W * ln 2` in nanoseconds, at least 1.
    half_life: u64,
    /// The estimate counts `2^scale` per unit of cost.
    scale: u32,
}

/// Per-key state: the estimate and when it was last written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmoothedRateState {
    /// In units of `cost * 2^scale` ([`SmoothedRate::scale`]), as of `at`.
    pub estimate: u64,
    /// When the estimate was last written, in nanoseconds.
    pub at: u64,
}

impl SmoothedRate {
    /// A smoothed rate for `rate`.
    pub fn new(rate: Rate) -> SmoothedRate {
        let (limit, window) = (rate.limit(), rate.window_nanos());
        let half_life = ((u128::from(window) * LN_2) >> 64) as u64;
        SmoothedRate {
            limit,
            half_life: half_life.max(1),
            // 2L * 2^scale < 2^64.
            scale: limit.leading_zeros() - 1,
        }
    }

    /// The time the estimate takes to halve, in nanoseconds: the window
    /// times ln 2.
    pub fn half_life_nanos(&self) -> u64 {
        self.half_life
    }

    /// The estimate counts `2^scale` per unit of cost.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// Whether `estimate` is one this rate's states can hold: at most 2L
    /// (a charge's bound).
    pub fn holds(&self, estimate: u64) -> bool {
        estimate <= self.units(2 * self.limit)
    }

    /// Whole ticks of decay in `elapsed` nanoseconds.
    #[inline]
    fn ticks(&self, elapsed: u64) -> u64 {
        let scaled = u128::from(elapsed) * u128::from(TICKS_PER_HALF_LIFE);
        sat64(floor_div(scaled, u128::from(self.half_life)))
    }

    /// The fewest nanoseconds in which `ticks` ticks pass.
    fn nanos(&self, ticks: u64) -> u64 {
        let scaled = u128::from(ticks) * u128::from(self.half_life);
        // A constant power of two: the division is a shift.
        sat64(scaled.div_ceil(u128::from(TICKS_PER_HALF_LIFE)))
    }

    /// The estimate at `now` (not before the state's time).
    #[inline]
    fn estimate(&self, s: &SmoothedRateState, now: u64) -> u64 {
        smoothed_decay(s.estimate, self.ticks(now.saturating_sub(s.at)))
    }

    /// `cost` in the estimate's units.
    fn units(&self, cost: u64) -> u64 {
        cost << self.scale
    }

    /// `estimate` in whole requests, rounded up.
    fn requests(&self, estimate: u64) -> u64 {
        let part = estimate & (self.units(1) - 1);
        (estimate >> self.scale) + u64::from(part != 0)
    }

    /// The least estimate kept: below it, the part of a request that is
    /// forgotten.
    fn least_kept(&self) -> u64 {
        1 << (self.scale - FORGET_BITS.min(self.scale))
    }

    /// An estimate as it counts: zero if below [`least_kept`](Self::least_kept).
    fn kept(&self, estimate: u64) -> u64 {
        if estimate < self.least_kept() {
            0
        } else {
            estimate
        }
    }

    /// Nanoseconds from `now` until the estimate is below `bound`.
    fn wait_until_below(&self, s: &SmoothedRateState, now: u64, bound: u64) -> u64 {
        let at = self.nanos(ticks_until_below(s.estimate, bound));
        at.saturating_sub(now - s.at)
    }

    /// The bound below which the estimate lets a request of `cost` pass:
    /// it counts as at most `L - cost`, or as nothing.
    fn bound_for(&self, cost: u64) -> u64 {
        (self.units(self.limit - cost) + 1).max(self.least_kept())
    }
}

impl RateAlgorithm for SmoothedRate {
    type State = SmoothedRateState;

    fn advance(&self, s: &mut SmoothedRateState, now: u64) -> u64 {
        now.max(s.at)
    }

    fn check(&self, s: &SmoothedRateState, now: u64, cost: u64) -> Result<(), RetryAfter> {
        if CostBound::of(cost, self.limit) == CostBound::Never {
            return Err(RetryAfter::Never);
        }
        let bound = self.bound_for(cost);
        if self.estimate(s, now) < bound {
            return Ok(());
        }
        Err(RetryAfter::from_nanos(self.wait_until_below(s, now, bound)))
    }

    fn record(&self, s: &mut SmoothedRateState, now: u64, cost: u64) {
        let estimate = self.kept(self.estimate(s, now));
        *s = SmoothedRateState {
            estimate: estimate + self.units(cost),
            at: now,
        };
    }

    /// Takes out what the request of `units` at `at` still weighs now.
    fn refund(&self, s: &mut SmoothedRateState, now: u64, at: u64, units: u64) {
        let weight = smoothed_decay(self.units(units), self.ticks(now.saturating_sub(at)));
        let estimate = self.estimate(s, now).saturating_sub(weight);
        *s = SmoothedRateState {
            estimate: self.kept(estimate),
            at: now,
        };
    }

    /// Adds `units` now, up to an estimate of 2L.
    fn charge(&self, s: &mut SmoothedRateState, now: u64, units: u64) {
        let most = self.units(2 * self.limit);
        let added = self.units(units.min(2 * self.limit));
        let estimate = self.kept(self.estimate(s, now)).saturating_add(added);
        *s = SmoothedRateState {
            estimate: estimate.min(most),
            at: now,
        };
    }

    /// `L` less the estimate rounded up to whole requests.
    fn remaining(&self, s: &SmoothedRateState, now: u64) -> u64 {
        let counted = self.requests(self.kept(self.estimate(s, now)));
        self.limit.saturating_sub(counted)
    }

    /// Until the estimate is forgotten.
    fn reset_after(&self, s: &SmoothedRateState, now: u64) -> u64 {
        self.wait_until_below(s, now, self.least_kept())
    }

    fn capacity(&self) -> u64 {
        self.limit
    }

    fn is_idle(&self, s: &mut SmoothedRateState, now: u64) -> bool {
        let now = self.advance(s, now);
        self.kept(self.estimate(s, now)) == 0
    }

    fn derived(&self, s: &SmoothedRateState, now: u64) -> (u64, u64, u64) {
        self.fields(s, now, self.kept(self.estimate(s, now)))
    }

    /// The whole decision from one reading of the estimate: `check`,
    /// `record` and `derived` would each decay it again.
    #[inline]
    fn decide_one(&self, s: &mut SmoothedRateState, now: u64, cost: u64, mode: Mode) -> Decision {
        let now = self.advance(s, now);
        let mut estimate = self.kept(self.estimate(s, now));
        let mut decision = Decision::allow(0);
        match CostBound::of(cost, self.limit) {
            // The estimate as it counts is below the bound exactly when the
            // raw one is: `check`'s test.
            CostBound::Decided if estimate < self.bound_for(cost) => {
                if mode.records() {
                    estimate += self.units(cost);
                    *s = SmoothedRateState { estimate, at: now };
                }
            }
            CostBound::Decided => {
                let wait = self.wait_until_below(s, now, self.bound_for(cost));
                decision.allowed = false;
                decision.retry_after = RetryAfter::from_nanos(wait);
            }
            CostBound::Free => {}
            CostBound::Never => {
                decision.allowed = false;
                decision.retry_after = RetryAfter::Never;
            }
        }
        let (remaining, reset, refill) = self.fields(s, now, estimate);
        decision.remaining = remaining;
        decision.reset_after = Duration::from_nanos(reset);
        decision.refill_after = Duration::from_nanos(refill);
        decision
    }
}

impl SmoothedRate {
    /// `remaining`, `reset_after` and `refill_after` of `s` at `now`, where
    /// its estimate counts as `estimate`: `refill_after` is the wait of a
    /// request of `remaining + 1`, which does not pass.
    #[inline]
    fn fields(&self, s: &SmoothedRateState, now: u64, estimate: u64) -> (u64, u64, u64) {
        if estimate == 0 {
            return (self.limit, 0, 0);
        }
        // At least one unit counted: `remaining + 1` is a cost within L.
        let remaining = self.limit.saturating_sub(self.requests(estimate));
        let reset = self.wait_until_below(s, now, self.least_kept());
        let refill = self.wait_until_below(s, now, self.bound_for(remaining + 1));
        (remaining, reset, refill)
    }
}
