//! A 16-byte state in 12 bytes, when the rule bounds it: a `u64` key's slot
//! of 24 bytes in place of 32, exactly.
//!
//! The token bucket's and the leaky bucket's state is a time scaled by the
//! limit (`t × L`, a `u128`), the fixed window's a window index and a count
//! (two `u64`s): 16 bytes, 8-aligned, so with the key's marks a `u64` key's
//! slot is 32 bytes. For most rules far fewer bits are ever used, and the
//! bound is known from the rule alone ([`Packing::new`]):
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
//! window's count in 4 when L < 2^32. [`PackedState`] holds those 12 bytes
//! beside the key's 4 bytes of marks (alignment 1): a `u64` key's slot is
//! 24 bytes. Any other rule keeps the 16-byte state (`keyed/tables.rs`
//! chooses at construction). The sliding window's three words pack
//! likewise, in widths its rule sets (`keyed/compact_window.rs`: a
//! [`Packing`] is a layout, which may carry what the rule sets). Each call
//! unpacks the state, runs the algorithm's own `decide_one` or `is_idle` on
//! it and packs it back (for the buckets, two loads and two stores, no
//! arithmetic): every decision is the wide table's.

use super::kind::Kind;
use super::slot::{Held, Marks, Slot};
use crate::algorithms::{
    FixedWindow, FixedWindowState, LeakyBucket, LeakyBucketState, RateAlgorithm, ScaledTime,
    TokenBucket, TokenBucketState,
};
use crate::state_kinds::Inline;
use crate::{Decision, KeyState, Mode, Receipt, Rule};

/// How a compact table keeps one algorithm's state in 12 bytes, for the
/// rules that bound it there: a value the rule sets (a unit for a fixed
/// packing, the field widths of the sliding window's), one type per
/// packing, so that each table's code is compiled for its own.
pub(crate) trait Packing: Copy + std::fmt::Debug {
    /// The algorithm whose states this packs.
    type Engine: Inline;

    /// The packing for `rule` (its one rate), if every state of the rule,
    /// decided or loaded, fits in 12 bytes this way (see the module).
    fn new(rule: &Rule) -> Option<Self>;

    /// Whether [`RateAlgorithm::is_idle`] may change the state (the
    /// windows move it to the time's window), so that it is stored back.
    const IDLE_MOVES: bool;

    /// Whether `state` fits in 12 bytes.
    fn fits_state(self, state: &State<Self>) -> bool;

    /// `state` as its low 64 bits and the next 32 (it fits: the rule's
    /// bound says so).
    fn pack(self, state: &State<Self>) -> (u64, u32);

    /// The state packed as `(low, high)`.
    fn unpack(self, low: u64, high: u32) -> State<Self>;

    /// The state `held` holds.
    #[inline]
    fn load(self, held: &PackedState) -> State<Self> {
        self.unpack(u64::from_le_bytes(held.low), u32::from_le_bytes(held.high))
    }

    /// Holds `state` (which fits) in `held`.
    #[inline]
    fn store(self, held: &mut PackedState, state: &State<Self>) {
        let (low, high) = self.pack(state);
        held.low = low.to_le_bytes();
        held.high = high.to_le_bytes();
    }

    /// [`RateAlgorithm::is_idle`] on the state `held` holds, storing back
    /// what it moved.
    #[inline]
    fn is_idle(self, engine: &Self::Engine, held: &mut PackedState, now: u64) -> bool {
        let mut state = self.load(held);
        let idle = RateAlgorithm::is_idle(engine, &mut state, now);
        if Self::IDLE_MOVES {
            self.store(held, &state);
        }
        idle
    }
}

/// The state a packing packs.
pub(crate) type State<P> = <<P as Packing>::Engine as RateAlgorithm>::State;

/// The token bucket's full time, when it fits in 96 bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TokenPacking;

/// The leaky bucket's queue end, when it fits in 96 bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LeakyPacking;

/// The fixed window's index and a count below 2^32.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedPacking;

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

#[inline]
fn pack_scaled(t: ScaledTime) -> (u64, u32) {
    let [high, low] = t.0;
    debug_assert!(high <= u64::from(u32::MAX), "a scaled time past 96 bits");
    (low, high as u32)
}

#[inline]
fn unpack_scaled(low: u64, high: u32) -> ScaledTime {
    ScaledTime([u64::from(high), low])
}

impl Packing for TokenPacking {
    type Engine = TokenBucket;

    const IDLE_MOVES: bool = false;

    fn new(rule: &Rule) -> Option<Self> {
        scaled_fits(rule, |limit| limit).then_some(TokenPacking)
    }

    fn fits_state(self, state: &TokenBucketState) -> bool {
        state.full_at.get() <= MOST_SCALED
    }

    #[inline]
    fn pack(self, state: &TokenBucketState) -> (u64, u32) {
        pack_scaled(state.full_at)
    }

    #[inline]
    fn unpack(self, low: u64, high: u32) -> TokenBucketState {
        TokenBucketState {
            full_at: unpack_scaled(low, high),
        }
    }
}

impl Packing for LeakyPacking {
    type Engine = LeakyBucket;

    const IDLE_MOVES: bool = false;

