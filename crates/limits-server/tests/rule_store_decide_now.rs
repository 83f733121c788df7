//! `RuleStore::decide_now`, the synchronous decision the HTTP layer uses to
//! skip its boxed future: an in-memory rule answers at once with what
//! `decide` answers, a Redis rule (a real `redis-server`) never does, and
//! asking it records nothing.

#[path = "../../limits-redis/tests/common/redis_server.rs"]
mod redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions};
use limits_server::{StoreKind, StoreOptions};
use redis_server::RedisServer;
use std::time::Duration;

fn rule() -> Rule {
    Rule::new(Algorithm::SlidingLog, "3/h; 5/d".parse().unwrap())
}

#[tokio::test]
async fn in_memory_answers_at_once_as_decide_does() {
    let options = StoreOptions::default();
    let now = options.store_in(StoreKind::Memory, "r", rule()).unwrap();
    let later = options.store_in(StoreKind::Memory, "r", rule()).unwrap();
    for _ in 0..5 {
        let at_once = now.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
        let waited = later.decide("alice", 1, Mode::Record).await.unwrap();
        assert_eq!(at_once.decision.allowed, waited.decision.allowed);
        assert_eq!(at_once.decision.remaining, waited.decision.remaining);
        assert_eq!(at_once.per_rate.len(), 2);
        let remaining: Vec<u64> = at_once.per_rate.iter().map(|d| d.remaining).collect();
        let expected: Vec<u64> = waited.per_rate.iter().map(|d| d.remaining).collect();
        assert_eq!(remaining, expected);
    }
    let peek = now.decide_now("alice", 1, Mode::Peek).unwrap().unwrap();
    assert!(!peek.decision.allowed, "3 of 3 per hour recorded");
}

#[tokio::test]
async fn redis_never_answers_at_once_and_records_nothing_then() {
    let server = RedisServer::start();
    let redis = RedisOptions {
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    };
    let connection = RedisConnection::connect(&server.url(), redis)
        .await
        .unwrap();
    let options = StoreOptions {
        redis: Some(connection),
        ..StoreOptions::default()
    };
    let store = options.store("r", rule()).unwrap();
    assert_eq!(store.kind(), "redis");
    for _ in 0..4 {
        assert!(store.decide_now("alice", 1, Mode::Record).is_none());
    }
    let first = store.decide("alice", 1, Mode::Record).await.unwrap();
    assert!(first.decision.allowed);
    assert_eq!(first.decision.remaining, 2, "only `decide` recorded");
}
