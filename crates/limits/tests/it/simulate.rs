//! The simulation engine: its worst-window measure, and the seed chapter's
//! two "more to try" items as properties.

use limits::simulate::{Arrival, Pattern, WorstWindow, run};
use limits::{Algorithm, KeyState, Rate, Rule};
use proptest::prelude::*;
use std::time::Duration;

fn pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        Just(Pattern::Steady),
        Just(Pattern::Edge),
        Just(Pattern::Burst),
        Just(Pattern::Ramp),
        any::<u64>().prop_map(|seed| Pattern::Random { seed }),
    ]
}

fn window() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=100,
        Just(999_999_937u64),
        Just(1_000_000_000),
        Just(1_500_000_000)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// The chapter's first exercise: the sliding window counter never lets
    /// more than 2 x limit through in any window, on any pattern.
    #[test]
    fn sliding_window_never_lets_twice_the_limit_through_in_simulations(
        pattern in pattern(), limit in 1u64..=20, window in window(), keys in 1u32..=3,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::SlidingWindow, rate.into());
        let arrivals = pattern.arrivals(limit, window, keys);
        let out = run(&[rule], &arrivals, keys, window);
        prop_assert!(out[0].worst_window <= 2 * limit, "{:?}: worst {}", pattern, out[0].worst_window);
    }

    /// And the sliding log never lets more than the limit through.
    #[test]
    fn sliding_log_worst_window_never_exceeds_the_limit_in_simulations(
        pattern in pattern(), limit in 1u64..=20, window in window(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::SlidingLog, rate.into());
        let out = run(&[rule], &pattern.arrivals(limit, window, 1), 1, window);
        prop_assert!(out[0].worst_window <= limit);
        prop_assert_eq!(out[0].false_allows + out[0].false_denies, 0);
    }

    /// The streaming worst window equals a brute-force count over every
    /// window starting at an event.
    #[test]
    fn worst_window_matches_brute_force(
        mut times in prop::collection::vec((0u64..50, 0u8..2, 1u64..3), 0..40), window in 1u64..20,
    ) {
        times.sort();
        let mut worst = WorstWindow::new(window);
        for &(t, key, cost) in &times {
            worst.add(&key, t, cost);
        }
        let brute = times
            .iter()
            .map(|&(s, key, _)| {
                times
                    .iter()
                    .filter(|&&(t, k, _)| k == key && t >= s && t < s + window)
                    .map(|&(_, _, c)| c)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        prop_assert_eq!(worst.worst(), brute);
    }
}

/// The chapter's second exercise: a client whose requests are all rejected
/// does not grow the sliding log.
#[test]
fn sliding_log_rejected_client_does_not_grow_the_log_in_simulation() {
    let limit = 10;
    let second = 1_000_000_000;
    let rule = Rule::new(Algorithm::SlidingLog, "10/s".parse().unwrap());
    let mut arrivals: Vec<Arrival> = (0..limit)
        .map(|_| Arrival {
            t: 0,
            key: 0,
            cost: 1,
        })
        .collect();
    arrivals.extend((1..=10_000).map(|i| Arrival {
        t: i * 90_000,
        key: 0,
        cost: 1,
    }));
    let out = run(&[rule], &arrivals, 1, second);
    assert_eq!(out[0].allowed, limit);
    assert_eq!(out[0].rejected, 10_000);
    let full_log = std::mem::size_of::<KeyState>() + 8 * limit as usize;
    assert_eq!(out[0].peak_bytes_per_key, full_log);
}
