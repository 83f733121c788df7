//! The rule a benchmark runs for the outcome it wants, and the seeded
//! generator of its key stream: shared by these benches and by `limits bench`
//! (crates/limits-cli/src/bench, which includes this file by path), so both
//! measure the same cases. It depends on nothing but `limits`, so that the
//! core gains no dependency by sharing it.
//!
//! The rule is sized from `every`, the nanoseconds between two checks of one
//! key on average (virtual time here, measured time in `limits bench`):
//!
//! - buckets (token, leaky), allowed: L = 1,000,000, refilled slightly slower
//!   than the key's requests come, each key first drained to half: the bucket
//!   neither fills (the key stays resident) nor empties (every check passes);
//! - counters (fixed window, sliding window, sliding log), allowed: L = 16 per
//!   8 requests' time: about half the limit used, a few denials at peaks;
//! - denied (every limiter): L = 16 per 160 requests' time, each key first
//!   drained: about 90% of checks are denied.

use limits::Algorithm;

/// Whether most checks pass or most are denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Most checks pass.
    Allowed,
    /// About 90% of checks are denied.
    Denied,
}

impl Outcome {
    /// `allowed` or `denied`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
        }
    }
}

/// A rule's numbers for one outcome: L per W (ns), and the cost each key is
/// first checked with (its warm-up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizing {
    /// L: requests per window.
    pub limit: u64,
    /// W, in nanoseconds.
    pub window: u64,
    /// The cost of each key's first check.
    pub warm_cost: u64,
}

/// The rule for `outcome` when each key is checked every `every` ns.
pub fn sizing(algorithm: Algorithm, every: u64, outcome: Outcome) -> Sizing {
    let every = every.max(1);
    let bucket = matches!(algorithm, Algorithm::TokenBucket | Algorithm::LeakyBucket);
    let (limit, window, warm_cost) = match (outcome, bucket) {
        (Outcome::Allowed, true) => {
            let limit = 1_000_000;
            // One token per 1.001 requests' time: drains 0.001 per check.
            (limit, limit * (every + every / 1000 + 1), limit / 2)
        }
        (Outcome::Allowed, false) => (16, 8 * every, 1),
        (Outcome::Denied, _) => (16, 160 * every, 16),
    };
    Sizing {
        limit,
        window,
        warm_cost,
    }
}

/// A small, fast, seeded generator: the same stream on every run.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next number of the stream.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}
