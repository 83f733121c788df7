//! The sliding window's state (a window index and two counts, 24 bytes) in
//! 12 bytes, when the rule bounds it there: a `u64` key's slot of
//! 24 bytes in place of 40, exactly.
//!
//! Both counts stay at most the limit L: a request is counted only if the
//! current count and its cost fit under L (`decide_one`), the
//! previous count is a current one rolled over, and the decoder loads
//! neither above L. The index is at most `u64::MAX / W`: `advance` sets it
//! to `now / W`, the roll moves it one window on only once `now` is there,
//! and the decoder loads only windows that start within time. So with `b`
//! the bits of L and `n` those of `u64::MAX / W`, every state of the rule
//! fits in `n + 2b` bits, and [`WindowPacking`] takes every rule with `n +
//! 2b <= 96` (any window for L below 2^16; a window of 1 s with L below
//! 2^30, 1 ms below 2^25, 1 minute below 2^33): the current count in bits
//! `[0, b)`, the previous in `[b, 2b)`, the index in the top `n`, `[96 -
//! n, 96)`; each field one or two shifts and a mask away (no shift of 64
//! or more, no branch).

use super::compact::{PackedState, Packing};
use crate::Rule;
use crate::algorithms::RateAlgorithm;
use crate::algorithms::{SlidingWindow, SlidingWindowState};

/// The bits of `x`: 0 for 0.
fn bits(x: u64) -> u32 {
    u64::BITS - x.leading_zeros()
}

/// The rule's one rate as `(bits of L, bits of u64::MAX / W)`.
fn widths(rule: &Rule) -> Option<(u32, u32)> {
    let rate = rule.rates().as_slice().first()?;
    Some((bits(rate.limit()), bits(u64::MAX / rate.window_nanos())))
}

/// Where a rule's sliding-window fields lie in 96 bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WindowPacking {
    /// `b`, the bits of the limit: the counts' width (at most 47).
    count_bits: u32,
    /// `2^b - 1`.
    mask: u64,
    /// `64 - n`: the index's shift within the top 64 of the 96 bits.
    index_shift: u32,
}

impl Packing for WindowPacking {
    type Engine = SlidingWindow;

    const IDLE_MOVES: bool = true;

    fn new(rule: &Rule) -> Option<WindowPacking> {
        let (count_bits, index_bits) = widths(rule)?;
        (index_bits + 2 * count_bits <= 96).then(|| WindowPacking {
            count_bits,
            mask: (1u64 << count_bits) - 1,
            index_shift: u64::BITS - index_bits,
        })
    }

    fn fits_state(self, state: &SlidingWindowState) -> bool {
        state.index <= u64::MAX >> self.index_shift
            && state.previous <= self.mask
            && state.current <= self.mask
    }

    #[inline]
    fn pack(self, state: &SlidingWindowState) -> (u64, u32) {
        debug_assert!(self.fits_state(state), "a state past its layout");
        let top = state.index << (self.index_shift & 63);
        let x = u128::from(state.current)
            | u128::from(state.previous) << (self.count_bits & 63)
            | u128::from(top) << 32;
        (x as u64, (x >> 64) as u32)
    }

    #[inline]
    fn unpack(self, low: u64, high: u32) -> SlidingWindowState {
        let x = u128::from(low) | u128::from(high) << 64;
        SlidingWindowState {
            index: ((x >> 32) as u64) >> (self.index_shift & 63),
            previous: (x >> (self.count_bits & 63)) as u64 & self.mask,
            current: low & self.mask,
        }
    }

    /// Stores the state back only if the roll moved it (the sweep tests
    /// keys that are mostly still in their window).
    #[inline]
    fn is_idle(self, engine: &SlidingWindow, held: &mut PackedState, now: u64) -> bool {
        let mut state = self.load(held);
        let index = state.index;
        let idle = RateAlgorithm::is_idle(engine, &mut state, now);
        // The roll moves the index whenever it moves anything.
        if state.index != index {
            self.store(held, &state);
        }
        idle
    }
}
