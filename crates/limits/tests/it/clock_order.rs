//! The system clock is epoch-aligned and monotonic on a thread, and a keyed
//! limiter never lets one key's time run backwards, even on a clock whose
//! readings do (two cores' time-stamp counters are close, not equal).

use limits::{Algorithm, Clock, KeyedLimiter, Rule, SystemClock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

const SECOND: u64 = 1_000_000_000;

#[test]
fn system_clock_reads_unix_nanoseconds_that_never_decrease() {
    let clock = SystemClock::new();
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let first = clock.now();
    let wall = u64::try_from(wall.as_nanos()).unwrap();
    assert!(first.abs_diff(wall) < 5 * SECOND, "{first} vs {wall}");
    let mut last = first;
    for _ in 0..100_000 {
        let t = clock.now();
        assert!(t >= last, "{t} after {last}");
        last = t;
    }
    // A clone reads the same time scale.
    assert!(clock.clone().now() >= last);
}

/// Reads the given times in turn, then the last one for ever.
struct Replay(&'static [u64], AtomicUsize);

impl Clock for Replay {
    fn now(&self) -> u64 {
        let i = self.1.fetch_add(1, Ordering::SeqCst);
        self.0[i.min(self.0.len() - 1)]
    }
}

#[test]
fn a_clock_reading_earlier_than_the_last_decides_at_the_last() {
    // 10 s, then a reading half a second earlier (another core's counter).
    let clock = Replay(
        &[10 * SECOND, 10 * SECOND - SECOND / 2],
        AtomicUsize::new(0),
    );
    let rule = Rule::new(Algorithm::TokenBucket, "1/s".parse().unwrap());
    let limiter: KeyedLimiter<u64, _> = KeyedLimiter::with_clock(rule, clock);
    assert!(limiter.check(&7, 1).allowed);
    let denied = limiter.check(&7, 1);
    assert!(!denied.allowed);
    // Decided at 10 s, not 9.5 s: the bucket refills one token a second later.
    assert_eq!(
        denied.retry_after.duration().unwrap().as_nanos(),
        1_000_000_000
    );
}

mod any_time_order {
    use limits::{Algorithm, KeyState, KeyedLimiter, ManualClock, Options, Rule};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// One request: key, time, cost.
    fn request() -> impl Strategy<Value = (u8, u64, u64)> {
        (0u8..4, 0u64..40_000, 0u64..4)
    }

    /// The keyed limiter against the rule on each key's state, with the
    /// times in any order: both decide at the latest time seen so far (one
    /// shard, so the limiter's latest is that), and the limiter's
    /// forgetting of idle keys changes nothing.
    fn agrees(algorithm: Algorithm, rates: &str, trace: &[(u8, u64, u64)]) {
        let rule = Rule::new(algorithm, rates.parse().unwrap());
        let options = Options {
            shards: 1,
            ..Options::default()
        };
        let limiter: KeyedLimiter<u8, ManualClock> =
            KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), options);
        let mut states: HashMap<u8, KeyState> = HashMap::new();
        let mut latest = 0;
        for (i, &(key, t, cost)) in trace.iter().enumerate() {
            latest = t.max(latest);
            let state = states.entry(key).or_insert_with(|| rule.new_state());
            let expected = rule.check(state, latest, cost);
            let got = limiter.check_at(&key, t, cost);
            assert_eq!(
                got, expected,
                "{algorithm:?} {rates}: request {i} {:?}",
                trace[i]
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn a_keyed_limiter_decides_as_the_rule_for_any_order_of_times(
            trace in proptest::collection::vec(request(), 1..60)
        ) {
            for algorithm in Algorithm::ALL {
                for rates in ["1/1000ns", "3/10000ns", "2/1000ns; 5/20000ns"] {
                    agrees(algorithm, rates, &trace);
                }
            }
        }
    }

    #[test]
    fn a_key_idle_at_a_later_time_is_not_forgiven_at_an_earlier_one() {
        // Leaky bucket 1/1000ns at 0, 10000, 20000, then 10000: the last is
        // decided at 20000, where the key's request of 20000 still counts.
        agrees(
            Algorithm::LeakyBucket,
            "1/1000ns",
            &[(0, 0, 1), (0, 10_000, 1), (0, 20_000, 1), (0, 10_000, 1)],
        );
    }
}
