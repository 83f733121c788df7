//! What a keyed table keeps per key, and the rule's functions on it, chosen
//! once per limiter.
//!
//! A [`KeyState`] is as large as the largest single-rate state (the sliding
//! window's three counters, the sliding log's ring), so a table of them made
//! a token bucket's key pay 8 bytes it does not use. A table is therefore
//! generic over what it holds ([`Kind::Held`]): a single-rate rule's table
//! holds its algorithm's state alone, beside the key's marks
//! ([`Marked`]: a `u64` key's slot is 32 bytes for the token bucket, fixed
//! window and leaky bucket, 40 for the sliding window and log; 24 for the
//! first four when the rule bounds their state to 12 bytes, the packed
//! kind of `keyed/compact.rs`), and a rule of several rates keeps its
//! [`KeyState`] beside the marks. The
//! limiter matches its table's kind once per call (`keyed/tables.rs`); below
//! that, every function is the algorithm's own, as [`Rule`]'s dispatch
//! would have reached for the same state, so every decision is the same.

use super::slot::{Held, Marked, Slot};
use crate::algorithms::RateAlgorithm;
use crate::state_kinds::Inline;
use crate::{Decision, KeyState, Mode, Receipt, Rule};

// A `u64` key's slot: the key and the state with its marks, no word beside
// them (`tests/it/slot_layout.rs` pins these through `memory()`).
const _: () = assert!(std::mem::size_of::<Slot<u64, Marked<KeyState>>>() == 48);
const _: () =
    assert!(std::mem::size_of::<Slot<u64, Marked<crate::algorithms::TokenBucketState>>>() == 32);

/// A rule's functions on what its keyed table holds per key.
pub(crate) trait Kind {
    /// What a slot keeps beside its key.
    type Held: Held;

    /// The state of a key never seen (unmarked).
    fn fresh(&self) -> Self::Held;

    /// [`Rule::decide`] on a key's state.
    fn decide(
        &self,
        held: &mut Self::Held,
        now: u64,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
    ) -> Decision;

    /// [`Rule::settle`] on a key's state.
    fn settle(&self, held: &mut Self::Held, now: u64, receipt: Receipt, cost: u64);

    /// [`Rule::is_idle`] of a key's state.
    fn is_idle(&self, held: &mut Self::Held, now: u64) -> bool;

    /// [`Rule::used_permille`] of a key's state (`rule` is the limiter's).
    fn used_permille(&self, rule: &Rule, held: &mut Self::Held, now: u64) -> u16;

    /// [`Rule::heap_bytes`] of a key's state.
    fn heap_bytes(&self, held: &Self::Held) -> usize;

    /// [`Rule::encode_state`] of a key's state.
    fn encode(&self, rule: &Rule, held: &Self::Held) -> Vec<u64>;

    /// A loaded state ([`Rule::decode_state`]'s) as this table holds it.
    fn load(&self, state: KeyState) -> Option<Self::Held>;
}

/// A single-rate rule: its one algorithm, on its state alone.
impl<A: Inline> Kind for A {
    type Held = Marked<A::State>;

    #[inline]
    fn fresh(&self) -> Self::Held {
        Marked::new(A::State::default())
    }

    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    fn decide(
        &self,
        held: &mut Self::Held,
        now: u64,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> Decision {
        let decision = self.decide_one(&mut held.state, now, cost, mode);
        each(decision);
        decision
    }

    fn settle(&self, held: &mut Self::Held, now: u64, receipt: Receipt, cost: u64) {
        RateAlgorithm::settle(self, &mut held.state, now, receipt, cost);
    }

    #[inline]
    fn is_idle(&self, held: &mut Self::Held, now: u64) -> bool {
        RateAlgorithm::is_idle(self, &mut held.state, now)
    }

    fn used_permille(&self, rule: &Rule, held: &mut Self::Held, now: u64) -> u16 {
        // The rule's own computation, on the state lent as a `KeyState`
        // (a move in and out: a log's ring is not copied).
        let mut state = A::into_key_state(std::mem::take(&mut held.state));
        let used = rule.used_permille(&mut state, now);
        held.state = A::from_key_state(state).unwrap_or_default();
        used
    }

    fn heap_bytes(&self, held: &Self::Held) -> usize {
        <A as RateAlgorithm>::heap_bytes(&held.state)
    }

    fn encode(&self, rule: &Rule, held: &Self::Held) -> Vec<u64> {
        rule.encode_state(&A::into_key_state(held.state.clone()))
    }

    fn load(&self, state: KeyState) -> Option<Self::Held> {
        A::from_key_state(state).map(Marked::new)
    }
}

/// A rule of several rates (or none): the rule's own dispatch, on its
/// [`KeyState`].
pub(crate) struct AnyRule<'a>(pub &'a Rule);

impl Kind for AnyRule<'_> {
    type Held = Marked<KeyState>;

    fn fresh(&self) -> Self::Held {
        Marked::new(self.0.new_state())
    }

    #[inline]
    fn decide(
        &self,
        held: &mut Self::Held,
        now: u64,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
    ) -> Decision {
        self.0.decide(&mut held.state, now, cost, mode, each)
    }

    fn settle(&self, held: &mut Self::Held, now: u64, receipt: Receipt, cost: u64) {
        self.0.settle(&mut held.state, now, receipt, cost);
    }

    fn is_idle(&self, held: &mut Self::Held, now: u64) -> bool {
        self.0.is_idle(&mut held.state, now)
    }

    fn used_permille(&self, rule: &Rule, held: &mut Self::Held, now: u64) -> u16 {
        rule.used_permille(&mut held.state, now)
    }

    fn heap_bytes(&self, held: &Self::Held) -> usize {
        self.0.heap_bytes(&held.state)
    }

    fn encode(&self, rule: &Rule, held: &Self::Held) -> Vec<u64> {
        rule.encode_state(&held.state)
    }

    fn load(&self, state: KeyState) -> Option<Self::Held> {
        Some(Marked::new(state))
    }
}
