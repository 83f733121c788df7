//! The sliding log's ring: timestamps in one boxed slice, with 32-bit head
//! and length, so that it takes 24 bytes inline (a `VecDeque` takes 32).
//! Every key's state is as large as the largest algorithm's, so this is what
//! lets a token bucket's state be 32 bytes.
//!
//! [`Log`] is what the algorithm reads and writes of a log: implemented by
//! the ring itself and by [`SlidingLogState`](super::SlidingLogState), which
//! holds one entry inline or a ring. The algorithm's code is generic over
//! it, so that a decision chooses the state's shape once and then runs
//! straight-line code for that shape (issue 9: a choice at every read cost
//! +17% instructions per check).
//!
//! A log holds at most L entries, and L entries of 8 bytes each must be
//! allocated: a log of 2^32 entries (32 GiB for one key) is past what this
//! buffer counts, as it is past what a machine allocates.

/// A log's entries as the algorithm uses them, oldest first.
pub(crate) trait Log {
    /// Entries held.
    fn len(&self) -> usize;
    /// Entries held without growing.
    fn capacity(&self) -> usize;
    /// The `i`-th oldest entry.
    fn get(&self, i: usize) -> Option<u64>;
    /// The oldest entry.
    fn front(&self) -> Option<u64>;
    /// The newest entry.
    fn back(&self) -> Option<u64>;
    /// Drops the oldest entry.
    fn pop_front(&mut self);
    /// Appends `n` copies of `t`; there must be room for them.
    fn push_n(&mut self, t: u64, n: usize);
    /// Moves the entries into room for exactly `capacity` (at least the
    /// length), oldest first.
    fn resize(&mut self, capacity: usize);

    /// Whether the log holds less than a quarter of a room of more than 16
    /// entries: `advance` then gives memory back.
    #[inline(always)]
    fn sparse(&self) -> bool {
        self.capacity() > 16 && self.len() < self.capacity() / 4
    }

    /// The capacity to grow to for `needed` entries (more than the
    /// capacity) under a limit of `limit`: by default at least double, to
    /// `2^k + 1` entries, never past L (`SlidingLog::grow` says why); a log
    /// whose sizes are its own (the keyed arena's 2, 3, 4, 6, 8, 12, ...,
    /// `keyed/log_view.rs`) says its own.
    fn room_for(&self, needed: usize, limit: u64) -> usize {
        let target = needed
            .max(self.capacity() * 2)
            .saturating_sub(1)
            .checked_next_power_of_two()
            .map_or(needed, |p| p.max(2) + 1);
        target.min(limit as usize).max(needed)
    }
}

/// A ring of `len` entries from `head` on, wrapping.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Ring {
    ring: Box<[u64]>,
    head: u32,
    len: u32,
}

impl Ring {
    /// A ring holding exactly these entries, oldest first.
    pub(crate) fn of(ring: Box<[u64]>) -> Ring {
        let len = ring.len();
        Ring::holding(ring, len)
    }

    /// A ring whose first `len` entries (at most its size) are held,
    /// oldest first.
    pub(crate) fn holding(ring: Box<[u64]>, len: usize) -> Ring {
        let len = u32::try_from(len.min(ring.len())).unwrap_or(u32::MAX);
        Ring { ring, head: 0, len }
    }

    /// The ring index of the `i`-th oldest entry (`i < capacity`).
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        let at = self.head as usize + i;
        if at >= self.ring.len() {
            at - self.ring.len()
        } else {
            at
        }
    }
}

impl Log for Ring {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len as usize
    }

    #[inline(always)]
    fn capacity(&self) -> usize {
        self.ring.len()
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Option<u64> {
        (i < self.len()).then(|| self.ring[self.slot(i)])
    }

    /// At the head, no wrapping to compute (the head is inside the ring
    /// whenever the log holds an entry).
    #[inline(always)]
    fn front(&self) -> Option<u64> {
        (self.len > 0).then(|| self.ring[self.head as usize])
    }

    #[inline(always)]
    fn back(&self) -> Option<u64> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    #[inline(always)]
    fn pop_front(&mut self) {
        if self.len > 0 {
            self.head = self.slot(1) as u32;
            self.len -= 1;
        }
    }

    #[inline(always)]
    fn push_n(&mut self, t: u64, n: usize) {
        for _ in 0..n {
            let at = self.slot(self.len());
            self.ring[at] = t;
            self.len += 1;
        }
    }

    /// Capacity clamped to at most `u32::MAX`.
    fn resize(&mut self, capacity: usize) {
        let capacity = capacity.clamp(self.len(), u32::MAX as usize);
        // The entries are at most two runs of the old ring: from the head to
        // its end, then from its start. Copied as two slices, not entry by
        // entry, and only the free tail is zeroed (issue 9: growing a new
        // key's log was the sliding log's costliest step).
        let (head, len) = (self.head as usize, self.len());
        let first = len.min(self.ring.len() - head);
        let mut ring = Vec::with_capacity(capacity);
        ring.extend_from_slice(&self.ring[head..head + first]);
        ring.extend_from_slice(&self.ring[..len - first]);
        ring.resize(capacity, 0);
        self.ring = ring.into_boxed_slice();
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::{Log, Ring};

    #[test]
    fn a_ring_keeps_order_across_wrapping_and_resizing() {
        let mut log = Ring::of([1, 2, 3].into());
        let entries = |log: &Ring| {
            (0..log.len())
                .filter_map(|i| log.get(i))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            (log.front(), log.back(), log.capacity()),
            (Some(1), Some(3), 3)
        );
        log.pop_front();
        log.pop_front();
        log.push_n(4, 2); // wraps: ring is [4, 4, 3] with head at 2
        assert_eq!(entries(&log), [3, 4, 4]);
        assert_eq!(log.get(2), Some(4));
        assert_eq!(log.get(3), None);
        log.resize(5);
        log.push_n(5, 2);
        assert_eq!(entries(&log), [3, 4, 4, 5, 5]);
        for _ in 0..6 {
            log.pop_front();
        }
        assert_eq!((log.len(), log.front(), log.back()), (0, None, None));
        log.resize(0);
        assert_eq!(log.capacity(), 0);
    }
}
