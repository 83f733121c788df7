//! A shard's two arenas of sliding-log rings: one for rings of `2^c`
//! entries, one for rings of `3·2^k` (see the log_arena module for how each
//! arena keeps its blocks).
//!
//! Rings of `3·2^k` entries (3, 6, 12, ...: a log between two powers of
//! two pays for at most half again its entries, not twice them) live in a
//! second arena of the same kind whose unit is 3 entries: a
//! block of class `k` there is `2^k` units. A `3·2^k` ring carved out of
//! a power-of-two block would leave a quarter of it free, which only a
//! smaller ring can take: a table of keys that all hold 3 entries would
//! still pay for 4. In a block of its own size it pays for its entries.

use super::log_arena::Arena;

/// A shard's two arenas: rings of `2^c` entries, and of `3·2^k`.
#[derive(Debug)]
pub(crate) struct Arenas {
    /// Blocks of `2^c` entries.
    pub(crate) two: Arena,
    /// Blocks of `2^k` units of 3 entries.
    pub(crate) three: Arena,
}

impl Default for Arenas {
    fn default() -> Arenas {
        Arenas {
            two: Arena::new(1),
            three: Arena::new(3),
        }
    }
}

impl Arenas {
    /// The arena of the family `three` (0 or 1), and the other one.
    #[inline(always)]
    pub(crate) fn pick(&mut self, three: u32) -> (&mut Arena, &mut Arena) {
        if three != 0 {
            (&mut self.three, &mut self.two)
        } else {
            (&mut self.two, &mut self.three)
        }
    }

    /// Bytes held by both.
    pub(crate) fn bytes(&self) -> usize {
        self.two.bytes() + self.three.bytes()
    }
}
