//! The limiter's shards, typed by what the rule keeps per key:
//! a single-rate rule's shards hold its algorithm's state alone, sized for
//! it, and a rule of several rates its whole [`KeyState`] (see
//! `keyed/kind.rs`). The rule is chosen at run time, so the limiter holds
//! one variant of [`Tables`] and every entry point matches it once
//! ([`with_table!`]), running a copy of its code compiled for that kind:
//! the one dispatch replaces the rule's match of its algorithm against the
//! state's kind that each decision made before. A token bucket, leaky
//! bucket, fixed window or sliding window whose states the rule bounds to
//! 12 bytes gets a compact table (`keyed/compact.rs`,
//! `keyed/compact_window.rs`: a 24-byte slot for a `u64` key); any other
//! its whole state's (a sliding log's: up to two entries inline, or a ring).

use super::Padded;
use super::compact::{Compact, FixedPacking, LeakyPacking, PackedState, TokenPacking};
use super::compact_window::WindowPacking;
use super::shard::Shard;
use super::slot::{Held, Marked};
use crate::algorithms::{
    FixedWindow, LeakyBucket, NoLimit, RateAlgorithm, SlidingLog, SlidingWindow, SmoothedRate,
    TokenBucket,
};
use crate::state_kinds::Engines;
use crate::{KeyState, Rule};
use foldhash::fast::RandomState;
use parking_lot::Mutex;
use std::hash::Hash;

/// A limiter's shards, each behind its own mutex.
pub(crate) type Shards<K, H> = Box<[Padded<Mutex<Shard<K, H>>>]>;

/// The shards of one algorithm's single-rate rule, with that algorithm.
type Typed<K, A> = (A, Shards<K, Marked<<A as RateAlgorithm>::State>>);

/// The shards of a single-rate rule whose states are packed in 12 bytes,
/// as `P` packs them.
type PackedTable<K, P> = (Compact<P>, Shards<K, PackedState>);

/// The shards, of the kind the rule keeps per key.
pub(crate) enum Tables<K> {
    None(Typed<K, NoLimit>),
    Fixed(Typed<K, FixedWindow>),
    Log(Typed<K, SlidingLog>),
    Token(Typed<K, TokenBucket>),
    /// A token bucket whose full times fit in 96 bits.
    PackedToken(PackedTable<K, TokenPacking>),
    /// A fixed window whose counts fit in 32 bits.
    PackedFixed(PackedTable<K, FixedPacking>),
    /// A leaky bucket whose queue ends fit in 96 bits.
    PackedLeaky(PackedTable<K, LeakyPacking>),
    /// A sliding window whose index and two counts fit in 96 bits.
    PackedWindow(PackedTable<K, WindowPacking>),
    Window(Typed<K, SlidingWindow>),
    Leaky(Typed<K, LeakyBucket>),
    Smoothed(Typed<K, SmoothedRate>),
    /// A rule of several rates: its whole state per key.
    Many(Shards<K, Marked<KeyState>>),
}

impl<K: Hash> Tables<K> {
    /// `count` empty shards for `rule`, hashing keys with `hasher`.
    pub fn new(rule: &Rule, count: usize, hasher: &RandomState) -> Tables<K> {
        fn shards<K: Hash, H: Held>(count: usize, hasher: &RandomState) -> Shards<K, H> {
            (0..count)
                .map(|_| Padded(Mutex::new(Shard::new(hasher.clone()))))
                .collect()
        }
        let n = count;
        let h = hasher;
        match rule.engines() {
            Engines::None(e) if e.len() == 1 => Tables::None((e[0], shards(n, h))),
            Engines::Fixed(e) if e.len() == 1 => match Compact::new(e[0], rule) {
                Some(compact) => Tables::PackedFixed((compact, shards(n, h))),
                None => Tables::Fixed((e[0], shards(n, h))),
            },
            Engines::Log(e) if e.len() == 1 => Tables::Log((e[0], shards(n, h))),
            Engines::Token(e) if e.len() == 1 => match Compact::new(e[0], rule) {
                Some(compact) => Tables::PackedToken((compact, shards(n, h))),
                None => Tables::Token((e[0], shards(n, h))),
            },
            Engines::Window(e) if e.len() == 1 => match Compact::new(e[0], rule) {
                Some(compact) => Tables::PackedWindow((compact, shards(n, h))),
                None => Tables::Window((e[0], shards(n, h))),
            },
            Engines::Leaky(e) if e.len() == 1 => match Compact::new(e[0], rule) {
                Some(compact) => Tables::PackedLeaky((compact, shards(n, h))),
                None => Tables::Leaky((e[0], shards(n, h))),
            },
            Engines::Smoothed(e) if e.len() == 1 => Tables::Smoothed((e[0], shards(n, h))),
            // Every kind listed, so that a new one is a compile error here.
            Engines::None(_)
            | Engines::Fixed(_)
            | Engines::Log(_)
            | Engines::Token(_)
            | Engines::Window(_)
            | Engines::Leaky(_)
            | Engines::Smoothed(_) => Tables::Many(shards(n, h)),
        }
    }
}

/// Runs `$body` with `$kind` bound to the limiter's [`Kind`](super::kind::Kind)
/// (its single-rate algorithm, or its whole rule) and `$shards` to its
/// shards of that kind: one match per call, `$body` compiled per kind.
macro_rules! with_table {
    ($limiter:expr, |$kind:ident, $shards:ident| $body:expr) => {{
        use $crate::keyed::tables::Tables;
        let limiter = $limiter;
        match &limiter.tables {
            Tables::None((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::Fixed((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::Log((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::Token((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::PackedToken((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::PackedFixed((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::PackedLeaky((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::PackedWindow((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::Window((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::Leaky((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::Smoothed((engine, $shards)) => {
                let $kind = engine;
                $body
            }
            Tables::Many($shards) => {
                let $kind = &$crate::keyed::kind::AnyRule(&limiter.rule);
                $body
            }
        }
    }};
}
pub(crate) use with_table;
