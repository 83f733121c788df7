//! Division by a number fixed when a rule is built (its limit, window or
//! period), as a multiplication by the divisor's reciprocal computed once,
//! as a compiler does for a constant divisor: a 64-bit division takes tens
//! of cycles, the two multiplications a few.
//!
//! For `d >= 2`, `M = ceil(2^128 / d)` and any `n < 2^64`, `floor(n * M /
//! 2^128) = floor(n / d)`: write `M * d = 2^128 + e` with `0 <= e < d`, and
//! `n = q * d + r` with `r < d`; then `n * M / 2^128 = q + (r + n * e /
//! 2^128) / d`, and `n * e / 2^128 < 2^64 * d / 2^128 < 1`, so the fraction
//! `(r + n * e / 2^128) / d` is below `(d - 1 + 1) / d = 1`. `d = 1` has no
//! such `M` below 2^128 and is the identity, taken without a branch.

use std::num::NonZeroU64;

/// A `u64` divisor with its reciprocal: `n / d`, `n % d` and `ceil(n / d)`
/// for every `u64` `n`, exactly, by multiplications.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Divisor {
    /// `ceil(2^128 / d)`, high and low halves; zero for `d = 1`.
    high: u64,
    low: u64,
    /// All ones for `d = 1` (the quotient is `n`), zero otherwise.
    identity: u64,
    d: NonZeroU64,
}

impl Divisor {
    /// The divisor `d` and its reciprocal.
    pub(crate) fn new(d: NonZeroU64) -> Divisor {
        let (reciprocal, identity) = match d.get() {
            1 => (0, u64::MAX),
            // u128::MAX = 2^128 - 1: `+ 1` makes the floor a ceiling, also
            // for a power of two (which divides 2^128 exactly).
            d => (u128::MAX / u128::from(d) + 1, 0),
        };
        Divisor {
            high: (reciprocal >> 64) as u64,
            low: reciprocal as u64,
            identity,
            d,
        }
    }

    /// A rate's window or limit as a divisor: positive, as `Rate` keeps
    /// them (a zero would be taken as 1).
    pub(crate) fn of(d: u64) -> Divisor {
        Divisor::new(NonZeroU64::new(d).unwrap_or(NonZeroU64::MIN))
    }

    /// `d`.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.d.get()
    }

    /// `floor(n / d)`: the high 64 bits of the 192-bit `n * M`, from two
    /// 64 × 64 products (their sum is below 2^128).
    #[inline]
    pub(crate) fn quotient(&self, n: u64) -> u64 {
        let n = u128::from(n);
        let carry = (n * u128::from(self.low)) >> 64;
        let q = ((n * u128::from(self.high) + carry) >> 64) as u64;
        q + (n as u64 & self.identity)
    }

    /// `(floor(n / d), n mod d)`.
    #[inline]
    pub(crate) fn div_rem(&self, n: u64) -> (u64, u64) {
        let q = self.quotient(n);
        (q, n - q * self.d.get())
    }

    /// `ceil(n / d)`.
    #[inline]
    pub(crate) fn div_ceil(&self, n: u64) -> u64 {
        let (q, r) = self.div_rem(n);
        q + u64::from(r > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::Divisor;
    use proptest::prelude::*;
    use std::num::NonZeroU64;

    /// Every answer against the machine's division.
    fn holds(n: u64, d: u64) {
        let divisor = Divisor::new(NonZeroU64::new(d).unwrap());
        assert_eq!(divisor.quotient(n), n / d, "{n} / {d}");
        assert_eq!(divisor.div_rem(n), (n / d, n % d), "{n} divmod {d}");
        assert_eq!(divisor.div_ceil(n), n.div_ceil(d), "ceil({n} / {d})");
        assert_eq!(divisor.get(), d);
    }

    /// 0, 1, 2, the powers of two and their neighbours, 10^k, and the top.
    fn edges() -> Vec<u64> {
        let mut v = vec![0, 1, 2, 3, u64::MAX - 1, u64::MAX];
        for k in 1..64 {
            let p = 1u64 << k;
            v.extend([p - 1, p, p + 1]);
        }
        v.extend((0..20).map(|k| 10u64.pow(k)));
        // Divisors near 2^63, where a quotient is 0 or 1.
        v.extend([(1 << 63) - 2, (1 << 63) + 2, u64::MAX / 3, u64::MAX / 3 + 1]);
        v
    }

    #[test]
    fn every_edge_dividend_by_every_edge_divisor() {
        let edges = edges();
        for &d in edges.iter().filter(|&&d| d > 0) {
            for &n in &edges {
                holds(n, d);
                // A dividend just below and above each multiple of d.
                for m in [n / d, (n / d).saturating_add(1)] {
                    if let Some(x) = m.checked_mul(d) {
                        holds(x, d);
                        holds(x.wrapping_sub(1), d);
                        holds(x.saturating_add(1), d);
                    }
                }
            }
        }
    }

    #[test]
    fn small_divisors_over_a_range_of_dividends() {
        for d in 1..=300 {
            for n in (0..2000).chain(u64::MAX - 2000..=u64::MAX) {
                holds(n, d);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn any_dividend_by_any_divisor(n in any::<u64>(), d in 1..=u64::MAX) {
            holds(n, d);
        }

        #[test]
        fn any_dividend_by_a_divisor_of_any_width(n in any::<u64>(), bits in 0u32..64, x in any::<u64>()) {
            // Divisors spread over every width, not only the wide ones a
            // uniform draw gives.
            let d = (x >> (63 - bits)).max(1);
            holds(n, d);
        }

        #[test]
        fn a_dividend_of_any_width_by_any_divisor(bits in 0u32..64, x in any::<u64>(), d in 1..=u64::MAX) {
            holds(x >> (63 - bits), d);
        }
    }
}
