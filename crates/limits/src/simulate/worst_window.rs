//! The most cost any one key had in any half-open window [s, s + W),
//! computed exactly and as a stream.

use super::recent::Recent;
use std::collections::HashMap;
use std::hash::Hash;

/// Streams (key, time, cost) in non-decreasing time per key and keeps the
/// largest total cost seen in any window [s, s + W) of a single key.
///
/// ```
/// use limits::simulate::WorstWindow;
/// let mut worst = WorstWindow::new(10);
/// for t in [0, 5, 9, 10, 19] {
///     worst.add(&"a", t, 1);
/// }
/// assert_eq!(worst.worst(), 3); // [0, 10) holds 0, 5, 9
/// worst.forget_before(29);
/// assert_eq!(worst.keys(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct WorstWindow<K> {
    window: u64,
    per_key: HashMap<K, Recent>,
    worst: u64,
}

impl<K: Hash + Eq + Clone> WorstWindow<K> {
    /// A tracker for windows of `window` ns.
    pub fn new(window: u64) -> WorstWindow<K> {
        WorstWindow {
            window,
            per_key: HashMap::new(),
            worst: 0,
        }
    }

    /// Counts `cost` for `key` at `t`. Times of one key must not decrease.
    pub fn add(&mut self, key: &K, t: u64, cost: u64) {
        let recent = match self.per_key.get_mut(key) {
            Some(r) => r,
            None => self.per_key.entry(key.clone()).or_default(),
        };
        let sum = recent.add(t, cost, self.window);
        self.worst = self.worst.max(sum);
    }

    /// Forgets keys whose newest event is W or more before `t`: they cannot
    /// share a window with anything at or after `t`. Call it now and then
    /// with a time no later than any event still to come, to bound memory.
    pub fn forget_before(&mut self, t: u64) {
        let window = self.window;
        self.per_key.retain(|_, r| r.reaches(t, window));
    }

    /// Keys currently remembered.
    pub fn keys(&self) -> usize {
        self.per_key.len()
    }

    /// The largest total so far.
    pub fn worst(&self) -> u64 {
        self.worst
    }
}
