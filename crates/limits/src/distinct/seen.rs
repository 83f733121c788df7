//! The values a key holds: exactly (each value's hash and the last time it
//! was asked for, oldest first, at most the rule's N), or, past the rule's
//! threshold, as HyperLogLogs of the sub-windows the window is cut into,
//! beside the last values exactly.

use super::sketches::Sketches;

/// The values one key holds (see [`Distinct`](super::Distinct)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    held: Held,
    /// The latest time decided at: a key's time never runs backwards.
    latest: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// (value hash, last asked for), by that time, oldest first.
    Exact(Vec<(u64, u64)>),
    /// One sketch per sub-window still in the window (their sub-windows
    /// numbered time / sub-window); and the values admitted last, exactly,
    /// as `Exact` holds them (at most the rule's `from`): the repeats known
    /// to be free.
    Sketched {
        sketches: Sketches,
        recent: Vec<(u64, u64)>,
    },
}

impl Default for Held {
    fn default() -> Held {
        Held::Exact(Vec::new())
    }
}

impl Seen {
    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        match &self.held {
            Held::Exact(values) => values.is_empty(),
            Held::Sketched { sketches, .. } => sketches.is_empty(),
        }
    }

    /// Whether the values are kept as sketches.
    pub fn is_sketched(&self) -> bool {
        matches!(self.held, Held::Sketched { .. })
    }

    /// The time to decide at: `now`, or the key's latest if later.
    pub(super) fn advance(&mut self, now: u64) -> u64 {
        self.latest = self.latest.max(now);
        self.latest
    }

    pub(super) fn held(&mut self) -> &mut Held {
        &mut self.held
    }

    /// Bytes held on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        match &self.held {
            Held::Exact(values) => values.capacity() * size_of::<(u64, u64)>(),
            Held::Sketched { sketches, recent } => {
                recent.capacity() * size_of::<(u64, u64)>() + sketches.bytes()
            }
        }
    }
}
