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
    /// An exponentially smoothed estimate of the rate (an approximation).
    SmoothedRate,
}

impl Algorithm {
    /// Every algorithm, in the simulator's table order.
    pub const ALL: [Algorithm; 7] = [
        Algorithm::None,
        Algorithm::FixedWindow,
        Algorithm::SlidingLog,
        Algorithm::TokenBucket,
        Algorithm::SlidingWindow,
        Algorithm::LeakyBucket,
        Algorithm::SmoothedRate,
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
            Algorithm::SmoothedRate => "smoothed-rate",
        }
    }

    /// What the algorithm promises, in one line (`limits limiters`).
    ///
    /// ```
    /// use limits::Algorithm;
    /// assert!(Algorithm::SlidingLog.describe().starts_with("exact"));
    /// ```
    pub fn describe(self) -> &'static str {
        match self {
            Algorithm::None => "allows everything: the baseline",
            Algorithm::FixedWindow => "a counter per window; up to 2x the limit across an edge",
            Algorithm::SlidingLog => {
                "exact: never more than the limit in any window; 8 bytes per request"
            }
            Algorithm::TokenBucket => "bursts up to the limit, then the limit per window, exactly",
            Algorithm::SlidingWindow => {
                "two counters, weighted; at most 2x the limit in any window"
            }
            Algorithm::LeakyBucket => "a queue draining evenly; admitted requests wait their turn",
            Algorithm::SmoothedRate => {
                "one decaying estimate, 16 bytes a key; bursts to the limit, at most 2x it in any window"
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_has_its_own_name_and_description() {
        for (i, a) in Algorithm::ALL.into_iter().enumerate() {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
            assert!(!a.describe().is_empty(), "{a}");
            for b in &Algorithm::ALL[i + 1..] {
                assert!(a < *b, "ALL is in table order, each once: {a}, {b}");
                assert_ne!(a.describe(), b.describe());
            }
        }
    }
}
