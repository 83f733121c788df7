//! One shard of the keyed limiter: the keys whose hash falls in it, their
//! states, a cursor that sweeps idle keys away, and a CLOCK hand that picks
//! victims when the shard is full.
//!
//! Slots live in a dense `Vec` (so the cursor and the hand can walk them); a `HashTable` of
//! slot indices finds a key. A key costs its slot (the key and its state,
//! with the key's two flags and 24 bits of its hash beside the state: 24
//! bytes for a `u64` key of most token buckets, 40 at most, see the slot
//! module) plus about five bytes of table: no linked
//! list, no two pointers per key as a true LRU would need. The table files a
//! key under those 24 bits of its hash alone ([`hint_table_hash`]), so that
//! to move or drop a slot's table entry the shard looks it up under the bits
//! kept in the slot, checked by index, and hashes the key again only if that
//! misses; to refile every entry (the table growing or shrinking) it hashes
//! the keys.
//!
//! How a full shard picks the key to give up is the evict module's.

mod evict;

use super::SWEEP_EVERY;
use super::kind::Kind;
use super::slot::{HINT_BITS, Held, Slot};
use crate::Rule;
pub(crate) use evict::Room;
use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

/// The fields in their written order (`repr(C)`): those that every
/// operation writes first, so that with the mutex's lock byte before them
/// they share one cache line, and the table, which an operation on an
/// existing key only reads, on the next. A check from another core then takes one line over, not two; the
/// next line stays shared between the cores
/// (`tests::written_fields_share_the_lock_line`).
#[repr(C)]
pub(crate) struct Shard<K, H: Held> {
    /// The latest time this shard decided at: see [`Shard::at_least_latest`].
    latest: u64,
    /// Operations on existing keys since the sweep last looked (it looks
    /// every `SWEEP_EVERY`-th: see the keyed module).
    quiet: u32,
    /// Where the amortized sweep looks for idle keys next.
    cursor: usize,
    /// Where eviction weighs keys next.
    pub(super) hand: usize,
    pub slots: Vec<Slot<K, H>>,
    table: HashTable<u32>,
    /// The limiter's hasher, to hash a slot's key again.
    hasher: RandomState,
}

impl<K: Hash, H: Held> Shard<K, H> {
    /// An empty shard hashing keys with `hasher` (the limiter's).
    pub fn new(hasher: RandomState) -> Shard<K, H> {
        Shard {
            hasher,
            table: HashTable::new(),
            slots: Vec::new(),
            hand: 0,
            cursor: 0,
            latest: 0,
            quiet: 0,
        }
    }

    /// `now` (a clock reading taken under this shard's lock, or a caller's
    /// time), or the latest time the shard has decided at if that is
    /// later: one key's times never run backwards, even on a clock whose
    /// readings on two cores differ by a little (the TSC), so a key found
    /// idle can be forgotten without changing a later decision.
    pub fn at_least_latest(&mut self, now: u64) -> u64 {
        self.latest = self.latest.max(now);
        self.latest
    }

    pub fn find<Q>(&self, hash: u64, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.table
            .find(hint_table_hash(hash as u32), |&i| {
                self.slots[i as usize].key.borrow() == key
            })
            .map(|&i| i as usize)
    }

    /// Takes slot `at`'s entry out of the table: found under the hash bits
    /// its marks keep or, if that hint is stale (see the slot module), under
    /// its key's hash.
    #[inline]
    fn unfile(&mut self, at: usize) {
        let hint = hint_table_hash(self.slots[at].marks().hash_hint());
        let is_at = |&i: &u32| i as usize == at;
        match self.table.find_entry(hint, is_at) {
            Ok(entry) => {
                entry.remove();
            }
            Err(absent) => {
                let hash = stale_hint(&self.hasher, &self.slots[at].key);
                if let Ok(entry) = absent.into_table().find_entry(hash, is_at) {
                    entry.remove();
                }
            }
        }
    }

    /// Files slot `from`'s entry under index `to`, found as in `unfile`.
    #[inline]
    fn refile(&mut self, from: usize, to: usize) {
        let hint = hint_table_hash(self.slots[from].marks().hash_hint());
        let is_from = |&i: &u32| i as usize == from;
        if let Some(i) = self.table.find_mut(hint, is_from) {
            *i = to as u32;
            return;
        }
        let hash = stale_hint(&self.hasher, &self.slots[from].key);
        if let Some(i) = self.table.find_mut(hash, is_from) {
            *i = to as u32;
        }
    }

