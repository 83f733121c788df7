//! A token bucket's key in a 24-byte slot (issue 9), exactly.
//!
//! The bucket's state is its full time scaled by the limit, `full_at = t ×
//! L`, a `u128` (16 bytes, 8-aligned: with the key's marks, a `u64` key's
//! slot is 32 bytes). For most rules far fewer bits are ever used, and the
//! bound is known from the rule alone:
//!
//! - a request passes only if `full_at ≤ now × L + (L − cost) × W`, and then
//!   sets `full_at = max(full_at, now × L) + cost × W ≤ now × L + L × W`; a
//!   denied request (or a cost of 0) leaves it; so a decided state never
//!   holds more than `(u64::MAX + W) × L`;
//! - a loaded state (`import`, `Rule::decode_state`) is accepted up to
//!   `(u64::MAX + 2W) × L`, and deciding on it keeps it within that bound.
//!
//! So when `(u64::MAX + 2W) × L < 2^96` ([`fits`]), every full time the
//! table can ever hold is 96 bits: [`CompactToken`] keeps it in 12 bytes
//! (alignment 1) beside the key's 4 bytes of marks, and a `u64` key's slot
//! is 24 bytes. That covers every limit below 2^31 with a window up to
//! about 2^63 ns (292 years), and limits up to 2^32 − 1 with windows of a
//! few seconds; the table of any other rule keeps the 16-byte state
//! (`keyed/tables.rs` chooses at construction). Each call loads the 96 bits
//! into a [`TokenBucketState`], runs the algorithm's own `decide_one`,
//! `admit_one` or `is_idle` on it, and stores it back: two loads and two
//! stores, no arithmetic, so every decision is the wide table's.

use super::kind::Kind;
use super::slot::{Held, Marks};
use crate::algorithms::{RateAlgorithm, ScaledTime, TokenBucket, TokenBucketState};
use crate::rule::{Admission, AdmitOne, DecideOne};
use crate::state_kinds::Inline;
use crate::{Decision, KeyState, Mode, Rate, Rule};

/// The largest full time a [`CompactToken`] holds: 96 bits.
const MOST: u128 = (1 << 96) - 1;

/// Whether every full time a token bucket of `limit` per `window` ns can
/// hold, decided or loaded (see the module), fits in 96 bits.
pub(crate) fn fits(limit: u64, window: u64) -> bool {
    u128::from(window)
        .checked_mul(2)
        .and_then(|two_windows| two_windows.checked_add(u128::from(u64::MAX)))
        .and_then(|latest| latest.checked_mul(u128::from(limit)))
        .is_some_and(|most| most <= MOST)
}

/// A single-rate token bucket whose full times all fit in 96 bits: its
/// table holds [`CompactToken`]s.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompactTokenBucket(TokenBucket);

impl CompactTokenBucket {
    /// `engine` (the bucket of `rate`) with a compact table, if its full
    /// times fit ([`fits`]).
    pub fn new(engine: TokenBucket, rate: &Rate) -> Option<CompactTokenBucket> {
        fits(rate.limit(), rate.window_nanos()).then_some(CompactTokenBucket(engine))
    }
}

/// A token bucket's full time in 96 bits and the key's marks: 16 bytes,
/// alignment 1 (the low 64 bits first, so that a `u64` key's slot reads
/// them at an aligned offset).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CompactToken {
    low: [u8; 8],
    high: [u8; 4],
    marks: Marks,
}

impl CompactToken {
    /// The state held.
    #[inline(always)]
    pub fn get(&self) -> TokenBucketState {
        TokenBucketState {
            full_at: ScaledTime([
                u64::from(u32::from_le_bytes(self.high)),
                u64::from_le_bytes(self.low),
            ]),
        }
    }

    /// Holds `state`, whose full time the table's bound keeps within 96 bits.
    #[inline(always)]
    pub fn put(&mut self, state: TokenBucketState) {
        let [high, low] = state.full_at.0;
        debug_assert!(high <= u64::from(u32::MAX), "a full time past 96 bits");
        self.low = low.to_le_bytes();
        self.high = (high as u32).to_le_bytes();
    }

    /// `state`, unmarked, if its full time fits in 96 bits.
    pub fn new(state: TokenBucketState) -> Option<CompactToken> {
        let mut compact = CompactToken::default();
        (state.full_at.get() <= MOST).then(|| {
            compact.put(state);
            compact
        })
    }
}

impl Held for CompactToken {
    #[inline(always)]
    fn marks(&mut self) -> &mut Marks {
        &mut self.marks
    }
}

/// The token bucket's own functions, on the state loaded from 96 bits and
/// stored back.
impl Kind for CompactTokenBucket {
    type Held = CompactToken;

    #[inline(always)]
    fn fresh(&self) -> CompactToken {
        CompactToken::default()
    }

    #[inline(always)]
    fn decide(
        &self,
        held: &mut CompactToken,
        now: u64,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> Decision {
        let mut state = held.get();
        let decision = self.0.decide_one(&mut state, now, cost, mode);
        held.put(state);
        each(decision);
        decision
    }

    #[inline(always)]
    fn admit(&self, held: &mut CompactToken, now: u64, cost: u64) -> Admission {
        let mut state = held.get();
        let admission = self.0.admit_one(&mut state, now, cost);
        held.put(state);
        admission
    }

    #[inline(always)]
    fn is_idle(&self, held: &mut CompactToken, now: u64) -> bool {
        RateAlgorithm::is_idle(&self.0, &mut held.get(), now)
    }

    fn used_permille(&self, rule: &Rule, held: &mut CompactToken, now: u64) -> u16 {
        let mut state = TokenBucket::into_key_state(held.get());
        let used = rule.used_permille(&mut state, now);
        held.put(TokenBucket::from_key_state(state).unwrap_or_default());
        used
    }

    fn heap_bytes(&self, held: &CompactToken) -> usize {
        <TokenBucket as RateAlgorithm>::heap_bytes(&held.get())
    }

    fn encode(&self, rule: &Rule, held: &CompactToken) -> Vec<u64> {
        rule.encode_state(&TokenBucket::into_key_state(held.get()))
    }

    fn load(&self, state: KeyState) -> Option<CompactToken> {
        // Always fits: the rule's decoder bounds a loaded full time by
        // `(u64::MAX + 2W) × L`, which [`fits`] checked.
        TokenBucket::from_key_state(state).and_then(CompactToken::new)
    }
}
