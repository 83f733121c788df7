//! Keys interned once per distinct key: a trace names a few clients millions
//! of times, so each name is stored once and everything downstream (the
//! limiters, the tallies, the reorder buffer) holds a `u32` instead of a
//! `String` it would allocate, hash and compare per line.

use std::hash::{BuildHasher, RandomState};

/// A key's number: its order of first appearance in the trace.
pub type KeyId = u32;

/// Bytes of a key kept in its slot: keys up to this long (an IPv4 address,
/// most user ids) are found without reading their name.
const INLINE: usize = 15;

/// One entry of the open-addressing table (24 bytes): the low half of the
/// key's hash, its length (255 for 255 or more) and first bytes next to its
/// number, so that a lookup reads one slot.
#[derive(Clone, Copy)]
struct Slot {
    hash: u32,
    id: KeyId,
    len: u8,
    head: [u8; INLINE],
}

const EMPTY: Slot = Slot {
    hash: 0,
    id: KeyId::MAX,
    len: 0,
    head: [0; INLINE],
};

/// The distinct keys of a trace, numbered in order of first appearance.
///
/// A table of its own rather than a `HashMap<Box<str>, u32>`: that one
/// compares each lookup against the boxed name, a cache miss per line once
/// the keys outgrow the cache.
pub struct Keys {
    slots: Vec<Slot>,
    /// Every name, one after the other: no allocation (and its overhead)
    /// per key.
    text: String,
    /// Where each key's name ends in `text`, by key number.
    ends: Vec<usize>,
    hasher: RandomState,
}

impl Default for Keys {
    fn default() -> Keys {
        Keys {
            slots: vec![EMPTY; 1024],
            text: String::new(),
            ends: Vec::new(),
            hasher: RandomState::new(),
        }
    }
}

impl Keys {
    /// `name`'s number, given it now if it is new; `None` once the numbers
    /// run out (2^32 - 1 distinct keys).
    pub fn intern(&mut self, name: &str) -> Option<KeyId> {
        let hash = self.hasher.hash_one(name) as u32;
        let len = name.len().min(255) as u8;
        let mut head = [0; INLINE];
        let shown = name.len().min(INLINE);
        head[..shown].copy_from_slice(&name.as_bytes()[..shown]);
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = &self.slots[i];
            if slot.id == KeyId::MAX {
                break;
            }
            if slot.hash == hash
                && slot.len == len
                && slot.head == head
                && (shown == name.len() || self.name(slot.id) == name)
            {
                return Some(slot.id);
            }
            i = (i + 1) & mask;
        }
        let id = KeyId::try_from(self.ends.len())
            .ok()
            .filter(|&id| id != KeyId::MAX)?;
        self.slots[i] = Slot {
            hash,
            id,
            len,
            head,
        };
        self.text.push_str(name);
        self.ends.push(self.text.len());
        if self.ends.len() * 2 > self.slots.len() {
            self.grow();
        }
        Some(id)
    }

    /// Doubles the table, keeping it at most half full.
    fn grow(&mut self) {
        let doubled = vec![EMPTY; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| s.id != KeyId::MAX) {
            let mut i = slot.hash as usize & mask;
            while self.slots[i].id != KeyId::MAX {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }

    /// The name of key `id`.
    pub fn name(&self, id: KeyId) -> &str {
        let id = id as usize;
        let start = if id == 0 { 0 } else { self.ends[id - 1] };
        &self.text[start..self.ends[id]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_number_per_distinct_key_in_order_of_first_appearance() {
        let mut keys = Keys::default();
        let ids: Vec<_> = ["b", "a", "b", "c", "a"]
            .iter()
            .map(|k| keys.intern(k).unwrap())
            .collect();
        assert_eq!(ids, [0, 1, 0, 2, 1]);
        assert_eq!((keys.name(0), keys.name(1), keys.name(2)), ("b", "a", "c"));
    }

    #[test]
    fn long_keys_sharing_their_first_bytes_stay_apart_across_growth() {
        let mut keys = Keys::default();
        let name = |i: u32| format!("{}{i}", "x".repeat(INLINE + i as usize % 3));
        for round in 0..2 {
            for i in 0..5000 {
                assert_eq!(keys.intern(&name(i)), Some(i), "round {round}");
            }
        }
        assert_eq!(keys.ends.len(), 5000);
        assert_eq!(keys.name(4321), name(4321));
        assert_eq!(keys.intern(""), Some(5000));
        assert_eq!(keys.intern(""), Some(5000));
        // Lengths the slot cannot tell apart by its bytes alone.
        let long = |c: char| format!("{}{c}", "y".repeat(300));
        for (a, b) in [("a", "a\0"), (&*long('1'), &*long('2'))] {
            let (ia, ib) = (keys.intern(a).unwrap(), keys.intern(b).unwrap());
            assert_ne!(ia, ib);
            assert_eq!((keys.intern(a), keys.intern(b)), (Some(ia), Some(ib)));
            assert_eq!((keys.name(ia), keys.name(ib)), (a, b));
        }
    }
}
