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

    /// The values held exactly, as numbers: the key's latest time, then
    /// each value's hash and last use, oldest first. What a store keeping a
    /// key's values outside the process writes; `None` for sketches.
    ///
    /// ```
    /// use limits::{Distinct, Mode, Seen};
    /// use std::time::Duration;
    ///
    /// let rule = Distinct::new(2, Duration::from_nanos(100)).unwrap();
    /// let mut seen = Seen::default();
    /// rule.decide(&mut seen, 7, 10, Mode::Record);
    /// rule.decide(&mut seen, 8, 20, Mode::Record);
    /// let numbers = seen.to_numbers().unwrap();
    /// assert_eq!(numbers, [20, 7, 10, 8, 20]);
    /// assert_eq!(Seen::from_numbers(&numbers), Some(seen));
    /// assert_eq!(Seen::from_numbers(&[20, 7]), None, "a value without its time");
    /// ```
    pub fn to_numbers(&self) -> Option<Vec<u64>> {
        let Held::Exact(values) = &self.held else {
            return None;
        };
        let mut numbers = Vec::with_capacity(1 + 2 * values.len());
        numbers.push(self.latest);
        numbers.extend(values.iter().flat_map(|&(value, at)| [value, at]));
        Some(numbers)
    }

    /// The values [`to_numbers`](Seen::to_numbers) wrote; `None` for
    /// numbers it cannot have written (a value without its time, times
    /// out of order or after the latest).
    pub fn from_numbers(numbers: &[u64]) -> Option<Seen> {
        let (&latest, pairs) = numbers.split_first()?;
        if pairs.len() % 2 != 0 {
            return None;
        }
        let values: Vec<(u64, u64)> = pairs.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        let ordered = values.windows(2).all(|w| w[0].1 <= w[1].1);
        if !ordered || values.last().is_some_and(|&(_, at)| at > latest) {
            return None;
        }
        Some(Seen {
            held: Held::Exact(values),
            latest,
        })
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
