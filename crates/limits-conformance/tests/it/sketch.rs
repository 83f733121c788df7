//! A roomy sketch (`limits::Sketch`) runs the whole conformance suite for
//! the one limiter it keeps, the sliding window: while each key's cells
//! hold its own counts alone, it is the reference model's, decision for
//! decision. (Its crowded behaviour, false denials only and within its
//! bound, is `crates/limits/tests/it/sketch.rs`'s.)

use limits::{Algorithm, ManualClock, Rule, Sketch, SketchOptions};
use limits_conformance::Config;
use std::future::{ready, Ready};

/// A fresh sketch of 1 MiB, two shards and a fixed seed (so that a failure
/// repeats), on a clock that never moves (the suite gives every time).
fn sketch(rule: Rule) -> Ready<Sketch<ManualClock>> {
    let options = SketchOptions {
        shards: 2,
        seed: Some(3),
        ..SketchOptions::new(1 << 20)
    };
    ready(
        Sketch::with_clock(rule, options, ManualClock::new(0))
            .expect("a sliding window fits a sketch"),
    )
}

/// Every limiter but the sliding window is refused by a sketch (its own
/// test names the reason).
fn config() -> Config {
    use Algorithm::*;
    Config {
        refused: vec![
            FixedWindow,
            SlidingLog,
            TokenBucket,
            LeakyBucket,
            SmoothedRate,
        ],
        ..Config::default()
    }
}

limits_conformance::store_conformance_tests!(sketch, config());
