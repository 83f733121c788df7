//! The sliding log's ring: one entry per admitted decision, in one boxed
//! slice with 32-bit head and length, so that it takes 24 bytes inline (a
//! `VecDeque` takes 32). Every key's state is as large as the largest
//! algorithm's, so this is what lets a token bucket's state be 32 bytes.
//!
//! An entry carries its cost, so a decision costs one entry whatever its
//! cost. While every entry costs 1 the ring holds only their times (the
//! `k`-th oldest unit is the `k`-th entry); the first entry of another cost
//! makes it a weighted ring, which holds beside each time the running count
//! of units up to that entry, and the running count before its oldest entry:
//! the entry holding the `k`-th oldest unit is then found by a binary search
//! on those counts. The counts wrap around `u64`; only differences between
//! counts of live entries are read, and those are at most L.
//!
//! [`Log`] is what the algorithm reads and writes of a log: implemented by
//! the ring itself and by [`SlidingLogState`](super::SlidingLogState), which
//! holds up to two entries inline or a ring. The algorithm's code is generic over
//! it, so that a decision chooses the state's shape once and then runs
//! straight-line code for that shape.

/// A log's entries as the algorithm uses them, oldest first.
pub(crate) trait Log {
    /// Entries held (one per admitted decision).
    fn len(&self) -> usize;
    /// Units held: the sum of the entries' costs.
    fn units(&self) -> u64;
    /// Entries held without growing.
    fn capacity(&self) -> usize;
    /// The time of the `k`-th oldest unit, `1 <= k <= units()`.
    fn unit(&self, k: u64) -> u64;
    /// The oldest entry's time.
    fn front(&self) -> Option<u64>;
    /// The newest entry's time.
    fn back(&self) -> Option<u64>;
    /// Drops the oldest entry.
    fn pop_front(&mut self);
    /// Appends an entry of `cost` (at least 1) at `t`; there must be room
    /// for one more entry.
    fn push(&mut self, t: u64, cost: u64);
    /// Moves the entries into room for exactly `capacity` (at least the
    /// length), oldest first.
    fn resize(&mut self, capacity: usize);

    /// Whether the log holds less than a quarter of a room of more than 16
    /// entries: `advance` then gives memory back.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn sparse(&self) -> bool {
        self.capacity() > 16 && self.len() < self.capacity() / 4
    }

    /// The capacity to grow to for `needed` entries (more than the
    /// capacity) under a limit of `limit`: the smallest `2^k + 1` entries
    /// that hold them, never past L (`SlidingLog::grow` says why).
    fn room_for(&self, needed: usize, limit: u64) -> usize {
        let target = needed
            .saturating_sub(1)
            .checked_next_power_of_two()
            .map_or(needed, |p| p.max(2) + 1);
        target
            .min(usize::try_from(limit).unwrap_or(usize::MAX))
            .max(needed)
    }
}

/// The head word's top bit: the ring is weighted.
const WEIGHTED: u32 = 1 << 31;

/// The most entries a ring holds: its head keeps the top bit for the flag.
pub(crate) const MAX_ENTRIES: usize = (WEIGHTED - 1) as usize;

/// A ring of `len` entries from the head on, wrapping. Unweighted, `words`
/// is the entries' times (its length is the capacity); weighted, the
/// times, then at the same indices each entry's running count of units,
/// then the running count before the oldest entry (`2 capacity + 1` words).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Ring {
    words: Box<[u64]>,
    /// The oldest entry's index, and [`WEIGHTED`].
    head: u32,
    len: u32,
}

