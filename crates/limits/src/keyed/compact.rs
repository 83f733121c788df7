//! A 16-byte state in 12 bytes, when the rule bounds it: a `u64` key's slot
//! of 24 bytes in place of 32 (issue 9), exactly.
//!
//! The token bucket's and the leaky bucket's state is a time scaled by the
//! limit (`t × L`, a `u128`), the fixed window's a window index and a count
//! (two `u64`s): 16 bytes, 8-aligned, so with the key's marks a `u64` key's
//! slot is 32 bytes. For most rules far fewer bits are ever used, and the
//! bound is known from the rule alone ([`Packs::fits`]):
//!
//! - token bucket: a request passes only if `full_at ≤ now × L + (L − cost)
//!   × W`, and then sets `full_at = max(full_at, now × L) + cost × W ≤ now ×
//!   L + L × W`; a denial (or a cost of 0) leaves it. So a decided state
//!   holds at most `(u64::MAX + W) × L`;
//! - leaky bucket: a request passes only if its last unit departs within
//!   `burst × W` of now, and then sets `next_slot` to that departure plus
//!   `W`: at most `u64::MAX × L + (burst + 1) × W`;
//! - both: a loaded state (`import`, `Rule::decode_state`) is accepted up to
//!   `(u64::MAX + 2W) × L`, and deciding on it never goes further;
//! - fixed window: the count never exceeds L (a request is counted only if
//!   it fits; the decoder checks it), and the index is a `u64`.
//!
//! So a scaled time whose bound is below 2^96 is kept in 12 bytes (every
//! limit up to 2^31, with any window; limits up to 2^32 − 1 with windows up
//! to about 2 seconds; a leaky bucket's burst likewise), and a fixed
//! window's count in 4 when L < 2^32. [`Packed`] holds those 12 bytes
//! beside the key's 4 bytes of marks (alignment 1): a `u64` key's slot is
//! 24 bytes. Any other rule keeps the 16-byte state
//! (`keyed/tables.rs` chooses at construction). Each call unpacks the
//! state, runs the algorithm's own `decide_one`, `admit_one` or `is_idle`
//! on it and packs it back (two loads and two stores, no arithmetic): every
//! decision is the wide table's.

use super::kind::Kind;
use super::slot::{Held, Marks};
use crate::algorithms::{
    FixedWindow, FixedWindowState, LeakyBucket, LeakyBucketState, RateAlgorithm, ScaledTime,
    TokenBucket, TokenBucketState,
};
use crate::rule::{Admission, AdmitOne, DecideOne};
use crate::state_kinds::Inline;
use crate::{Decision, KeyState, Mode, Rule};

/// An algorithm whose state a compact table keeps in 12 bytes, for the
/// rules that bound it there.
pub(crate) trait Packs: Inline + DecideOne + AdmitOne {
    /// Whether every state of `rule` (this algorithm's, of one rate), decided
    /// or loaded, fits in 12 bytes (see the module).
    fn fits(rule: &Rule) -> bool;

    /// Whether [`RateAlgorithm::is_idle`] may change the state (the fixed
    /// window's moves it to the time's window), so that it is stored back.
    const IDLE_MOVES: bool;

    /// Whether `state` fits in 12 bytes.
    fn fits_state(state: &Self::State) -> bool;

    /// `state` as its low 64 bits and the next 32 (it fits: the rule's
    /// bound says so).
    fn pack(state: &Self::State) -> (u64, u32);

    /// The state packed as `(low, high)`.
    fn unpack(low: u64, high: u32) -> Self::State;
}

/// The largest scaled time 12 bytes hold.
const MOST_SCALED: u128 = (1 << 96) - 1;

/// Whether every scaled time of a bucket of `L` per `W` fits in 96 bits:
/// those loaded, up to `(u64::MAX + 2W) × L`, and those decided, up to
/// `u64::MAX × L + ahead × W`.
fn scaled_fits(rule: &Rule, ahead: impl Fn(u64) -> u64) -> bool {
    let Some(rate) = rule.rates().as_slice().first() else {
        return false;
    };
    let (l, w) = (u128::from(rate.limit()), u128::from(rate.window_nanos()));
    let end = u128::from(u64::MAX);
    let loaded = (end + 2 * w).checked_mul(l);
    let decided = (end * l).checked_add(u128::from(ahead(rate.limit())) * w);
    loaded
        .zip(decided)
        .is_some_and(|(a, b)| a.max(b) <= MOST_SCALED)
}

#[inline(always)]
fn pack_scaled(t: ScaledTime) -> (u64, u32) {
    let [high, low] = t.0;
    debug_assert!(high <= u64::from(u32::MAX), "a scaled time past 96 bits");
    (low, high as u32)
}

#[inline(always)]
fn unpack_scaled(low: u64, high: u32) -> ScaledTime {
    ScaledTime([u64::from(high), low])
}

impl Packs for TokenBucket {
    const IDLE_MOVES: bool = false;

    fn fits(rule: &Rule) -> bool {
        scaled_fits(rule, |limit| limit)
    }

    fn fits_state(state: &TokenBucketState) -> bool {
        state.full_at.get() <= MOST_SCALED
    }

    #[inline(always)]
    fn pack(state: &TokenBucketState) -> (u64, u32) {
        pack_scaled(state.full_at)
    }

