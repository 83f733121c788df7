//! A limiter in a fixed amount of memory, whatever the number of keys: a
//! count-min sketch whose cells are sliding-window counters.
//!
//! The memory is cut into shards (each behind its own mutex), each shard
//! into `rows` rows of cells, one cell per rate of the rule. A key hashes
//! to one shard and to one cell in each of its rows. Every cell a key maps
//! to has counted every request the key was admitted, and perhaps other
//! keys' requests too (collisions only add), so the least of its cells'
//! counts is at least the key's own. A decision takes that least state,
//! decides on it with the sliding-window counter's own arithmetic
//! ([`Rule::decide_timed`]), then raises each of the key's cells to the
//! state the decision left, and no further (the conservative update: a
//! cell grows only as far as this key needs).
//!
//! What follows, and what the tests check:
//!
//! - **One-sided.** It never admits a request that the sliding-window
//!   counter over the key's own admitted requests would deny: its only
//!   errors are false denials, where another key's requests were counted.
//! - **Bounded.** With `w` cells per row in a shard and `N` units admitted
//!   in that shard over the current and previous window, a key's estimate
//!   is over its own by more than `e / w * N` with probability at most
//!   `e^-rows` (each row's excess has mean at most `N / w`: Markov's
//!   inequality, then independent rows).
//! - **Exact while roomy.** A key whose cells hold no other key's counts
//!   is decided exactly as [`KeyedLimiter`](crate::KeyedLimiter) decides it.
//!
//! A sketch cannot give back what it counted (a refund could lower a cell
//! below another key's count), so it does not settle.
//!
//! ```
//! use limits::{Algorithm, ManualClock, Rule, Sketch, SketchOptions};
//!
//! let rule = Rule::new(Algorithm::SlidingWindow, "2/s".parse().unwrap());
//! let sketch = Sketch::with_clock(rule, SketchOptions::new(1 << 20), ManualClock::new(0)).unwrap();
//! assert!(sketch.check("203.0.113.7", 1).allowed);
//! assert!(sketch.check("203.0.113.7", 1).allowed);
//! assert!(!sketch.check("203.0.113.7", 1).allowed);
//! assert!(sketch.check("198.51.100.1", 1).allowed, "another key, other cells");
//! assert_eq!(sketch.memory(), 1 << 20, "whatever the number of keys");
//! ```

mod store;

use crate::algorithms::{SlidingWindow, SlidingWindowState};
use crate::shards::Padded;
use crate::state_kinds::{ManyStates, StateKind};
use crate::{Algorithm, Clock, Decision, KeyState, Mode, Rule, SystemClock, UnsupportedRule};
use foldhash::fast::{FixedState, RandomState};
use parking_lot::Mutex;
use std::hash::{BuildHasher, Hash};

/// The fewest cells per row a shard is given before the sketch uses fewer
/// shards: a shard's error bound grows as its rows narrow.
const MIN_COLUMNS: usize = 1024;

/// How large a sketch is and how it hashes.
///
/// ```
/// use limits::SketchOptions;
///
/// let options = SketchOptions { rows: 3, seed: Some(7), ..SketchOptions::new(16 << 20) };
/// assert_eq!(options.memory, 16 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SketchOptions {
    /// Bytes of cells, the whole of what the sketch keeps per key.
    pub memory: usize,
    /// Cells each key maps to (d): each row more makes a large error
    /// `e` times less likely, and costs a cell more per decision.
    /// Defaults to 4.
    pub rows: usize,
    /// Shards, each behind its own mutex, rounded down to a power of two;
    /// fewer are used where a shard would get fewer than 1,024 cells per
    /// row. Defaults to four per core, as [`Options`](crate::Options).
    pub shards: usize,
    /// The hash's seed: `None` for a random one (what a server wants, so
    /// that nobody can pick keys that collide with a victim's), `Some`
    /// for the same cells on every run.
    pub seed: Option<u64>,
}

impl SketchOptions {
    /// The most rows a sketch has: each decision touches one cell per row.
    pub const MAX_ROWS: usize = 16;

    /// `memory` bytes, with the default rows and shards and a random seed.
    pub fn new(memory: usize) -> SketchOptions {
        SketchOptions {
            memory,
            rows: 4,
            shards: crate::shards::default_count(),
            seed: None,
        }
    }
}

/// One rate's counts in one cell: a [`SlidingWindowState`] whose counts
/// fit 32 bits (a sketch refuses larger limits), in 16 bytes.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    index: u64,
    previous: u32,
    current: u32,
}

impl Cell {
    fn state(self) -> SlidingWindowState {
        SlidingWindowState {
            index: self.index,
            previous: u64::from(self.previous),
            current: u64::from(self.current),
        }
    }

    fn set(&mut self, s: SlidingWindowState) {
        // Counts stay within the limit, which fits (`Sketch::with_clock`).
        *self = Cell {
            index: s.index,
            previous: u32::try_from(s.previous).unwrap_or(u32::MAX),
            current: u32::try_from(s.current).unwrap_or(u32::MAX),
        };
    }
}

