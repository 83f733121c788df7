//! The keyed limiter: one rule, a state per key, safe to share between threads.
//!
//! Keys are spread over shards by hash, each behind its own mutex, so threads
//! working on different keys rarely meet. Memory stays bounded under a flood of
//! distinct keys in two ways:
//!
//! - a key whose state can no longer affect any decision (its log has expired,
//!   its bucket is full again) is dropped losslessly: every operation that
//!   adds a key, and every eighth other one, moves a shard's sweep cursor over
//!   one or two slots and drops what is idle, without needing traffic on those
//!   keys; [`KeyedLimiter::sweep`] drops them all;
//! - with [`Options::max_keys`], a full shard evicts a key. Eviction is the one
//!   case that forgets state, and a forgotten key comes back with a fresh
//!   limit, so the victim is the key whose forgetting costs least: among a few
//!   keys under the CLOCK hand, the one with the most quota left, never a key
//!   at its limit (or denied) while another candidate is not (see the evict
//!   module). A flood of one-off keys thus evicts its own keys, not clients
//!   that keep coming, and cannot buy a limited client an amnesty. Evictions
//!   are counted, [`KeyedLimiter::evictions`], and those of limited keys apart,
//!   [`KeyedLimiter::limited_evictions`]: it stays zero unless the table is
//!   full of limited keys, the sign that `max_keys` is too small.

mod compact;
mod compact_window;
mod decide;
mod kind;
mod penalized;
mod saved;
mod shard;
pub(crate) mod slot;
mod tables;

use crate::penalty::PenaltyBook;
use crate::shards::Padded;
use crate::{Clock, Rule, SystemClock};
use foldhash::fast::RandomState;
use kind::Kind;
use parking_lot::{Mutex, MutexGuard};
use shard::Room;
use shard::Shard;
use slot::{Held, Slot};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use tables::{Tables, with_table};

/// The most slots one operation's amortized sweep looks at.
///
/// An operation that adds a key looks at two slots; any other stops at the
/// first slot it keeps, so it looks at one slot, or two when the first was
/// idle and dropped (a second look costs a good part of a check, and the
/// keys a busy table sweeps are mostly busy).
/// An operation on an existing key sweeps only one time in
/// [`SWEEP_EVERY`]. What this guarantees, per shard
/// (`tests/it/sweep_guarantee.rs`):
///
/// - an operation that adds a key moves the cursor over two slots; of the
///   operations on existing keys, every [`SWEEP_EVERY`]-th, and the next
///   after any sweep that dropped a key, over at least one (dropping it or
///   passing it);
/// - so a full turn of the cursor (every slot looked at) takes at most
///   [`SWEEP_EVERY`] times as many operations as the shard held keys when
///   the turn began: a shard of N keys forgets a key that went idle within
///   about 8N operations on it (a turn more if a removal moved its slot
///   behind the cursor), and drops two per operation while it finds idle
///   keys;
/// - adding keys cannot outrun the sweep: a turn adds at most as many keys
///   as the shard held when it began, and every key still held at the end
///   of a turn was in use when the cursor passed it.
pub(crate) const SWEEP_PER_OPERATION: usize = 2;

/// How often an operation on an existing key sweeps: every `SWEEP_EVERY`-th
/// such operation per shard, and the next one whenever a sweep dropped a
/// key (see [`SWEEP_PER_OPERATION`] for what this guarantees). A look at a
/// slot other than the key's own reads memory the check does not need, and
/// with two threads often a line the other core has just written; one look
/// in eight keeps the bound on idle keys a small multiple of the shard's
/// size.
pub(crate) const SWEEP_EVERY: u32 = 8;

/// The fewest keys a shard of a capped limiter holds: enough for a full
/// shard to find a key that is not limited among its own.
const MIN_KEYS_PER_SHARD: usize = 64;

/// How a [`KeyedLimiter`] is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The most keys held at once; beyond it, keys are evicted, those whose
    /// forgetting costs least first (most quota left, then least recently
    /// used, per shard). The shards share the cap exactly, and a small cap
    /// uses fewer shards, so that a full shard always has keys to choose
    /// among. `None`: no cap but memory.
    pub max_keys: Option<usize>,
    /// The number of shards, rounded up to a power of two. Defaults to four
    /// per available core.
    pub shards: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_keys: None,
            shards: crate::shards::default_count(),
        }
    }
}

/// Memory held by a keyed limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// Keys tracked.
    pub keys: usize,
    /// Bytes held by the tables, the slots (keys inline) and the states' heap.
    /// A key's own heap memory (a `String`'s text) is not counted.
    pub bytes: usize,
}

impl MemoryReport {
    /// Bytes per key, rounded down; zero with no keys.
    pub fn bytes_per_key(&self) -> usize {
        self.bytes.checked_div(self.keys).unwrap_or(0)
    }
}

/// A thread-safe limiter with a state per key.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, ManualClock, Rule};
/// use std::time::Duration;
///
/// let clock = ManualClock::new(0);
/// let rule = Rule::new(Algorithm::SlidingLog, "3/s".parse().unwrap());
/// let limiter: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule, clock.clone());
///
/// for _ in 0..3 {
///     assert!(limiter.check("alice", 1).allowed);
/// }
/// let denied = limiter.check("alice", 1);
/// assert!(!denied.allowed);
/// assert!(limiter.check("bob", 1).allowed); // keys are independent
///
/// clock.advance(denied.retry_after.duration().unwrap());
/// assert!(limiter.check("alice", 1).allowed);
/// ```
pub struct KeyedLimiter<K, C = SystemClock> {
    rule: Rule,
    clock: C,
    hasher: RandomState,
    /// The shards, typed by what the rule keeps per key (`keyed/tables.rs`).
    tables: Tables<K>,
    shard_shift: u32,
    /// The most keys a shard holds (its share of `max_keys`)...
    per_shard_cap: usize,
    /// ...plus one for the shards below this index.
    shards_with_one_more: usize,
    evictions: AtomicU64,
    limited_evictions: AtomicU64,
    /// The rule's penalty and each key's standing under it, if it has one
    /// ([`KeyedLimiter::with_penalty`]).
    penalty: Option<Box<PenaltyBook<K>>>,
}

