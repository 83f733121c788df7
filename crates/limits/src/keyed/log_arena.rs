//! A shard's sliding-log entries in one `Vec<u64>`, cut into blocks of
//! `2^c` entries (issue 9: memory at 1M keys).
//!
//! A log of two or more entries in its own allocation paid malloc's 8-byte
//! header and the chunk's rounding besides its entries, and its 8-byte
//! pointer in the slot; a block here is addressed by a `u32` offset and
//! costs its entries alone. Blocks are a buddy system: a block of class
//! `c` starts at a multiple of `2^c`, a block freed beside its free buddy
//! merges with it into one of class `c + 1`, and a request of class `c`
//! takes the smallest free block of class `c` or more, splitting it. So a
//! table whose keys grow one after the other (each frees a block of class
//! `c` and takes one of `c + 1`) reuses what the keys before freed, and a
//! churn of keys takes back the blocks of keys gone: memory follows the
//! entries held, not the entries ever held. Free blocks are found by a
//! list per class, linked through the blocks' own first entry (a free
//! block holds no entry), and told apart by a bit per aligned block per
//! class. A free block at the end of the arena is cut off, and the
//! allocation shrinks when it is mostly unused. A shard keeps two arenas,
//! one per family of ring sizes (the log_arenas module).
//!
//! Offsets are `u32` entries: an arena holds at most 2^32 entries (32
//! GiB), past which it stops the process as running out of memory would.
//! Inside, the buddy system counts in units (`u`); its public functions
//! take and give offsets in entries.

/// The largest class: blocks of up to 2^27 entries.
pub(crate) const MOST_CLASS: u32 = 27;

/// No block: the end of a free list.
const NONE: u32 = u32::MAX;

/// A shard's blocks of log entries, in units of `unit` entries.
#[derive(Debug)]
pub(crate) struct Arena {
    /// The entries; each block is a run of them.
    pub(crate) entries: Vec<u64>,
    /// Entries per unit: 1, or 3.
    unit: u32,
    /// Per class, the first free block's offset (or [`NONE`]).
    heads: [u32; MOST_CLASS as usize + 1],
    /// Bit `c` set when class `c` has a free block: the smallest free
    /// class at least `c` in one instruction, not a walk of the lists.
    nonempty: u32,
    /// Per class, a bit per aligned block: set when it is free.
    free: [Vec<u64>; MOST_CLASS as usize + 1],
}

impl Arena {
    /// An empty arena whose blocks are `2^c` units of `unit` entries.
    pub(crate) fn new(unit: u32) -> Arena {
        assert!(unit == 1 || unit == 3, "an arena's unit is 1 or 3 entries");
        Arena {
            entries: Vec::new(),
            unit,
            heads: [NONE; MOST_CLASS as usize + 1],
            nonempty: 0,
            free: Default::default(),
        }
    }

    /// The arena's length in units.
    #[inline(always)]
    fn units(&self) -> usize {
        self.entries.len() / self.unit as usize
    }

    /// A block of `2^class` units (`class <= MOST_CLASS`): its offset in
    /// entries. Its entries are whatever they were. Inlined into the
    /// ring's move, with the most common case first: the class's own list
    /// is not empty, and its head is taken as it is (no search, no split).
    #[inline(always)]
    pub(crate) fn alloc(&mut self, class: u32) -> u32 {
        let u = self.heads[class as usize];
        if u != NONE {
            self.pop(class, u);
            return u * self.unit;
        }
        self.alloc_split(class)
    }

    /// [`alloc`](Arena::alloc) when the class's own list is empty: a
    /// larger free block split, or a new one at the end.
    #[inline(never)]
    fn alloc_split(&mut self, class: u32) -> u32 {
        let free = self.nonempty >> class;
        if free == 0 {
            return self.bump(class) * self.unit;
        }
        let c = class + free.trailing_zeros();
        let u = self.heads[c as usize];
        self.unlink(c, u);
        // Split down to the class asked for: the upper halves free.
        for lower in (class..c).rev() {
            self.push(lower, u + (1 << lower));
        }
        u * self.unit
    }