/// A shard: its cells, `rows * columns * rates` of them (a key's cells for
/// every rate side by side), and the state a decision is made on.
struct Shard {
    cells: Box<[Cell]>,
    least: KeyState,
}

/// The hash a key's cells are found by.
enum Hasher {
    Random(RandomState),
    Seeded(FixedState),
}

impl Hasher {
    fn hash<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        match self {
            Hasher::Random(h) => h.hash_one(key),
            Hasher::Seeded(h) => h.hash_one(key),
        }
    }
}

/// A sliding-window-counter limiter in fixed memory: see the
/// [module](self) for what it promises.
///
/// ```
/// use limits::{Algorithm, ManualClock, Rule, Sketch, SketchOptions};
///
/// let clock = ManualClock::new(0);
/// let rule = Rule::new(Algorithm::SlidingWindow, "1/s".parse().unwrap());
/// let sketch = Sketch::with_clock(rule, SketchOptions::new(64 << 10), clock.clone()).unwrap();
/// let first = sketch.check("alice", 1);
/// let denied = sketch.check("alice", 1);
/// assert!(first.allowed && !denied.allowed);
/// clock.advance(denied.retry_after.duration().unwrap());
/// assert!(sketch.check("alice", 1).allowed);
/// ```
pub struct Sketch<C = SystemClock> {
    rule: Rule,
    windows: Box<[SlidingWindow]>,
    clock: C,
    hasher: Hasher,
    shards: Box<[Padded<Mutex<Shard>>]>,
    shard_shift: u32,
    rows: usize,
    columns: usize,
}

impl<C> std::fmt::Debug for Sketch<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sketch")
            .field("rule", &self.rule)
            .field("shards", &self.shards.len())
            .field("rows", &self.rows)
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

impl Sketch {
    /// A sketch for `rule` on the system clock.
    pub fn new(rule: Rule, options: SketchOptions) -> Result<Sketch, UnsupportedRule> {
        Sketch::with_clock(rule, options, SystemClock::new())
    }
}

impl<C: Clock> Sketch<C> {
    /// A sketch for `rule` on `clock`, or why it cannot be one: the rule
    /// is not a sliding-window counter, a limit does not fit a cell's 32
    /// bits, or the memory holds less than one cell per row.
    ///
    /// ```
    /// use limits::{Algorithm, Rule, Sketch, SketchOptions};
    ///
    /// let log = Rule::new(Algorithm::SlidingLog, "10/s".parse().unwrap());
    /// let refused = Sketch::new(log, SketchOptions::new(1 << 20)).err().unwrap();
    /// assert!(refused.to_string().contains("sliding-window"));
    /// ```
    pub fn with_clock(
        rule: Rule,
        options: SketchOptions,
        clock: C,
    ) -> Result<Self, UnsupportedRule> {
        if rule.algorithm() != Algorithm::SlidingWindow {
            return Err(UnsupportedRule(format!(
                "a sketch keeps sliding-window counters, not the {} limiter's state",
                rule.algorithm()
            )));
        }
        if let Some(rate) = rule
            .rates()
            .iter()
            .find(|r| r.limit() > u64::from(u32::MAX))
        {
            return Err(UnsupportedRule(format!(
                "a sketch's cells count to {}; the limit of {rate} is larger",
                u32::MAX
            )));
        }
        if !(1..=SketchOptions::MAX_ROWS).contains(&options.rows) {
            return Err(UnsupportedRule(format!(
                "a sketch has 1 to {} rows, not {}",
                SketchOptions::MAX_ROWS,
                options.rows
            )));
        }
        let rates = rule.rates().len();
        let per_column = options.rows * rates * size_of::<Cell>();
        let mut shards = options.shards.clamp(1, 1 << 16);
        shards = 1 << shards.ilog2();
        while shards > 1 && options.memory / (shards * per_column) < MIN_COLUMNS {
            shards /= 2;
        }
        let columns = options.memory / (shards * per_column);
        if columns == 0 {
            return Err(UnsupportedRule(format!(
                "a sketch of {} bytes holds less than one cell per row: it needs at least {per_column} \
                 ({} rows of {rates} rates, {} bytes a cell)",
                options.memory,
                options.rows,
                size_of::<Cell>()
            )));
        }
        let shard = || {
            Padded(Mutex::new(Shard {
                cells: vec![Cell::default(); options.rows * columns * rates].into_boxed_slice(),
                least: rule.new_state(),
            }))
        };
        let shards = (0..shards).map(|_| shard()).collect::<Box<[_]>>();
        Ok(Sketch {
            windows: rule
                .rates()
                .iter()
                .map(|&r| SlidingWindow::new(r))
                .collect(),
            rule,
            clock,
            hasher: match options.seed {
                Some(seed) => Hasher::Seeded(FixedState::with_seed(seed)),
                None => Hasher::Random(RandomState::default()),
            },
            shard_shift: 64 - shards.len().ilog2(),
            shards,
            rows: options.rows,
            columns,
        })
    }

