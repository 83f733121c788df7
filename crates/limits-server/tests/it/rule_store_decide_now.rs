//! `RuleStore::decide_now`, the synchronous decision the HTTP layer uses to
//! skip its boxed future: an in-memory rule answers at once with what
//! `decide` answers; a Redis rule (a real `redis-server`) answers at once
//! only the denials its deny cache holds, and asking it records nothing.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions};
use limits_server::{RuleStore, StoreKind, StoreOptions};
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

async fn redis_store(deny_cache: usize) -> (RedisServer, RuleStore) {
    let server = RedisServer::start();
    let redis = RedisOptions {
        timeout: Duration::from_secs(5),
        deny_cache,
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
    (server, store)
}

#[tokio::test]
async fn redis_answers_at_once_only_what_its_deny_cache_holds() {
    let (_server, store) = redis_store(100).await;
    for _ in 0..4 {
        assert!(store.decide_now("alice", 1, Mode::Record).is_none());
    }
    for remaining in [2, 1, 0] {
        let allowed = store.decide("alice", 1, Mode::Record).await.unwrap();
        assert!(allowed.decision.allowed);
        assert_eq!(
            allowed.decision.remaining, remaining,
            "only `decide` recorded"
        );
        assert!(store.decide_now("alice", 1, Mode::Record).is_none());
    }
    let denied = store.decide("alice", 1, Mode::Record).await.unwrap();
    assert!(!denied.decision.allowed);
    let wait = denied.decision.retry_after.duration().unwrap();

    let at_once = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    assert!(!at_once.decision.allowed);
    assert_eq!(at_once.decision.remaining, 0);
    assert_eq!(at_once.per_rate.len(), 2);
    let again = at_once.decision.retry_after.duration().unwrap();
    assert!(
        again <= wait && again > wait - Duration::from_secs(60),
        "{again:?} after {wait:?}"
    );
    let RuleStore::Redis(redis) = &store else {
        unreachable!("a Redis rule")
    };
    let hits = redis.connection().deny_cache_hits();
    assert_eq!(hits, 1, "the answer at once is a deny-cache hit");

    // A larger cost is denied too; a smaller one, or another key, is Redis's.
    assert!(store.decide_now("alice", 2, Mode::Peek).is_some());
    assert!(store.decide_now("alice", 0, Mode::Record).is_none());
    assert!(store.decide_now("bob", 1, Mode::Record).is_none());
    let bob = store.decide("bob", 1, Mode::Record).await.unwrap();
    assert_eq!(bob.decision.remaining, 2);
}

#[tokio::test]
async fn redis_without_a_deny_cache_never_answers_at_once() {
    let (_server, store) = redis_store(0).await;
    for _ in 0..4 {
        let _ = store.decide("alice", 1, Mode::Record).await.unwrap();
    }
    let denied = store.decide("alice", 1, Mode::Record).await.unwrap();
    assert!(!denied.decision.allowed);
    assert!(store.decide_now("alice", 1, Mode::Record).is_none());
}
