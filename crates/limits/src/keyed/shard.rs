//! One shard of the keyed limiter: the keys whose hash falls in it, their
//! states, and a CLOCK hand that both sweeps idle keys and picks victims when
//! the shard is full.
//!
//! Slots live in a dense `Vec` (so the hand can walk them); a `HashTable` of
//! slot indices finds a key. A key costs its slot (hash, key, state, one
//! "referenced" flag) plus about five bytes of table: no linked list, no two
//! pointers per key as a true LRU would need.

use crate::{KeyState, Rule};
use hashbrown::HashTable;
use std::borrow::Borrow;
use std::hash::Hash;

pub(crate) struct Slot<K> {
    pub hash: u64,
    pub key: K,
    pub state: KeyState,
    /// Set on every use, cleared as the CLOCK hand passes: a second chance.
    pub referenced: bool,
}

pub(crate) struct Shard<K> {
    table: HashTable<u32>,
    pub slots: Vec<Slot<K>>,
    hand: usize,
}

/// What making room cost: keys dropped losslessly, and keys evicted.
#[derive(Default)]
pub(crate) struct Freed {
    pub idle: usize,
    pub evicted: usize,
}

impl<K> Shard<K> {
    pub fn new() -> Shard<K> {
        Shard {
            table: HashTable::new(),
            slots: Vec::new(),
            hand: 0,
        }
    }

    pub fn find<Q>(&self, hash: u64, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.table
            .find(hash, |&i| self.slots[i as usize].key.borrow() == key)
            .map(|&i| i as usize)
    }

    pub fn insert(&mut self, hash: u64, key: K, state: KeyState) -> usize {
        let idx = self.slots.len();
        self.slots.push(Slot {
            hash,
            key,
            state,
            // A new key has not earned its second chance yet: in a flood of
            // one-off keys they evict each other, not the established ones.
            referenced: false,
        });
        let slots = &self.slots;
        self.table
            .insert_unique(hash, idx as u32, |&i| slots[i as usize].hash);
        idx
    }

    /// Removes slot `idx`; the last slot moves into its place.
    pub fn remove(&mut self, idx: usize) -> Slot<K> {
        let hash = self.slots[idx].hash;
        if let Ok(entry) = self.table.find_entry(hash, |&i| i as usize == idx) {
            entry.remove();
        }
        let last = self.slots.len() - 1;
        if idx != last {
            let moved = self.slots[last].hash;
            if let Some(i) = self.table.find_mut(moved, |&i| i as usize == last) {
                *i = idx as u32;
            }
        }
        let slot = self.slots.swap_remove(idx);
        if self.hand >= self.slots.len() {
            self.hand = 0;
        }
        self.shrink_if_sparse();
        slot
    }

    /// Gives memory back after a flood of keys has drained away.
    fn shrink_if_sparse(&mut self) {
        let len = self.slots.len();
        if self.slots.capacity() > 64 && len < self.slots.capacity() / 4 {
            self.slots.shrink_to(len * 2);
            let slots = &self.slots;
            self.table.shrink_to(len * 2, |&i| slots[i as usize].hash);
        }
    }

    /// Moves the hand over up to `budget` slots, dropping those that can no
    /// longer affect a decision.
    pub fn sweep(&mut self, rule: &Rule, now: u64, budget: usize) -> usize {
        let mut dropped = 0;
        for _ in 0..budget.min(self.slots.len()) {
            let at = self.hand;
            if rule.is_idle(&mut self.slots[at].state, now) {
                self.remove(at);
                dropped += 1;
            } else {
                self.hand = (at + 1) % self.slots.len();
            }
            if self.slots.is_empty() {
                break;
            }
        }
        dropped
    }

    /// Frees one slot: the first idle key under the hand, or else the first
    /// not used since the hand last passed (CLOCK, an approximation of LRU).
    pub fn make_room(&mut self, rule: &Rule, now: u64) -> Freed {
        let mut freed = Freed::default();
        if self.slots.is_empty() {
            return freed;
        }
        // Two turns at most: the first clears every referenced flag.
        for _ in 0..=2 * self.slots.len() {
            let at = self.hand;
            let slot = &mut self.slots[at];
            if rule.is_idle(&mut slot.state, now) {
                self.remove(at);
                freed.idle += 1;
                return freed;
            }
            if slot.referenced {
                slot.referenced = false;
                self.hand = (at + 1) % self.slots.len();
            } else {
                self.remove(at);
                freed.evicted += 1;
                return freed;
            }
        }
        freed
    }

    /// Drops every idle key.
    pub fn sweep_all(&mut self, rule: &Rule, now: u64) -> usize {
        let mut dropped = 0;
        for at in (0..self.slots.len()).rev() {
            if rule.is_idle(&mut self.slots[at].state, now) {
                self.remove(at);
                dropped += 1;
            }
        }
        dropped
    }

    /// Bytes held: the table, the slots (with their inline keys) and the
    /// states' heap memory.
    pub fn bytes(&self, rule: &Rule) -> usize {
        self.table.allocation_size()
            + self.slots.capacity() * std::mem::size_of::<Slot<K>>()
            + self
                .slots
                .iter()
                .map(|s| rule.heap_bytes(&s.state))
                .sum::<usize>()
    }
}
