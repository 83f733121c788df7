//! What every benchmark shares: the scenarios (a limiter, a key count, an
//! outcome), one key stream for both sides, and the two limiters built for the
//! same rule: ours (`limits::KeyedLimiter`) and governor's keyed limiter.
//!
//! Time is virtual: our `ManualClock` and governor's `FakeRelativeClock`
//! are both an atomic nanosecond counter, read on every check and moved
//! forward by [`STEP`] ns per check (in batches of [`BATCH`]), so that a key
//! is checked every `keys * STEP` ns on average. Each scenario sizes its rule
//! from that interval, as `scenario.rs` says (shared with `limits bench`).
//!
//! Governor is GCRA (a token bucket): in every group it runs the same L per W
//! (period W / L, burst L), the same warm-up and the same key stream.
#![allow(dead_code)] // each bench target uses a part of it

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use limits::{Algorithm, KeyedLimiter, ManualClock, Rate, Rates, Rule};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

mod scenario;
pub use scenario::{sizing, Outcome, XorShift};

/// Virtual nanoseconds per check.
pub const STEP: u64 = 100;
/// Checks between two moves of the virtual clocks.
pub const BATCH: u64 = 16;

/// The limiters benchmarked (`none` keeps no state and is left out).
pub const ALGORITHMS: [Algorithm; 5] = [
    Algorithm::TokenBucket,
    Algorithm::SlidingLog,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::LeakyBucket,
];

/// One rule for both sides: L per W, and the cost each key is first checked
/// with (its warm-up).
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    pub algorithm: Algorithm,
    pub keys: usize,
    pub outcome: Outcome,
    pub limit: u64,
    pub window: u64,
    pub warm_cost: u64,
}

impl Scenario {
    pub fn new(algorithm: Algorithm, keys: usize, outcome: Outcome) -> Scenario {
        // Nanoseconds between two checks of one key, on average.
        let sized = sizing(algorithm, keys as u64 * STEP, outcome);
        let (limit, window, warm_cost) = (sized.limit, sized.window, sized.warm_cost);
        Scenario {
            algorithm,
            keys,
            outcome,
            limit,
            window,
            warm_cost,
        }
    }

    pub fn rule(&self) -> Rule {
        let rate = Rate::new(self.limit, Duration::from_nanos(self.window)).expect("a valid rate");
        Rule::new(self.algorithm, Rates::from(rate))
    }

    pub fn quota(&self) -> Quota {
        let burst = NonZeroU32::new(u32::try_from(self.limit).expect("fits")).expect("non-zero");
        Quota::with_period(Duration::from_nanos(self.window / self.limit))
            .expect("a non-zero period")
            .allow_burst(burst)
    }
}

/// `len` checks over `keys` distinct random u64 keys in random order, and
/// the keys themselves (each appears in `keys()` once, for the warm-up).
pub struct KeyStream {
    pub keys: Vec<u64>,
    pub stream: Vec<u64>,
}

impl KeyStream {
    pub fn new(keys: usize, len: usize, seed: u64) -> KeyStream {
        let mut rng = XorShift(seed | 1);
        let keys: Vec<u64> = (0..keys).map(|_| rng.next_u64()).collect();
        let stream = (0..len)
            .map(|_| keys[(rng.next_u64() % keys.len() as u64) as usize])
            .collect();
        KeyStream { keys, stream }
    }
}

/// Ours, on a virtual clock.
pub struct Ours {
    pub limiter: KeyedLimiter<u64, ManualClock>,
    pub clock: ManualClock,
}

impl Ours {
    pub fn new(s: &Scenario, keys: &[u64]) -> Ours {
        let clock = ManualClock::new(1);
        let limiter = KeyedLimiter::with_clock(s.rule(), clock.clone());
        for k in keys {
            limiter.check(k, s.warm_cost);
        }
        Ours { limiter, clock }
    }

    /// Checks every key of `stream`, moving the clock as it goes; returns
    /// how many were allowed.
    #[inline(never)]
    pub fn run(&self, stream: &[u64]) -> u64 {
        let mut allowed = 0;
        for chunk in stream.chunks(BATCH as usize) {
            self.clock.advance(Duration::from_nanos(STEP * BATCH));
            for k in chunk {
                // Every field kept, as a caller sending headers reads them.
                let d = self.limiter.check(k, 1);
                black_box(&d);
                allowed += u64::from(d.allowed);
            }
        }
        allowed
    }
}

/// Governor's keyed limiter (its default store, dashmap), on a virtual clock.
pub struct Governor {
    pub limiter: RateLimiter<
        u64,
        DashMapStateStore<u64>,
        FakeRelativeClock,
        NoOpMiddleware<<FakeRelativeClock as governor::clock::Clock>::Instant>,
    >,
    pub clock: FakeRelativeClock,
}

impl Governor {
    pub fn new(s: &Scenario, keys: &[u64]) -> Governor {
        let clock = FakeRelativeClock::default();
        clock.advance(Duration::from_nanos(1));
        let limiter = RateLimiter::dashmap_with_clock(s.quota(), clock.clone());
        let warm = NonZeroU32::new(s.warm_cost as u32).expect("non-zero");
        for k in keys {
            let _ = limiter.check_key_n(k, warm);
        }
        Governor { limiter, clock }
    }

    /// As [`Ours::run`].
    #[inline(never)]
    pub fn run(&self, stream: &[u64]) -> u64 {
        let mut allowed = 0;
        for chunk in stream.chunks(BATCH as usize) {
            self.clock.advance(Duration::from_nanos(STEP * BATCH));
            for k in chunk {
                allowed += u64::from(self.limiter.check_key(k).is_ok());
            }
        }
        allowed
    }
}

/// The resident set size of this process, in bytes (Linux), if known.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
