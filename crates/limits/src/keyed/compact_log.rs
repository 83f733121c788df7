//! A sliding log's key in a 24-byte slot, its entries in the shard's arena
//! (issue 9: memory at 1M keys, 36 + 8 bytes per logged request).
//!
//! The wide table's slot is 40 bytes for a `u64` key (the state is a
//! ring's pointer, head and length, 24 bytes), and a key of two entries or
//! more holds a malloc chunk of its own: 8 bytes of header and the chunk's
//! rounding beside its entries. Here the state is 12 bytes beside the
//! key's marks ([`LogHeld`], as the other compact tables'): one entry
//! inline, or a handle to a ring in the shard's [`Arenas`] (a `u32` offset,
//! the head, the length, the size's class), whose blocks are the entries
//! alone, of 2, 3, 4, 6, 8, 12, ... entries (powers of two in one arena,
//! three times them in the other). So a key costs its slot and 8 bytes per
//! entry held, rounded up to the next of those sizes from the second entry
//! (at most half again the entries).
//!
//! Every function is the algorithm's own (`SlidingLog::decide_log`,
//! `is_idle_log`, ...), on a view of the handle and the arena
//! (`keyed/log_view.rs`): the decisions are the wide table's. A rule
//! whose L does not fit the handle's length (27 bits) keeps the wide
//! table (`keyed/tables.rs` chooses). The arena is the shard's, so a key
//! leaving the shard (dropped idle, swept, evicted, replaced on import)
//! gives its ring back through [`Held::release`]; export reads the rings,
//! import writes them.

use super::kind::Kind;
use super::log_arenas::Arenas;
use super::log_view::{shape, Handle, View};
use super::slot::{Held, Marks};
use crate::algorithms::{SlidingLog, SlidingLogState};
use crate::state_kinds::Inline;
use crate::{Decision, KeyState, Mode, Rule};

/// The bits of the length; the class takes the 5 above them.
const LEN_BITS: u32 = 27;

/// The longest log a handle holds.
const LEN_MASK: u32 = (1 << LEN_BITS) - 1;

/// A ring's head word's top bit: the ring is in the arena of threes (its
/// head is below its size, at most 2^27).
const THREE: u32 = 31;

/// A single-rate sliding log whose L fits a handle: its table holds
/// [`LogHeld`] states.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompactLog(SlidingLog);

impl CompactLog {
    /// `engine` (the one rate of `rule`) with a compact table, if its logs
    /// fit a handle (L below 2^27).
    pub fn new(engine: SlidingLog, _rule: &Rule) -> Option<CompactLog> {
        (engine.limit() <= u64::from(LEN_MASK)).then_some(CompactLog(engine))
    }
}

/// A log's handle in 12 bytes and the key's marks: 16 bytes, alignment 1.
/// `at` and `head` are the ring's offset and head, or the inline entry's
/// low and high halves; `high` the length and (above it) the class; a
/// ring's `head` has its family in its top bit ([`THREE`]). Each field is
/// read and written whole, with no branch on the shape.
/// Not `Clone`: two copies of a handle would give its ring back twice.
#[repr(C)]
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LogHeld {
    at: [u8; 4],
    head: [u8; 4],
    high: [u8; 4],
    marks: Marks,
}

impl LogHeld {
    /// The handle held.
    #[inline(always)]
    fn handle(&self) -> Handle {
        let high = u32::from_le_bytes(self.high);
        let class = high >> LEN_BITS;
        let head = u32::from_le_bytes(self.head);
        // Inline (class 0), the head word is the entry's high half.
        let three = (head >> THREE) & u32::from(class != 0);
        Handle::new(
            u32::from_le_bytes(self.at),
            head ^ (three << THREE),
            high & LEN_MASK,
            class,
            three,
        )
    }

    /// The handle held, known to be a ring's: its family read without
    /// testing the shape.
    #[inline(always)]
    fn ring_handle(&self) -> Handle {
        let high = u32::from_le_bytes(self.high);
        let head = u32::from_le_bytes(self.head);
        Handle::new(
            u32::from_le_bytes(self.at),
            head & !(1 << THREE),
            high & LEN_MASK,
            high >> LEN_BITS,
            head >> THREE,
        )
    }

    /// Whether the log is a ring.
    #[inline(always)]
    fn is_ring(&self) -> bool {
        u32::from_le_bytes(self.high) >> LEN_BITS != 0
    }

    /// Holds `h` (whose length fits: at most L).
    #[inline(always)]
    fn set(&mut self, h: Handle) {
        self.at = h.at.to_le_bytes();
        self.head = (h.head | (h.three << THREE)).to_le_bytes();
        self.high = (h.len | (h.class << LEN_BITS)).to_le_bytes();
    }
}

impl Held for LogHeld {
    type Store = Arenas;

    #[inline(always)]
    fn marks(&mut self) -> &mut Marks {
        &mut self.marks
    }

    /// Gives the ring back; the log is left empty.
    #[inline(always)]
    fn release(&mut self, arenas: &mut Arenas) {
        let h = self.handle();
        if h.class != 0 {
            arenas.pick(h.three).0.release(h.at, h.block());
        }
        self.set(Handle::inline(0, 0));
    }

