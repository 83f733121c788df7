//! A key's sketches: one HyperLogLog per sub-window still in the window,
//! oldest first, and their union kept as they change (each register the
//! highest among them, with the estimate's sum and zeros over it), so that
//! an estimate costs the same whatever the registers and sub-windows. The
//! union is rebuilt only when a sub-window leaves, once per sub-window.

use super::hll::{Hll, Union};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Sketches {
    /// (sub-window number, its sketch), oldest first.
    slots: Vec<(u64, Hll)>,
    union: Union,
}

impl Sketches {
    /// None yet, of `m` registers each.
    pub(super) fn new(m: usize) -> Sketches {
        Sketches {
            slots: Vec::new(),
            union: Union::new(m),
        }
    }

    /// `hash` added to the sketch of sub-window `index` (the newest, or a
    /// new one after it).
    pub(super) fn add(&mut self, index: u64, hash: u64) {
        let m = self.union.m();
        if self.slots.last().is_none_or(|(i, _)| *i != index) {
            self.slots.push((index, Hll::new(m)));
        }
        let (register, rank) = Hll::place(m, hash);
        if let Some((_, sketch)) = self.slots.last_mut() {
            sketch.raise(register, rank);
        }
        self.union.raise(register, rank);
    }

    /// Drops the sketches of the sub-windows before `first`.
    pub(super) fn keep_from(&mut self, first: u64) {
        let before = self.slots.len();
        self.slots.retain(|&(index, _)| index >= first);
        if self.slots.len() != before {
            self.union = Union::of(self.union.m(), self.slots.iter().map(|(_, s)| s));
        }
    }

    /// The estimated number of distinct values added to the sketches left.
    pub(super) fn estimate(&self) -> f64 {
        self.union.estimate()
    }

    /// The oldest and the newest sub-window's numbers, if any is left.
    pub(super) fn span(&self) -> Option<(u64, u64)> {
        let first = self.slots.first()?.0;
        let last = self.slots.last()?.0;
        Some((first, last))
    }

    /// Whether no value is counted.
    pub(super) fn is_empty(&self) -> bool {
        self.slots.iter().all(|(_, s)| s.is_empty())
    }

    /// Bytes on the heap: every sketch and the union.
    pub(super) fn bytes(&self) -> usize {
        let slots = self.slots.iter().map(|(_, s)| s.bytes()).sum::<usize>();
        slots + self.union.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_kept_as_values_arrive_is_the_union_rebuilt() {
        let m = 256;
        let mut sketches = Sketches::new(m);
        let mut state = 7u64;
        for step in 0..20_000u64 {
            // splitmix64: seeded hashes, the same on every run.
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let index = step / 1_000;
            sketches.add(index, z ^ (z >> 31));
            if step % 1_500 == 0 {
                sketches.keep_from(index.saturating_sub(3));
            }
            if step % 97 == 0 {
                let rebuilt = Union::of(m, sketches.slots.iter().map(|(_, s)| s));
                assert_eq!(sketches.union, rebuilt, "step {step}");
                assert_eq!(sketches.estimate(), rebuilt.estimate());
            }
        }
        assert_eq!(sketches.span(), Some((16, 19)));
    }
}
