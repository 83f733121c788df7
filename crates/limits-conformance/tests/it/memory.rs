//! The in-memory store (`KeyedLimiter<String, ManualClock>`) runs the whole
//! conformance suite: the store the Redis store will be held equal to.

use limits::{KeyedLimiter, ManualClock, Options, Rule};
use std::future::{ready, Ready};

/// A fresh in-memory store; two shards, so that keys land on both, and a
/// clock that never moves (the suite gives every time explicitly).
fn memory(rule: Rule) -> Ready<KeyedLimiter<String, ManualClock>> {
    let options = Options {
        max_keys: None,
        shards: 2,
    };
    ready(KeyedLimiter::with_options(
        rule,
        ManualClock::new(0),
        options,
    ))
}

limits_conformance::store_conformance_tests!(memory);
limits_conformance::store_settle_tests!(memory);

/// The in-memory store with a penalty.
fn banning(rule: Rule, penalty: limits::Penalty) -> Ready<KeyedLimiter<String, ManualClock>> {
    ready(memory(rule).into_inner().with_penalty(penalty))
}

mod penalty {
    use super::banning;
    use limits::Algorithm;
    use limits_conformance::{assert_penalizes, Config};

    fn run(algorithm: Algorithm) {
        assert_penalizes(banning, algorithm, &Config::default());
    }

    #[test]
    fn fixed_window() {
        run(Algorithm::FixedWindow);
    }

    #[test]
    fn sliding_log() {
        run(Algorithm::SlidingLog);
    }

    #[test]
    fn token_bucket() {
        run(Algorithm::TokenBucket);
    }

    #[test]
    fn sliding_window() {
        run(Algorithm::SlidingWindow);
    }

    #[test]
    fn leaky_bucket() {
        run(Algorithm::LeakyBucket);
    }
}
