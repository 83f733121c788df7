//! Keys interned once per distinct key: a trace names a few clients millions
//! of times, so each name is stored once and everything downstream (the
//! limiters, the tallies, the reorder buffer) holds a `u32` instead of a
//! `String` it would allocate, hash and compare per line.

use hashbrown::HashTable;
use std::hash::{BuildHasher, RandomState};

/// A key's number while it is held (see [`Keys`]).
pub type KeyId = u32;

/// Bytes of a key kept in its slot: keys up to this long (an IPv4 address,
/// most user ids) are found without reading their name.
const INLINE: usize = 15;

/// One entry of the table (24 bytes): the low half of the key's hash, its
/// length (255 for 255 or more) and first bytes next to its number, so that
/// a lookup reads one slot and the table regrows without reading names.
#[derive(Clone, Copy)]
struct Slot {
    hash: u32,
    id: KeyId,
    len: u8,
    head: [u8; INLINE],
}

/// The table's hash of a slot: its 32 bits of the key's hash spread over 64,
/// since hashbrown picks buckets with the low bits and tags with the top 7.
fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The keys of a trace that are still held somewhere, each with a number.
///
/// Slots of its own in a hashbrown `HashTable` rather than a
/// `HashMap<Box<str>, u32>`: that one compares each lookup against the boxed
/// name, a cache miss per line once the keys outgrow the cache.
///
/// A key is forgotten (its name, slot and number freed) once it is idle
/// everywhere it is held: [`hold`](Keys::hold) says until when that is, and
/// [`sweep`](Keys::sweep) frees the numbers past it, a few per line. A
/// freed number is given to the next new key: whatever a limiter or a tally
/// still holds under it is idle, and an idle state decides exactly as an
/// absent one (the core drops idle states for that reason), so memory
/// follows the active keys, not every key the trace has ever named.
pub struct Keys {
    slots: HashTable<Slot>,
    /// The names, one after the other: no allocation (and its overhead)
    /// per key. Freed names leave gaps, squeezed out when they are half.
    text: String,
    /// Where each number's name starts in `text`, and its length.
    names: Vec<(usize, usize)>,
    /// Until when (ns) each number is held; `FREE` for a freed number.
    held_until: Vec<u64>,
    /// Freed numbers, given out again before new ones.
    free: Vec<KeyId>,
    /// Bytes of `text` that belong to freed names.
    dead: usize,
    /// Where the sweep goes on from.
    hand: usize,
    hasher: RandomState,
}

/// `held_until` of a freed number: never swept again.
const FREE: u64 = u64::MAX;

impl Default for Keys {
    fn default() -> Keys {
        Keys {
            slots: HashTable::with_capacity(1024),
            text: String::new(),
            names: Vec::new(),
            held_until: Vec::new(),
            free: Vec::new(),
            dead: 0,
            hand: 0,
            hasher: RandomState::new(),
        }
    }
}

impl Keys {
    /// `name`'s number, given it now if it is new; `None` once the numbers
    /// run out (2^32 - 1 keys held at once). A new number is held until 0:
    /// [`hold`](Keys::hold) it until its request is decided.
    pub fn intern(&mut self, name: &str) -> Option<KeyId> {
        let hash = self.hasher.hash_one(name) as u32;
        let len = name.len().min(255) as u8;
        let mut head = [0; INLINE];
        let shown = name.len().min(INLINE);
        head[..shown].copy_from_slice(&name.as_bytes()[..shown]);
        let found = self.slots.find(spread(hash), |slot| {
            slot.hash == hash
                && slot.len == len
                && slot.head == head
                && (shown == name.len() || self.name(slot.id) == name)
        });
        if let Some(slot) = found {
            return Some(slot.id);
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let id = KeyId::try_from(self.names.len())
                    .ok()
                    .filter(|&id| id != KeyId::MAX)?;
                self.names.push((0, 0));
                self.held_until.push(FREE);
                id
            }
        };
        let slot = Slot {
            hash,
            id,
            len,
            head,
        };
        self.slots
            .insert_unique(spread(hash), slot, |s| spread(s.hash));
        self.names[id as usize] = (self.text.len(), name.len());
        self.held_until[id as usize] = 0;
        self.text.push_str(name);
        Some(id)
    }

    /// Keeps key `id` until at least `until` (ns): it is not forgotten by a
    /// sweep before a later time.
    #[inline]
    pub fn hold(&mut self, id: KeyId, until: u64) {
        let held = &mut self.held_until[id as usize];
        *held = (*held).max(until);
    }

    /// Looks at the next `n` numbers and forgets those held until before
    /// `now`, calling `gone` with each one's number and name first.
    pub fn sweep(&mut self, now: u64, n: usize, mut gone: impl FnMut(KeyId, &str)) {
        let total = self.held_until.len();
        if total == 0 {
            return;
        }
        for _ in 0..n.min(total) {
            if self.hand >= total {
                self.hand = 0;
            }
            let id = self.hand as KeyId;
            self.hand += 1;
            if self.held_until[id as usize] < now {
                gone(id, self.name(id));
                self.forget(id);
            }
        }
    }

    /// Frees `id`: its slot, its name and its number.
    fn forget(&mut self, id: KeyId) {
        let hash = self.hasher.hash_one(self.name(id)) as u32;
        if let Ok(slot) = self.slots.find_entry(spread(hash), |slot| slot.id == id) {
            slot.remove();
        }
        self.dead += self.names[id as usize].1;
        self.names[id as usize] = (0, 0);
        self.held_until[id as usize] = FREE;
        self.free.push(id);
        if self.dead > 4096 && self.dead * 2 > self.text.len() {
            self.squeeze();
        }
    }

    /// Rewrites `text` without the freed names.
    fn squeeze(&mut self) {
        let mut text = String::with_capacity((self.text.len() - self.dead) * 2);
        for (id, (start, len)) in self.names.iter_mut().enumerate() {
            if self.held_until[id] != FREE {
                let name = &self.text[*start..*start + *len];
                *start = text.len();
                text.push_str(name);
            }
        }
        self.text = text;
        self.dead = 0;
    }

    /// The name of key `id`.
    pub fn name(&self, id: KeyId) -> &str {
        let (start, len) = self.names[id as usize];
        &self.text[start..start + len]
    }

    /// How many keys are held now.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.names.len() - self.free.len()
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
        assert_eq!(keys.live(), 5000);
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
