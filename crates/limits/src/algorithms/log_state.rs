//! A sliding-log key's state: its one entry inline, or a ring. Most keys of
//! most rules hold one entry in their window; inline it costs no
//! allocation, and the state is 24 bytes either way: the ring's pointer is
//! the shapes' tag, its null the inline shape, whose entry (its time and
//! its cost) sits beside it.
//!
//! A second entry moves the log to a ring of 3 (`SlidingLog::grow`); a ring
//! stays a ring (shrinking, down to none allocated) until the key
//! is dropped, so a ring's path never changes shape. The algorithm asks for
//! the ring once per decision ([`SlidingLogState::ring_mut`]) and runs the
//! ring's own code; any other use reads through [`Log`] on the state, which
//! chooses the shape at each read.

use super::log_buffer::{Log, Ring};

/// The admitted decisions still in the window, oldest first: each its time
/// and its cost (the units it took).
#[derive(Clone, PartialEq, Eq)]
pub struct SlidingLogState(Shape);

#[derive(Clone, PartialEq, Eq)]
enum Shape {
    /// No entry (a cost of 0) or this one, no allocation.
    One { at: u64, cost: u64 },
    /// Any number of entries in a ring.
    Ring(Ring),
}

// The inline entry costs no byte more than the ring's pointer, head and
// length (`tests/it/slot_layout.rs` pins the slot).
const _: () = assert!(std::mem::size_of::<SlidingLogState>() == 24);

impl Default for SlidingLogState {
    fn default() -> SlidingLogState {
        SlidingLogState(Shape::One { at: 0, cost: 0 })
    }
}

impl SlidingLogState {
    /// Entries held: one per admitted decision still in the window.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    pub fn len(&self) -> usize {
        Log::len(self)
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Units held: the sum of the entries' costs, what the limit counts.
    pub fn units(&self) -> u64 {
        Log::units(self)
    }

    /// Entries the state can hold without allocating: 1 inline, or the
    /// ring's size.
    pub fn capacity(&self) -> usize {
        Log::capacity(self)
    }

    /// The `i`-th oldest entry, as (time, cost).
    pub fn get(&self, i: usize) -> Option<(u64, u64)> {
        self.iter().nth(i)
    }

    /// The oldest entry's time.
    pub fn front(&self) -> Option<u64> {
        Log::front(self)
    }

    /// The newest entry's time.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    pub fn back(&self) -> Option<u64> {
        Log::back(self)
    }

    /// Drops the oldest entry.
    pub fn pop_front(&mut self) {
        Log::pop_front(self)
    }

    /// The entries as (time, cost), oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, u64)> + Clone + '_ {
        let (one, ring) = match &self.0 {
            Shape::One { at, cost } => (Some((*at, *cost)).filter(|_| *cost != 0), None),
            Shape::Ring(ring) => (None, Some(ring.entries())),
        };
        Entries { one, ring }
    }

    /// The ring, if the log is one: what a decision asks once to run the
    /// ring's straight-line code.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    pub(crate) fn ring_mut(&mut self) -> Option<&mut Ring> {
        match &mut self.0 {
            Shape::Ring(ring) => Some(ring),
            Shape::One { .. } => None,
        }
    }

    /// [`ring_mut`](Self::ring_mut), to read.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    pub(crate) fn ring(&self) -> Option<&Ring> {
        match &self.0 {
            Shape::Ring(ring) => Some(ring),
            Shape::One { .. } => None,
        }
    }

    /// Takes up to `units` from the entries at time `at` (a request's own,
    /// settled): an entry left with none is dropped. The ring stays a ring
    /// of its capacity.
    pub(crate) fn take_units_at(&mut self, at: u64, units: u64) {
        match &mut self.0 {
            Shape::One { at: time, cost } => {
                if *time == at {
                    *cost -= units.min(*cost);
                }
            }
            Shape::Ring(ring) => {
                if !ring.entries().any(|(t, _)| t == at) {
                    return;
                }
                let mut left = units;
                let entries: Vec<(u64, u64)> = ring
                    .entries()
                    .map(|(t, cost)| {
                        let take = if t == at { left.min(cost) } else { 0 };
                        left -= take;
                        (t, cost - take)
                    })
                    .filter(|&(_, cost)| cost != 0)
                    .collect();
                *ring = Ring::with_entries(entries.iter().copied(), ring.capacity());
            }
        }
    }

    /// Bytes allocated for the entries (none inline).
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.0 {
            Shape::One { .. } => 0,
            Shape::Ring(ring) => ring.heap_bytes(),
        }
    }
}

