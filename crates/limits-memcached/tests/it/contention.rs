//! Many tasks deciding on one key at once, on a real memcached, through
//! separate clients and connections: the CAS loop admits exactly what one
//! in-memory limiter would, every limiter, whoever wins each race.

use crate::memcached_server::MemcachedServer;

use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store};
use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
use std::sync::Arc;
use std::time::Duration;

const TASKS: usize = 64;
const EACH: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_tasks_on_one_key_admit_exactly_the_limit() {
    let server = MemcachedServer::start();
    for algorithm in limits_conformance::ALGORITHMS {
        let rule = Rule::build(algorithm, "100/h; 150/d".parse().unwrap(), None);
        // One instant: whatever the order, the same number passes.
        let clock = ManualClock::new(3_600_000_000_000);
        let memory = KeyedLimiter::<String, _>::with_clock(rule.clone(), clock.clone());
        let expected = (0..TASKS * EACH)
            .filter(|_| {
                memory
                    .decide_now("hot", 1, Mode::Record)
                    .unwrap()
                    .unwrap()
                    .decision
                    .allowed
            })
            .count();
        // Two clients, as two instances would be, each its own pool.
        let options = MemcachedOptions {
            prefix: format!("{algorithm}:"),
            timeout: Duration::from_secs(30),
            max_connections: 16,
            max_attempts: 10_000,
            ..MemcachedOptions::default()
        };
        let clients = [
            MemcachedClient::new(&server.url(), options.clone()).unwrap(),
            MemcachedClient::new(&server.url(), options).unwrap(),
        ];
        let stores: Vec<_> = clients
            .iter()
            .map(|c| {
                Arc::new(MemcachedStore::with_clock(c, rule.clone(), "r", clock.clone()).unwrap())
            })
            .collect();
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let store = Arc::clone(&stores[i % 2]);
                tokio::spawn(async move {
                    let mut allowed = 0;
                    for _ in 0..EACH {
                        let verdict = store.decide("hot", 1, Mode::Record).await.unwrap();
                        allowed += usize::from(verdict.decision.allowed);
                    }
                    allowed
                })
            })
            .collect();
        let mut allowed = 0;
        for task in tasks {
            allowed += task.await.unwrap();
        }
        assert_eq!(allowed, expected, "{algorithm}");
        let retries: u64 = clients.iter().map(MemcachedClient::retries).sum();
        assert!(
            retries > 0,
            "{algorithm}: no write ever met another: no contention tested"
        );
        assert_eq!(clients.iter().map(MemcachedClient::gave_up).sum::<u64>(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn past_its_attempts_a_decision_is_an_error_that_recorded_nothing() {
    let server = MemcachedServer::start();
    let rule = Rule::new(Algorithm::TokenBucket, "1000000/h".parse().unwrap());
    let clock = ManualClock::new(0);
    // One attempt: every conflict gives up.
    let options = MemcachedOptions {
        timeout: Duration::from_secs(30),
        max_attempts: 1,
        ..MemcachedOptions::default()
    };
    let client = MemcachedClient::new(&server.url(), options).unwrap();
    let store = Arc::new(MemcachedStore::with_clock(&client, rule, "r", clock).unwrap());
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let (mut allowed, mut errors) = (0u64, 0u64);
                for _ in 0..EACH {
                    match store.decide("hot", 1, Mode::Record).await {
                        Ok(v) => allowed += u64::from(v.decision.allowed),
                        Err(e) => {
                            assert!(e.message.contains("1 attempts"), "{e}");
                            errors += 1;
                        }
                    }
                }
                (allowed, errors)
            })
        })
        .collect();
    let (mut allowed, mut errors) = (0, 0);
    for task in tasks {
        let (a, e) = task.await.unwrap();
        allowed += a;
        errors += e;
    }
    assert!(errors > 0, "no conflict met: nothing tested");
    assert_eq!(client.gave_up(), errors);
    assert_eq!(allowed + errors, (TASKS * EACH) as u64);
    // Only the admitted requests were recorded.
    let peek = store.decide("hot", 1, Mode::Peek).await.unwrap();
    assert_eq!(peek.decision.remaining, 1_000_000 - allowed);
}
