//! The leaky bucket's whole decision when a unit's period T = W / L is a
//! whole number of nanoseconds: the usual rate (100/s, 10/min,
//! 1000/h; governor's periods are always whole). Then every field is a
//! whole number of nanoseconds plus at most one, and comes from one
//! division of what is queued by L and one by T, in `u64`, instead of
//! four divisions, some in `u128`.
//!
//! With `ahead = a * L + b` (ns times L, `0 <= b < L`; `f = 1` if `b > 0`,
//! else 0) and `W = T * L`, a request of `cost` departs `departs = ahead +
//! (cost - 1) * W = d * L + b` after now, `d = a + (cost - 1) * T`, so:
//! - it passes iff `departs <= burst * W`, iff `d + f <= burst * T`, iff
//!   `a + f <= (burst + 1 - cost) * T` (the GCRA test in whole ns);
//! - its delay is `ceil(departs / L) = d + f`, a denial's wait `d + f -
//!   burst * T`;
//! - recorded, the queue is `departs + W = (d + T) * L + b`.
//!
//! The derived fields of a queue `q * L + b`: `reset_after = q + f`; with
//! `q = qt * T + rt`, the queue modulo W is `rt * L + b`, so `slots =
//! ceil(queue / W) = qt + (rt > 0 or b > 0)`, and `refill_after` (the excess
//! over `burst * W` of a request of `remaining + 1`, `LeakyBucket::derived_of`)
//! is `ceil((rt * L + b) / L) = rt + f`, or T when the queue is a whole
//! number of slots; past the burst (a state file's), `q + f - burst * T`.
//!
//! `a` and `b` come from [`WholePeriod::split`] (which also takes queues
//! past `u64`); `burst * T` is kept at most 2^62, `a` below it, so that no
//! sum here overflows; anything else takes the general path
//! (`tests/it/decide_fast_path_edges.rs`).

use super::super::gcra::admit;
use super::super::whole_period::WholePeriod;
use super::super::{CostBound, RateAlgorithm};
use super::{LeakyBucket, LeakyBucketState};
use crate::Mode;
use crate::duration::of_nanos;
use crate::{Decision, RetryAfter};
use std::num::NonZeroU64;
use std::time::Duration;

/// The largest `a`, T and `burst * T` the whole-period path takes.
const BOUND: u64 = 1 << 62;

/// The whole-period split and `burst * T`; the split is off when `burst *
/// T` passes [`BOUND`] (the general path then).
#[derive(Clone, Copy, Debug)]
pub(super) struct Period {
    whole: WholePeriod,
    most: u64,
}

impl Period {
    pub(super) fn new(limit: u64, window: u64, burst: u64) -> Period {
        let whole = WholePeriod::new(limit, window);
        match burst.checked_mul(whole.period()).filter(|&m| m <= BOUND) {
            Some(most) => Period { whole, most },
            None => Period {
                whole: whole.off(),
                most: 0,
            },
        }
    }

    /// `(a, b, T)` with `ahead = a * L + b` ([`WholePeriod::split`]), or
    /// `None` for the general path.
    #[inline]
    pub(super) fn split(&self, ahead: u128) -> Option<(u64, u64, NonZeroU64)> {
        self.whole.split(ahead)
    }
}

impl LeakyBucket {
    /// The whole decision from `ahead = a * L + b` (the module's
    /// notation); `start` is `max(next_slot, now * L)`, from which the
    /// queue is recorded.
    // Written out: as a hint, the usual rate's pass stayed a call.
    #[inline(always)]
    pub(super) fn decide_whole(
        &self,
        s: &mut LeakyBucketState,
        start: u128,
        (a, b, nt): (u64, u64, NonZeroU64),
        cost: u64,
        mode: Mode,
    ) -> Decision {
        let (t, most) = (nt.get(), self.period.most);
        let f = u64::from(b > 0);
        let mut decision = Decision::allow(0);
        // `floor(queue / L)` after the decision.
        let mut q = a;
        match CostBound::of(cost, self.capacity()) {
            // (burst + 1) * T <= BOUND + T, a < BOUND: no overflow.
            CostBound::Decided => match admit(a + f, t, self.capacity(), cost) {
                Ok(()) => {
                    let d = a + (cost - 1) * t;
                    decision.delay = Duration::from_nanos(d + f);
                    if mode.records() {
                        q = d + t;
                        s.next_slot
                            .set(start + u128::from(cost) * u128::from(self.window));
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
        let reset = q + f;
        let qt = q / nt;
        let rt = q - qt * t;
        // The queue modulo W, in whole ns rounded up: zero iff it is a
        // whole number of slots.
        let rf = rt + f;
        let slots = qt + u64::from(rf > 0);
        let (remaining, refill) = if slots <= self.burst + 1 {
            // A whole number of slots: a whole period, none when empty
            // (q = 0; otherwise q >= T).
            let refill = if rf > 0 { rf } else { q.min(t) };
            (self.burst + 1 - slots, refill)
        } else {
            // More queued than the burst allows: the wait of one unit.
            (0, reset - most)
        };
        decision.remaining = remaining;
        decision.reset_after = Duration::from_nanos(reset);
        decision.refill_after = of_nanos(refill);
        decision
    }
}
