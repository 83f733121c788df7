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
//! a ring. Ring sizes are the powers of two from 2 and three times them
//! (2, 3, 4, 6, 8, 12, ...: [`shape`]), the latter in the shard's arena of
//! threes: the ring's index wraps by a compare and a subtraction.

use super::log_arena::Arena;
use super::log_arenas::Arenas;
use crate::algorithms::Log;

/// A log's place: one entry inline (class 0: its low half in `at`, its
/// high half in `head`), or a ring of [`size`](Handle::size) entries at
/// offset `at` of its arena, `len` of them from `head`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    /// The ring's offset (or the inline entry's low half).
    pub at: u32,
    /// The oldest entry's index in the ring (or the inline entry's high
    /// half).
    pub head: u32,
    /// Entries held.
    pub len: u32,
    /// 0 inline, else the ring's size is `2^class`, or `3·2^(class - 1)`
    /// with `three`; its block is of class `class - three` in its arena.
    pub class: u32,
    /// 1 when the ring is in the arena of threes, else 0.
    pub three: u32,
    /// The ring's size (1 inline): the index wraps past it.
    pub size: u32,
}

/// The ring for `capacity` (at least 2) entries: the smallest of 2, 3, 4,
/// 6, 8, 12, ... that holds them, as `(class, three)`.
#[inline]
pub(crate) fn shape(capacity: usize) -> (u32, u32) {
    let p = capacity.next_power_of_two();
    let class = p.trailing_zeros();
    if p >= 4 && capacity <= p / 4 * 3 {
        (class - 1, 1)
    } else {
        (class, 0)
    }
}

impl Handle {
    /// A handle of class `class` in family `three` (its size computed
    /// once): `2^class`, or `3·2^(class - 1)`.
    #[inline(always)]
    pub fn new(at: u32, head: u32, len: u32, class: u32, three: u32) -> Handle {
        Handle {
            at,
            head,
            len,
            class,
            three,
            size: ((2 + three) << class) >> 1,
        }
    }

    /// An inline handle of `len` (0 or 1) entries: `entry`.
    #[inline(always)]
    pub fn inline(entry: u64, len: u32) -> Handle {
        Handle::new(entry as u32, (entry >> 32) as u32, len, 0, 0)
    }

    /// The class of the ring's block in its arena.
    #[inline(always)]
    pub fn block(&self) -> u32 {
        self.class - self.three
    }

    /// The inline entry.
    #[inline(always)]
    pub fn word(&self) -> u64 {
        u64::from(self.at) | (u64::from(self.head) << 32)
    }

    /// The arena index of the `i`-th oldest entry of a ring (`i` below
    /// its size).
    #[inline(always)]
    pub fn index(&self, i: usize) -> usize {
        // In `u32`: `i` and the head are below the size, at most 2^27.
        let j = self.head + i as u32;
        self.at as usize + if j >= self.size { j - self.size } else { j } as usize
    }

    /// The `i`-th oldest entry (`i < len`).
    #[inline(always)]
    pub fn entry(&self, arenas: &Arenas, i: usize) -> u64 {
        if self.class == 0 {
            self.word()
        } else if self.three != 0 {
            arenas.three.entries[self.index(i)]
        } else {
            arenas.two.entries[self.index(i)]
        }
    }
}

/// A log as the algorithm sees it: `RING` if it is known to be a ring.
/// `here` is its ring's arena (the twos' while inline), `there` the other.
pub(crate) struct View<'a, const RING: bool> {
    pub here: &'a mut Arena,
    pub there: &'a mut Arena,
    pub h: Handle,
}

