//! The leaky bucket's whole decision when a unit's period T = W / L is a
//! whole number of nanoseconds (issue 9): the usual rate (100/s, 10/min,
//! 1000/h; governor's periods are always whole). Then every field is a
//! whole number of nanoseconds plus at most one, and comes from one
//! division of what is queued by L and one by T, in `u64`, instead of
//! four divisions, some in `u128`.
//!
//! With `ahead = a * L + b` (ns times L, `0 <= b < L`; `f = 1` if `b > 0`,
//! else 0) and `W = T * L`, a request of `cost` departs `departs = ahead +
//! (cost - 1) * W = d * L + b` after now, `d = a + (cost - 1) * T`, so:
//! - it passes iff `departs <= burst * W`, iff `d + f <= burst * T`;
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
//! A queue past `u64` (times L) is split as `hi * 2^64 + lo` with `2^64 =
//! wrap_q * L + wrap_r`, so `queue / L = hi * wrap_q + (hi * wrap_r + lo) /
//! L` while `hi * wrap_r + lo` fits: the bench's 1M-key bucket, 5 * 10^19.
//! `a` is kept below 2^62 (T and `burst * T` at most 2^62), so that no sum below
//! overflows; anything else takes the general path
//! (`tests/leaky_bucket_period.rs`).

use super::{LeakyBucket, LeakyBucketState};
use crate::duration::of_nanos;
use crate::rule::Mode;
use crate::{Decision, RetryAfter};
use std::num::NonZeroU64;
use std::time::Duration;

/// The largest `a`, T and `burst * T` the whole-period path takes.
const BOUND: u64 = 1 << 62;

/// T, `burst * T` and the split of 2^64 by L; `t == 0` when T is not whole
/// (or `burst * T` passes [`BOUND`]): the general path then.
#[derive(Clone, Copy, Debug)]
pub(super) struct Period {
    t: u64,
    most: u64,
    wrap_q: u64,
    wrap_r: u64,
    // L again, known not zero: no test before each division.
    limit: NonZeroU64,
}

impl Period {
    pub(super) fn new(limit: u64, window: u64, burst: u64) -> Period {
        let whole = window % limit == 0;
        let most = burst.checked_mul(window / limit).filter(|&m| m <= BOUND);
        let (t, most) = match (whole, most) {
            (true, Some(most)) if window / limit <= BOUND => (window / limit, most),
            _ => (0, 0),
        };
        Period {
            t,
            most,
            // 2^64 = wrap_q * L + wrap_r, with 1 <= wrap_r <= L.
            wrap_q: u64::MAX / limit,
            wrap_r: u64::MAX % limit + 1,
            limit: NonZeroU64::new(limit).unwrap_or(NonZeroU64::MIN),
        }
    }

    /// `(a, b, T)` with `ahead = a * L + b`, `b < L`, when T is whole and
    /// `a < BOUND` (one shift to test); `None` sends the decision to the
    /// general path.
    #[inline(always)]
    pub(super) fn split(&self, ahead: u128) -> Option<(u64, u64, NonZeroU64)> {
        let t = NonZeroU64::new(self.t)?;
        let (hi, lo) = ((ahead >> 64) as u64, ahead as u64);
        let (a, b) = if hi == 0 {
            let a = lo / self.limit;
            (a, lo - a * self.limit.get())
        } else {
            let y =
                u64::try_from(u128::from(hi) * u128::from(self.wrap_r) + u128::from(lo)).ok()?;
            let a = y / self.limit;
            let b = y - a * self.limit.get();
            (hi.checked_mul(self.wrap_q)?.checked_add(a)?, b)
        };
        (a >> 62 == 0).then_some((a, b, t))
    }
}

impl LeakyBucket {
    /// The whole decision from `ahead = a * L + b` (the module's
    /// notation); `start` is `max(next_slot, now * L)`, from which the
    /// queue is recorded.
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
        if cost.wrapping_sub(1) <= self.burst {
            // (cost - 1) * T <= burst * T <= BOUND, a < BOUND.
            let d = a + (cost - 1) * t;
            if d + f <= most {
                decision.delay = Duration::from_nanos(d + f);
                if mode == Mode::Record {
                    q = d + t;
                    s.next_slot
                        .set(start + u128::from(cost) * u128::from(self.window));
                }
            } else {
                decision.allowed = false;
                decision.retry_after = RetryAfter::from_nanos(d + f - most);
            }
        } else if cost != 0 {
            decision.allowed = false;
            decision.retry_after = RetryAfter::Never;
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