impl<K: Hash + Eq + Send> KeyedLimiter<K, SystemClock> {
    /// A limiter for `rule` on the system clock, with default options.
    pub fn new(rule: Rule) -> Self {
        Self::with_options(rule, SystemClock::new(), Options::default())
    }
}

impl<K: Hash + Eq + Send, C: Clock> KeyedLimiter<K, C> {
    /// A limiter for `rule` reading time from `clock`.
    pub fn with_clock(rule: Rule, clock: C) -> Self {
        Self::with_options(rule, clock, Options::default())
    }

    /// A limiter for `rule` on `clock`, laid out as `options` say.
    pub fn with_options(rule: Rule, clock: C, options: Options) -> Self {
        let mut shards = options.shards.clamp(1, 1 << 16).next_power_of_two();
        if let Some(cap) = options.max_keys {
            // A full shard weighs its own keys only: with too few, it has
            // no key but a limited one to give up. So every shard holds
            // enough keys to choose among, and fewer shards are used for a
            // small cap (one, below twice that).
            while shards > 1 && cap / shards < MIN_KEYS_PER_SHARD {
                shards /= 2;
            }
        }
        // The shards' caps add up to the total cap exactly: the first
        // `cap % shards` hold one key more.
        let (per_shard_cap, shards_with_one_more) = options
            .max_keys
            .map_or((usize::MAX, 0), |cap| ((cap / shards).max(1), cap % shards));
        let hasher = RandomState::default();
        KeyedLimiter {
            tables: Tables::new(&rule, shards, &hasher),
            rule,
            clock,
            hasher,
            shard_shift: 64 - shards.trailing_zeros(),
            per_shard_cap,
            shards_with_one_more,
            evictions: AtomicU64::new(0),
            limited_evictions: AtomicU64::new(0),
            penalty: None,
        }
    }

    /// The rule applied to every key.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The clock the limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Tracks a new key; a full shard gives up the key that costs least to
    /// forget (see the evict module), and the eviction is counted.
    fn insert<H: Held>(
        &self,
        shard: &mut Shard<K, H>,
        kind: &impl Kind<Held = H>,
        hash: u64,
        slot: Slot<K, H>,
        now: u64,
    ) {
        let cap =
            self.per_shard_cap + usize::from(self.shard_index(hash) < self.shards_with_one_more);
        let room = shard.add(hash, slot, cap, (kind, &self.rule), now);
        if let Some(Room::Evicted { limited, .. }) = room {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            if limited {
                self.limited_evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The shard of `shards` (the limiter's) that a key of `hash` falls in, locked.
    fn shard<'s, H: Held>(
        &self,
        shards: &'s [Padded<Mutex<Shard<K, H>>>],
        hash: u64,
    ) -> MutexGuard<'s, Shard<K, H>> {
        let idx = self.shard_index(hash);
        lock(&shards[idx].0)
    }

    /// The shard of a key of `hash`: the top bits pick it (the table inside
    /// uses the low ones).
    fn shard_index(&self, hash: u64) -> usize {
        hash.checked_shr(self.shard_shift).unwrap_or(0) as usize
    }

    /// Drops every key that can no longer affect a decision; returns how many.
    pub fn sweep(&self) -> usize {
        self.sweep_at(self.clock.now())
    }

    /// [`sweep`](Self::sweep) as of `now` (penalty states too).
    pub fn sweep_at(&self, now: u64) -> usize {
        let keys: usize = with_table!(self, |kind, shards| shards
            .iter()
            .map(|s| lock(&s.0).sweep_all(kind, now))
            .sum());
        keys + self.sweep_penalties(now)
    }

    /// Keys tracked now.
    pub fn len(&self) -> usize {
        with_table!(self, |_kind, shards| shards
            .iter()
            .map(|s| lock(&s.0).slots.len())
            .sum())
    }

    /// Whether no key is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys evicted by the `max_keys` cap so far (each forgot its state).
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Of the [`evictions`](Self::evictions), those of keys that were limited:
    /// at their limit on some rate, or denied since their state was last back
    /// to full. Each such eviction let a limited client start afresh; it only
    /// happens when every key the shard weighed was limited, so a non-zero
    /// count says `max_keys` is too small for the clients being limited.
    pub fn limited_evictions(&self) -> u64 {
        self.limited_evictions.load(Ordering::Relaxed)
    }

    /// The memory held, and by how many keys.
    pub fn memory(&self) -> MemoryReport {
        let mut report = MemoryReport { keys: 0, bytes: 0 };
        with_table!(self, |kind, shards| for s in shards.iter() {
            let shard = lock(&s.0);
            report.keys += shard.slots.len();
            report.bytes += shard.bytes(kind);
        });
        report
    }
}

/// Locks a shard. A panic while holding a shard's lock cannot leave a state
/// half-updated in a way that breaks the next decision, so the lock does not
/// poison (`parking_lot`'s: a shard is used as it is after a panic rather
/// than taking the limiter down, and its lock and unlock skip std's
/// poison checks).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock()
}