    #[inline(always)]
    fn unpack(low: u64, high: u32) -> TokenBucketState {
        TokenBucketState {
            full_at: unpack_scaled(low, high),
        }
    }
}

impl Packs for LeakyBucket {
    const IDLE_MOVES: bool = false;

    fn fits(rule: &Rule) -> bool {
        // The engine's burst (`Rule`'s, or the limit; at most `MAX_LIMIT`).
        let burst = |limit: u64| rule.burst().unwrap_or(limit).min(crate::MAX_LIMIT);
        scaled_fits(rule, |limit| burst(limit) + 1)
    }

    fn fits_state(state: &LeakyBucketState) -> bool {
        state.next_slot.get() <= MOST_SCALED
    }

    #[inline(always)]
    fn pack(state: &LeakyBucketState) -> (u64, u32) {
        pack_scaled(state.next_slot)
    }

    #[inline(always)]
    fn unpack(low: u64, high: u32) -> LeakyBucketState {
        LeakyBucketState {
            next_slot: unpack_scaled(low, high),
        }
    }
}

impl Packs for FixedWindow {
    const IDLE_MOVES: bool = true;

    fn fits(rule: &Rule) -> bool {
        rule.rates()
            .as_slice()
            .first()
            .is_some_and(|rate| rate.limit() <= u64::from(u32::MAX))
    }

    fn fits_state(state: &FixedWindowState) -> bool {
        state.count <= u64::from(u32::MAX)
    }

    #[inline(always)]
    fn pack(state: &FixedWindowState) -> (u64, u32) {
        debug_assert!(Self::fits_state(state), "a count past 32 bits");
        (state.index, state.count as u32)
    }

    #[inline(always)]
    fn unpack(index: u64, count: u32) -> FixedWindowState {
        FixedWindowState {
            index,
            count: u64::from(count),
        }
    }
}

/// A single-rate rule of an algorithm that [`Packs`] its states, for which
/// they all fit: its table holds [`Packed`] states.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Compact<A>(A);

impl<A: Packs> Compact<A> {
    /// `engine` (the one rate of `rule`) with a compact table, if every
    /// state of `rule` fits ([`Packs::fits`]).
    pub fn new(engine: A, rule: &Rule) -> Option<Compact<A>> {
        A::fits(rule).then_some(Compact(engine))
    }
}

/// A state in 12 bytes and the key's marks: 16 bytes, alignment 1 (the low
/// 8 bytes first, so that a `u64` key's slot reads them at an aligned
/// offset).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Packed {
    low: [u8; 8],
    high: [u8; 4],
    marks: Marks,
}

impl Packed {
    /// The state held.
    #[inline(always)]
    fn get<A: Packs>(&self) -> A::State {
        A::unpack(u64::from_le_bytes(self.low), u32::from_le_bytes(self.high))
    }

    /// Holds `state` (which fits).
    #[inline(always)]
    fn put<A: Packs>(&mut self, state: &A::State) {
        let (low, high) = A::pack(state);
        self.low = low.to_le_bytes();
        self.high = high.to_le_bytes();
    }

    /// `state`, unmarked.
    fn new<A: Packs>(state: &A::State) -> Packed {
        let mut packed = Packed::default();
        packed.put::<A>(state);
        packed
    }
}

impl Held for Packed {
    #[inline(always)]
    fn marks(&mut self) -> &mut Marks {
        &mut self.marks
    }
}

/// The algorithm's own functions, on the state unpacked and packed back.
impl<A: Packs> Kind for Compact<A> {
    type Held = Packed;

    #[inline(always)]
    fn fresh(&self) -> Packed {
        // Every state's default is all zeros: so is its packing.
        Packed::default()
    }

    #[inline(always)]
    fn decide(
        &self,
        held: &mut Packed,
        now: u64,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> Decision {
        let mut state = held.get::<A>();
        let decision = self.0.decide_one(&mut state, now, cost, mode);
        held.put::<A>(&state);
        each(decision);
        decision
    }

    #[inline(always)]
    fn admit(&self, held: &mut Packed, now: u64, cost: u64) -> Admission {
        let mut state = held.get::<A>();
        let admission = self.0.admit_one(&mut state, now, cost);
        held.put::<A>(&state);
        admission
    }

    #[inline(always)]
    fn is_idle(&self, held: &mut Packed, now: u64) -> bool {
        let mut state = held.get::<A>();
        let idle = RateAlgorithm::is_idle(&self.0, &mut state, now);
        if A::IDLE_MOVES {
            held.put::<A>(&state);
        }
        idle
    }

    fn used_permille(&self, rule: &Rule, held: &mut Packed, now: u64) -> u16 {
        let mut state = A::into_key_state(held.get::<A>());
        let used = rule.used_permille(&mut state, now);
        held.put::<A>(&A::from_key_state(state).unwrap_or_default());
        used
    }

    fn heap_bytes(&self, held: &Packed) -> usize {
        <A as RateAlgorithm>::heap_bytes(&held.get::<A>())
    }

    fn encode(&self, rule: &Rule, held: &Packed) -> Vec<u64> {
        rule.encode_state(&A::into_key_state(held.get::<A>()))
    }

    fn load(&self, state: KeyState) -> Option<Packed> {
        // Always fits: the rule's decoder bounds what it loads as `fits`
        // assumed (`tests/compact_slots.rs` holds it to that).
        let state = A::from_key_state(state).filter(A::fits_state)?;
        Some(Packed::new::<A>(&state))
    }
}
