//! The most cost any one key had in any half-open window [s, s + W),
//! computed exactly and as a stream.

use super::recent::Recent;
use std::collections::{HashMap, VecDeque};
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
    /// Every remembered key once (or twice after a
    /// [`forget_before`](WorstWindow::forget_before) and a comeback), with
    /// a time from which it is next looked at W later, in about that order.
    expiring: VecDeque<(u64, K)>,
    /// The latest time given to `forget_expired`: a key first seen later,
    /// at a release still to come, is looked at from here.
    now: u64,
    worst: u64,
}

impl<K: Hash + Eq + Clone> WorstWindow<K> {
    /// A tracker for windows of `window` ns.
    pub fn new(window: u64) -> WorstWindow<K> {
        WorstWindow {
            window,
            per_key: HashMap::new(),
            expiring: VecDeque::new(),
            now: 0,
            worst: 0,
        }
    }

    /// Counts `cost` for `key` at `t`. Times of one key must not decrease.
    pub fn add(&mut self, key: &K, t: u64, cost: u64) {
        let recent = match self.per_key.get_mut(key) {
            Some(r) => r,
            None => {
                self.expiring.push_back((t.min(self.now), key.clone()));
                self.per_key.entry(key.clone()).or_default()
            }
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

    /// Forgets, at a cost of about one look per key per window, the keys
    /// looked at longest ago that cannot share a window with `t` or later,
    /// so that memory follows the keys active in the last W
    /// ([`forget_before`](WorstWindow::forget_before) visits every key).
    /// Like it, call it with a time no later than any event to come.
    ///
    /// ```
    /// use limits::simulate::WorstWindow;
    /// let mut worst = WorstWindow::new(10);
    /// worst.add(&"a", 0, 1);
    /// worst.add(&"b", 5, 1);
    /// worst.forget_expired(12); // a's window has ended, b's has not
    /// assert_eq!(worst.keys(), 1);
    /// worst.forget_expired(15);
    /// assert_eq!(worst.keys(), 0);
    /// ```
    pub fn forget_expired(&mut self, t: u64) {
        self.now = self.now.max(t);
        while let Some(&(at, _)) = self.expiring.front() {
            if at > t || t - at < self.window {
                return;
            }
            let Some((_, key)) = self.expiring.pop_front() else {
                return;
            };
            match self.per_key.get(&key) {
                Some(r) if r.reaches(t, self.window) => {
                    // Looked at again a window after its newest release.
                    self.expiring.push_back((r.newest().min(t), key));
                }
                Some(_) => {
                    self.per_key.remove(&key);
                }
                None => {} // forgotten by forget_before already
            }
        }
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
