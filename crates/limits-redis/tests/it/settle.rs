//! Settling on Redis's own clock (the settle suite, conformance.rs and
//! cluster.rs, holds the arithmetic to the models at explicit times): a
//! refund lets the next request through at once, past this instance's
//! deny cache; a settled key keeps the expiry its window needs; a charge
//! is a debt the next request waits for.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::Duration;

async fn store(server: &RedisServer, algorithm: Algorithm, rates: &str) -> RedisStore {
    let options = RedisOptions {
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    };
    let connection = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    let mut rule = Rule::new(algorithm, rates.parse().unwrap());
    if algorithm == Algorithm::LeakyBucket {
        // No queue: admits the limit at once, as the others do.
        rule = rule.with_burst(0);
    }
    RedisStore::new(&connection, rule, "settle").unwrap()
}

#[tokio::test]
async fn a_refund_forgets_the_denial_this_instance_cached() {
    let server = RedisServer::start();
    for algorithm in crate::conformance::decided() {
        let store = store(&server, algorithm, "1/h").await;
        let first = store.decide("k", 1, Mode::Record).await.unwrap();
        let receipt = first.receipt(1).expect("Redis's verdict has a receipt");
        let calls = store.connection().calls();
        assert!(
            !store
                .decide("k", 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed
        );
        assert!(
            store.decide_now("k", 1, Mode::Record).is_some(),
            "{algorithm}: the denial is cached"
        );
        store.settle("k", None, receipt, 0).await.unwrap();
        assert!(
            store.decide_now("k", 1, Mode::Record).is_none(),
            "{algorithm}: Redis decides again"
        );
        let again = store.decide("k", 1, Mode::Record).await.unwrap();
        assert!(again.decision.allowed, "{algorithm}: refunded");
        assert_eq!(store.connection().calls() - calls, 3, "{algorithm}");
    }
}

#[tokio::test]
async fn a_window_refunded_to_nothing_keeps_the_expiry_its_window_needs() {
    let server = RedisServer::start();
    // One rate: the one-rate scripts write later in a window without
    // moving the key's expiry (KEEPTTL), so a settled key must keep the
    // window's.
    for algorithm in [Algorithm::FixedWindow, Algorithm::SlidingWindow] {
        let store = store(&server, algorithm, "5/h").await;
        let first = store.decide("k", 1, Mode::Record).await.unwrap();
        store
            .settle("k", None, first.receipt(1).unwrap(), 0)
            .await
            .unwrap();
        let key = &store.redis_keys("k")[0];
        let ttl = server.integer(&["PTTL", key]);
        // The key, at a count of nothing, lives as long as the first
        // decision's count had to (a second of slack for the run).
        let needed = first.decision.reset_after.as_millis() as i64;
        assert!(
            ttl + 1000 >= needed,
            "{algorithm}: the key lives {ttl} ms, its window {needed} ms"
        );
        let counted = store.decide("k", 2, Mode::Record).await.unwrap();
        assert_eq!(counted.decision.remaining, 3, "{algorithm}");
    }
}

#[tokio::test]
async fn a_charge_beyond_the_limit_is_a_debt_the_next_request_waits_for() {
    let server = RedisServer::start();
    let store = store(&server, Algorithm::TokenBucket, "10/s").await;
    let first = store.decide("k", 1, Mode::Record).await.unwrap();
    // Really 15: 5 beyond a full bucket, capped at one limit of debt.
    store
        .settle("k", None, first.receipt(1).unwrap(), 15)
        .await
        .unwrap();
    let next = store.decide("k", 1, Mode::Record).await.unwrap();
    assert!(!next.decision.allowed);
    let wait = next.decision.retry_after.duration().unwrap();
    // 6 tokens of debt at 100 ms each, less the time since.
    assert!(
        wait > Duration::from_millis(500) && wait <= Duration::from_millis(600),
        "{wait:?}"
    );
}