impl Ring {
    /// A ring of room for `capacity` entries (at most [`MAX_ENTRIES`], at
    /// least the entries' number) holding `entries` (time, cost), oldest
    /// first: weighted iff one of them costs other than 1.
    pub(crate) fn with_entries(
        entries: impl ExactSizeIterator<Item = (u64, u64)> + Clone,
        capacity: usize,
    ) -> Ring {
        let capacity = capacity.clamp(entries.len(), MAX_ENTRIES);
        let len = entries.len() as u32;
        if entries.clone().all(|(_, cost)| cost == 1) {
            let mut words = Vec::with_capacity(capacity);
            words.extend(entries.map(|(t, _)| t));
            words.resize(capacity, 0);
            return Ring {
                words: words.into_boxed_slice(),
                head: 0,
                len,
            };
        }
        let mut words = vec![0; 2 * capacity + 1];
        let mut running = 0u64;
        for (i, (t, cost)) in entries.enumerate() {
            running = running.wrapping_add(cost);
            words[i] = t;
            words[capacity + i] = running;
        }
        Ring {
            words: words.into_boxed_slice(),
            head: WEIGHTED,
            len,
        }
    }

    /// Whether the ring holds its entries' running counts.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn weighted(&self) -> bool {
        self.head & WEIGHTED != 0
    }

    /// The ring index of the `i`-th oldest entry (`i < capacity`).
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        let at = (self.head & !WEIGHTED) as usize + i;
        let capacity = self.capacity();
        if at >= capacity { at - capacity } else { at }
    }

    /// The time of the `i`-th oldest entry (`i < len`).
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn time(&self, i: usize) -> u64 {
        self.words[self.slot(i)]
    }

    /// A weighted ring's running count up to the `i`-th oldest entry.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn running(&self, i: usize) -> u64 {
        self.words[self.capacity() + self.slot(i)]
    }

    /// A weighted ring's running count before its oldest entry.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn base(&self) -> u64 {
        self.words[self.words.len() - 1]
    }

    /// Bytes allocated.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.words.len() * std::mem::size_of::<u64>()
    }

    /// The entries as (time, cost), oldest first.
    pub(crate) fn entries(&self) -> impl ExactSizeIterator<Item = (u64, u64)> + Clone + '_ {
        (0..self.len()).map(move |i| {
            if !self.weighted() {
                return (self.time(i), 1);
            }
            let before = if i == 0 {
                self.base()
            } else {
                self.running(i - 1)
            };
            (self.time(i), self.running(i).wrapping_sub(before))
        })
    }

    /// The same entries in a weighted ring of the same capacity: the
    /// first entry of another cost than 1 arrives (so every entry held
    /// costs 1).
    #[cold]
    #[inline(never)]
    fn weigh(&mut self) {
        let capacity = self.capacity();
        let mut words = vec![0; 2 * capacity + 1];
        for i in 0..self.len() {
            words[i] = self.time(i);
            words[capacity + i] = i as u64 + 1;
        }
        self.words = words.into_boxed_slice();
        self.head = WEIGHTED;
    }
}

