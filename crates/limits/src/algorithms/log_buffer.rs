//! The sliding log's per-key buffer: a ring of timestamps in one boxed
//! slice, with 32-bit head and length, so that it takes 24 bytes inline
//! (a `VecDeque` takes 32). Every key's state is as large as the largest
//! algorithm's, so this is what lets a token bucket's state be 32 bytes.
//!
//! A log holds at most L entries, and L entries of 8 bytes each must be
//! allocated: a log of 2^32 entries (32 GiB for one key) is past what this
//! buffer counts, as it is past what a machine allocates.

/// The admitted timestamps still in the window, oldest first.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SlidingLogState {
    ring: Box<[u64]>,
    head: u32,
    len: u32,
}

impl SlidingLogState {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entries the buffer can hold without growing.
    pub fn capacity(&self) -> usize {
        self.ring.len()
    }

    /// The ring index of the `i`-th oldest entry (`i < capacity`).
    fn slot(&self, i: usize) -> usize {
        let at = self.head as usize + i;
        if at >= self.ring.len() {
            at - self.ring.len()
        } else {
            at
        }
    }

    /// The `i`-th oldest entry.
    pub fn get(&self, i: usize) -> Option<u64> {
        (i < self.len()).then(|| self.ring[self.slot(i)])
    }

    /// The oldest entry: at the head, no wrapping to compute (the head is
    /// inside the ring whenever the log holds an entry).
    pub fn front(&self) -> Option<u64> {
        (self.len > 0).then(|| self.ring[self.head as usize])
    }

    /// The newest entry.
    pub fn back(&self) -> Option<u64> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Drops the oldest entry.
    pub fn pop_front(&mut self) {
        if self.len > 0 {
            self.head = self.slot(1) as u32;
            self.len -= 1;
        }
    }

    /// The entries, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len()).map(|i| self.ring[self.slot(i)])
    }

    /// Appends `n` copies of `t`; the buffer must have room for them.
    pub(crate) fn push_n(&mut self, t: u64, n: usize) {
        for _ in 0..n {
            let at = self.slot(self.len());
            self.ring[at] = t;
            self.len += 1;
        }
    }

    /// Moves the entries into a buffer of exactly `capacity` (at least the
    /// length, at most `u32::MAX`), oldest first at the start.
    pub(crate) fn resize(&mut self, capacity: usize) {
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

impl std::fmt::Debug for SlidingLogState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A log of these entries, oldest first, in a buffer of exactly their number.
impl FromIterator<u64> for SlidingLogState {
    fn from_iter<I: IntoIterator<Item = u64>>(entries: I) -> SlidingLogState {
        let ring: Box<[u64]> = entries.into_iter().collect();
        let len = u32::try_from(ring.len()).unwrap_or(u32::MAX);
        SlidingLogState { ring, head: 0, len }
    }
}

#[cfg(test)]
mod tests {
    use super::SlidingLogState;

    #[test]
    fn a_ring_keeps_order_across_wrapping_and_resizing() {
        let mut log: SlidingLogState = [1, 2, 3].into_iter().collect();
        assert_eq!(
            (log.front(), log.back(), log.capacity()),
            (Some(1), Some(3), 3)
        );
        log.pop_front();
        log.pop_front();
        log.push_n(4, 2); // wraps: ring is [4, 4, 3] with head at 2
        assert_eq!(log.iter().collect::<Vec<_>>(), [3, 4, 4]);
        assert_eq!(log.get(2), Some(4));
        assert_eq!(log.get(3), None);
        log.resize(5);
        log.push_n(5, 2);
        assert_eq!(log.iter().collect::<Vec<_>>(), [3, 4, 4, 5, 5]);
        for _ in 0..6 {
            log.pop_front();
        }
        assert!(log.is_empty());
        assert_eq!((log.front(), log.back()), (None, None));
        log.resize(0);
        assert_eq!(log.capacity(), 0);
    }
}
