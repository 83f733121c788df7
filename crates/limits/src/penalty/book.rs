//! The penalty states of a keyed limiter's keys, beside its own table: only
//! keys denied lately or banned have one, so a limiter whose rule has a
//! penalty pays for it per decision (one lookup) but holds nothing for the
//! keys that behave.

use super::{Ban, Penalty, PenaltyState};
use crate::{Decision, Mode};
use foldhash::fast::RandomState;
use hashbrown::{Equivalent, HashMap};
use parking_lot::Mutex;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};

type Table<K> = HashMap<K, PenaltyState, RandomState>;

/// Each key's [`PenaltyState`], sharded by hash, at most a cap of them:
/// a full shard first drops its idle states, then counts what it could not
/// keep ([`PenaltyBook::untracked`]) rather than forget a ban.
pub(crate) struct PenaltyBook<K> {
    penalty: Penalty,
    hasher: RandomState,
    shards: Box<[Mutex<Table<K>>]>,
    per_shard_cap: usize,
    bans: AtomicU64,
    untracked: AtomicU64,
}

impl<K: Hash + Eq> PenaltyBook<K> {
    /// A book for `penalty` over `shards` shards (a power of two) holding
    /// at most `max_keys` states in all, if capped.
    pub(crate) fn new(penalty: Penalty, shards: usize, max_keys: Option<usize>) -> Self {
        let hasher = RandomState::default();
        let shards = shards.max(1).next_power_of_two();
        PenaltyBook {
            penalty,
            shards: (0..shards)
                .map(|_| Mutex::new(HashMap::with_hasher(hasher.clone())))
                .collect(),
            hasher,
            per_shard_cap: max_keys.map_or(usize::MAX, |cap| cap.div_ceil(shards).max(1)),
            bans: AtomicU64::new(0),
            untracked: AtomicU64::new(0),
        }
    }

    pub(crate) fn penalty(&self) -> &Penalty {
        &self.penalty
    }

    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> &Mutex<Table<K>> {
        let hash = self.hasher.hash_one(key);
        // The top bits: the table inside uses the low ones.
        let index = (hash >> 32) as usize & (self.shards.len() - 1);
        &self.shards[index]
    }

    /// [`Penalty::decide`] on `key`'s state at `now` (or the key's latest
    /// time, if later: one key's times never run backwards), the rule's
    /// decision made by `rule(now, mode)` under the key's shard lock, so
    /// that two requests of one key are counted one after the other.
    /// Returns the decision, the ban it was refused for, and the time the
    /// penalty decided at.
    pub(crate) fn decide<Q>(
        &self,
        key: &Q,
        now: u64,
        mode: Mode,
        rule: impl FnOnce(u64, Mode) -> Decision,
    ) -> (Decision, Option<Ban>, u64)
    where
        Q: Hash + Equivalent<K> + ToOwned<Owned = K> + ?Sized,
    {
        let mut table = self.shard(key).lock();
        let held = table.get_mut(key);
        let mut fresh = PenaltyState::default();
        let is_new = held.is_none();
        let state = held.unwrap_or(&mut fresh);
        let now = now.max(state.latest());
        let was_banned = state.ban_at(now).is_some();
        let (decision, ban) = self.penalty.decide(state, now, mode, |m| rule(now, m));
        if ban.is_some() && !was_banned {
            self.bans.fetch_add(1, Ordering::Relaxed);
        }
        let idle = self.penalty.is_idle(state, now);
        match (is_new, idle) {
            (false, true) => {
                table.remove(key);
            }
            (true, false) => self.keep(&mut table, key.to_owned(), fresh, now),
            _ => {}
        }
        (decision, ban, now)
    }

    /// Holds a new key's state in its shard's `table`, room permitting.
    fn keep(&self, table: &mut Table<K>, key: K, state: PenaltyState, now: u64) {
        if table.len() >= self.per_shard_cap {
            table.retain(|_, s| !self.penalty.is_idle(s, now));
        }
        if table.len() >= self.per_shard_cap {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            return;
        }
        table.insert(key, state);
    }

    /// Bans started so far.
    pub(crate) fn bans(&self) -> u64 {
        self.bans.load(Ordering::Relaxed)
    }

    /// Penalty states a full book could not keep.
    pub(crate) fn untracked(&self) -> u64 {
        self.untracked.load(Ordering::Relaxed)
    }

    /// Keys holding a penalty state.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// Drops every state that can no longer change a decision; returns how
    /// many.
    pub(crate) fn sweep(&self, now: u64) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let mut table = s.lock();
                let before = table.len();
                table.retain(|_, state| !self.penalty.is_idle(state, now));
                before - table.len()
            })
            .sum()
    }

    /// Every state that still matters, as numbers
    /// ([`Penalty::encode_state`]).
    pub(crate) fn export(&self, now: u64) -> Vec<(K, Vec<u64>)>
    where
        K: Clone,
    {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let mut table = shard.lock();
            table.retain(|_, state| !self.penalty.is_idle(state, now));
            out.extend(
                table
                    .iter()
                    .map(|(key, state)| (key.clone(), self.penalty.encode_state(state))),
            );
        }
        out
    }

    /// Loads states written by [`export`](Self::export), replacing what a
    /// key had; those that are not this penalty's, or no longer matter, are
    /// skipped. Returns how many were loaded.
    pub(crate) fn import(
        &self,
        entries: impl IntoIterator<Item = (K, Vec<u64>)>,
        now: u64,
    ) -> usize {
        let mut loaded = 0;
        for (key, words) in entries {
            let Some(state) = self.penalty.decode_state(&words) else {
                continue;
            };
            if self.penalty.is_idle(&state, now) {
                continue;
            }
            let mut table = self.shard(&key).lock();
            if let Some(held) = table.get_mut(&key) {
                *held = state;
            } else {
                let before = table.len();
                self.keep(&mut table, key, state, now);
                if table.len() == before {
                    continue;
                }
            }
            loaded += 1;
        }
        loaded
    }
}
