//! A tracked key's slot: the key and its state, nothing more (issue 9).
//!
//! A state's tag is one byte, and the state's fields start 8 bytes in: the
//! seven bytes between are padding that every key pays for anyway. The
//! slot's bookkeeping lives there ([`Marks`]): the key's two flags (the
//! CLOCK second chance, and whether it was denied) and the low half of its
//! hash. A `u64` key's slot is thus 40 bytes, where a word of its own for
//! the flags and the half hash made it 48.
//!
//! The half hash kept there is a hint, not a truth the table depends on: a
//! state replaced wholesale (one loaded, or one of another shape that a
//! rule starts afresh) starts with no marks, as a new key's state does. So
//! the shard uses the hint only where a wrong one is caught (to find the
//! table entry of a slot it moves or drops, which it checks by index, and
//! then hashes the key again) and hashes the key itself where a wrong hash
//! would misfile it (the table growing or shrinking).

use crate::KeyState;

/// A key's bookkeeping in the keyed table, kept in the padding after its
/// state's tag (`StateKind` is `repr(u8)`: its tag, then each variant's
/// fields in order, this first, 5 bytes at offset 1, the state at 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    flags: u8,
    /// The low half of the key's hash, as set when the slot was filled (a
    /// byte array: alignment 1, so that it fits before the state).
    hash: [u8; 4],
}

impl Marks {
    const REFERENCED: u8 = 1;
    const DENIED: u8 = 2;

    /// Used since the CLOCK hand last passed: a second chance.
    pub(crate) fn referenced(self) -> bool {
        self.flags & Marks::REFERENCED != 0
    }

    /// Denied since the state was last back to full: the key is limited.
    pub(crate) fn denied(self) -> bool {
        self.flags & Marks::DENIED != 0
    }

    /// Sets or clears the second chance.
    pub(crate) fn set_referenced(&mut self, on: bool) {
        self.set(Marks::REFERENCED, on);
    }

    /// Marks the key as denied (or not).
    pub(crate) fn set_denied(&mut self, on: bool) {
        self.set(Marks::DENIED, on);
    }

    /// The low half of the key's hash, if the state was marked with it
    /// (zero, or stale, if the state was replaced since: see the module).
    pub(crate) fn hash_hint(self) -> u32 {
        u32::from_ne_bytes(self.hash)
    }

    fn set(&mut self, bit: u8, on: bool) {
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
    }
}

/// A tracked key and its state. The state's [`Marks`] say whether the key
/// was used since the CLOCK hand last passed (set on every use, cleared as
/// the hand passes: a second chance) and whether it was denied (kept while
/// the state lives, dropped once back to full: the key is limited, so
/// evicting it would forgive it).
pub(crate) struct Slot<K> {
    pub key: K,
    pub state: KeyState,
}

// A `u64` key's slot: the key and the 32-byte state, no word beside them.
const _: () = assert!(std::mem::size_of::<Slot<u64>>() == 40);

impl<K> Slot<K> {
    /// A key's slot, as the key is first tracked (its hash is `hash`);
    /// `denied` if that first request was.
    pub fn new(hash: u64, key: K, mut state: KeyState, denied: bool) -> Slot<K> {
        // A new key has not earned its second chance yet: in a flood of
        // one-off keys they evict each other, not the established ones.
        // (One store of the marks, not a read-modify-write per flag.)
        *state.0.marks_mut() = Marks {
            flags: if denied { Marks::DENIED } else { 0 },
            hash: (hash as u32).to_ne_bytes(),
        };
        Slot { key, state }
    }

    /// The key's flags, kept in its state.
    pub fn marks(&mut self) -> &mut Marks {
        self.state.0.marks_mut()
    }
}