    /// Adds `slot`, whose key (new to the shard) hashed to `hash`. A shard
    /// holding `cap` keys or more first gives up the slot
    /// [`make_room`](Self::make_room) picks, and says which: the new key
    /// takes that slot, dropping the key that was there.
    pub fn add(
        &mut self,
        hash: u64,
        slot: Slot<K, H>,
        cap: usize,
        (kind, rule): (&impl Kind<Held = H>, &Rule),
        now: u64,
    ) -> Option<Room> {
        let room = if self.slots.len() >= cap {
            self.make_room(kind, rule, now)
        } else {
            None
        };
        let hash = hint_table_hash(hash as u32);
        let at = match room {
            Some(Room::Idle(at) | Room::Evicted { at, .. }) => {
                self.unfile(at);
                self.slots[at] = slot;
                at
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.table.insert_unique(hash, at as u32, |&i| {
            table_hash(hasher, &slots[i as usize].key)
        });
        room
    }

    /// Removes slot `idx`; the last slot moves into its place.
    pub fn remove(&mut self, idx: usize) {
        self.unfile(idx);
        let last = self.slots.len() - 1;
        if idx != last {
            self.refile(last, idx);
        }
        self.slots.swap_remove(idx);
        if self.hand >= self.slots.len() {
            self.hand = 0;
        }
        if self.cursor >= self.slots.len() {
            self.cursor = 0;
        }
        self.shrink_if_sparse();
    }

    /// Gives memory back after a flood of keys has drained away.
    fn shrink_if_sparse(&mut self) {
        let len = self.slots.len();
        if self.slots.capacity() > 64 && len < self.slots.capacity() / 4 {
            self.slots.shrink_to(len * 2);
            let (slots, hasher) = (&self.slots, &self.hasher);
            self.table
                .shrink_to(len * 2, |&i| table_hash(hasher, &slots[i as usize].key));
        }
    }

    /// Moves the sweep's cursor over up to `budget` slots, dropping those that
    /// can no longer affect a decision; with `stop_at_busy` (an operation on
    /// an existing key), only every `SWEEP_EVERY`-th time, or the next time
    /// after it dropped one, and it stops after the first slot it keeps
    /// (see `SWEEP_PER_OPERATION` in the keyed module for what that
    /// guarantees).
    // Written out: every operation runs it; as a call it cost more than its body.
    #[inline(always)]
    pub fn sweep(
        &mut self,
        kind: &impl Kind<Held = H>,
        now: u64,
        budget: usize,
        stop_at_busy: bool,
    ) -> usize {
        if stop_at_busy {
            self.quiet += 1;
            if self.quiet < SWEEP_EVERY {
                return 0;
            }
        }
        self.quiet = 0;
        let mut dropped = 0;
        for _ in 0..budget.min(self.slots.len()) {
            let at = self.cursor;
            if kind.is_idle(&mut self.slots[at].state, now) {
                self.remove(at);
                dropped += 1;
            } else {
                self.cursor = next(at, self.slots.len());
                if stop_at_busy {
                    break;
                }
            }
            if self.slots.is_empty() {
                break;
            }
        }
        if dropped > 0 {
            // Idle keys come in runs (a burst of clients gone quiet): the
            // next operation looks again.
            self.quiet = SWEEP_EVERY - 1;
        }
        dropped
    }

    /// Drops every idle key.
    pub fn sweep_all(&mut self, kind: &impl Kind<Held = H>, now: u64) -> usize {
        let mut dropped = 0;
        for at in (0..self.slots.len()).rev() {
            if kind.is_idle(&mut self.slots[at].state, now) {
                self.remove(at);
                dropped += 1;
            }
        }
        dropped
    }

    /// Bytes held: the table, the slots (with their inline keys), the
    /// states' heap memory.
    pub fn bytes(&self, kind: &impl Kind<Held = H>) -> usize {
        self.table.allocation_size()
            + self.slots.capacity() * std::mem::size_of::<Slot<K, H>>()
            + self
                .slots
                .iter()
                .map(|s| kind.heap_bytes(&s.state))
                .sum::<usize>()
    }
}

/// The hash the shard's table files `key` under ([`hint_table_hash`] of its
/// hash).
fn table_hash<K: Hash>(hasher: &RandomState, key: &K) -> u64 {
    hint_table_hash(hasher.hash_one(key) as u32)
}

/// [`table_hash`], off the hot path: for a slot whose hint was stale.
#[cold]
#[inline(never)]
fn stale_hint<K: Hash>(hasher: &RandomState, key: &K) -> u64 {
    table_hash(hasher, key)
}

/// The hash the shard's table files a key under, from the low
/// [`HINT_BITS`] of the key's hash (of `low`; the shard was picked by the
/// high bits), which its marks keep: those bits times an odd constant, so
/// that the table's bucket (its low bits, which depend on the low bits of
/// the hint alone) and its control byte (the top seven, which depend on all
/// of them) stay apart however large the table. A shard of n keys files two
/// keys under one hash with odds n / 2^24 per lookup (under 1% at 100,000
/// keys a shard): one more key compared.
fn hint_table_hash(low: u32) -> u64 {
    u64::from(low & ((1 << HINT_BITS) - 1)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The slot after `at` of `len`, wrapping: no division on the hot path.
pub(super) fn next(at: usize, len: usize) -> usize {
    if at + 1 >= len { 0 } else { at + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::TokenBucketState;
    use crate::keyed::Padded;
    use crate::keyed::slot::Marked;
    use parking_lot::Mutex;

    /// What every operation writes (the lock byte, `latest`, `quiet`, and
    /// the cursor and hand when it sweeps) is in the shard's first cache
    /// line; the table, which finding an existing key only reads, is past it.
    #[test]
    fn written_fields_share_the_lock_line() {
        type S = Shard<u64, Marked<TokenBucketState>>;
        let padded = Padded(Mutex::new(S::new(RandomState::default())));
        let base = &padded as *const _ as usize;
        let shard = padded.0.lock();
        let at = |field: usize| &*shard as *const S as usize + field - base;
        // The mutex is its lock byte and the shard: the byte comes first.
        assert!(at(0) > 0);
        assert_eq!(
            std::mem::size_of::<Mutex<S>>(),
            at(0) + std::mem::size_of::<S>()
        );
        let written = [
            std::mem::offset_of!(S, latest) + 8,
            std::mem::offset_of!(S, quiet) + 4,
            std::mem::offset_of!(S, cursor) + 8,
            std::mem::offset_of!(S, hand) + 8,
        ];
        for end in written {
            assert!(at(end) <= 64, "a written field ends at {}", at(end));
        }
        assert!(at(std::mem::offset_of!(S, table)) >= 64);
    }
}
