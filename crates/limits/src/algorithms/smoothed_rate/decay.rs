//! The smoothed rate's decay in integers only: after `j` ticks of a
//! 65,536th of a half-life, a value is `floor(v * 2^(-j / 65536))` as two
//! tables of 256 factors give it, so that every platform, every store and
//! the reference model compute the same bits.
//!
//! The factor of the ticks within one half-life is the product of a
//! coarse step (`2^(-i/256)`) and a fine one (`2^(-i/65536)`), both in Q63
//! fixed point; whole half-lives are shifts. The tables are built at
//! compile time from repeated integer square roots of one half, so no
//! floating point is involved anywhere. Their product falls strictly from
//! one tick to the next (`tests::the_factor_falls_at_every_tick`), which
//! is what makes the first tick below a bound well defined: found by bit
//! lengths for the half-life, then within it from a guess by logarithms
//! (`log2_q32`, a table of 257 values), stepped to the exact tick by
//! the decay itself.

/// Ticks per half-life.
pub const TICKS_PER_HALF_LIFE: u64 = 1 << TICK_BITS;

const TICK_BITS: u32 = 16;

/// After this many half-lives any `u64` is zero.
const HALF_LIVES_TO_ZERO: u64 = 64;

/// 1.0 in Q63.
const ONE: u64 = 1 << 63;

/// `2^(-i/256)` in Q63, for `i` in `0..256`.
static COARSE: [u64; 256] = powers(halving_root(8));

/// `2^(-i/65536)` in Q63, for `i` in `0..256`.
static FINE: [u64; 256] = powers(halving_root(16));

/// `log2(1 + i/256)` in Q32, for `i` in `0..=256`.
static LOG2_STEPS: [u64; 257] = log2_steps();

/// `2^(-1 / 2^m)` in Q63: one half, its square root taken `m` times.
const fn halving_root(m: u32) -> u64 {
    let mut x = ONE >> 1;
    let mut i = 0;
    while i < m {
        x = ((x as u128) << 63).isqrt() as u64;
        i += 1;
    }
    x
}

/// `base^i` in Q63 for `i` in `0..256`, each from the one before.
const fn powers(base: u64) -> [u64; 256] {
    let mut out = [0; 256];
    out[0] = ONE;
    let mut i = 1;
    while i < 256 {
        out[i] = ((out[i - 1] as u128 * base as u128) >> 63) as u64;
        i += 1;
    }
    out
}

/// [`LOG2_STEPS`], each by squaring `1 + i/256` 32 times (one bit of the
/// logarithm per squaring).
const fn log2_steps() -> [u64; 257] {
    const Q62: u128 = 1 << 62;
    let mut out = [0; 257];
    let mut i = 0;
    while i <= 256 {
        let mut y = Q62 + ((i as u128) << 54);
        let mut bits = 0;
        let mut bit = 0;
        while bit < 32 {
            y = (y * y) >> 62;
            bits <<= 1;
            if y >= 2 * Q62 {
                y >>= 1;
                bits |= 1;
            }
            bit += 1;
        }
        out[i] = if i == 256 { 1 << 32 } else { bits };
        i += 1;
    }
    out
}

/// `log2(x)` in Q32 for `x >= 1`, its fraction interpolated between the
/// steps of [`LOG2_STEPS`]: within a few millionths, a guess.
#[inline]
fn log2_q32(x: u64) -> u64 {
    let whole = u64::from(63 - x.leading_zeros());
    let m = x << x.leading_zeros();
    let step = ((m >> 55) & 255) as usize;
    let within = (m >> 23) & 0xFFFF_FFFF;
    let (low, high) = (LOG2_STEPS[step], LOG2_STEPS[step + 1]);
    (whole << 32) + low + (((high - low) * within) >> 32)
}

/// The factor of `f` ticks within one half-life (`f < 65536`), in Q63.
#[inline]
fn factor(f: u64) -> u64 {
    let (coarse, fine) = (COARSE[(f >> 8) as usize & 255], FINE[f as usize & 255]);
    ((u128::from(coarse) * u128::from(fine)) >> 63) as u64
}

/// `value` after `ticks` ticks of a 65,536th of a half-life each:
/// `floor(value * 2^(-ticks / 65536))` as the tables give the factor.
///
/// ```
/// use limits::algorithms::{smoothed_decay, TICKS_PER_HALF_LIFE};
/// assert_eq!(smoothed_decay(1000, 0), 1000);
/// assert_eq!(smoothed_decay(1000, TICKS_PER_HALF_LIFE), 500);
/// assert_eq!(smoothed_decay(1000, TICKS_PER_HALF_LIFE / 2), 707);
/// assert_eq!(smoothed_decay(u64::MAX, 64 * TICKS_PER_HALF_LIFE), 0);
/// ```
#[inline]
pub fn smoothed_decay(value: u64, ticks: u64) -> u64 {
    let half_lives = ticks >> TICK_BITS;
    if half_lives >= HALF_LIVES_TO_ZERO {
        return 0;
    }
    let f = ticks & (TICKS_PER_HALF_LIFE - 1);
    ((u128::from(value) * u128::from(factor(f))) >> (63 + half_lives)) as u64
}

