//! A limit on distinct values in Redis (`RedisDistinct`): the core's exact
//! decision at microsecond times, answer for answer against the reference
//! model on seeded random traces (times on window edges, repeats, peeks);
//! one set of values for every instance on the Redis; each key expiring
//! when its last value leaves the window.

use crate::redis_server;

use limits::{Distinct, Mode, RetryAfter, Store};
use limits_conformance::{DistinctAnswer, DistinctModel};
use limits_redis::{RedisConnection, RedisDistinct, RedisOptions};
use redis_server::RedisServer;
use std::collections::HashMap;
use std::time::Duration;

async fn connect(server: &RedisServer) -> RedisConnection {
    let options = RedisOptions {
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    };
    RedisConnection::connect(&server.url(), options)
        .await
        .unwrap()
}

fn answer(d: limits::Decision) -> DistinctAnswer {
    DistinctAnswer {
        allowed: d.allowed,
        remaining: d.remaining,
        retry_after: match d.retry_after {
            RetryAfter::After(w) if !d.allowed => Some(w),
            _ => None,
        },
        reset_after: d.reset_after,
        refill_after: d.refill_after,
    }
}

/// xorshift64*: the traces are the same on every run, and the seed of a
/// failing one is printed.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[tokio::test]
async fn redis_decides_distinct_values_as_the_model_on_random_traces() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    for seed in 1..=24u64 {
        let mut rng = Seeded(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let at_most = 1 + rng.below(4);
        let window_us = 2 + rng.below(40);
        let window = window_us * 1000;
        let rule = Distinct::new(at_most, Duration::from_nanos(window)).unwrap();
        let store = RedisDistinct::new(&conn, rule, &format!("trace{seed}")).unwrap();
        let mut models: HashMap<u64, DistinctModel> = HashMap::new();
        let mut us = 0;
        for step in 0..120 {
            us += match rng.below(8) {
                0..=2 => 0,
                3 => window_us - 1,
                4 => window_us,
                5 => window_us + 1,
                _ => rng.below(window_us),
            };
            let (key, value) = (rng.below(3), rng.below(6));
            let peek = rng.below(7) == 0;
            let mode = if peek { Mode::Peek } else { Mode::Record };
            let now = us * 1000;
            let got = store
                .decide_value_at(&key.to_string(), &value.to_string(), Some(now), mode)
                .await
                .unwrap();
            let model = models.entry(key).or_default();
            let want = model.decide(at_most, window, value, now, !peek);
            assert_eq!(
                answer(got.decision),
                want,
                "seed {seed} step {step}: key {key} value {value} at {us} us, {at_most} per {window_us} us"
            );
        }
    }
}

/// `value` decided for one address by `store`.
async fn ask(store: &RedisDistinct, value: &str) -> limits::Decision {
    let verdict = store.decide_value(None, "203.0.113.7", value, Mode::Record);
    verdict.await.unwrap().decision
}

#[tokio::test]
async fn two_instances_on_one_redis_share_each_keys_values() {
    let server = RedisServer::start();
    let usernames = Distinct::new(2, Duration::from_secs(3600)).unwrap();
    let a = RedisDistinct::new(&connect(&server).await, usernames, "logins").unwrap();
    let b = RedisDistinct::new(&connect(&server).await, usernames, "logins").unwrap();
    assert!(ask(&a, "alice").await.allowed);
    assert!(ask(&b, "bob").await.allowed);
    assert!(ask(&b, "alice").await.allowed, "a repeat is free on either");
    let refused = ask(&a, "carol").await;
    assert!(
        !refused.allowed,
        "the third name, whichever instance sees it"
    );
    let wait = refused.retry_after.duration().unwrap();
    assert!(
        wait > Duration::from_secs(3590) && wait <= Duration::from_secs(3600),
        "{wait:?}"
    );
    let headers_rule = limits::Rule::new(limits::Algorithm::SlidingLog, "2/h".parse().unwrap());
    assert_eq!(Store::rule(&a), &headers_rule);
    // The key lives until its last value leaves the window.
    let pttl = server.integer(&["PTTL", &a.redis_key("203.0.113.7")]);
    assert!(pttl > 3_590_000 && pttl <= 3_600_001, "{pttl} ms");
    assert!(
        a.decide("203.0.113.7", 1, Mode::Record).await.is_err(),
        "asked without a value"
    );
}

#[tokio::test]
async fn a_window_of_no_whole_microseconds_or_a_sketch_is_refused() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    let odd = Distinct::new(2, Duration::from_nanos(1500)).unwrap();
    let err = RedisDistinct::new(&conn, odd, "x").err().unwrap();
    assert!(err.to_string().contains("not a whole number"), "{err}");
    let sketch = limits::DistinctSketch {
        from: 4,
        registers: 64,
        sub_windows: 4,
    };
    let sketched = Distinct::new(100, Duration::from_secs(60))
        .unwrap()
        .with_sketch(sketch)
        .unwrap();
    let err = RedisDistinct::new(&conn, sketched, "x").err().unwrap();
    assert!(err.to_string().contains("kept in memory"), "{err}");
}
