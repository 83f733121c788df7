//! What a rule becomes in Redis: the script's per-rate arguments, the key
//! names, and the check that every number the script handles stays an exact
//! integer in a Lua double (below 2^53).
//!
//! The script works in microseconds: 2^53 us is 285 years, so times since the
//! Unix epoch fit, but the buckets multiply times by the limit L (as the core
//! does, to stay exact when W / L is not whole) and that product does not fit
//! for every rate. Rules that could overflow are refused here, with the
//! reason, instead of deciding wrongly later.

use limits::{Algorithm, Rule, UnsupportedRule};

/// 2^53: above it, a Lua number is no longer every integer.
pub(crate) const EXACT: u128 = 1 << 53;
/// 2^48 us (8.9 years): the longest window; the sliding log stores times
/// modulo a power of 256 above the window, in 6 bytes at most.
pub(crate) const MAX_WINDOW_MICROS: u64 = 1 << 48;

/// A rule checked for Redis: its script arguments and key stem.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    /// `n, L1, W1, B1, ...`: the script's ARGV after now, cost, mode, floor.
    pub args: Vec<u64>,
    /// The largest cost any rate can ever pass; larger costs are all "never".
    pub max_capacity: u64,
    /// Whether each rate has its own key (the sliding log) or all share one.
    pub key_per_rate: bool,
    /// Why a charge cannot be settled exactly, if it cannot: a leaky
    /// bucket whose burst is below its limit passes its checks with a
    /// queue far shorter than the 2 x limit a charge may make.
    pub uncharged: Option<String>,
}

impl Shape {
    /// Checks `rule` and lays out its arguments.
    pub fn new(rule: &Rule) -> Result<Shape, UnsupportedRule> {
        let algorithm = rule.algorithm();
        if algorithm == Algorithm::SmoothedRate {
            return Err(UnsupportedRule(format!(
                "the Redis store has no script for {algorithm} (its decay multiplies 64-bit numbers, past the 53 bits of Lua's numbers); decide it in memory or on memcached, or choose another limiter"
            )));
        }
        let mut args = vec![rule.rates().len() as u64];
        let mut max_capacity = 0;
        let mut uncharged = None;
        for rate in rule.rates().iter() {
            let window = rate.window_nanos();
            if window % 1000 != 0 {
                return Err(UnsupportedRule(format!(
                    "{rate}: the Redis store keeps time in microseconds, and this window is not a whole number of them"
                )));
            }
            let w = window / 1000;
            if w >= MAX_WINDOW_MICROS {
                return Err(UnsupportedRule(format!(
                    "{rate}: windows in the Redis store are shorter than 2^48 microseconds (8.9 years)"
                )));
            }
            let limit = rate.limit();
            let burst = match algorithm {
                Algorithm::LeakyBucket => rule.burst().unwrap_or(limit).min(limits::MAX_LIMIT),
                _ => 0,
            };
            let capacity = if algorithm == Algorithm::LeakyBucket {
                burst + 1
            } else {
                limit
            };
            // The buckets and the sliding window multiply by L: up to about
            // 2 x capacity x W (+ L), and x 1000 for the nanosecond parts.
            let scaled = matches!(
                algorithm,
                Algorithm::TokenBucket | Algorithm::SlidingWindow | Algorithm::LeakyBucket
            );
            let product = 2 * (u128::from(capacity) + 1) * u128::from(w) + u128::from(limit);
            if scaled && (product >= EXACT || u128::from(capacity) * 1000 >= EXACT) {
                return Err(UnsupportedRule(format!(
                    "{rate}: {algorithm} in Redis needs 2 x limit x window (in microseconds) below 2^53 to stay exact; use a shorter window or a smaller limit"
                )));
            }
            // (And so below 2^48: the sliding log's running totals, modulo
            // a power of 256 above L, take at most 6 bytes.)
            if u128::from(limit) * 1000 >= EXACT {
                return Err(UnsupportedRule(format!(
                    "{rate}: the Redis store takes limits below 2^53 / 1000"
                )));
            }
            let debt = 2 * u128::from(limit) * u128::from(w) + u128::from(limit);
            if scaled && debt >= EXACT {
                uncharged = Some(format!(
                    "{rate}: a charge on {algorithm} in Redis may queue 2 x limit, and 2 x limit x window (in microseconds) reaches 2^53; use a shorter window or a smaller limit"
                ));
            }
            max_capacity = max_capacity.max(capacity);
            args.extend([limit, w, burst]);
        }
        Ok(Shape {
            args,
            max_capacity,
            key_per_rate: algorithm == Algorithm::SlidingLog,
            uncharged,
        })
    }

