//! A tracked key's slot: the key and its state, nothing more (issue 9).
//!
//! The key's two flags (the CLOCK second chance, and whether it was denied)
//! ride in the state's spare byte ([`Marks`]), and the slot keeps no hash:
//! the shard hashes the key again when it moves or drops it. A `u64` key's
//! slot is thus 40 bytes, where a word for half the hash and the flags made
//! it 48.

use crate::state_kinds::Marks;
use crate::KeyState;

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
    /// A key's slot, as the key is first tracked; `denied` if that first
    /// request was.
    pub fn new(key: K, mut state: KeyState, denied: bool) -> Slot<K> {
        let marks = state.0.marks_mut();
        // A new key has not earned its second chance yet: in a flood of
        // one-off keys they evict each other, not the established ones.
        marks.set_referenced(false);
        marks.set_denied(denied);
        Slot { key, state }
    }

    /// The key's flags, kept in its state.
    pub fn marks(&mut self) -> &mut Marks {
        self.state.0.marks_mut()
    }
}
