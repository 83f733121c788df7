//! A sliding log held by the arena's table (`keyed/compact_log.rs`) as the
//! algorithm reads and writes it: its [`Handle`] unpacked beside the
//! shard's [`Arena`], through the same [`Log`] trait as a
//! [`SlidingLogState`](crate::algorithms::SlidingLogState), so that every
//! decision runs the algorithm's own code (issue 9).
//!
//! As for the state, a decision chooses the shape once: a ring's view
//! (`View<true>`) runs straight-line ring code (a ring stays a ring, at
//! least 2 entries, until its key is dropped), the inline shape's view
//! (`View<false>`) chooses at each read, since its second entry moves it to
//! a ring. Ring sizes are powers of two: the ring's index wraps by a mask.

use super::log_arena::Arena;
use crate::algorithms::Log;

/// A log's place: one entry inline (class 0: its low half in `at`, its
/// high half in `head`), or a ring of `2^class` entries at offset `at` of
/// the arena, `len` of them from `head`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    /// The ring's offset (or the inline entry's low half).
    pub at: u32,
    /// The oldest entry's index in the ring (or the inline entry's high
    /// half).
    pub head: u32,
    /// Entries held.
    pub len: u32,
    /// 0 inline, else the ring's size is `2^class`.
    pub class: u32,
    /// The ring's size less one (0 inline): the index wraps by it.
    pub mask: u32,
}

impl Handle {
    /// A handle of class `class` (its mask computed once).
    #[inline(always)]
    pub fn new(at: u32, head: u32, len: u32, class: u32) -> Handle {
        Handle {
            at,
            head,
            len,
            class,
            mask: (1 << class) - 1,
        }
    }

    /// An inline handle of `len` (0 or 1) entries: `entry`.
    #[inline(always)]
    pub fn inline(entry: u64, len: u32) -> Handle {
        Handle::new(entry as u32, (entry >> 32) as u32, len, 0)
    }

    /// The inline entry.
    #[inline(always)]
    pub fn word(&self) -> u64 {
        u64::from(self.at) | (u64::from(self.head) << 32)
    }

    /// The arena index of the `i`-th oldest entry of a ring.
    #[inline(always)]
    pub fn index(&self, i: usize) -> usize {
        self.at as usize + ((self.head as usize + i) & self.mask as usize)
    }

    /// The `i`-th oldest entry (`i < len`).
    #[inline(always)]
    pub fn entry(&self, arena: &Arena, i: usize) -> u64 {
        if self.class == 0 {
            self.word()
        } else {
            arena.entries[self.index(i)]
        }
    }
}

/// A log as the algorithm sees it: `RING` if it is known to be a ring.
pub(crate) struct View<'a, const RING: bool> {
    pub arena: &'a mut Arena,
    pub h: Handle,
}

impl<const RING: bool> View<'_, RING> {
    /// Whether the log is a ring now.
    #[inline(always)]
    fn ring(&self) -> bool {
        RING || self.h.mask != 0
    }
}

impl<const RING: bool> Log for View<'_, RING> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.h.len as usize
    }

    #[inline(always)]
    fn capacity(&self) -> usize {
        self.h.mask as usize + 1
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Option<u64> {
        if i >= self.len() {
            None
        } else if self.ring() {
            Some(self.arena.entries[self.h.index(i)])
        } else {
            Some(self.h.word())
        }
    }

    /// At the head, no wrapping to compute (the head is inside the ring).
    #[inline(always)]
    fn front(&self) -> Option<u64> {
        if self.h.len == 0 {
            None
        } else if self.ring() {
            Some(self.arena.entries[self.h.at as usize + self.h.head as usize])
        } else {
            Some(self.h.word())
        }
    }

    #[inline(always)]
    fn back(&self) -> Option<u64> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    #[inline(always)]
    fn pop_front(&mut self) {
        if self.h.len > 0 {
            if self.ring() {
                self.h.head = (self.h.head + 1) & self.h.mask;
            }
            self.h.len -= 1;
        }
    }

    #[inline(always)]
    fn push_n(&mut self, t: u64, n: usize) {
        if self.ring() {
            for _ in 0..n {
                let at = self.h.index(self.len());
                self.arena.entries[at] = t;
                self.h.len += 1;
            }
        } else if n > 0 {
            // Room for one: `n` is 1, into an empty log.
            self.h = Handle::inline(t, 1);
        }
    }

    /// A ring of the power of two at least `capacity` (and the length),
    /// 2 entries at least; an inline log of at most one stays inline.
    fn resize(&mut self, capacity: usize) {
        let capacity = capacity.max(self.len());
        if !self.ring() && capacity <= 1 {
            return;
        }
        let class = capacity.max(2).next_power_of_two().trailing_zeros();
        if self.ring() && class == self.h.class {
            return;
        }
        let len = self.len();
        if self.ring() && class > self.h.class {
            let (at, old) = (self.h.at, self.h.class);
            if self.arena.grow_in_place(at, old, class) {
                // The entries that wrapped to the ring's start move past its
                // old end: from the head on, they are in order.
                let wrapped = (self.h.head as usize + len).saturating_sub(1 << old);
                let at = at as usize;
                self.arena
                    .entries
                    .copy_within(at..at + wrapped, at + (1 << old));
                self.h = Handle::new(self.h.at, self.h.head, self.h.len, class);
                return;
            }
        }
        let at = self.arena.alloc(class);
        if self.ring() {
            // At most two runs: from the head to the ring's end, then from
            // its start.
            let (base, head) = (self.h.at as usize, self.h.head as usize);
            let first = len.min(self.capacity() - head);
            let entries = &mut self.arena.entries;
            entries.copy_within(base + head..base + head + first, at as usize);
            entries.copy_within(base..base + len - first, at as usize + first);
            self.arena.release(self.h.at, self.h.class);
        } else if len == 1 {
            self.arena.entries[at as usize] = self.h.word();
        }
        self.h = Handle::new(at, 0, self.h.len, class);
    }

    /// [`Log::sparse`] on the mask: a quarter of `mask + 1` (a power of
    /// two past 16) is more than `len` iff `4 len <= mask`.
    #[inline(always)]
    fn sparse(&self) -> bool {
        self.h.mask > 15 && self.h.len * 4 <= self.h.mask
    }

    /// The power of two at least `needed`: a ring grows to at least twice
    /// its size, and its block is its entries alone.
    fn room_for(&self, needed: usize, _limit: u64) -> usize {
        needed.next_power_of_two()
    }
}