/// The fewest ticks after which `value` has decayed below `bound` (at
/// least 1): zero if it already is.
pub(crate) fn ticks_until_below(value: u64, bound: u64) -> u64 {
    if value < bound {
        return 0;
    }
    // The first whole half-life `k` at which the value is below the bound:
    // within one of the difference of their bit lengths.
    let mut k = bound.leading_zeros().saturating_sub(value.leading_zeros());
    while value.checked_shr(k).unwrap_or(0) >= bound {
        k += 1;
    }
    // The tick sought is in ((k - 1) * 65536, k * 65536]: the value is still
    // at least the bound at the start of that half-life, and below it at the
    // end. There it is `value * factor >> (62 + k)`, at least the bound iff
    // `value * factor` is at least `bound << (62 + k)`, which fits: the
    // bound times 2^(k - 1) is at most the value.
    let start = u64::from(k - 1) << TICK_BITS;
    let guess = log2_q32(value)
        .saturating_sub(log2_q32(bound))
        .saturating_sub(u64::from(k - 1) << 32);
    let (value, least) = (u128::from(value), u128::from(bound) << (62 + k));
    // Below the bound after `f` ticks into the half-life (at its end, by
    // the choice of `k`); never at its start.
    let below = |f: u64| f >= TICKS_PER_HALF_LIFE || value * u128::from(factor(f)) < least;
    // The guess is within a tick or two of the first tick below; the
    // factor's strict fall makes the steps from it exact.
    let mut f = ((guess >> 16) + 1).clamp(1, TICKS_PER_HALF_LIFE);
    while f > 1 && below(f - 1) {
        f -= 1;
    }
    while !below(f) {
        f += 1;
    }
    start + f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factor_falls_at_every_tick() {
        let mut before = factor(0);
        assert_eq!(before, ONE);
        for f in 1..TICKS_PER_HALF_LIFE {
            let now = factor(f);
            assert!(now < before, "tick {f}: {now} after {before}");
            before = now;
        }
        // Into the next half-life, which starts at exactly one half.
        assert!(ONE / 2 < before);
    }

    #[test]
    fn the_factor_is_two_to_minus_the_fraction() {
        for f in (0..TICKS_PER_HALF_LIFE).step_by(97) {
            let exact = (-(f as f64) / TICKS_PER_HALF_LIFE as f64).exp2();
            let ours = factor(f) as f64 / ONE as f64;
            assert!(
                (ours - exact).abs() < 1e-15,
                "tick {f}: {ours} against {exact}"
            );
        }
    }

    #[test]
    fn the_log_steps_are_the_logarithms() {
        for (i, &step) in LOG2_STEPS.iter().enumerate() {
            let exact = (1.0 + i as f64 / 256.0).log2();
            let ours = step as f64 / (1u64 << 32) as f64;
            assert!(
                (ours - exact).abs() < 1e-9,
                "step {i}: {ours} against {exact}"
            );
        }
        for x in [1, 2, 3, 1000, 123_456_789, u64::MAX] {
            let ours = log2_q32(x) as f64 / (1u64 << 32) as f64;
            assert!((ours - (x as f64).log2()).abs() < 1e-5, "{x}: {ours}");
        }
    }

    /// The first tick below `bound` by halving the ticks' range: the
    /// plainest search, for `ticks_until_below` to match.
    fn first_tick_below(value: u64, bound: u64) -> u64 {
        let (mut at_least, mut below) = (0, HALF_LIVES_TO_ZERO << TICK_BITS);
        if value < bound {
            return 0;
        }
        while below - at_least > 1 {
            let mid = (at_least + below) / 2;
            if smoothed_decay(value, mid) < bound {
                below = mid;
            } else {
                at_least = mid;
            }
        }
        below
    }

    #[test]
    fn ticks_until_below_matches_the_plainest_search() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let value = next() >> (next() % 64);
            let bound = (next() >> (next() % 64)).max(1);
            assert_eq!(
                ticks_until_below(value, bound),
                first_tick_below(value, bound),
                "{value} below {bound}"
            );
        }
    }

    #[test]
    fn ticks_until_below_is_the_first_tick_below() {
        let values = [1, 2, 3, 1000, 1 << 40, (1 << 62) + 12345, u64::MAX];
        for value in values {
            for bound in [1, 2, 3, 7, 999, 1 << 39, 1 << 62, u64::MAX] {
                let j = ticks_until_below(value, bound);
                assert!(smoothed_decay(value, j) < bound, "{value} {bound}");
                if j > 0 {
                    assert!(smoothed_decay(value, j - 1) >= bound, "{value} {bound}");
                }
            }
        }
    }
}