    fn new(rule: &Rule) -> Option<Self> {
        // The engine's burst (`Rule`'s, or the limit; at most `MAX_LIMIT`).
        let burst = |limit: u64| rule.burst().unwrap_or(limit).min(crate::MAX_LIMIT);
        scaled_fits(rule, |limit| burst(limit) + 1).then_some(LeakyPacking)
    }

    fn fits_state(self, state: &LeakyBucketState) -> bool {
        state.next_slot.get() <= MOST_SCALED
    }

    #[inline]
    fn pack(self, state: &LeakyBucketState) -> (u64, u32) {
        pack_scaled(state.next_slot)
    }

    #[inline]
    fn unpack(self, low: u64, high: u32) -> LeakyBucketState {
        LeakyBucketState {
            next_slot: unpack_scaled(low, high),
        }
    }
}

impl Packing for FixedPacking {
    type Engine = FixedWindow;

    const IDLE_MOVES: bool = true;

    fn new(rule: &Rule) -> Option<Self> {
        let rate = rule.rates().as_slice().first()?;
        (rate.limit() <= u64::from(u32::MAX)).then_some(FixedPacking)
    }

    fn fits_state(self, state: &FixedWindowState) -> bool {
        state.count <= u64::from(u32::MAX)
    }

    #[inline]
    fn pack(self, state: &FixedWindowState) -> (u64, u32) {
        debug_assert!(self.fits_state(state), "a count past 32 bits");
        (state.index, state.count as u32)
    }

    #[inline]
    fn unpack(self, index: u64, count: u32) -> FixedWindowState {
        FixedWindowState {
            index,
            count: u64::from(count),
        }
    }
}

/// A single-rate rule of an algorithm that [`Packing`] its states, for which
/// they all fit: its table holds [`PackedState`] states.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Compact<P: Packing>(P::Engine, P);

impl<P: Packing> Compact<P> {
    /// `engine` (the one rate of `rule`) with a compact table, if every
    /// state of `rule` fits ([`Packing::new`]).
    pub fn new(engine: P::Engine, rule: &Rule) -> Option<Compact<P>> {
        P::new(rule).map(|packing| Compact(engine, packing))
    }
}

/// A state in 12 bytes and the key's marks: 16 bytes, alignment 1 (the low
/// 8 bytes first, so that a `u64` key's slot reads them at an aligned
/// offset).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PackedState {
    pub(super) low: [u8; 8],
    pub(super) high: [u8; 4],
    marks: Marks,
}

// A `u64` key's slot: the key and the packed state, no word beside them.
const _: () = assert!(std::mem::size_of::<Slot<u64, PackedState>>() == 24);

impl PackedState {
    /// The state held.
    #[inline]
    fn get<P: Packing>(&self, packing: P) -> State<P> {
        packing.load(self)
    }

    /// Holds `state` (which fits).
    #[inline]
    fn put<P: Packing>(&mut self, packing: P, state: &State<P>) {
        packing.store(self, state);
    }

    /// `state`, unmarked.
    fn new<P: Packing>(packing: P, state: &State<P>) -> PackedState {
        let mut packed = PackedState::default();
        packed.put(packing, state);
        packed
    }
}

impl Held for PackedState {
    #[inline]
    fn marks(&mut self) -> &mut Marks {
        &mut self.marks
    }
}

/// The algorithm's own functions, on the state unpacked and packed back.
impl<P: Packing> Kind for Compact<P> {
    type Held = PackedState;

    #[inline]
    fn fresh(&self) -> PackedState {
        // Every state's default is all zeros: so is its packing.
        PackedState::default()
    }

    // Written out: the state's unpacking folds into the algorithm's pass only so.
    #[inline(always)]
    fn decide(
        &self,
        held: &mut PackedState,
        now: u64,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> Decision {
        let mut state = held.get(self.1);
        let decision = self.0.decide_one(&mut state, now, cost, mode);
        held.put(self.1, &state);
        each(decision);
        decision
    }

    /// The settled state fits: a charge stays within a loaded state's
    /// bound, which the packing holds (see the module).
    fn settle(&self, held: &mut PackedState, now: u64, receipt: Receipt, cost: u64) {
        let mut state = held.get(self.1);
        RateAlgorithm::settle(&self.0, &mut state, now, receipt, cost);
        held.put(self.1, &state);
    }

    #[inline]
    fn is_idle(&self, held: &mut PackedState, now: u64) -> bool {
        self.1.is_idle(&self.0, held, now)
    }

    fn used_permille(&self, rule: &Rule, held: &mut PackedState, now: u64) -> u16 {
        let mut state = P::Engine::into_key_state(held.get(self.1));
        let used = rule.used_permille(&mut state, now);
        held.put(
            self.1,
            &P::Engine::from_key_state(state).unwrap_or_default(),
        );
        used
    }

    fn heap_bytes(&self, held: &PackedState) -> usize {
        <P::Engine as RateAlgorithm>::heap_bytes(&held.get(self.1))
    }

    fn encode(&self, rule: &Rule, held: &PackedState) -> Vec<u64> {
        rule.encode_state(&P::Engine::into_key_state(held.get(self.1)))
    }

    fn load(&self, state: KeyState) -> Option<PackedState> {
        // Always fits: the rule's decoder bounds what it loads as `fits`
        // assumed (`tests/it/compact_slots.rs` holds it to that).
        let state = P::Engine::from_key_state(state).filter(|s| self.1.fits_state(s))?;
        Some(PackedState::new(self.1, &state))
    }
}