impl Log for Ring {
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn len(&self) -> usize {
        self.len as usize
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn units(&self) -> u64 {
        if !self.weighted() {
            return u64::from(self.len);
        }
        match self.len().checked_sub(1) {
            Some(newest) => self.running(newest).wrapping_sub(self.base()),
            None => 0,
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn capacity(&self) -> usize {
        if self.weighted() {
            self.words.len() / 2
        } else {
            self.words.len()
        }
    }

    /// Unweighted, the `k`-th entry; weighted, the first entry whose
    /// running count since the base reaches `k`, by binary search.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn unit(&self, k: u64) -> u64 {
        if !self.weighted() {
            return self.time(k as usize - 1);
        }
        let base = self.base();
        let (mut lo, mut hi) = (0, self.len() - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.running(mid).wrapping_sub(base) >= k {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.time(lo)
    }

    /// At the head, no wrapping to compute (the head is inside the ring
    /// whenever the log holds an entry).
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn front(&self) -> Option<u64> {
        (self.len > 0).then(|| self.words[(self.head & !WEIGHTED) as usize])
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn back(&self) -> Option<u64> {
        self.len().checked_sub(1).map(|i| self.time(i))
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn pop_front(&mut self) {
        if self.len > 0 {
            if self.weighted() {
                let last = self.words.len() - 1;
                self.words[last] = self.running(0);
            }
            self.head = self.slot(1) as u32 | (self.head & WEIGHTED);
            self.len -= 1;
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn push(&mut self, t: u64, cost: u64) {
        if cost != 1 && !self.weighted() {
            self.weigh();
        }
        let at = self.slot(self.len());
        self.words[at] = t;
        if self.weighted() {
            let before = match self.len().checked_sub(1) {
                Some(newest) => self.running(newest),
                None => self.base(),
            };
            let capacity = self.capacity();
            self.words[capacity + at] = before.wrapping_add(cost);
        }
        self.len += 1;
    }

    /// Capacity clamped to at most [`MAX_ENTRIES`]. A weighted ring whose
    /// entries all cost 1 again goes back to holding their times alone.
    fn resize(&mut self, capacity: usize) {
        *self = Ring::with_entries(self.entries(), capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::{Log, Ring};

    fn entries(log: &Ring) -> Vec<(u64, u64)> {
        log.entries().collect()
    }

    #[test]
    fn a_ring_keeps_order_across_wrapping_and_resizing() {
        let mut log = Ring::with_entries([(1, 1), (2, 1), (3, 1)].into_iter(), 3);
        assert_eq!(
            (log.front(), log.back(), log.capacity()),
            (Some(1), Some(3), 3)
        );
        log.pop_front();
        log.pop_front();
        log.push(4, 1);
        log.push(4, 1); // wraps: ring is [4, 4, 3] with head at 2
        assert_eq!(entries(&log), [(3, 1), (4, 1), (4, 1)]);
        assert_eq!((log.unit(3), log.units()), (4, 3));
        log.resize(5);
        log.push(5, 1);
        log.push(5, 1);
        assert_eq!(entries(&log).len(), 5);
        for _ in 0..6 {
            log.pop_front();
        }
        assert_eq!((log.len(), log.front(), log.back()), (0, None, None));
        log.resize(0);
        assert_eq!(log.capacity(), 0);
    }

    #[test]
    fn a_weighted_ring_finds_each_unit_s_entry_across_wrapping() {
        let mut log = Ring::with_entries([(1, 1), (2, 1), (3, 1)].into_iter(), 3);
        log.pop_front();
        log.push(4, 5); // weighs the ring, wrapping: [4, 2, 3], head at 1
        assert_eq!(entries(&log), [(2, 1), (3, 1), (4, 5)]);
        assert_eq!(log.units(), 7);
        let want = [2, 3, 4, 4, 4, 4, 4];
        for (k, &t) in (1..=7).zip(&want) {
            assert_eq!(log.unit(k), t, "unit {k}");
        }
        log.pop_front();
        log.pop_front();
        assert_eq!((log.units(), log.unit(1), log.unit(5)), (5, 4, 4));
        // Costs near the largest limit: the running counts wrap around u64.
        for step in 0..8u64 {
            log.push(10 + step, 1 << 61);
            log.pop_front();
            assert_eq!(log.units(), 1 << 61, "step {step}");
            assert_eq!((log.unit(1), log.unit(1 << 61)), (10 + step, 10 + step));
        }
        log.push(20, 3);
        assert_eq!(entries(&log), [(17, 1 << 61), (20, 3)]);
        assert_eq!((log.unit(1 << 61), log.unit((1 << 61) + 1)), (17, 20));
        log.pop_front();
        log.resize(2);
        assert_eq!(entries(&log), [(20, 3)]);
    }

    #[test]
    fn a_weighted_ring_of_unit_entries_goes_back_to_times_alone() {
        let mut log = Ring::with_entries([(1, 2), (2, 1)].into_iter(), 3);
        assert!(log.weighted());
        log.pop_front();
        log.resize(3);
        assert!(!log.weighted());
        assert_eq!((entries(&log), log.capacity()), (vec![(2, 1)], 3));
    }
}
