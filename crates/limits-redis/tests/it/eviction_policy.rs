//! Whether Redis may evict the limiter's keys, read from `maxmemory-policy`
//! at connection and after each outage: every `allkeys-*` and `volatile-*`
//! policy may (the keys have TTLs), `noeviction` does not, and a Redis that
//! refuses `CONFIG` is connected to all the same.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::{Duration, Instant};

fn options() -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_millis(500),
        probe_interval: Duration::from_millis(50),
        ..RedisOptions::default()
    }
}

#[tokio::test]
async fn evicting_policies_are_flagged_and_warned_and_noeviction_is_not() {
    for (policy, evicts) in [
        ("allkeys-lru", true),
        ("volatile-lru", true),
        ("volatile-ttl", true),
        ("noeviction", false),
    ] {
        let server = RedisServer::start_with(&["--maxmemory", "3mb", "--maxmemory-policy", policy]);
        let conn = RedisConnection::connect(&server.url(), options())
            .await
            .unwrap();
        assert_eq!(conn.evictable(), evicts, "{policy}");
        assert_eq!(conn.eviction_warnings(), u64::from(evicts), "{policy}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_is_read_again_when_redis_answers_after_an_outage() {
    let mut server = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let conn = RedisConnection::connect(&server.url(), options())
        .await
        .unwrap();
    assert_eq!(conn.eviction_warnings(), 1);
    let rule = Rule::new(Algorithm::FixedWindow, "100/s".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "policy").unwrap();
    server.stop();
    store.decide("k", 1, Mode::Record).await.unwrap_err();
    assert_eq!(conn.outages(), 1);
    server.restart();
    let back = Instant::now();
    while conn.eviction_warnings() < 2 {
        assert!(
            back.elapsed() < Duration::from_secs(5),
            "no second warning within 5 s of Redis's return"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(conn.is_healthy() && conn.evictable());
    assert_eq!(conn.eviction_warnings(), 2, "warned once more, on return");
}

#[tokio::test]
async fn a_redis_that_refuses_config_is_used_all_the_same() {
    let server = RedisServer::start_with(&["--rename-command", "CONFIG", ""]);
    let conn = RedisConnection::connect(&server.url(), options())
        .await
        .unwrap();
    assert!(!conn.evictable(), "unknown: not claimed");
    assert_eq!(conn.eviction_warnings(), 0);
    let rule = Rule::new(Algorithm::FixedWindow, "1/s".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "no-config").unwrap();
    assert!(
        store
            .decide("k", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
}
