//! A Redis full under `maxmemory` with `noeviction` answers `OOM`: the
//! store reports it as its own kind of failure (Full), not as an outage
//! (the circuit stays closed, nothing is "unreachable"), counts it, and
//! with the local fallback decides in this process under the same rule.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store, StoreErrorKind};
use limits_redis::{Fallback, RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::Duration;

fn full_redis() -> RedisServer {
    let server =
        RedisServer::start_with(&["--maxmemory", "3mb", "--maxmemory-policy", "noeviction"]);
    assert!(
        server.fill_until_oom() > 0,
        "some values fit before it is full"
    );
    server
}

async fn connect(server: &RedisServer, on_full: Fallback) -> RedisConnection {
    let options = RedisOptions {
        timeout: Duration::from_secs(5),
        on_error: Fallback::Error,
        on_full,
        new_keys_per_client: None,
        ..RedisOptions::default()
    };
    RedisConnection::connect(&server.url(), options)
        .await
        .unwrap()
}

fn rule() -> Rule {
    Rule::new(Algorithm::SlidingLog, "3/min".parse().unwrap())
}

#[tokio::test]
async fn an_oom_answer_is_a_full_store_not_an_outage_and_is_counted() {
    let server = full_redis();
    let conn = connect(&server, Fallback::Error).await;
    let store = RedisStore::new(&conn, rule(), "full").unwrap();
    let err = store.decide("fresh", 1, Mode::Record).await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Full, "{err}");
    assert!(err.message.contains("OOM"), "{err}");
    assert!(
        conn.is_healthy(),
        "Redis answered: the circuit stays closed"
    );
    assert_eq!(conn.outages(), 0);
    assert_eq!(conn.full_answers(), 1);
    store.decide("fresh", 1, Mode::Record).await.unwrap_err();
    assert_eq!(conn.full_answers(), 2, "every refused write counts");
    // Room again: the store writes again, with no probe to wait for.
    server.command(&["FLUSHALL"]).unwrap();
    let verdict = store.decide("fresh", 1, Mode::Record).await.unwrap();
    assert!(verdict.decision.allowed);
}

#[tokio::test]
async fn a_full_store_with_the_local_fallback_decides_in_this_process_under_the_rule() {
    let server = full_redis();
    let conn = connect(&server, Fallback::Local).await;
    let store = RedisStore::new(&conn, rule(), "full-local").unwrap();
    let mut allowed = 0;
    for _ in 0..10 {
        let verdict = store.decide("fresh", 1, Mode::Record).await.unwrap();
        allowed += usize::from(verdict.decision.allowed);
    }
    assert_eq!(allowed, 3, "the rule's 3 per minute, decided here");
    assert_eq!(conn.local_decisions(), 10);
    assert_eq!(conn.full_answers(), 10);
    assert_eq!(conn.outages(), 0);
}
