//! Counting denied hits (`--count-denied-hits`): a denied descriptor's hits
//! added to its counter, as envoyproxy/ratelimit's Redis counter adds every
//! hit (`INCRBY`, denied or not). Only a counter has such a count: the
//! fixed window (where the answers are then the reference's, call for
//! call) and the sliding window counter. A config that puts any other
//! limiter under it is refused whole, naming the limit and its limiter,
//! rather than counted in a way the reference never defined.

use super::config::RlsConfig;
use limits::{Algorithm, Mode};

/// The mode a descriptor's hits are recorded in: [`Mode::RecordAlways`]
/// when denied hits count, else [`Mode::Record`].
pub fn record_mode(count_denied: bool) -> Mode {
    if count_denied {
        Mode::RecordAlways
    } else {
        Mode::Record
    }
}

/// Whether a limiter keeps a count that denied hits can be added to.
pub fn counts_denied(algorithm: Algorithm) -> bool {
    matches!(
        algorithm,
        Algorithm::FixedWindow | Algorithm::SlidingWindow | Algorithm::None
    )
}

/// Refuses `config` when denied hits count and a limit decides with a
/// limiter that keeps no count: every such limit, as `FILE:LINE: ...`.
pub fn check(config: &RlsConfig, count_denied: bool) -> Result<(), String> {
    if !count_denied {
        return Ok(());
    }
    let problems: Vec<String> = config
        .limits()
        .filter_map(|limit| {
            let algorithm = limit.rule.as_ref()?.algorithm();
            (!counts_denied(algorithm)).then(|| {
                format!(
                    "{}: limit {} decides with {algorithm}, which keeps no count to add \
                     denied hits to: --count-denied-hits (the reference's \
                     STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false) applies to \
                     fixed-window and sliding-window limits only",
                    limit.origin, limit.id
                )
            })
        })
        .collect();
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> RlsConfig {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, yaml).unwrap();
        RlsConfig::load(&path).unwrap()
    }

    const MIXED: &str = "\
domain: d
descriptors:
  - key: a
    rate_limit: { unit: second, requests_per_unit: 5 }
  - key: b
    rate_limit: { unit: second, requests_per_unit: 5, algorithm: sliding-window }
  - key: c
    rate_limit: { unit: second, requests_per_unit: 5, algorithm: token-bucket }
  - key: u
    rate_limit: { unlimited: true }
  - key: z
    rate_limit: { unit: second, requests_per_unit: 0 }
";

    #[test]
    fn a_limiter_without_a_count_is_refused_naming_it_and_where() {
        let err = check(&config(MIXED), true).unwrap_err();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("limit d.c decides with token-bucket"), "{err}");
        assert!(err.contains("config.yaml:8:"), "{err}");
        assert!(check(&config(MIXED), false).is_ok());
    }

    #[test]
    fn the_counters_the_unlimited_and_the_blocked_are_accepted() {
        let fine = MIXED.replace("algorithm: token-bucket", "algorithm: fixed-window");
        assert!(check(&config(&fine), true).is_ok());
        assert_eq!(record_mode(true), Mode::RecordAlways);
        assert_eq!(record_mode(false), Mode::Record);
    }
}
