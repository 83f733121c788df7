//! One limiter's tallies over a trace, counted decision by decision: the one
//! implementation behind both `limits simulate` (the engine in `run`) and
//! `limits replay` (which streams a real trace through a `KeyedLimiter`).

use super::WorstWindow;
use crate::Decision;
use std::collections::HashMap;
use std::hash::Hash;

/// How often (in decisions, at least) keys that can no longer share a window
/// with what is still to come are forgotten by the worst-window tracker; with
/// more keys remembered, every twice that many decisions, so that the sweep
/// costs at most half a key visit per decision.
const FORGET_EVERY: u64 = 1 << 13;

/// Counts one limiter's decisions: allowed, rejected, the worst window (at
/// release time), the decisions that differ from an exact sliding log run
/// alongside, and (if asked) who was rejected most.
///
/// Decisions must come in non-decreasing time: keys whose last admitted
/// request is a window or more in the past are forgotten as their windows
/// end (and all of them now and then), so memory follows the keys active in
/// the last window, not the trace.
///
/// ```
/// use limits::simulate::Tally;
/// use limits::Decision;
/// let mut tally = Tally::new(10).by_key();
/// tally.count(&"a", 0, 1, &Decision::allow(0), true);
/// let mut denied = Decision::allow(0);
/// denied.allowed = false;
/// tally.count(&"a", 1, 1, &denied, true); // the sliding log allowed it
/// assert_eq!((tally.allowed, tally.rejected, tally.false_denies), (1, 1, 1));
/// assert_eq!(tally.limited_most(5), [(&"a", 1)]);
/// ```
#[derive(Clone, Debug)]
pub struct Tally<K> {
    /// Requests allowed.
    pub allowed: u64,
    /// Requests rejected.
    pub rejected: u64,
    /// Allowed here but denied by the sliding log.
    pub false_allows: u64,
    /// Denied here but allowed by the sliding log.
    pub false_denies: u64,
    worst: WorstWindow<K>,
    rejected_by_key: Option<HashMap<K, u64>>,
    counted: u64,
    next_forget: u64,
}

impl<K: Hash + Eq + Clone> Tally<K> {
    /// An empty tally with worst windows of `window` ns; rejections are not
    /// counted per key (see [`by_key`](Tally::by_key)).
    pub fn new(window: u64) -> Tally<K> {
        Tally {
            allowed: 0,
            rejected: 0,
            false_allows: 0,
            false_denies: 0,
            worst: WorstWindow::new(window),
            rejected_by_key: None,
            counted: 0,
            next_forget: FORGET_EVERY,
        }
    }

    /// Also counts rejections per key, for [`limited_most`](Tally::limited_most).
    pub fn by_key(mut self) -> Tally<K> {
        self.rejected_by_key = Some(HashMap::new());
        self
    }

    /// Counts `decision` of a request of `cost` by `key` arriving at `t` (ns),
    /// next to whether the sliding log allowed it (`exact_allowed`). Returns
    /// the request's release: `t` plus its delay (the leaky bucket's wait).
    pub fn count(
        &mut self,
        key: &K,
        t: u64,
        cost: u64,
        decision: &Decision,
        exact_allowed: bool,
    ) -> u64 {
        self.worst.forget_expired(t);
        let release = t.saturating_add(crate::duration::nanos_of(decision.delay));
        if decision.allowed {
            self.allowed += 1;
            self.worst.add(key, release, cost);
            self.false_allows += u64::from(!exact_allowed);
        } else {
            self.rejected += 1;
            self.false_denies += u64::from(exact_allowed);
            if let Some(by_key) = &mut self.rejected_by_key {
                match by_key.get_mut(key) {
                    Some(n) => *n += 1,
                    None => {
                        by_key.insert(key.clone(), 1);
                    }
                }
            }
        }
        self.counted += 1;
        if self.counted == self.next_forget {
            self.worst.forget_before(t);
            let keys = u64::try_from(self.worst.keys()).unwrap_or(u64::MAX);
            self.next_forget = self.counted + FORGET_EVERY.max(keys.saturating_mul(2));
        }
        release
    }

