//! What every benchmark shares: the scenarios (a limiter, a key count, an
//! outcome), one key stream for both sides, and the two limiters built for the
//! same rule: ours (`limits::KeyedLimiter`) and governor's keyed limiter.
//!
//! Time is virtual by default: our `ManualClock` and governor's
//! `FakeRelativeClock` are both an atomic nanosecond counter, read on every
//! check and moved forward by [`STEP`] ns per check (in batches of
//! [`BATCH`]), so that a key is checked every `keys * STEP` ns on average.
//! Each scenario sizes its rule from that interval, as `scenario.rs` says
//! (shared with `limits bench`). [`Ours::real`] and [`Governor::real`] read
//! the real clocks instead (ours `SystemClock`, governor's quanta clock),
//! which [`Tick`] leaves alone.
//!
//! Governor is GCRA (a token bucket): in every group it runs the same L per W
//! (period W / L, burst L), the same warm-up and the same key stream.
#![allow(dead_code)] // each bench target uses a part of it

use governor::clock::{FakeRelativeClock, QuantaClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use limits::{Algorithm, KeyedLimiter, ManualClock, Rate, Rates, Rule, SystemClock};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

mod scenario;
pub use scenario::{Outcome, XorShift, sizing};

/// Virtual nanoseconds per check.
pub const STEP: u64 = 100;
/// Checks between two moves of the virtual clocks.
pub const BATCH: u64 = 16;

/// The limiters benchmarked (`none` keeps no state and is left out).
pub const ALGORITHMS: [Algorithm; 6] = [
    Algorithm::TokenBucket,
    Algorithm::SlidingLog,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::LeakyBucket,
    Algorithm::SmoothedRate,
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
        Scenario::paced(algorithm, keys, outcome, STEP)
    }

    /// The scenario when a check takes `pace` ns: a key is checked every
    /// `keys * pace` ns on average.
    pub fn paced(algorithm: Algorithm, keys: usize, outcome: Outcome, pace: u64) -> Scenario {
        let sized = sizing(algorithm, keys as u64 * pace, outcome);
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

    /// The real-clock scenario for `algorithm` on `ks`, mostly allowed: real
    /// time has no fixed step, so the pace is governor's time per check over
    /// one pass of up to 2^20 checks, halved: a bucket then stays near full
    /// and every check passes whatever the pace of the timed runs.
    pub fn real(algorithm: Algorithm, ks: &KeyStream) -> Scenario {
        let keys = ks.keys.len();
        let guess = Scenario::new(algorithm, keys, Outcome::Allowed);
        let gov = Governor::real(&guess, &ks.keys);
        let checks = (4 * keys).clamp(200_000, ks.stream.len());
        let start = Instant::now();
        black_box(gov.run(&ks.stream[..checks]));
        let pace = (start.elapsed().as_nanos() / (2 * checks as u128)).max(1) as u64;
        Scenario::paced(algorithm, keys, Outcome::Allowed, pace)
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

/// A clock a benchmark moves by [`STEP`] ns per check: a virtual clock
/// advances, a real one goes on by itself.
pub trait Tick: Clone {
    /// Moves the clock `nanos` forward, if it is virtual.
    fn tick(&self, nanos: u64);
}

impl Tick for ManualClock {
    fn tick(&self, nanos: u64) {
        self.advance(Duration::from_nanos(nanos));
    }
}

impl Tick for FakeRelativeClock {
    fn tick(&self, nanos: u64) {
        self.advance(Duration::from_nanos(nanos));
    }
}

impl Tick for SystemClock {
    fn tick(&self, _: u64) {}
}

impl Tick for QuantaClock {
    fn tick(&self, _: u64) {}
}

/// Ours, on a virtual clock (or, built by [`Ours::real`], the system clock).
pub struct Ours<C = ManualClock> {
    pub limiter: KeyedLimiter<u64, C>,
    pub clock: C,
}

impl Ours {
    pub fn new(s: &Scenario, keys: &[u64]) -> Ours {
        Ours::with_clock(s, keys, ManualClock::new(1))
    }
}

impl Ours<SystemClock> {
    /// Ours on the real clock, as a server runs it.
    pub fn real(s: &Scenario, keys: &[u64]) -> Ours<SystemClock> {
        Ours::with_clock(s, keys, SystemClock::new())
    }
}

impl<C: limits::Clock + Tick> Ours<C> {
    fn with_clock(s: &Scenario, keys: &[u64], clock: C) -> Ours<C> {
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
            self.clock.tick(STEP * BATCH);
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

/// Governor's keyed limiter (its default store, dashmap), on a virtual clock
/// (or, built by [`Governor::real`], its default clock).
pub struct Governor<C = FakeRelativeClock>
where
    C: governor::clock::Clock,
{
    pub limiter: RateLimiter<u64, DashMapStateStore<u64>, C, NoOpMiddleware<C::Instant>>,
    pub clock: C,
}

impl Governor {
    pub fn new(s: &Scenario, keys: &[u64]) -> Governor {
        let clock = FakeRelativeClock::default();
        clock.advance(Duration::from_nanos(1));
        Governor::with_clock(s, keys, clock)
    }
}

impl Governor<QuantaClock> {
    /// Governor on its default clock (quanta), as `RateLimiter::dashmap` builds it.
    pub fn real(s: &Scenario, keys: &[u64]) -> Governor<QuantaClock> {
        Governor::with_clock(s, keys, QuantaClock::default())
    }
}

impl<C: governor::clock::Clock + Tick> Governor<C> {
    fn with_clock(s: &Scenario, keys: &[u64], clock: C) -> Governor<C> {
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
            self.clock.tick(STEP * BATCH);
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
