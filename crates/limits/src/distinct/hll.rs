//! A HyperLogLog (Flajolet et al., 2007) per sub-window: m registers of a
//! byte each, a value's register chosen by the top bits of its hash and
//! raised to the rank of the rest (leading zeros plus one). The number of
//! distinct values is estimated from the registers' harmonic mean, with a
//! standard error of 1.04 / sqrt(m); below 2.5 m, by linear counting of
//! the registers still zero. Several sketches are estimated as their
//! [`Union`], kept as registers rise.

/// One sketch's registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Hll {
    registers: Box<[u8]>,
}

impl Hll {
    /// `m` registers (a power of two, 16 to 65,536).
    pub(super) fn new(m: usize) -> Hll {
        Hll {
            registers: vec![0; m].into_boxed_slice(),
        }
    }

    /// The register of `hash` and its rank there.
    pub(super) fn place(m: usize, hash: u64) -> (usize, u8) {
        let bits = m.trailing_zeros();
        let index = (hash >> (64 - bits)) as usize;
        // The bits below the index, with a one past them so that the rank
        // stops there: at most 64 - bits + 1.
        let rest = (hash << bits) | (1 << (bits - 1));
        (index, rest.leading_zeros() as u8 + 1)
    }

    pub(super) fn raise(&mut self, index: usize, rank: u8) {
        let r = &mut self.registers[index];
        *r = (*r).max(rank);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.registers.iter().all(|&r| r == 0)
    }

    pub(super) fn bytes(&self) -> usize {
        self.registers.len()
    }
}

/// Several sketches as one (their union: each register the highest among
/// them), with what the estimate reads kept as registers rise: the sum of
/// 2^-register over the registers, in fixed point (2^64 is one: every term
/// exact, and the sum the same however it was reached), and the registers
/// still zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Union {
    registers: Box<[u8]>,
    sum: u128,
    zeros: usize,
}

impl Union {
    /// `m` registers, all zero.
    pub(super) fn new(m: usize) -> Union {
        Union {
            registers: vec![0; m].into_boxed_slice(),
            sum: (m as u128) << 64,
            zeros: m,
        }
    }

    /// The union of `sketches`, all of `m` registers.
    pub(super) fn of<'a>(m: usize, sketches: impl Iterator<Item = &'a Hll>) -> Union {
        let mut union = Union::new(m);
        for sketch in sketches {
            for (i, &rank) in sketch.registers.iter().enumerate() {
                union.raise(i, rank);
            }
        }
        union
    }

    pub(super) fn m(&self) -> usize {
        self.registers.len()
    }

    /// Register `index` raised to `rank`, if that is higher.
    pub(super) fn raise(&mut self, index: usize, rank: u8) {
        let r = &mut self.registers[index];
        if rank > *r {
            self.sum -= term(*r);
            self.sum += term(rank);
            self.zeros -= usize::from(*r == 0);
            *r = rank;
        }
    }

    /// The estimated number of distinct values.
    pub(super) fn estimate(&self) -> f64 {
        let m_f = self.m() as f64;
        let alpha = match self.m() {
            16 => 0.673,
            32 => 0.697,
            64 => 0.709,
            _ => 0.7213 / (1.0 + 1.079 / m_f),
        };
        let sum = self.sum as f64 / 2f64.powi(64);
        let raw = alpha * m_f * m_f / sum;
        if raw <= 2.5 * m_f && self.zeros > 0 {
            m_f * (m_f / self.zeros as f64).ln()
        } else {
            raw
        }
    }

    pub(super) fn bytes(&self) -> usize {
        self.registers.len()
    }
}

/// 2^-rank in the union's fixed point: whole, as a rank is at most 61.
fn term(rank: u8) -> u128 {
    (1u128 << 64) >> rank
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: seeded hashes, the same on every run.
    fn hashes(seed: u64) -> impl Iterator<Item = u64> {
        let mut state = seed;
        std::iter::repeat_with(move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
    }

    #[test]
    fn estimates_are_within_three_standard_errors_all_but_rarely() {
        for m in [256, 1024] {
            let sigma = 1.04 / (m as f64).sqrt();
            let (mut trials, mut outside) = (0, 0);
            for n in [50usize, 500, 5_000, 50_000] {
                for seed in 0..25u64 {
                    let mut sketch = Hll::new(m);
                    for h in hashes(seed * 1_000_003 + n as u64).take(n) {
                        let (i, r) = Hll::place(m, h);
                        sketch.raise(i, r);
                    }
                    let error =
                        (Union::of(m, [&sketch].into_iter()).estimate() - n as f64) / n as f64;
                    trials += 1;
                    if error.abs() > 3.0 * sigma {
                        outside += 1;
                        eprintln!("m {m}, n {n}, seed {seed}: error {error:.4}");
                    }
                }
            }
            // Beyond three standard errors 0.3% of the time: 2 of 100 is
            // already unlikely (p < 0.04).
            assert!(
                outside <= 2,
                "m {m}: {outside} of {trials} beyond 3 sigma ({sigma:.4})"
            );
        }
    }

    #[test]
    fn a_union_counts_each_value_once() {
        let m = 1024;
        let (mut a, mut b) = (Hll::new(m), Hll::new(m));
        for (n, h) in hashes(9).take(2_000).enumerate() {
            let (i, r) = Hll::place(m, h);
            // The first 1,500 in a, the last 1,500 in b: 2,000 in all.
            if n < 1_500 {
                a.raise(i, r);
            }
            if n >= 500 {
                b.raise(i, r);
            }
        }
        let both = Union::of(m, [&a, &b].into_iter()).estimate();
        assert!(
            (both - 2_000.0).abs() < 2_000.0 * 3.0 * 1.04 / 32.0,
            "{both}"
        );
    }

    #[test]
    fn ranks_stop_at_the_bits_left() {
        assert_eq!(
            Hll::place(16, 0),
            (0, 61),
            "60 bits of zeros, then the stop"
        );
        assert_eq!(Hll::place(16, u64::MAX), (15, 1));
        assert_eq!(Hll::place(16, 1 << 59), (0, 1));
    }
}
