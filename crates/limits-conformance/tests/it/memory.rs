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
