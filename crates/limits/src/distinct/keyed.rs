//! [`Distinct`] per key: each key's [`Seen`] values in sharded maps, as
//! the keyed limiter shards its keys. A key holding no value in the window
//! costs nothing to forget: [`DistinctLimiter::sweep_at`] drops them.

use super::{Distinct, Seen};
use crate::shards::{self, Padded};
use crate::{Algorithm, Clock, Decision, Mode, Rule, SystemClock};
use foldhash::fast::RandomState;
use foldhash::quality::RandomState as MixedState;
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

/// One shard: its keys' values.
type Shard<K> = Padded<Mutex<HashMap<K, Seen, RandomState>>>;

/// A limit on distinct values per key, thread-safe (see the
/// [module](super)).
///
/// ```
/// use limits::{Distinct, DistinctLimiter, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new(0);
/// let pages = DistinctLimiter::with_clock(Distinct::new(3, Duration::from_secs(60)).unwrap(), clock.clone());
/// for page in ["/p/1", "/p/2", "/p/3", "/p/1", "/p/2"] {
///     assert!(pages.check("198.51.100.9", page).allowed);
/// }
/// assert!(!pages.check("198.51.100.9", "/p/4").allowed);
/// clock.advance(Duration::from_secs(60));
/// assert!(pages.check("198.51.100.9", "/p/4").allowed, "/p/3 left the window");
/// assert_eq!(pages.sweep_at(u64::MAX), 1);
/// ```
pub struct DistinctLimiter<K, C = SystemClock> {
    rule: Distinct,
    /// The limit as a sliding log of its rate, for what speaks of rules
    /// ([`Store::rule`](crate::Store::rule)).
    pub(super) limit: Rule,
    clock: C,
    /// Keys to shards, and each shard's map.
    keys: RandomState,
    /// Values to the hashes kept: seeded apart from the keys', and mixed
    /// so that every bit counts (a sketch reads the top bits and the run
    /// of zeros after them).
    values: MixedState,
    shards: Box<[Shard<K>]>,
}

impl<K: Hash + Eq> DistinctLimiter<K> {
    /// A limiter of `rule` on the system clock.
    pub fn new(rule: Distinct) -> DistinctLimiter<K> {
        DistinctLimiter::with_clock(rule, SystemClock::new())
    }
}

impl<K: Hash + Eq, C: Clock> DistinctLimiter<K, C> {
    /// A limiter of `rule` on `clock`, with four shards per core.
    pub fn with_clock(rule: Distinct, clock: C) -> DistinctLimiter<K, C> {
        let keys = RandomState::default();
        let shard = || Padded(Mutex::new(HashMap::with_hasher(keys.clone())));
        DistinctLimiter {
            rule,
            limit: Rule::new(Algorithm::SlidingLog, rule.rate().into()),
            clock,
            shards: (0..shards::default_count()).map(|_| shard()).collect(),
            keys,
            values: MixedState::default(),
        }
    }

    /// The rule.
    pub fn rule(&self) -> Distinct {
        self.rule
    }

    /// Decides `value` for `key` now, holding it if admitted.
    pub fn check<Q, V>(&self, key: &Q, value: &V) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        V: Hash + ?Sized,
    {
        self.decide(key, value, None, Mode::Record)
    }

    /// [`check`](DistinctLimiter::check) at `now` (nanoseconds on the
    /// clock's scale).
    pub fn check_at<Q, V>(&self, key: &Q, value: &V, now: u64) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        V: Hash + ?Sized,
    {
        self.decide(key, value, Some(now), Mode::Record)
    }

    /// Decides `value` for `key` at `now` (or the clock's time) in `mode`:
    /// a peek holds nothing, and a key never seen is not kept.
    pub fn decide<Q, V>(&self, key: &Q, value: &V, now: Option<u64>, mode: Mode) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        V: Hash + ?Sized,
    {
        let value = self.values.hash_one(value);
        let shard = self.keys.hash_one(key) as usize % self.shards.len();
        let mut map = self.shards[shard].0.lock();
        let now = now.unwrap_or_else(|| self.clock.now());
        if let Some(seen) = map.get_mut(key) {
            return self.rule.decide(seen, value, now, mode);
        }
        let mut seen = Seen::default();
        let decision = self.rule.decide(&mut seen, value, now, mode);
        if !seen.is_empty() {
            map.insert(key.to_owned(), seen);
        }
        decision
    }

    /// Forgets the keys that hold no value in the window at `now`; how
    /// many were forgotten. Lossless: such a key decides as one never seen.
    pub fn sweep_at(&self, now: u64) -> usize {
        let mut forgotten = 0;
        for shard in self.shards.iter() {
            let mut map = shard.0.lock();
            let before = map.len();
            map.retain(|_, seen| !self.rule.forget_at(seen, now));
            forgotten += before - map.len();
        }
        forgotten
    }

    /// [`sweep_at`](DistinctLimiter::sweep_at) the clock's time.
    pub fn sweep(&self) -> usize {
        self.sweep_at(self.clock.now())
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.0.lock().len()).sum()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the keys' values take on the heap (the keys themselves and
    /// the maps' tables aside).
    pub fn value_bytes(&self) -> usize {
        let shards = self.shards.iter();
        shards
            .map(|s| s.0.lock().values().map(Seen::heap_bytes).sum::<usize>())
            .sum()
    }
}