/// Each read chooses the shape: for the paths that do not choose it once
/// (several rates, the sweep, export), and the inline shape's own path,
/// where it is always the same choice.
impl Log for SlidingLogState {
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn len(&self) -> usize {
        match &self.0 {
            Shape::One { cost, .. } => usize::from(*cost != 0),
            Shape::Ring(ring) => ring.len(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn units(&self) -> u64 {
        match &self.0 {
            Shape::One { cost, .. } => *cost,
            Shape::Ring(ring) => ring.units(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn capacity(&self) -> usize {
        match &self.0 {
            Shape::One { .. } => 1,
            Shape::Ring(ring) => ring.capacity(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn unit(&self, k: u64) -> u64 {
        match &self.0 {
            Shape::One { at, .. } => *at,
            Shape::Ring(ring) => ring.unit(k),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn front(&self) -> Option<u64> {
        match &self.0 {
            Shape::One { at, cost } => (*cost != 0).then_some(*at),
            Shape::Ring(ring) => ring.front(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn back(&self) -> Option<u64> {
        match &self.0 {
            Shape::One { at, cost } => (*cost != 0).then_some(*at),
            Shape::Ring(ring) => ring.back(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn pop_front(&mut self) {
        match &mut self.0 {
            Shape::One { at, cost } => (*at, *cost) = (0, 0),
            Shape::Ring(ring) => ring.pop_front(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn push(&mut self, t: u64, cost: u64) {
        match &mut self.0 {
            // Room for one: the log is empty.
            Shape::One { at, cost: held } => (*at, *held) = (t, cost),
            Shape::Ring(ring) => ring.push(t, cost),
        }
    }

    /// Inline for a capacity of 1 or less; otherwise a ring of `capacity`
    /// (at most `u32::MAX / 2`) holding the entries from its start.
    fn resize(&mut self, capacity: usize) {
        if capacity.max(self.len()) <= 1 {
            let (at, cost) = self.iter().next().unwrap_or((0, 0));
            self.0 = Shape::One { at, cost };
            return;
        }
        match &mut self.0 {
            Shape::Ring(ring) => ring.resize(capacity),
            // A key's second entry: the ring made at once (the one
            // allocation is most of what this costs).
            Shape::One { .. } => self.0 = Shape::Ring(Ring::with_entries(self.iter(), capacity)),
        }
    }
}

/// [`SlidingLogState::iter`]: the inline entry, or the ring's.
#[derive(Clone)]
struct Entries<I> {
    one: Option<(u64, u64)>,
    ring: Option<I>,
}

impl<I: ExactSizeIterator<Item = (u64, u64)>> Iterator for Entries<I> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        match &mut self.ring {
            Some(ring) => ring.next(),
            None => self.one.take(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.ring {
            Some(ring) => ring.len(),
            None => usize::from(self.one.is_some()),
        };
        (n, Some(n))
    }
}

impl<I: ExactSizeIterator<Item = (u64, u64)>> ExactSizeIterator for Entries<I> {}

impl std::fmt::Debug for SlidingLogState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A log of entries of cost 1 at these times, oldest first: inline for
/// none or one, otherwise in a ring of exactly their number.
impl FromIterator<u64> for SlidingLogState {
    fn from_iter<I: IntoIterator<Item = u64>>(times: I) -> SlidingLogState {
        times.into_iter().map(|t| (t, 1)).collect()
    }
}

/// A log of these entries (time, cost), oldest first: inline for none or
/// one, otherwise in a ring of exactly their number. An entry of cost 0
/// holds nothing and is left out.
impl FromIterator<(u64, u64)> for SlidingLogState {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(entries: I) -> SlidingLogState {
        let entries: Vec<(u64, u64)> = entries.into_iter().filter(|e| e.1 != 0).collect();
        SlidingLogState(match *entries {
            [] => Shape::One { at: 0, cost: 0 },
            [(at, cost)] => Shape::One { at, cost },
            _ => Shape::Ring(Ring::with_entries(entries.iter().copied(), entries.len())),
        })
    }
}
