//! A limit on distinct values on memcached (`MemcachedDistinct`): the
//! core's own decision on the values read and written with CAS, answer for
//! answer against the reference model on seeded random traces; one set of
//! values for every instance; a denial and a peek write nothing; every
//! writer under contention counted once.

use crate::memcached_server::MemcachedServer;

use limits::{Distinct, DistinctSketch, ManualClock, Mode, Store};
use limits_conformance::{DistinctAnswer, DistinctTrace};
use limits_memcached::{MemcachedClient, MemcachedDistinct, MemcachedOptions};
use std::time::Duration;

fn client(server: &MemcachedServer) -> MemcachedClient {
    let options = MemcachedOptions {
        timeout: Duration::from_secs(5),
        ..MemcachedOptions::default()
    };
    MemcachedClient::new(&server.url(), options).unwrap()
}

#[tokio::test]
async fn memcached_decides_distinct_values_as_the_model_on_random_traces() {
    let server = MemcachedServer::start();
    let client = client(&server);
    for seed in 1..=16u64 {
        // In nanoseconds, the core's unit.
        let trace = DistinctTrace::seeded(seed, 100, 1);
        let rule = Distinct::new(trace.at_most, Duration::from_nanos(trace.window)).unwrap();
        let store = MemcachedDistinct::new(&client, rule, &format!("trace{seed}")).unwrap();
        for (n, (step, want)) in trace.steps.iter().zip(trace.expected()).enumerate() {
            let mode = if step.peek { Mode::Peek } else { Mode::Record };
            let (key, value) = (step.key.to_string(), step.value.to_string());
            let got = store
                .decide_value_at(&key, &value, Some(step.at), mode)
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

/// Whether `store` admits `value` from one address now.
async fn ask(store: &MemcachedDistinct<ManualClock>, value: &str) -> bool {
    let verdict = store.decide_value(None, "203.0.113.7", value, Mode::Record);
    verdict.await.unwrap().decision.allowed
}

#[tokio::test]
async fn two_instances_share_each_keys_values_and_a_denial_writes_nothing() {
    let server = MemcachedServer::start();
    let usernames = Distinct::new(2, Duration::from_secs(3600)).unwrap();
    let clock = ManualClock::new(1_000_000_000);
    let a = MemcachedDistinct::with_clock(&client(&server), usernames, "logins", clock.clone())
        .unwrap();
    let b = MemcachedDistinct::with_clock(&client(&server), usernames, "logins", clock.clone())
        .unwrap();
    let from = "203.0.113.7";
    assert!(ask(&a, "alice").await);
    assert!(ask(&b, "bob").await);
    assert!(ask(&b, "alice").await, "a repeat is free on either");
    let item = a.item_key(from);
    let cas = server.command(&format!("mg {item} c")).unwrap();
    assert!(
        !ask(&a, "carol").await,
        "the third name, whichever instance sees it"
    );
    assert_eq!(
        server.command(&format!("mg {item} c")).unwrap(),
        cas,
        "a denial wrote"
    );
    let peek = a
        .decide_value_at(from, "dave", None, Mode::Peek)
        .await
        .unwrap();
    assert!(!peek.decision.allowed);
    clock.advance(Duration::from_secs(3600));
    assert!(ask(&b, "carol").await, "alice and bob left the window");
    assert!(
        a.decide(from, 1, Mode::Record).await.is_err(),
        "asked without a value"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_instances_admit_exactly_the_limit_of_new_values() {
    let server = MemcachedServer::start();
    let pages = Distinct::new(25, Duration::from_secs(3600)).unwrap();
    let stores: Vec<_> = (0..4)
        .map(|_| {
            std::sync::Arc::new(MemcachedDistinct::new(&client(&server), pages, "pages").unwrap())
        })
        .collect();
    let tasks: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut admitted = 0;
                for page in 0..20 {
                    let value = format!("/p/{i}-{page}");
                    let verdict = store.decide_value(None, "198.51.100.9", &value, Mode::Record);
                    admitted += u32::from(verdict.await.unwrap().decision.allowed);
                }
                admitted
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += task.await.unwrap();
    }
    assert_eq!(
        admitted, 25,
        "80 new pages from 4 writers at once, a limit of 25"
    );
}

#[tokio::test]
async fn a_sketch_or_values_past_an_item_are_refused() {
    let server = MemcachedServer::start();
    let client = client(&server);
    let sketch = DistinctSketch {
        from: 4,
        registers: 64,
        sub_windows: 4,
    };
    let sketched = Distinct::new(100, Duration::from_secs(60))
        .unwrap()
        .with_sketch(sketch)
        .unwrap();
    let err = MemcachedDistinct::new(&client, sketched, "x")
        .err()
        .unwrap();
    assert!(err.to_string().contains("not in memcached"), "{err}");
    let huge = Distinct::new(1_000_000, Duration::from_secs(60)).unwrap();
    let err = MemcachedDistinct::new(&client, huge, "x").err().unwrap();
    assert!(
        err.to_string().contains("more than a memcached item holds"),
        "{err}"
    );
}
