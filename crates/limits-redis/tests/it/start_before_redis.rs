//! A connection made before Redis is up: `connect` refuses it (the strict
//! start), `start` returns at once with the circuit open, fails fast (or
//! decides locally), and decides in Redis once Redis answers, with no new
//! connection made by the caller.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store, StoreErrorKind};
use limits_redis::{Fallback, RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::{Duration, Instant};

fn options(on_error: Fallback) -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_millis(200),
        probe_interval: Duration::from_millis(50),
        on_error,
        ..RedisOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_started_before_redis_fails_fast_then_decides_in_redis() {
    let port = redis_server::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let err = RedisConnection::connect(&url, options(Fallback::Error))
        .await
        .expect_err("connect insists on an answer");
    assert!(err.to_string().contains(&port.to_string()), "{err}");

    let started = Instant::now();
    let conn = RedisConnection::start(&url, options(Fallback::Error))
        .await
        .expect("start does not need Redis");
    let local = RedisConnection::start(&url, options(Fallback::Local))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!conn.is_healthy());
    assert_eq!(conn.outages(), 1, "unreachable at start is an outage");
    let rule = Rule::new(Algorithm::SlidingLog, "2/min".parse().unwrap());
    let store = RedisStore::new(&conn, rule.clone(), "s").unwrap();
    let local_store = RedisStore::new(&local, rule, "s").unwrap();
    for _ in 0..20 {
        let asked = Instant::now();
        let err = store.decide("k", 1, Mode::Record).await.unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");
        assert!(asked.elapsed() < Duration::from_millis(100), "not fast");
    }
    assert_eq!(conn.calls(), 0, "nothing was sent");
    // The local fallback limits in the meantime.
    let mut allowed = Vec::new();
    for _ in 0..3 {
        let verdict = local_store.decide("k", 1, Mode::Record).await.unwrap();
        allowed.push(verdict.decision.allowed);
    }
    assert_eq!(allowed, [true, true, false]);
    assert_eq!(local.local_decisions(), 3);

    let redis = RedisServer::start_on(port).expect("redis-server on the port");
    let up = Instant::now();
    while !(conn.is_healthy() && local.is_healthy()) {
        assert!(
            up.elapsed() < Duration::from_secs(5),
            "not connected in 5 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Both decide in Redis now, on one limit.
    assert!(
        store
            .decide("k", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    let second = local_store.decide("k", 1, Mode::Record).await.unwrap();
    assert!(second.decision.allowed);
    let third = store.decide("k", 1, Mode::Record).await.unwrap();
    assert!(!third.decision.allowed);
    assert_eq!(local.local_decisions(), 3, "no more local decisions");
    assert!(redis.integer(&["DBSIZE"]) > 0);
    assert_eq!(conn.outages(), 1);
}

#[tokio::test]
async fn start_still_refuses_an_address_that_can_never_connect() {
    for url in ["redis://127.0.0.1:99999", "redis+cluster://", "http://x"] {
        let err = RedisConnection::start(url, RedisOptions::default())
            .await
            .expect_err(url);
        assert!(!err.to_string().is_empty(), "{url}");
    }
}
