//! A keyed limiter's states as numbers and back ([`KeyedLimiter::export`],
//! [`KeyedLimiter::import`]): what a server saves on shutdown and restores
//! on start, so that a restart does not hand every client a fresh limit.

use super::kind::Kind;
use super::slot::Slot;
use super::tables::with_table;
use super::{KeyedLimiter, lock};
use crate::Clock;
use std::hash::{BuildHasher, Hash};

impl<K: Hash + Eq + Send, C: Clock> KeyedLimiter<K, C> {
    /// Every key that still matters, with its state as numbers
    /// ([`Rule::encode_state`](crate::Rule::encode_state)): what a server saves on shutdown.
    pub fn export(&self) -> Vec<(K, Vec<u64>)>
    where
        K: Clone,
    {
        let now = self.clock.now();
        let mut out = Vec::new();
        with_table!(self, |kind, shards| for s in shards.iter() {
            let mut shard = lock(&s.0);
            shard.sweep_all(kind, now);
            out.extend(shard.slots.iter().map(|slot| {
                let words = kind.encode(&self.rule, &slot.state);
                (slot.key.clone(), words)
            }));
        });
        out
    }

    /// Loads states written by [`export`](Self::export) (replacing what a key
    /// had); entries that do not fit this rule, or no longer matter, are
    /// skipped. Returns how many were loaded.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, Rule};
    /// let rule = Rule::new(Algorithm::SlidingLog, "1/hour".parse().unwrap());
    /// let before: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule.clone(), ManualClock::new(0));
    /// assert!(before.check("alice", 1).allowed);
    /// let after: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule, ManualClock::new(5));
    /// assert_eq!(after.import(before.export()), 1);
    /// assert!(!after.check("alice", 1).allowed); // still limited after the restart
    /// ```
    pub fn import(&self, entries: impl IntoIterator<Item = (K, Vec<u64>)>) -> usize {
        let now = self.clock.now();
        let mut loaded = 0;
        with_table!(self, |kind, shards| for (key, words) in entries {
            let Some(state) = self.rule.decode_state(&words) else {
                continue;
            };
            let hash = self.hasher.hash_one(&key);
            let mut guard = self.shard(shards, hash);
            let shard = &mut *guard;
            let Some(mut state) = kind.load(state) else {
                continue;
            };
            if kind.is_idle(&mut state, now) {
                continue;
            }
            if let Some(idx) = shard.find(hash, &key) {
                // The loaded state carries no marks: not limited, no second
                // chance, no hash hint (the slot module says why that is safe).
                shard.slots[idx].state = state;
            } else {
                let slot = Slot::new(hash, key, state, false);
                self.insert(shard, kind, hash, slot, now);
            }
            loaded += 1;
        });
        loaded
    }
}
