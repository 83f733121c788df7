//! Decision latencies as a log-scale histogram in fixed memory (four
//! buckets per doubling, 1 ns to 18 minutes), for the page's p50 and p99:
//! the Prometheus histogram beside it cannot be read back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buckets per doubling of the latency.
const PER_OCTAVE: u32 = 4;
const BUCKETS: usize = 40 * PER_OCTAVE as usize;

/// How long the decisions awaited from a store took.
pub(crate) struct LatencyLog {
    buckets: [AtomicU64; BUCKETS],
}

impl LatencyLog {
    pub(crate) fn new() -> LatencyLog {
        LatencyLog {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one decision that took `latency`.
    pub(crate) fn record(&self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.buckets[bucket(ns).min(BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    /// How many were counted, and the `q`-quantile (0 to 1) as the upper
    /// edge of its bucket (within a fifth above the true value); `None`
    /// before any.
    pub(crate) fn quantile(&self, q: f64) -> Option<(u64, Duration)> {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        let rank = ((total as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        let i = counts.iter().position(|&c| {
            seen += c;
            seen >= rank
        })?;
        Some((total, Duration::from_nanos(upper_edge(i))))
    }
}

/// The bucket of `ns` (at least 1): the octave, then which quarter of it
/// by the two bits below the top one.
fn bucket(ns: u64) -> usize {
    let octave = 63 - ns.leading_zeros();
    // Below 4 ns a doubling has no quarters: its last one holds it whole.
    let quarter = match octave {
        0 | 1 => PER_OCTAVE - 1,
        _ => ((ns >> (octave - 2)) & 0b11) as u32,
    };
    (octave * PER_OCTAVE + quarter) as usize
}

/// The first latency past bucket `i`, in ns.
fn upper_edge(i: usize) -> u64 {
    let (octave, quarter) = (i as u32 / PER_OCTAVE, i as u64 % u64::from(PER_OCTAVE));
    let base = 1u64 << octave;
    base + (base * (quarter + 1)) / u64::from(PER_OCTAVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_latency_is_below_its_buckets_edge_and_within_a_fifth_of_it() {
        for ns in (1..100_000u64).chain([1 << 30, (1 << 40) - 1, 123_456_789_012]) {
            let edge = upper_edge(bucket(ns));
            assert!(ns < edge, "{ns} not below {edge}");
            assert!(
                ns < 4 || edge as f64 <= ns as f64 * 1.26,
                "{ns}: edge {edge}"
            );
            assert!(bucket(ns) <= bucket(ns + 1), "monotone at {ns}");
        }
    }

    #[test]
    fn quantiles_of_a_known_spread() {
        let log = LatencyLog::new();
        assert_eq!(log.quantile(0.5), None);
        for us in 1..=100 {
            log.record(Duration::from_micros(us));
        }
        let (n, p50) = log.quantile(0.5).unwrap();
        let (_, p99) = log.quantile(0.99).unwrap();
        assert_eq!(n, 100);
        assert!(
            p50 >= Duration::from_micros(50) && p50 <= Duration::from_micros(63),
            "{p50:?}"
        );
        assert!(
            p99 >= Duration::from_micros(99) && p99 <= Duration::from_micros(125),
            "{p99:?}"
        );
    }
}
