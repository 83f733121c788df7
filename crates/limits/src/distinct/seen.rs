//! The values a key holds: each value's hash and the last time it was
//! asked for, oldest first, at most the rule's N of them.

/// The values one key holds (see [`Distinct`](super::Distinct)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// (value hash, last asked for), by that time, oldest first.
    values: Vec<(u64, u64)>,
    /// The latest time decided at: a key's time never runs backwards.
    latest: u64,
}

impl Seen {
    /// Values held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Forgets the values last asked for at or before `now - window`, and
    /// returns the time to decide at: `now`, or the key's latest if later.
    pub(super) fn forget_before(&mut self, now: u64, window: u64) -> u64 {
        let now = now.max(self.latest);
        self.latest = now;
        let gone = self
            .values
            .partition_point(|&(_, at)| at.saturating_add(window) <= now);
        self.values.drain(..gone);
        now
    }

    pub(super) fn find(&self, value: u64) -> Option<usize> {
        self.values.iter().position(|&(v, _)| v == value)
    }

    /// Asked for again at `now`: the newest.
    pub(super) fn refresh(&mut self, i: usize, now: u64) {
        let (value, _) = self.values.remove(i);
        self.values.push((value, now));
    }

    pub(super) fn hold(&mut self, value: u64, now: u64) {
        self.values.push((value, now));
    }

    /// When the value asked for longest ago was last asked for.
    pub(super) fn oldest(&self) -> Option<u64> {
        self.values.first().map(|&(_, at)| at)
    }

    /// When the latest value was asked for.
    pub(super) fn newest(&self) -> Option<u64> {
        self.values.last().map(|&(_, at)| at)
    }

    /// Bytes held on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        self.values.capacity() * size_of::<(u64, u64)>()
    }
}
