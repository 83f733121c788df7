//! The buckets' times are kept multiplied by L (nanoseconds times L), so
//! that a unit's period W / L is the integer W. When W is a multiple of L,
//! the period T = W / L is a whole number of nanoseconds (the usual rate:
//! 100/s, 10/min, 1000/h; governor's periods are always whole), and a
//! scaled queue or debt `x = a * L + b` (`0 <= b < L`) gives every field of
//! a decision in whole nanoseconds from `a`, `b` and one division of `a` by
//! T: `ceil(x / L) = a + f` (`f = 1` if `b > 0`), and with `a =
//! qt * T + rt`, `x mod W = rt * L + b`, so `ceil(x / W) = qt + (rt + f >
//! 0)` and `ceil((x mod W) / L) = rt + f`.
//!
//! [`WholePeriod::split`] finds `a` and `b` by one `u64` division, also for
//! `x` past `u64` (a debt is up to L × W, past 2^64 for a large limit over
//! a long window): with `x = hi * 2^64 + lo` and `2^64 = wrap_q * L +
//! wrap_r`, `x / L = hi * wrap_q + (hi * wrap_r + lo) / L` while `hi *
//! wrap_r + lo` fits. `a` is kept below 2^62
//! (T is at most 2^62 too, as W is), so that sums of a few of them do not
//! overflow; anything else is left to the general `u128` path
//! (`tests/it/decide_fast_path_edges.rs`).

use std::num::NonZeroU64;

/// T and the split of 2^64 by L, computed once per rate; `t == 0` when T is
/// not whole.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WholePeriod {
    t: u64,
    wrap_q: u64,
    wrap_r: u64,
    // L again, known not zero: no test before each division.
    limit: NonZeroU64,
}

impl WholePeriod {
    /// The split for L per W.
    pub(crate) fn new(limit: u64, window: u64) -> WholePeriod {
        let limit = NonZeroU64::new(limit).unwrap_or(NonZeroU64::MIN);
        let t = if window % limit == 0 {
            window / limit
        } else {
            0
        };
        WholePeriod {
            t,
            // 2^64 = wrap_q * L + wrap_r, with 1 <= wrap_r <= L.
            wrap_q: u64::MAX / limit,
            wrap_r: u64::MAX % limit + 1,
            limit,
        }
    }

    /// T, 0 when not whole.
    pub(crate) fn period(&self) -> u64 {
        self.t
    }

    /// The same split with the whole-period path turned off.
    pub(crate) fn off(self) -> WholePeriod {
        WholePeriod { t: 0, ..self }
    }

    /// `(a, b, T)` with `x = a * L + b`, `b < L`, when T is whole and `a <
    /// 2^62` (one shift to test); `None` otherwise.
    #[inline]
    pub(crate) fn split(&self, x: u128) -> Option<(u64, u64, NonZeroU64)> {
        let t = NonZeroU64::new(self.t)?;
        let (hi, lo) = ((x >> 64) as u64, x as u64);
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
