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
//! limit below 2^31 with a window up to about 2^63 ns, 292 years; limits up
//! to 2^32 − 1 with windows of a few seconds; a leaky bucket's burst
//! likewise), and a fixed window's count in 4 when L < 2^32. [`Packed`]
//! holds those 12 bytes beside the key's 4 bytes of marks (alignment 1):
//! a `u64` key's slot is 24 bytes. Any other rule keeps the 16-byte state
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

/// A state's 12 bytes: the low 8, then the high 4 (little-endian).
type Bytes = [u8; 12];

/// An algorithm whose state a compact table keeps in 12 bytes, for the
/// rules that bound it there.
pub(crate) trait Packs: Inline + DecideOne + AdmitOne {
    /// Whether every state of `rule` (this algorithm's, of one rate), decided
    /// or loaded, fits in 12 bytes (see the module).
    fn fits(rule: &Rule) -> bool;

    /// Whether `state` fits in 12 bytes.
    fn fits_state(state: &Self::State) -> bool;

    /// `state` in 12 bytes (it fits: the rule's bound says so).
    fn pack(state: &Self::State) -> Bytes;

    /// The state packed in `bytes`.
    fn unpack(bytes: &Bytes) -> Self::State;
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

fn pack_scaled(t: ScaledTime) -> Bytes {
    let [high, low] = t.0;
    debug_assert!(high <= u64::from(u32::MAX), "a scaled time past 96 bits");
    pack_words(low, high)
}

fn unpack_scaled(bytes: &Bytes) -> ScaledTime {
    let (low, high) = unpack_words(bytes);
    ScaledTime([high, low])
}

/// `low` and the low 4 bytes of `high`.
#[inline(always)]
fn pack_words(low: u64, high: u64) -> Bytes {
    let mut bytes = [0; 12];
    bytes[..8].copy_from_slice(&low.to_le_bytes());
    bytes[8..].copy_from_slice(&(high as u32).to_le_bytes());
    bytes
}

#[inline(always)]
fn unpack_words(bytes: &Bytes) -> (u64, u64) {
    let [l0, l1, l2, l3, l4, l5, l6, l7, h0, h1, h2, h3] = *bytes;
    (
        u64::from_le_bytes([l0, l1, l2, l3, l4, l5, l6, l7]),
        u64::from(u32::from_le_bytes([h0, h1, h2, h3])),
    )
}

impl Packs for TokenBucket {
    fn fits(rule: &Rule) -> bool {
        scaled_fits(rule, |limit| limit)
    }

    fn fits_state(state: &TokenBucketState) -> bool {
        state.full_at.get() <= MOST_SCALED
    }

    #[inline(always)]
    fn pack(state: &TokenBucketState) -> Bytes {
        pack_scaled(state.full_at)
    }

    #[inline(always)]
    fn unpack(bytes: &Bytes) -> TokenBucketState {
        TokenBucketState {
            full_at: unpack_scaled(bytes),
        }
    }
}

impl Packs for LeakyBucket {
    fn fits(rule: &Rule) -> bool {
        // The engine's burst (`Rule`'s, or the limit; at most `MAX_LIMIT`).
        let burst = |limit: u64| rule.burst().unwrap_or(limit).min(crate::MAX_LIMIT);
        scaled_fits(rule, |limit| burst(limit) + 1)
    }

    fn fits_state(state: &LeakyBucketState) -> bool {
        state.next_slot.get() <= MOST_SCALED
    }

    #[inline(always)]
    fn pack(state: &LeakyBucketState) -> Bytes {
        pack_scaled(state.next_slot)
    }

    #[inline(always)]
    fn unpack(bytes: &Bytes) -> LeakyBucketState {
        LeakyBucketState {
            next_slot: unpack_scaled(bytes),
        }
    }
}

impl Packs for FixedWindow {
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
    fn pack(state: &FixedWindowState) -> Bytes {
        debug_assert!(Self::fits_state(state), "a count past 32 bits");
        pack_words(state.index, state.count)
    }

    #[inline(always)]
    fn unpack(bytes: &Bytes) -> FixedWindowState {
        let (index, count) = unpack_words(bytes);
        FixedWindowState { index, count }
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
    bytes: Bytes,
    marks: Marks,
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
        Packed {
            bytes: A::pack(&A::State::default()),
            marks: Marks::default(),
        }
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
        let mut state = A::unpack(&held.bytes);
        let decision = self.0.decide_one(&mut state, now, cost, mode);
        held.bytes = A::pack(&state);
        each(decision);
        decision
    }

    #[inline(always)]
    fn admit(&self, held: &mut Packed, now: u64, cost: u64) -> Admission {
        let mut state = A::unpack(&held.bytes);
        let admission = self.0.admit_one(&mut state, now, cost);
        held.bytes = A::pack(&state);
        admission
    }

    #[inline(always)]
    fn is_idle(&self, held: &mut Packed, now: u64) -> bool {
        let mut state = A::unpack(&held.bytes);
        let idle = RateAlgorithm::is_idle(&self.0, &mut state, now);
        // The fixed window's idle test may move its state to `now`'s window.
        held.bytes = A::pack(&state);
        idle
    }

    fn used_permille(&self, rule: &Rule, held: &mut Packed, now: u64) -> u16 {
        let mut state = A::into_key_state(A::unpack(&held.bytes));
        let used = rule.used_permille(&mut state, now);
        held.bytes = A::pack(&A::from_key_state(state).unwrap_or_default());
        used
    }

    fn heap_bytes(&self, held: &Packed) -> usize {
        <A as RateAlgorithm>::heap_bytes(&A::unpack(&held.bytes))
    }

    fn encode(&self, rule: &Rule, held: &Packed) -> Vec<u64> {
        rule.encode_state(&A::into_key_state(A::unpack(&held.bytes)))
    }

    fn load(&self, state: KeyState) -> Option<Packed> {
        // Always fits: the rule's decoder bounds what it loads as `fits`
        // assumed (`tests/compact_slots.rs` holds it to that).
        let state = A::from_key_state(state).filter(A::fits_state)?;
        Some(Packed {
            bytes: A::pack(&state),
            marks: Marks::default(),
        })
    }
}
