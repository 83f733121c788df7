//! What the module's tests share: random rules of every limiter the module
//! decides.

use limits::{Algorithm, Rule};
use limits_redis_module::DECIDED;
use proptest::prelude::*;

/// A rule of one to three rates, limits below `most_limit`, windows in
/// whole microseconds (some of one, some not whole milliseconds), the
/// leaky bucket with or without a burst of its own.
pub fn rule(most_limit: u64) -> impl Strategy<Value = Rule> {
    let rate = (
        1..most_limit,
        prop::sample::select(vec![1u64, 7, 1_000, 250_000, 3_300_007]),
    );
    (
        prop::sample::select(DECIDED.to_vec()),
        prop::collection::vec(rate, 1..4),
        prop::option::of(0u64..6),
    )
        .prop_map(|(algorithm, rates, burst)| {
            let rates: Vec<String> = rates
                .iter()
                .map(|(limit, us)| format!("{limit}/{us}us"))
                .collect();
            let rule = Rule::new(algorithm, rates.join("; ").parse().unwrap());
            match (algorithm, burst) {
                (Algorithm::LeakyBucket, Some(burst)) => rule.with_burst(burst),
                _ => rule,
            }
        })
}
