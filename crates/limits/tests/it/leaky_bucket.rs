//! The leaky bucket (a queue, nginx-style) against its reference model, and
//! the shape it promises: departures never closer than W / L.

use limits::{Algorithm, Rule};
use limits_conformance::{
    allowed_by_key, case, check_retry_is_exact, compare_with_model, config, worst_window,
};
use proptest::prelude::*;
use std::time::Duration;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn leaky_bucket_matches_reference(case in case(1)) {
        compare_with_model(Algorithm::LeakyBucket, &case)?;
    }

    #[test]
    fn leaky_bucket_with_several_rates_matches_reference(case in case(3)) {
        compare_with_model(Algorithm::LeakyBucket, &case)?;
    }

    #[test]
    fn leaky_bucket_retry_after_is_exact(case in case(2)) {
        check_retry_is_exact(Algorithm::LeakyBucket, &case)?;
    }

    #[test]
    fn leaky_bucket_departures_never_exceed_limit_in_any_window(mut case in case(1)) {
        for e in &mut case.events {
            e.cost = 1;
        }
        let (limit, window) = case.rates[0];
        // allowed_by_key reports departure times (arrival + delay).
        for allowed in allowed_by_key(Algorithm::LeakyBucket, &case).values() {
            let mut departures = allowed.clone();
            departures.sort();
            prop_assert!(worst_window(&departures, window) <= limit);
        }
    }
}

#[test]
fn leaky_bucket_idle_burst_admits_burst_plus_one_with_growing_delays() {
    let rule = Rule::new(Algorithm::LeakyBucket, "10/s".parse().unwrap());
    let mut state = rule.new_state();
    let delays: Vec<Duration> = (0..12)
        .map(|_| rule.check(&mut state, 0, 1))
        .filter(|d| d.allowed)
        .map(|d| d.delay)
        .collect();
    assert_eq!(delays.len(), 11);
    for (i, d) in delays.iter().enumerate() {
        assert_eq!(*d, Duration::from_millis(100 * i as u64));
    }
    let denied = rule.check(&mut state, 0, 1);
    // The next free slot is at 1.1 s; it may wait at most 1 s: 100 ms.
    assert_eq!(
        denied.retry_after.duration(),
        Some(Duration::from_millis(100))
    );
}
