//! A limit on distinct values in Redis (`RedisDistinct`): the core's exact
//! decision at microsecond times, answer for answer against the reference
//! model on seeded random traces (times on window edges, repeats, peeks);
//! one set of values for every instance on the Redis; each key expiring
//! when its last value leaves the window.

use crate::redis_server;
use crate::redis_store::connect;

use limits::{Distinct, DistinctSketch, Mode, Store};
use limits_conformance::{DistinctAnswer, DistinctTrace};
use limits_redis::RedisDistinct;
use redis_server::RedisServer;
use std::time::Duration;

#[tokio::test]
async fn redis_decides_distinct_values_as_the_model_on_random_traces() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    for seed in 1..=24u64 {
        // In microseconds, Redis's unit.
        let trace = DistinctTrace::seeded(seed, 120, 1000);
        let window = Duration::from_nanos(trace.window);
        let exact = Distinct::new(trace.at_most, window).unwrap();
        // Odd seeds through the sketch's script, whose threshold these
        // traces never reach: its exact part must decide as the model.
        let rule = match seed % 2 {
            0 => exact,
            _ => {
                let sketch = DistinctSketch {
                    from: 64,
                    registers: 1024,
                    sub_windows: 2,
                };
                exact.with_sketch(sketch).unwrap()
            }
        };
        let store = RedisDistinct::new(&conn, rule, &format!("trace{seed}")).unwrap();
        for (n, (step, want)) in trace.steps.iter().zip(trace.expected()).enumerate() {
            let mode = if step.peek { Mode::Peek } else { Mode::Record };
            let (key, value) = (step.key.to_string(), step.value.to_string());
            let now = Some(step.at);
            let got = store
                .decide_value_at(&key, &value, now, mode)
                .await
                .unwrap();
            assert_eq!(
                DistinctAnswer::from(got.decision),
                want,
                "seed {seed} step {n}: {step:?}"
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
async fn a_window_or_sub_window_of_no_whole_microseconds_is_refused() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    let odd = Distinct::new(2, Duration::from_nanos(1500)).unwrap();
    let err = RedisDistinct::new(&conn, odd, "x").err().unwrap();
    assert!(err.to_string().contains("not a whole number"), "{err}");
    let sketch = DistinctSketch {
        from: 4,
        registers: 64,
        sub_windows: 3,
    };
    let thirds = Distinct::new(100, Duration::from_micros(1000))
        .unwrap()
        .with_sketch(sketch)
        .unwrap();
    let err = RedisDistinct::new(&conn, thirds, "x").err().unwrap();
    assert!(
        err.to_string().contains("in 3 is not a whole number"),
        "{err}"
    );
}

#[tokio::test]
async fn past_its_threshold_a_key_counts_in_hyperloglogs_within_their_error() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    let (at_most, from) = (2000u64, 32usize);
    let window = Duration::from_secs(3600);
    let sketch = DistinctSketch {
        from,
        registers: 1024,
        sub_windows: 4,
    };
    let rule = Distinct::new(at_most, window)
        .unwrap()
        .with_sketch(sketch)
        .unwrap();
    let store = RedisDistinct::new(&conn, rule, "pages").unwrap();
    let tenth = 100_000_000u64;
    let ask = |value: u64, at: u64, mode| {
        let page = format!("/p/{value}");
        let store = &store;
        async move {
            store
                .decide_value_at("198.51.100.9", &page, Some(at), mode)
                .await
        }
    };
    // A scraper: a new page every tenth of a second, twice the limit, all
    // in the first sub-window (a quarter hour).
    let mut admitted = Vec::new();
    for page in 0..2 * at_most {
        let t = (1 + page) * tenth;
        if ask(page, t, Mode::Record).await.unwrap().decision.allowed {
            admitted.push(page);
        }
    }
    let n = admitted.len() as f64;
    eprintln!("{n} distinct pages of {at_most} admitted");
    // Redis's HyperLogLog: a standard error of 0.81%; three of them.
    let bound = 3.0 * 0.0081 * at_most as f64;
    assert!(
        (n - at_most as f64).abs() <= bound,
        "{n} of {at_most} admitted"
    );
    assert!(
        admitted.windows(2).all(|w| w[1] == w[0] + 1),
        "every page until the limit, none after: {admitted:?}"
    );
    let now = (1 + 2 * at_most) * tenth;
    let last = *admitted.last().unwrap();
    let repeat = ask(last, now, Mode::Record).await.unwrap().decision;
    assert!(repeat.allowed, "one of the last {from} values is free");
    let first = ask(admitted[0], now, Mode::Peek).await.unwrap().decision;
    assert!(
        !first.allowed,
        "an older repeat is counted as new, and the count is full"
    );
    // The first sub-window leaves the window (an hour after it began), and
    // its pages with it.
    let wait = first.retry_after.duration().unwrap();
    assert!(wait <= window && wait > Duration::ZERO, "{wait:?}");
    let later = now + u64::try_from(wait.as_nanos()).unwrap();
    assert!(
        ask(9_999_999, later, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    for i in 0..sketch.sub_windows {
        let sketch_key = format!("{}:h{i}", store.redis_key("198.51.100.9"));
        let ttl = server.integer(&["PTTL", &sketch_key]);
        assert!(
            ttl == -2 || ttl > 0,
            "{sketch_key}: every sketch expires ({ttl})"
        );
    }
}