    /// The most cost one key had allowed in any half-open window [s, s + W),
    /// counted at release time.
    pub fn worst_window(&self) -> u64 {
        self.worst.worst()
    }

    /// The `n` keys with the most rejections, most first (ties by key); empty
    /// unless the tally counts [`by_key`](Tally::by_key).
    pub fn limited_most(&self, n: usize) -> Vec<(&K, u64)>
    where
        K: Ord,
    {
        let Some(by_key) = &self.rejected_by_key else {
            return Vec::new();
        };
        let mut keys: Vec<(&K, u64)> = by_key.iter().map(|(k, &c)| (k, c)).collect();
        keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        keys.truncate(n);
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn allowed(delay_ns: u64) -> Decision {
        let mut d = Decision::allow(0);
        d.delay = Duration::from_nanos(delay_ns);
        d
    }

    fn denied() -> Decision {
        let mut d = Decision::allow(0);
        d.allowed = false;
        d
    }

    #[test]
    fn counts_allowed_rejected_and_the_differences_from_the_log() {
        let mut tally = Tally::new(10).by_key();
        // (key, t, cost, decision, sliding log allowed)
        let trace = [
            ("a", 0, 2, allowed(0), true),
            ("a", 1, 1, allowed(0), false), // a false allow
            ("b", 2, 1, denied(), true),    // a false deny
            ("b", 3, 1, denied(), false),
            ("c", 4, 1, denied(), false),
            ("a", 12, 1, allowed(0), true),
        ];
        for (key, t, cost, d, exact) in &trace {
            tally.count(key, *t, *cost, d, *exact);
        }
        assert_eq!((tally.allowed, tally.rejected), (3, 3));
        assert_eq!((tally.false_allows, tally.false_denies), (1, 1));
        // a: cost 2 at 0 and 1 at 1 share [0, 10); the one at 12 does not.
        assert_eq!(tally.worst_window(), 3);
        assert_eq!(tally.limited_most(5), [(&"b", 2), (&"c", 1)]);
        assert_eq!(tally.limited_most(1), [(&"b", 2)]);
    }

    #[test]
    fn the_worst_window_counts_at_release_and_release_is_returned() {
        let mut tally = Tally::new(10);
        assert_eq!(tally.count(&0u32, 0, 1, &allowed(0), true), 0);
        // Queued for 10 ns: released at 15, outside [0, 10) of the first.
        assert_eq!(tally.count(&0u32, 5, 1, &allowed(10), true), 15);
        assert_eq!(tally.worst_window(), 1);
        // A denial is released nowhere and counts for no window.
        assert_eq!(tally.count(&0u32, 16, 5, &denied(), false), 16);
        assert_eq!(tally.worst_window(), 1);
        // Without by_key, nobody is named.
        assert!(tally.limited_most(5).is_empty());
    }

    #[test]
    fn forgetting_idle_keys_bounds_memory_and_never_changes_the_worst_window() {
        let mut tally = Tally::new(100);
        let mut brute = 0u64;
        let mut recent = std::collections::HashMap::<u64, Vec<u64>>::new();
        let hot = FORGET_EVERY - 10..FORGET_EVERY + 10;
        for i in 0..3 * FORGET_EVERY {
            // Seven keys that keep coming, between keys seen ten times each,
            // and one heavy burst across the first forgetting.
            let (key, cost) = match i {
                _ if hot.contains(&i) => (u64::MAX - 100, 1000),
                _ if i % 2 == 0 => (u64::MAX - i % 7, 1),
                _ => (i / 20, 1),
            };
            let t = i * 3;
            tally.count(&key, t, cost, &allowed(0), true);
            let times = recent.entry(key).or_default();
            times.push(t);
            times.retain(|&s| s + 100 > t);
            brute = brute.max(times.len() as u64 * cost);
        }
        assert_eq!(brute, 20_000);
        assert_eq!(tally.worst_window(), brute);
        assert!(
            tally.worst.keys() < 7 + FORGET_EVERY as usize / 20 + 10,
            "{} keys remembered",
            tally.worst.keys()
        );
    }
}