impl<'a, const RING: bool> View<'a, RING> {
    /// A view of `h` in `arenas`.
    #[inline(always)]
    pub fn new(arenas: &'a mut Arenas, h: Handle) -> View<'a, RING> {
        let (here, there) = arenas.pick(h.three);
        View { here, there, h }
    }

    /// Whether the log is a ring now.
    #[inline(always)]
    fn ring(&self) -> bool {
        RING || self.h.class != 0
    }

    /// The ring's arena (`here`), or the other one.
    fn arena(&mut self, here: bool) -> &mut Arena {
        if here {
            self.here
        } else {
            self.there
        }
    }
}

impl<const RING: bool> Log for View<'_, RING> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.h.len as usize
    }

    #[inline(always)]
    fn capacity(&self) -> usize {
        self.h.size as usize
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Option<u64> {
        if i >= self.len() {
            None
        } else if self.ring() {
            Some(self.here.entries[self.h.index(i)])
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
            Some(self.here.entries[self.h.at as usize + self.h.head as usize])
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
                let next = self.h.head + 1;
                self.h.head = if next == self.h.size { 0 } else { next };
            }
            self.h.len -= 1;
        }
    }

    #[inline(always)]
    fn push_n(&mut self, t: u64, n: usize) {
        if self.ring() {
            for _ in 0..n {
                let at = self.h.index(self.len());
                self.here.entries[at] = t;
                self.h.len += 1;
            }
        } else if n > 0 {
            // Room for one: `n` is 1, into an empty log.
            self.h = Handle::inline(t, 1);
        }
    }

    /// A ring of the smallest size ([`shape`]) at least `capacity` (and
    /// the length), 2 entries at least; an inline log of at most one stays
    /// inline. Into a larger block of its own arena in place if it can,
    /// else into a new block of the size's arena, copied.
    fn resize(&mut self, capacity: usize) {
        let capacity = capacity.max(self.len());
        if !self.ring() && capacity <= 1 {
            return;
        }
        let (class, three) = shape(capacity.max(2));
        let old = self.h;
        if self.ring() && class == old.class && three == old.three {
            return;
        }
        let len = self.len();
        let same = three == old.three;
        if self.ring()
            && same
            && class > old.class
            && self.here.grow_in_place(old.at, old.block(), class - three)
        {
            // The entries that wrapped to the ring's start move past its old
            // end: from the head on, they are in order.
            let wrapped = (old.head as usize + len).saturating_sub(old.size as usize);
            let at = old.at as usize;
            self.here
                .entries
                .copy_within(at..at + wrapped, at + old.size as usize);
            self.h = Handle::new(old.at, old.head, old.len, class, three);
            return;
        }
        let at = self.arena(same).alloc(class - three);
        let to = at as usize;
        if self.ring() {
            // At most two runs: from the head to the ring's end, then from
            // its start.
            let (base, head) = (old.at as usize, old.head as usize);
            let first = len.min(old.size as usize - head);
            let runs = [(base + head, to, first), (base, to + first, len - first)];
            for (from, to, n) in runs {
                if same {
                    self.here.entries.copy_within(from..from + n, to);
                } else {
                    let run = &self.here.entries[from..from + n];
                    self.there.entries[to..to + n].copy_from_slice(run);
                }
            }
            self.here.release(old.at, old.block());
        } else if len == 1 {
            self.arena(same).entries[to] = old.word();
        }
        if !same {
            std::mem::swap(&mut self.here, &mut self.there);
        }
        self.h = Handle::new(at, 0, old.len, class, three);
    }

    /// [`Log::sparse`] on the size: a quarter of it (past 16, a multiple
    /// of 4) is more than `len` iff `4 len < size`.
    #[inline(always)]
    fn sparse(&self) -> bool {
        self.h.size > 16 && self.h.len * 4 < self.h.size
    }

    /// The smallest ring at least `needed` ([`shape`]): a ring grows by
    /// half (2 to 3, 4 to 6, ...) or a third (3 to 4, 6 to 8, ...), and
    /// its block is its entries alone.
    fn room_for(&self, needed: usize, _limit: u64) -> usize {
        let (class, three) = shape(needed.max(2));
        (((2 + three) << class) >> 1) as usize
    }
}
