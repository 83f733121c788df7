//! A tracked key's slot: the key and what its table holds for it, nothing
//! more.
//!
//! A single-rate rule's table holds the algorithm's state beside the key's
//! bookkeeping ([`Marks`]: the two flags, the CLOCK second chance and
//! whether it was denied, and the low 24 bits of its hash, 4 bytes), in a
//! [`Marked`] state: a `u64` key's slot is 32 bytes for a 16-byte state (the
//! token bucket, fixed window, leaky bucket), 40 for a 24-byte one (the
//! sliding window, sliding log); a state that the rule bounds to 12 bytes
//! (most token buckets, leaky buckets, fixed windows and sliding windows)
//! is packed beside the marks in 16 bytes, a 24-byte slot
//! (`keyed/compact.rs`). A rule of several rates keeps a whole
//! [`KeyState`], marked the same way.
//!
//! The hash bits kept there are a hint, not a truth the table depends on: a
//! state replaced wholesale (one loaded, or one of another shape that a
//! rule starts afresh) starts with no marks, as a new key's state does. So
//! the shard uses the hint only where a wrong one is caught (to find the
//! table entry of a slot it moves or drops, which it checks by index, and
//! then hashes the key again) and hashes the key itself where a wrong hash
//! would misfile it (the table growing or shrinking).

/// A key's bookkeeping in the keyed table, beside its state ([`Marked`]).
/// Four bytes, so that a packed 12-byte state and its marks make 16
/// (`keyed/compact.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    flags: u8,
    /// The low 24 bits of the key's hash, as set when the slot was filled
    /// (a byte array: alignment 1, so that it fits before the state).
    hash: [u8; 3],
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

    /// The low 24 bits of the key's hash ([`HINT_BITS`]), if the state was
    /// marked with it (zero, or stale, if the state was replaced since: see
    /// the module).
    pub(crate) fn hash_hint(self) -> u32 {
        let [a, b, c] = self.hash;
        u32::from_le_bytes([a, b, c, 0])
    }

    fn set(&mut self, bit: u8, on: bool) {
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
    }
}

/// What a slot holds beside its key: a state with the key's [`Marks`].
pub(crate) trait Held {
    /// The key's marks.
    fn marks(&mut self) -> &mut Marks;
}

/// The bits of a key's hash its [`Marks`] keep (the low ones): the shard
/// files keys in its table under these alone, so that the hint finds them.
pub(crate) const HINT_BITS: u32 = 24;

/// One algorithm's state and the key's marks: 4 bytes beside the state,
/// within the padding to its alignment (a 16-byte state makes 24).
#[derive(Debug)]
pub(crate) struct Marked<S> {
    marks: Marks,
    pub state: S,
}

impl<S> Marked<S> {
    /// `state`, unmarked.
    pub fn new(state: S) -> Marked<S> {
        Marked {
            marks: Marks::default(),
            state,
        }
    }
}

impl<S> Held for Marked<S> {
    #[inline]
    fn marks(&mut self) -> &mut Marks {
        &mut self.marks
    }
}

/// A tracked key and its state. The state's [`Marks`] say whether the key
/// was used since the CLOCK hand last passed (set on every use, cleared as
/// the hand passes: a second chance) and whether it was denied (kept while
/// the state lives, dropped once back to full: the key is limited, so
/// evicting it would forgive it).
pub(crate) struct Slot<K, H> {
    pub key: K,
    pub state: H,
}

const _: () = assert!(std::mem::size_of::<Marks>() == 4);

impl<K, H: Held> Slot<K, H> {
    /// A key's slot, as the key is first tracked (its hash is `hash`);
    /// `denied` if that first request was.
    pub fn new(hash: u64, key: K, mut state: H, denied: bool) -> Slot<K, H> {
        // A new key has not earned its second chance yet: in a flood of
        // one-off keys they evict each other, not the established ones.
        // (One store of the marks, not a read-modify-write per flag.)
        *state.marks() = Marks {
            flags: if denied { Marks::DENIED } else { 0 },
            hash: {
                let [a, b, c, _] = (hash as u32).to_le_bytes();
                [a, b, c]
            },
        };
        Slot { key, state }
    }

    /// The key's flags, kept with its state.
    pub fn marks(&mut self) -> &mut Marks {
        self.state.marks()
    }
}