    /// How many keys one decision touches.
    pub fn key_count(&self) -> usize {
        if self.key_per_rate {
            self.args[0] as usize
        } else {
            1
        }
    }
}

/// The layout of the scripts' state in Redis, part of every key: a changed
/// layout starts afresh instead of misreading what an older version wrote
/// (2: the counters as packed doubles instead of decimal text).
const STATE_FORMAT: u32 = 2;

/// The sliding log's own layout, part of its keys only, so that a change of
/// it leaves the other limiters' keys (and their clients' state) alone (2:
/// an entry per request, carrying its cost as a running total).
const SLIDING_LOG_FORMAT: u32 = 2;

/// A short, stable fingerprint of a rule's algorithm, rates and burst: the
/// same rule in every process, a different one if any changes (so a changed
/// rule starts afresh instead of reading a state laid out for another).
pub(crate) fn fingerprint(rule: &Rule) -> String {
    let mut text = format!(
        "{}|{}|{:?}|{STATE_FORMAT}",
        rule.algorithm(),
        rule.rates(),
        rule.burst()
    );
    if rule.algorithm() == Algorithm::SlidingLog {
        text += &format!("|{SLIDING_LOG_FORMAT}");
    }
    // FNV-1a, 32 bits: no random seed, the same everywhere.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("{hash:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(algorithm: Algorithm, rates: &str) -> Result<Shape, UnsupportedRule> {
        Shape::new(&Rule::new(algorithm, rates.parse().unwrap()))
    }

    #[test]
    fn rules_that_could_pass_2_pow_53_are_refused_with_the_reason() {
        assert!(shape(Algorithm::TokenBucket, "10000/day").is_ok());
        let err = shape(Algorithm::TokenBucket, "100000/day").unwrap_err();
        assert!(err.0.contains("2^53"), "{err}");
        // The sliding log keeps times, not times x L: any limit fits.
        assert!(shape(Algorithm::SlidingLog, "100000/day").is_ok());
        assert!(shape(Algorithm::FixedWindow, "1000000000/day").is_ok());
        let err = shape(Algorithm::SlidingLog, "5/1500ns").unwrap_err();
        assert!(err.0.contains("microseconds"), "{err}");
        assert!(shape(Algorithm::FixedWindow, "5/3650d").is_err());
    }

    #[test]
    fn the_smoothed_rate_is_refused_with_the_reason() {
        let err = shape(Algorithm::SmoothedRate, "10/s").unwrap_err();
        assert!(
            err.0.contains("no script") && err.0.contains("memcached"),
            "{err}"
        );
    }

    #[test]
    fn a_leaky_bucket_whose_debt_could_pass_2_pow_53_decides_but_is_not_charged() {
        let rule = |burst| {
            Rule::new(Algorithm::LeakyBucket, "1000000/1000000s".parse().unwrap()).with_burst(burst)
        };
        let small_burst = Shape::new(&rule(1)).unwrap();
        assert!(small_burst.uncharged.unwrap().contains("2^53"));
        assert!(Shape::new(&rule(1_000_000)).is_err());
        assert!(shape(Algorithm::LeakyBucket, "10/s")
            .unwrap()
            .uncharged
            .is_none());
    }

    #[test]
    fn the_sliding_log_has_a_key_per_rate_the_others_one() {
        let log = shape(Algorithm::SlidingLog, "10/s; 100/m").unwrap();
        assert_eq!((log.key_count(), log.max_capacity), (2, 100));
        assert_eq!(log.args, vec![2, 10, 1_000_000, 0, 100, 60_000_000, 0]);
        let leaky = Rule::new(Algorithm::LeakyBucket, "10/s".parse().unwrap()).with_burst(3);
        let leaky = Shape::new(&leaky).unwrap();
        assert_eq!((leaky.key_count(), leaky.max_capacity), (1, 4));
        assert_eq!(leaky.args, vec![1, 10, 1_000_000, 3]);
    }

    #[test]
    fn fingerprints_follow_the_rule() {
        let a = Rule::new(Algorithm::SlidingLog, "10/s".parse().unwrap());
        let b = Rule::new(Algorithm::SlidingLog, "11/s".parse().unwrap());
        assert_eq!(fingerprint(&a), fingerprint(&a.clone()));
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_eq!(fingerprint(&a).len(), 8);
    }
}
