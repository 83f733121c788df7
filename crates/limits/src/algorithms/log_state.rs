//! A sliding-log key's state: up to two entries inline, or a ring. Most keys
//! of most rules hold one or two entries in their window; inline they cost
//! no allocation (and no second cache line), and the state is 24 bytes
//! either way: the ring's pointer is the shapes' tag, its null the inline
//! shape, whose entries sit beside it.
//!
//! Inline, the oldest entry's time and one word: zero for no entry, the
//! entry's cost for one (any cost below 2^63), or, for two entries of cost
//! 1 (the usual request), the second's time with the top bit set (a time
//! below 2^63, as every clock's is until the year 2262). A third entry, or
//! a second that does not fit so, moves the log to a ring
//! (`SlidingLog::grow`, [`Log::push`]); a ring stays a ring (shrinking,
//! down to none allocated) until the key is dropped, so a ring's path never
//! changes shape. The algorithm asks for the ring once per decision
//! ([`SlidingLogState::ring_mut`]) and runs the ring's own code; any other
//! use reads through [`Log`] on the state, which chooses the shape at each
//! read.

use super::log_buffer::{Log, Ring};

/// The admitted decisions still in the window, oldest first: each its time
/// and its cost (the units it took).
#[derive(Clone, PartialEq, Eq)]
pub struct SlidingLogState(Shape);

#[derive(Clone, PartialEq, Eq)]
enum Shape {
    /// Up to two entries, no allocation: the oldest's time, and [`Word`].
    Inline { at: u64, word: Word },
    /// Any number of entries in a ring.
    Ring(Ring),
}

/// The inline shape's second word: no entry (0), one entry's cost, or a
/// second entry of cost 1 at the time below [`SECOND`] (the first then
/// costs 1 too).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Word(u64);

/// The inline word's flag for a second entry.
const SECOND: u64 = 1 << 63;

impl Word {
    const EMPTY: Word = Word(0);

    /// Entries held: 0, 1 or 2.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn len(self) -> usize {
        if self.0 & SECOND != 0 {
            2
        } else {
            usize::from(self.0 != 0)
        }
    }

    /// The second entry's time, if there is one.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn second(self) -> Option<u64> {
        (self.0 & SECOND != 0).then_some(self.0 & !SECOND)
    }

    /// Units held.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn units(self) -> u64 {
        if self.0 & SECOND != 0 { 2 } else { self.0 }
    }
}

/// The inline shape holding `entries` (time, cost; oldest first, none of
/// cost 0), if they fit it.
fn inline(entries: &[(u64, u64)]) -> Option<Shape> {
    let (at, word) = match *entries {
        [] => (0, Word::EMPTY),
        [(at, cost)] if cost < SECOND => (at, Word(cost)),
        [(at, 1), (second, 1)] if second < SECOND => (at, Word(second | SECOND)),
        _ => return None,
    };
    Some(Shape::Inline { at, word })
}

/// The shape holding `entries` (oldest first, none of cost 0): inline if
/// they fit, otherwise a ring of room for `capacity` (at least their
/// number).
fn shape_of(entries: &[(u64, u64)], capacity: usize) -> Shape {
    match inline(entries) {
        Some(shape) if capacity <= 2 => shape,
        _ => Shape::Ring(Ring::with_entries(entries.iter().copied(), capacity)),
    }
}

// The inline entries cost no byte more than the ring's pointer, head and
// length (`tests/it/slot_layout.rs` pins the slot).
const _: () = assert!(std::mem::size_of::<SlidingLogState>() == 24);

impl Default for SlidingLogState {
    fn default() -> SlidingLogState {
        SlidingLogState(Shape::Inline {
            at: 0,
            word: Word::EMPTY,
        })
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

    /// Entries the state can hold without allocating: 2 inline (of cost
    /// 1; one of any other), or the ring's size.
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
        match &self.0 {
            Shape::Inline { at, word } => Entries {
                inline: inline_entries(*at, *word),
                next: 0,
                end: word.len(),
                ring: None,
            },
            Shape::Ring(ring) => Entries {
                inline: [(0, 0); 2],
                next: 0,
                end: 0,
                ring: Some(ring.entries()),
            },
        }
    }