    fn store_bytes(arenas: &Arenas) -> usize {
        arenas.bytes()
    }
}

/// Runs `$body` with `$view` bound to a view of `$held` in `$arena`, the
/// shape chosen once, and stores the handle back.
macro_rules! with_view {
    ($held:expr, $arena:expr, |$view:ident| $body:expr) => {{
        let held: &mut LogHeld = $held;
        if held.is_ring() {
            let h = held.ring_handle();
            let mut $view = View::<true>::new($arena, h);
            let out = $body;
            held.set($view.h);
            out
        } else {
            // Inline: the head word is the entry's high half (family 0).
            let h = held.handle();
            let mut $view = View::<false>::new($arena, h);
            let out = $body;
            held.set($view.h);
            out
        }
    }};
}

impl Kind for CompactLog {
    type Held = LogHeld;

    #[inline(always)]
    fn fresh(&self) -> LogHeld {
        // Inline and empty: all zeros.
        LogHeld::default()
    }

    #[inline(always)]
    fn decide(
        &self,
        held: &mut LogHeld,
        arena: &mut Arenas,
        now: u64,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> Decision {
        let decision = with_view!(held, arena, |view| self
            .0
            .decide_log(&mut view, now, cost, mode));
        each(decision);
        decision
    }

    /// The newest entry read, nothing written (as `SlidingLog::is_idle`).
    #[inline(always)]
    fn is_idle(&self, held: &mut LogHeld, arena: &mut Arenas, now: u64) -> bool {
        let h = held.handle();
        let view = View::<false>::new(arena, h);
        self.0.is_idle_log(&view, now)
    }

    fn used_permille(&self, _rule: &Rule, held: &mut LogHeld, arena: &mut Arenas, now: u64) -> u16 {
        with_view!(held, arena, |view| self.0.used_permille_log(&mut view, now))
    }

    fn heap_bytes(&self, _held: &LogHeld) -> usize {
        // The rings are the arena's, counted once per shard.
        0
    }

    fn encode(&self, rule: &Rule, held: &LogHeld, arena: &Arenas) -> Vec<u64> {
        let h = held.handle();
        let log: SlidingLogState = (0..h.len as usize).map(|i| h.entry(arena, i)).collect();
        rule.encode_state(&SlidingLog::into_key_state(log))
    }

    fn load(&self, state: KeyState, arena: &mut Arenas) -> Option<LogHeld> {
        let log = SlidingLog::from_key_state(state)?;
        let len = u32::try_from(log.len()).ok().filter(|&n| n <= LEN_MASK)?;
        let mut held = LogHeld::default();
        if len <= 1 {
            held.set(Handle::inline(log.front().unwrap_or(0), len));
            return Some(held);
        }
        let (class, three) = shape(log.len());
        let here = arena.pick(three).0;
        let at = here.alloc(class - three);
        for (i, entry) in log.iter().enumerate() {
            here.entries[at as usize + i] = entry;
        }
        held.set(Handle::new(at, 0, len, class, three));
        Some(held)
    }
}

// A `u64` key's slot: the key, the handle and the marks.
const _: () = assert!(std::mem::size_of::<super::slot::Slot<u64, LogHeld>>() == 24);

#[cfg(test)]
mod tests {
    use super::{CompactLog, Kind, LogHeld};
    use crate::algorithms::SlidingLog;
    use crate::keyed::log_arenas::Arenas;
    use crate::{Algorithm, Mode, Rate, Rule};
    use std::time::Duration;

    /// The eviction's weight of a key (`used_permille`) and its idle test
    /// are the rule's on the same log, for logs inline and in rings of
    /// every size up to L, at times before, inside and past the window.
    #[test]
    fn used_share_and_idle_are_the_rule_s() {
        for limit in [1u64, 2, 3, 7, 16, 33] {
            let rate = Rate::new(limit, Duration::from_nanos(1_000)).unwrap();
            let rule = Rule::new(Algorithm::SlidingLog, rate.into());
            let compact = CompactLog::new(SlidingLog::new(rate), &rule).unwrap();
            // The log of `n` entries, in a table's arena and as the rule's.
            let make = |n: u64| {
                let (mut arena, mut held) = (Arenas::default(), LogHeld::default());
                let mut state = rule.new_state();
                for i in 0..n {
                    let t = 100 + i * 37;
                    compact.decide(&mut held, &mut arena, t, 1, Mode::Record, |_| {});
                    rule.decide(&mut state, t, 1, Mode::Record, |_| {});
                }
                (arena, held, state)
            };
            for n in 0..=limit {
                for now in [0, 150, 900, 1_099, 1_100 + n * 37, 5_000] {
                    let (mut arena, mut held, mut state) = make(n);
                    let idle = rule.is_idle(&mut state.clone(), now);
                    assert_eq!(compact.is_idle(&mut held, &mut arena, now), idle);
                    let want = rule.used_permille(&mut state, now);
                    let got = compact.used_permille(&rule, &mut held, &mut arena, now);
                    assert_eq!(got, want, "L {limit}, {n} entries, at {now}");
                    let words = compact.encode(&rule, &held, &arena);
                    assert_eq!(rule.encode_state(&state), words);
                }
            }
        }
    }
}