    /// The rule decided.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Bytes of cells: fixed when the sketch is made, whatever the keys
    /// (at most [`SketchOptions::memory`]).
    pub fn memory(&self) -> usize {
        self.shards.len() * self.rows * self.columns * self.windows.len() * size_of::<Cell>()
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Rows (cells per key and rate).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Cells per row in one shard: `w` in the error bound, which each key
    /// meets against its own shard's traffic.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Decides a request of `cost` for `key` now, recording it if allowed.
    pub fn check<K: Hash + ?Sized>(&self, key: &K, cost: u64) -> Decision {
        self.decide(key, None, cost, Mode::Record, |_| {}).0
    }

    /// [`check`](Sketch::check) at `now` (nanoseconds on the clock's scale).
    pub fn check_at<K: Hash + ?Sized>(&self, key: &K, now: u64, cost: u64) -> Decision {
        self.decide(key, Some(now), cost, Mode::Record, |_| {}).0
    }

    /// What a check would answer at `now`, recording nothing.
    pub fn peek_at<K: Hash + ?Sized>(&self, key: &K, now: u64, cost: u64) -> Decision {
        self.decide(key, Some(now), cost, Mode::Peek, |_| {}).0
    }

    /// Decides at `now` (or the clock's time), calling `each` with every
    /// rate's decision; the combined decision and the time it decided at
    /// (a key's cells never go back in time).
    pub fn decide<K: Hash + ?Sized>(
        &self,
        key: &K,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
    ) -> (Decision, u64) {
        let hash = self.hasher.hash(key);
        let shard = &self.shards
            [usize::try_from(hash.checked_shr(self.shard_shift).unwrap_or(0)).unwrap_or(0)];
        let mut cells = [0usize; SketchOptions::MAX_ROWS];
        let rates = self.windows.len();
        for (row, at) in cells[..self.rows].iter_mut().enumerate() {
            *at = (row * self.columns + self.column(hash, row)) * rates;
        }
        let cells = &cells[..self.rows];
        let mut shard = shard.0.lock();
        let now = now.unwrap_or_else(|| self.clock.now());
        let Shard { cells: all, least } = &mut *shard;
        let rates = self.windows.iter().zip(self.rule.rates().iter());
        for ((r, (window, rate)), least) in rates.enumerate().zip(windows_mut(least)) {
            let cells = cells.iter().map(|&c| c + r);
            *least = least_state(window, rate.window_nanos(), all, cells, now);
        }
        let decided = self.rule.decide_timed(least, now, cost, mode, each);
        for (r, least) in windows_mut(least).iter().enumerate() {
            for &c in cells {
                raise(&mut all[c + r], least);
            }
        }
        decided
    }

    /// The key's cell in `row`: the hash mixed with the row's number
    /// (rows as independent as one hash makes them), then scaled to the
    /// row's width by a multiplication, not a division.
    fn column(&self, hash: u64, row: usize) -> usize {
        let mixed = mix(hash ^ (row as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        ((u128::from(mixed) * self.columns as u128) >> 64) as usize
    }
}

/// The least of the cells' states, each rolled on to the window of `now`
/// and to the latest window any of them is in (a cell a later decision
/// rolled on).
fn least_state(
    window: &SlidingWindow,
    window_nanos: u64,
    all: &mut [Cell],
    cells: impl Iterator<Item = usize> + Clone,
    now: u64,
) -> SlidingWindowState {
    let latest = cells
        .clone()
        .map(|c| all[c].index)
        .fold(now / window_nanos, u64::max);
    let mut least = SlidingWindowState {
        index: latest,
        previous: u64::MAX,
        current: u64::MAX,
    };
    for c in cells {
        let mut s = all[c].state();
        window.roll_to(&mut s, latest);
        all[c].set(s);
        least.previous = least.previous.min(s.previous);
        least.current = least.current.min(s.current);
    }
    least
}

/// Raises a cell to a state decided on its least: each count to at least
/// the key's, no further. (The cell is in the least state's window:
/// `least_state` brought it there, and the decision moved neither.)
fn raise(cell: &mut Cell, least: &SlidingWindowState) {
    let mut s = cell.state();
    s.previous = s.previous.max(least.previous);
    s.current = s.current.max(least.current);
    cell.set(s);
}

/// The sliding-window states of a sketch's rule's state (every rate's).
fn windows_mut(state: &mut KeyState) -> &mut [SlidingWindowState] {
    match &mut state.0 {
        StateKind::Window(one) => std::slice::from_mut(one),
        StateKind::Many(many) => match &mut **many {
            ManyStates::Window(all) => all,
            _ => &mut [],
        },
        _ => &mut [],
    }
}

/// A 64-bit finalizer (splitmix64's): every input bit moves every output
/// bit, so rows mixed from one hash fall independently.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