    /// The ring, if the log is one: what a decision asks once to run the
    /// ring's straight-line code.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    pub(crate) fn ring_mut(&mut self) -> Option<&mut Ring> {
        match &mut self.0 {
            Shape::Ring(ring) => Some(ring),
            Shape::Inline { .. } => None,
        }
    }

    /// [`ring_mut`](Self::ring_mut), to read.
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    pub(crate) fn ring(&self) -> Option<&Ring> {
        match &self.0 {
            Shape::Ring(ring) => Some(ring),
            Shape::Inline { .. } => None,
        }
    }

    /// Takes up to `units` from the entries at time `at` (a request's own,
    /// settled): an entry left with none is dropped. The ring stays a ring
    /// of its capacity.
    pub(crate) fn take_units_at(&mut self, at: u64, units: u64) {
        match &mut self.0 {
            Shape::Inline { at: first, word } => {
                let mut entries = inline_entries(*first, *word);
                let mut left = units;
                let mut kept = 0;
                for i in 0..word.len() {
                    let (t, cost) = entries[i];
                    let take = if t == at { left.min(cost) } else { 0 };
                    left -= take;
                    if cost > take {
                        entries[kept] = (t, cost - take);
                        kept += 1;
                    }
                }
                // Fewer units than an inline log held fit inline again.
                if let Some(shape) = inline(&entries[..kept]) {
                    self.0 = shape;
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

    /// An inline log with `(t, cost)` appended, in a ring of exactly its
    /// entries: the entry does not fit inline.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, t: u64, cost: u64) {
        let mut entries = [(t, cost); 3];
        let held = self.len();
        for (entry, e) in entries.iter_mut().zip(self.iter()) {
            *entry = e;
        }
        let entries = &entries[..=held];
        self.0 = Shape::Ring(Ring::with_entries(entries.iter().copied(), entries.len()));
    }

    /// Bytes allocated for the entries (none inline).
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.0 {
            Shape::Inline { .. } => 0,
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
            Shape::Inline { word, .. } => word.len(),
            Shape::Ring(ring) => ring.len(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn units(&self) -> u64 {
        match &self.0 {
            Shape::Inline { word, .. } => word.units(),
            Shape::Ring(ring) => ring.units(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn capacity(&self) -> usize {
        match &self.0 {
            Shape::Inline { .. } => 2,
            Shape::Ring(ring) => ring.capacity(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn unit(&self, k: u64) -> u64 {
        match &self.0 {
            // The second entry's only unit is the second; any other is
            // the first entry's.
            Shape::Inline { at, word } => match word.second() {
                Some(second) if k == 2 => second,
                _ => *at,
            },
            Shape::Ring(ring) => ring.unit(k),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn front(&self) -> Option<u64> {
        match &self.0 {
            Shape::Inline { at, word } => (word.len() != 0).then_some(*at),
            Shape::Ring(ring) => ring.front(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn back(&self) -> Option<u64> {
        match &self.0 {
            Shape::Inline { at, word } => match word.len() {
                0 => None,
                1 => Some(*at),
                _ => word.second(),
            },
            Shape::Ring(ring) => ring.back(),
        }
    }

    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn pop_front(&mut self) {
        match &mut self.0 {
            Shape::Inline { at, word } => {
                (*at, *word) = match word.second() {
                    Some(second) => (second, Word(1)),
                    None => (0, Word::EMPTY),
                }
            }
            Shape::Ring(ring) => ring.pop_front(),
        }
    }

    /// Inline, room for a second entry is room for one of cost 1 at a time
    /// below 2^63 beside a first of cost 1: any other second entry moves
    /// the log to a ring of exactly the two (the rare case; the next
    /// growth is then the ring's).
    // Written out: the log's loops run through it (as a hint, `check` cost more).
    #[inline(always)]
    fn push(&mut self, t: u64, cost: u64) {
        match &mut self.0 {
            Shape::Inline { at, word } => match (word.len(), *word) {
                (0, _) if cost < SECOND => (*at, *word) = (t, Word(cost)),
                (1, Word(1)) if cost == 1 && t < SECOND => *word = Word(t | SECOND),
                _ => self.spill(t, cost),
            },
            Shape::Ring(ring) => ring.push(t, cost),
        }
    }

    /// Inline for a capacity of 2 or less when the entries fit there;
    /// otherwise a ring of `capacity` (at most `u32::MAX / 2`) holding the
    /// entries from its start.
    fn resize(&mut self, capacity: usize) {
        if let Shape::Ring(ring) = &mut self.0
            && (capacity > 2 || ring.len() > 2)
        {
            return ring.resize(capacity);
        }
        // At most two entries: a key's third entry's ring made at once
        // (the one allocation is most of what this costs), or a ring
        // shrunk back inline.
        let mut entries = [(0, 0); 2];
        let held = self.len();
        for (entry, e) in entries.iter_mut().zip(self.iter()) {
            *entry = e;
        }
        self.0 = shape_of(&entries[..held], capacity.max(held));
    }
}

/// The inline shape's entries (time, cost), oldest first; the first
/// `word.len()` are held.
fn inline_entries(at: u64, word: Word) -> [(u64, u64); 2] {
    match word.second() {
        Some(second) => [(at, 1), (second, 1)],
        None => [(at, word.0), (0, 0)],
    }
}

/// [`SlidingLogState::iter`]: the inline entries, or the ring's.
#[derive(Clone)]
struct Entries<I> {
    inline: [(u64, u64); 2],
    next: usize,
    end: usize,
    ring: Option<I>,
}

impl<I: ExactSizeIterator<Item = (u64, u64)>> Iterator for Entries<I> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if let Some(ring) = &mut self.ring {
            return ring.next();
        }
        let entry = self.inline[..self.end].get(self.next).copied();
        self.next += 1;
        entry
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.ring {
            Some(ring) => ring.len(),
            None => self.end.saturating_sub(self.next),
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

/// A log of entries of cost 1 at these times, oldest first: inline for up
/// to two, otherwise in a ring of exactly their number.
impl FromIterator<u64> for SlidingLogState {
    fn from_iter<I: IntoIterator<Item = u64>>(times: I) -> SlidingLogState {
        times.into_iter().map(|t| (t, 1)).collect()
    }
}

/// A log of these entries (time, cost), oldest first: inline where they
/// fit (none, one, or two of cost 1), otherwise in a ring of exactly their
/// number. An entry of cost 0 holds nothing and is left out.
impl FromIterator<(u64, u64)> for SlidingLogState {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(entries: I) -> SlidingLogState {
        let entries: Vec<(u64, u64)> = entries.into_iter().filter(|e| e.1 != 0).collect();
        SlidingLogState(shape_of(&entries, entries.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::{Log, SECOND, SlidingLogState};
    use proptest::prelude::*;

    /// What a log holds, as the plainest list.
    fn model_units(model: &[(u64, u64)]) -> u64 {
        model.iter().map(|e| e.1).sum()
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// An entry `gap` after the newest, of `cost` (at least 1).
        Push {
            gap: u64,
            cost: u64,
        },
        PopFront,
        /// `units` given back at the time of the `nth` entry (mod len).
        Take {
            nth: usize,
            units: u64,
        },
        /// Room for `extra` more than held.
        Resize {
            extra: usize,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        let gap = prop_oneof![4 => 0..3u64, 1 => Just(SECOND / 2), 1 => Just(SECOND)];
        let cost = prop_oneof![8 => Just(1u64), 2 => 2..4u64, 1 => Just(SECOND)];
        prop_oneof![
            6 => (gap, cost).prop_map(|(gap, cost)| Op::Push { gap, cost }),
            2 => Just(Op::PopFront),
            1 => (0..4usize, 1..3u64).prop_map(|(nth, units)| Op::Take { nth, units }),
            1 => (0..4usize).prop_map(|extra| Op::Resize { extra }),
        ]
    }

    proptest! {
        /// Every operation on either shape (inline with none, one or two
        /// entries, or a ring, and the moves between them: a third entry,
        /// a second of another cost or past 2^63, a ring resized down to
        /// two) leaves the entries the list holds, read every way.
        #[test]
        fn the_state_holds_what_a_list_holds(ops in proptest::collection::vec(op(), 1..60)) {
            let mut log = SlidingLogState::default();
            let mut model: Vec<(u64, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Push { gap, cost } => {
                        // Units held stay far below 2^64, as a limit's do.
                        if model_units(&model).saturating_add(cost) > SECOND + 64 {
                            continue;
                        }
                        let t = model.last().map_or(0, |e| e.0).saturating_add(gap);
                        if Log::len(&log) + 1 > Log::capacity(&log) {
                            let room = Log::room_for(&log, Log::len(&log) + 1, u64::MAX);
                            log.resize(room);
                        }
                        log.push(t, cost);
                        model.push((t, cost));
                    }
                    Op::PopFront => {
                        if !model.is_empty() {
                            Log::pop_front(&mut log);
                            model.remove(0);
                        }
                    }
                    Op::Take { nth, units } => {
                        if let Some(&(at, _)) = model.get(nth % model.len().max(1)) {
                            log.take_units_at(at, units);
                            let mut left = units;
                            for e in model.iter_mut().filter(|e| e.0 == at) {
                                let take = left.min(e.1);
                                left -= take;
                                e.1 -= take;
                            }
                            model.retain(|e| e.1 != 0);
                        }
                    }
                    Op::Resize { extra } => log.resize(model.len() + extra),
                }
                prop_assert_eq!(log.iter().collect::<Vec<_>>(), model.clone());
                prop_assert_eq!(log.iter().len(), model.len());
                prop_assert_eq!(Log::len(&log), model.len());
                prop_assert_eq!(Log::units(&log), model_units(&model));
                prop_assert_eq!(Log::front(&log), model.first().map(|e| e.0));
                prop_assert_eq!(Log::back(&log), model.last().map(|e| e.0));
                prop_assert!(Log::capacity(&log) >= model.len());
                // The unit at each entry's first and last unit.
                let mut before = 0u64;
                for &(t, cost) in &model {
                    prop_assert_eq!(Log::unit(&log, before + 1), t);
                    prop_assert_eq!(Log::unit(&log, before + cost), t);
                    before += cost;
                }
                // Two entries of cost 1 (times below 2^63) or one below
                // 2^63 units are held without a ring, once built so.
                let fits = match *model {
                    [] => true,
                    [(_, cost)] => cost < SECOND,
                    [(_, 1), (t, 1)] => t < SECOND,
                    _ => false,
                };
                let rebuilt: SlidingLogState = model.iter().copied().collect();
                prop_assert_eq!(rebuilt.heap_bytes() == 0, fits);
            }
        }
    }
}