    /// A new block of `2^class` units at the end, aligned to its size; the
    /// gap before it (smaller blocks) is freed. Its offset in units.
    fn bump(&mut self, class: u32) -> u32 {
        let size = 1usize << class;
        let end = self.units();
        let start = end.next_multiple_of(size);
        let unit = self.unit as usize;
        assert!(
            ((start + size) * unit) as u64 <= 1 << 32,
            "a shard's log arena past 2^32 entries (32 GiB)"
        );
        self.extend_to((start + size) * unit);
        let mut u = end;
        while u < start {
            let c = (u.trailing_zeros().min(MOST_CLASS)).min((start - u).ilog2());
            self.release_units(u as u32, c);
            u += 1 << c;
        }
        start as u32
    }

    /// Grows the block of class `from` at `at` to class `to` where it is,
    /// if each half it needs is a free buddy or past the end of the arena
    /// (and `at` is aligned to the larger size): no copy, and no second
    /// block held while the first is moved (a table of keys growing one
    /// after the other then packs its blocks end to end). Whether it did.
    pub(crate) fn grow_in_place(&mut self, at: u32, from: u32, to: u32) -> bool {
        let (at, len, unit) = (at / self.unit, self.units(), self.unit as usize);
        let end = at as usize + (1 << to);
        if at & ((1 << to) - 1) != 0 || (end * unit) as u64 > 1 << 32 {
            return false;
        }
        // The buddies below the end must all be free before any is taken.
        let buddies = (from..to).map(|c| (c, at + (1 << c)));
        let mut inside = buddies.take_while(|&(_, buddy)| (buddy as usize) < len);
        if !inside.clone().all(|(c, buddy)| self.is_free(c, buddy)) {
            return false;
        }
        inside.by_ref().for_each(|(c, buddy)| self.unlink(c, buddy));
        if end > len {
            self.extend_to(end * unit);
        }
        true
    }

    /// Lengthens the arena to `entries`, its capacity a power of two (as a
    /// `Vec` doubling from empty has): one shrunk to a small size that is
    /// not one would otherwise double from it, to 3 or 5 times a power of
    /// two, half of it unused.
    fn extend_to(&mut self, entries: usize) {
        if entries > self.entries.capacity() {
            let len = self.entries.len();
            self.entries
                .reserve_exact(entries.next_power_of_two() - len);
        }
        self.entries.resize(entries, 0);
    }

    /// Gives back the block of `2^class` units at entry `at`.
    /// Inlined into the ring's move; the unit is 1 or 3, so the offset in
    /// units is a multiplication, not a division by a variable.
    #[inline(always)]
    pub(crate) fn release(&mut self, at: u32, class: u32) {
        let at = if self.unit == 1 { at } else { at / 3 };
        self.release_units(at, class);
    }

    /// Gives back the block of `2^class` units at unit `at`.
    #[inline(always)]
    fn release_units(&mut self, at: u32, class: u32) {
        let (mut at, mut class) = (at, class);
        while class < MOST_CLASS {
            let buddy = at ^ (1 << class);
            if !self.is_free(class, buddy) {
                break;
            }
            self.unlink(class, buddy);
            at = at.min(buddy);
            class += 1;
        }
        // The end in entries, not units: a multiplication, not a division.
        if (at as usize + (1 << class)) * self.unit as usize == self.entries.len() {
            self.entries.truncate(at as usize * self.unit as usize);
            self.trim();
        } else {
            self.push(class, at);
        }
    }

    /// Bytes held: the entries' allocation and the free bits.
    pub(crate) fn bytes(&self) -> usize {
        self.entries.capacity() * 8 + self.free.iter().map(|f| f.capacity() * 8).sum::<usize>()
    }

