//! The names of the limiters, as the command line, the configuration and the
//! simulator's table spell them.

use std::fmt;
use std::str::FromStr;

/// Which limiting algorithm a rule uses.
///
/// ```
/// use limits::Algorithm;
/// let a: Algorithm = "sliding-log".parse().unwrap();
/// assert_eq!(a, Algorithm::SlidingLog);
/// assert_eq!(a.to_string(), "sliding-log");
/// assert!("sliding_log".parse::<Algorithm>().unwrap_err().to_string().contains("sliding-log"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// Always allows: the baseline.
    None,
    /// Fixed window counter.
    FixedWindow,
    /// Exact sliding log.
    SlidingLog,
    /// Token bucket (exact GCRA).
    TokenBucket,
    /// Sliding window counter (weighted approximation).
    SlidingWindow,
    /// Leaky bucket as a queue (nginx-style).
    LeakyBucket,
}

impl Algorithm {
    /// Every algorithm, in the simulator's table order.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::None,
        Algorithm::FixedWindow,
        Algorithm::SlidingLog,
        Algorithm::TokenBucket,
        Algorithm::SlidingWindow,
        Algorithm::LeakyBucket,
    ];

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::None => "none",
            Algorithm::FixedWindow => "fixed-window",
            Algorithm::SlidingLog => "sliding-log",
            Algorithm::TokenBucket => "token-bucket",
            Algorithm::SlidingWindow => "sliding-window",
            Algorithm::LeakyBucket => "leaky-bucket",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown limiter name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownAlgorithm(pub String);

impl fmt::Display for UnknownAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
        write!(
            f,
            "unknown limiter {:?} (expected one of: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownAlgorithm {}

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    fn from_str(s: &str) -> Result<Algorithm, UnknownAlgorithm> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| UnknownAlgorithm(s.to_string()))
    }
}
