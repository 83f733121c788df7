//! `Fallback::Local`: while Redis is unreachable, each store decides in
//! this process with an in-memory limiter of the same rule, so an outage
//! admits at most the limit per instance, not everything.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{Fallback, RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_limited_by_the_local_fallback_and_redis_decides_again_on_return() {
    let mut server = RedisServer::start();
    let options = RedisOptions {
        timeout: Duration::from_millis(500),
        probe_interval: Duration::from_millis(50),
        on_error: Fallback::Local,
        ..RedisOptions::default()
    };
    let conn = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    let rule = Rule::new(Algorithm::SlidingLog, "3/min".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "local").unwrap();
    assert!(
        store
            .decide("other", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    assert_eq!(conn.local_decisions(), 0, "Redis decides while it answers");

    server.stop();
    let mut allowed = 0;
    for _ in 0..10 {
        let verdict = store.decide("alice", 1, Mode::Record).await.unwrap();
        allowed += usize::from(verdict.decision.allowed);
    }
    assert_eq!(allowed, 3, "the rule's limit, not everything");
    assert_eq!(conn.outages(), 1);
    assert_eq!(conn.local_decisions(), 10);
    let now = store.decide_now("alice", 1, Mode::Record);
    let denied = now.expect("answered at once while Redis is down").unwrap();
    assert!(!denied.decision.allowed);
    assert!(denied.decision.retry_after.duration().is_some());

    server.restart();
    let back = Instant::now();
    while !conn.is_healthy() {
        assert!(back.elapsed() < Duration::from_secs(5), "not back in 5 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let local = conn.local_decisions();
    assert!(
        store
            .decide("alice", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    assert_eq!(conn.local_decisions(), local, "Redis (empty) decides again");
}