    /// Cuts free blocks off the end, then gives the allocation back if
    /// three quarters of it are unused.
    fn trim(&mut self) {
        let unit = self.unit as usize;
        'cut: loop {
            let len = self.units();
            for class in 0..=MOST_CLASS {
                let size = 1usize << class;
                if len < size || len % size != 0 {
                    break;
                }
                let at = (len - size) as u32;
                if self.is_free(class, at) {
                    self.unlink(class, at);
                    self.entries.truncate(at as usize * unit);
                    continue 'cut;
                }
            }
            break;
        }
        let len = self.entries.len();
        if self.entries.capacity() > 64 && len < self.entries.capacity() / 4 {
            // A power of two, as `extend_to` keeps it, and 64 entries at
            // least: an allocation is never given back whole. glibc frees
            // a large one by unmapping it and raises its threshold for
            // mapping to its size, so the next growth of either arena (the
            // bench's keys all move from one to the other each pass) would
            // be on the heap, whose freed chunks stay resident; shrunk
            // (`mremap`), it stays a mapping, and grows as one.
            let keep = (len * 2).next_power_of_two().max(64);
            self.entries.shrink_to(keep);
            for (class, bits) in self.free.iter_mut().enumerate() {
                // No block past the end is free: those bits are all clear.
                bits.truncate(((len / unit) >> class).div_ceil(64));
                bits.shrink_to_fit();
            }
        }
    }

    /// Whether the block of class `class` at `at` is free.
    #[inline(always)]
    fn is_free(&self, class: u32, at: u32) -> bool {
        let i = (at >> class) as usize;
        self.free[class as usize]
            .get(i / 64)
            .is_some_and(|word| word & (1 << (i % 64)) != 0)
    }

    /// Marks the block of class `class` at `at` free or not.
    #[inline(always)]
    fn mark(&mut self, class: u32, at: u32, on: bool) {
        let i = (at >> class) as usize;
        let bits = &mut self.free[class as usize];
        if bits.len() <= i / 64 {
            bits.resize(i / 64 + 1, 0);
        }
        if on {
            bits[i / 64] |= 1 << (i % 64);
        } else {
            bits[i / 64] &= !(1 << (i % 64));
        }
    }

    /// The free block at unit `at`'s links: (previous, next), in units.
    #[inline(always)]
    fn links(&self, at: u32) -> (u32, u32) {
        let word = self.entries[at as usize * self.unit as usize];
        ((word >> 32) as u32, word as u32)
    }

    #[inline(always)]
    fn set_links(&mut self, at: u32, (previous, next): (u32, u32)) {
        self.entries[at as usize * self.unit as usize] =
            (u64::from(previous) << 32) | u64::from(next);
    }

    /// Puts the block at `at` at the head of its class's free list.
    #[inline(always)]
    fn push(&mut self, class: u32, at: u32) {
        let next = self.heads[class as usize];
        if next != NONE {
            let (_, after) = self.links(next);
            self.set_links(next, (at, after));
        }
        self.set_links(at, (NONE, next));
        self.heads[class as usize] = at;
        self.nonempty |= 1 << class;
        self.mark(class, at, true);
    }

    /// Takes the free block `at`, its class's list's head, off the list.
    #[inline(always)]
    fn pop(&mut self, class: u32, at: u32) {
        let (_, next) = self.links(at);
        self.heads[class as usize] = next;
        if next == NONE {
            self.nonempty &= !(1 << class);
        } else {
            let (_, after) = self.links(next);
            self.set_links(next, (NONE, after));
        }
        // The block was free: its bit's word exists.
        let i = (at >> class) as usize;
        self.free[class as usize][i / 64] &= !(1 << (i % 64));
    }

    /// Takes the free block at `at` out of its class's list.
    #[inline(always)]
    fn unlink(&mut self, class: u32, at: u32) {
        let (previous, next) = self.links(at);
        if previous == NONE {
            self.heads[class as usize] = next;
            if next == NONE {
                self.nonempty &= !(1 << class);
            }
        } else {
            let (before, _) = self.links(previous);
            self.set_links(previous, (before, next));
        }
        if next != NONE {
            let (_, after) = self.links(next);
            self.set_links(next, (previous, after));
        }
        self.mark(class, at, false);
    }
}

#[cfg(test)]
#[path = "log_arena_tests.rs"]
mod tests;
