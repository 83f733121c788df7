//! A sliding-log key's state: its one entry inline, or a ring (issue 9:
//! memory at 1M keys). Most keys of most rules hold one entry in their
//! window; inline it costs no allocation (a ring of 3 took a 32-byte malloc
//! chunk), and the state is 24 bytes either way: the ring's pointer is the
//! shapes' tag, its null the inline shape, whose entry sits beside it.
//!
//! A second entry moves the log to a ring of 3 (`SlidingLog::grow`); a ring
//! stays a ring (shrinking as before, down to none allocated) until the key
//! is dropped, so a ring's path never changes shape. The algorithm asks for the ring once
//! per decision ([`SlidingLogState::ring_mut`]) and runs the ring's own
//! code; any other use reads through [`Log`] on the state, which chooses
//! the shape at each read.

use super::log_buffer::{Log, Ring};

/// The admitted timestamps still in the window, oldest first.
#[derive(Clone, PartialEq, Eq)]
pub struct SlidingLogState(Shape);

#[derive(Clone, PartialEq, Eq)]
enum Shape {
    /// No entry or this one, no allocation.
    One(Option<u64>),
    /// Any number of entries in a ring.
    Ring(Ring),
}

// The inline entry costs no byte more than the ring's pointer, head and
// length (`tests/it/slot_layout.rs` pins the slot).
const _: () = assert!(std::mem::size_of::<SlidingLogState>() == 24);

impl Default for SlidingLogState {
    fn default() -> SlidingLogState {
        SlidingLogState(Shape::One(None))
    }
}

impl SlidingLogState {
    /// Entries held.
    #[inline(always)]
    pub fn len(&self) -> usize {
        Log::len(self)
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries the state can hold without allocating: 1 inline, or the
    /// ring's size.
    pub fn capacity(&self) -> usize {
        Log::capacity(self)
    }

    /// The `i`-th oldest entry.
    pub fn get(&self, i: usize) -> Option<u64> {
        Log::get(self, i)
    }

    /// The oldest entry.
    pub fn front(&self) -> Option<u64> {
        Log::front(self)
    }

    /// The newest entry.
    #[inline(always)]
    pub fn back(&self) -> Option<u64> {
        Log::back(self)
    }

    /// Drops the oldest entry.
    pub fn pop_front(&mut self) {
        Log::pop_front(self)
    }

    /// The entries, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The ring, if the log is one: what a decision asks once to run the
    /// ring's straight-line code.
    #[inline(always)]
    pub(crate) fn ring_mut(&mut self) -> Option<&mut Ring> {
        match &mut self.0 {
            Shape::Ring(ring) => Some(ring),
            Shape::One(_) => None,
        }
    }

    /// [`ring_mut`](Self::ring_mut), to read.
    #[inline(always)]
    pub(crate) fn ring(&self) -> Option<&Ring> {
        match &self.0 {
            Shape::Ring(ring) => Some(ring),
            Shape::One(_) => None,
        }
    }

    /// Bytes allocated for the entries (none inline).
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.0 {
            Shape::One(_) => 0,
            Shape::Ring(ring) => ring.capacity() * std::mem::size_of::<u64>(),
        }
    }
}

/// Each read chooses the shape: for the paths that do not choose it once
/// (several rates, the sweep, export), and the inline shape's own path,
/// where it is always the same choice.
impl Log for SlidingLogState {
    #[inline(always)]
    fn len(&self) -> usize {
        match &self.0 {
            Shape::One(entry) => usize::from(entry.is_some()),
            Shape::Ring(ring) => ring.len(),
        }
    }

    #[inline(always)]
    fn capacity(&self) -> usize {
        match &self.0 {
            Shape::One(_) => 1,
            Shape::Ring(ring) => ring.capacity(),
        }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Option<u64> {
        match &self.0 {
            Shape::One(entry) => entry.filter(|_| i == 0),
            Shape::Ring(ring) => ring.get(i),
        }
    }

    #[inline(always)]
    fn front(&self) -> Option<u64> {
        match &self.0 {
            Shape::One(entry) => *entry,
            Shape::Ring(ring) => ring.front(),
        }
    }

    #[inline(always)]
    fn back(&self) -> Option<u64> {
        match &self.0 {
            Shape::One(entry) => *entry,
            Shape::Ring(ring) => ring.back(),
        }
    }

    #[inline(always)]
    fn pop_front(&mut self) {
        match &mut self.0 {
            Shape::One(entry) => *entry = None,
            Shape::Ring(ring) => ring.pop_front(),
        }
    }

    #[inline(always)]
    fn push_n(&mut self, t: u64, n: usize) {
        match &mut self.0 {
            // Room for at most one: `n` is 0, or 1 into an empty log.
            Shape::One(entry) => {
                if n > 0 {
                    *entry = Some(t);
                }
            }
            Shape::Ring(ring) => ring.push_n(t, n),
        }
    }

    /// Inline for a capacity of 1 or less; otherwise a ring of `capacity`
    /// (at most `u32::MAX`) holding the entries from its start.
    fn resize(&mut self, capacity: usize) {
        let len = self.len();
        if capacity.max(len) <= 1 {
            self.0 = Shape::One(self.front());
            return;
        }
        match &mut self.0 {
            Shape::Ring(ring) => ring.resize(capacity),
            // A key's second entry: the ring made at once, its free tail
            // zeroed (the one allocation is most of what this costs).
            Shape::One(entry) => {
                let mut ring = Vec::with_capacity(capacity);
                ring.extend(*entry);
                ring.resize(capacity, 0);
                self.0 = Shape::Ring(Ring::holding(ring.into_boxed_slice(), len));
            }
        }
    }
}

impl std::fmt::Debug for SlidingLogState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A log of these entries, oldest first: inline for none or one, otherwise
/// in a ring of exactly their number.
impl FromIterator<u64> for SlidingLogState {
    fn from_iter<I: IntoIterator<Item = u64>>(entries: I) -> SlidingLogState {
        let ring: Box<[u64]> = entries.into_iter().collect();
        SlidingLogState(match *ring {
            [] => Shape::One(None),
            [entry] => Shape::One(Some(entry)),
            _ => Shape::Ring(Ring::of(ring)),
        })
    }
}
