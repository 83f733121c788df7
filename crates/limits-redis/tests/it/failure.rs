//! The circuit: while Redis is down, decisions fail at once (not after the
//! timeout, again and again), one outage is counted, and a background probe
//! brings the store back when Redis is up again.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store, StoreErrorKind};
use limits_redis::{Fallback, RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_redis_fails_fast_once_per_outage_and_comes_back() {
    let mut server = RedisServer::start();
    let options = RedisOptions {
        timeout: Duration::from_millis(500),
        probe_interval: Duration::from_millis(100),
        // The errors themselves, for the caller's policy (the library's
        // default; `limits serve` and `limits rls` decide locally).
        on_error: Fallback::Error,
        ..RedisOptions::default()
    };
    let conn = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    let rule = Rule::new(Algorithm::TokenBucket, "1000/s".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "f").unwrap();
    assert!(store.decide("k", 1, Mode::Record).await.is_ok());
    assert!(conn.is_healthy());

    server.stop();
    let mut failed = 0;
    for _ in 0..200 {
        let err = store.decide("k", 1, Mode::Record).await.unwrap_err();
        assert!(err.message.contains("Redis"), "{err}");
        assert_eq!(err.kind, StoreErrorKind::Unavailable);
        failed += 1;
    }
    assert_eq!(failed, 200);
    assert!(!conn.is_healthy());
    assert_eq!(conn.outages(), 1, "one outage, however many calls failed");
    assert!(conn.errors() >= 200);
    let sent = conn.calls();
    store.decide("k", 1, Mode::Record).await.unwrap_err();
    assert_eq!(
        conn.calls(),
        sent,
        "while the circuit is open, Redis is not asked"
    );

    server.restart();
    let back = Instant::now();
    while store.decide("k", 1, Mode::Record).await.is_err() {
        assert!(
            back.elapsed() < Duration::from_secs(2),
            "not back within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(conn.is_healthy());
    assert_eq!(conn.outages(), 1);
}
