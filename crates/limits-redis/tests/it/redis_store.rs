//! The Redis store on a real Redis: several rates in one call, keys and their
//! expiry, scripts reloaded after a flush, rules refused, and the sliding
//! log's memory per logged request.

use crate::redis_server;

use limits::{Algorithm, Mode, RetryAfter, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::Duration;

pub(crate) async fn connect(server: &RedisServer) -> RedisConnection {
    let options = RedisOptions {
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    };
    RedisConnection::connect(&server.url(), options)
        .await
        .unwrap()
}

fn rule(algorithm: Algorithm, rates: &str) -> Rule {
    Rule::new(algorithm, rates.parse().unwrap())
}

#[tokio::test]
async fn several_rates_are_decided_all_or_nothing_in_one_call() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingLog,
        Algorithm::TokenBucket,
        Algorithm::SlidingWindow,
    ] {
        let store = RedisStore::new(&conn, rule(algorithm, "3/s; 5/h"), "multi").unwrap();
        let at = |s: u64| s * 1_000_000_000;
        let calls = conn.calls();
        for _ in 0..3 {
            assert!(
                store
                    .decide_at("k", at(10), 1, Mode::Record)
                    .await
                    .unwrap()
                    .decision
                    .allowed
            );
        }
        assert_eq!(
            conn.calls() - calls,
            3,
            "{algorithm}: one call per decision"
        );
        let denied = store.decide_at("k", at(10), 2, Mode::Record).await.unwrap();
        assert!(!denied.decision.allowed, "{algorithm}");
        assert_eq!(denied.per_rate.len(), 2);
        // 2 more break 3/s but not 5/h...
        assert!(!denied.per_rate[0].retry_after.is_never(), "{algorithm}");
        assert_eq!(
            denied.per_rate[1].retry_after,
            RetryAfter::ZERO,
            "{algorithm}"
        );
        assert_eq!(denied.per_rate[1].remaining, 2, "{algorithm}");
        // ...and 5/h was charged nothing: 2 more pass a window later.
        let later = store.decide_at("k", at(20), 2, Mode::Record).await.unwrap();
        assert!(
            later.decision.allowed,
            "{algorithm}: the denial took nothing"
        );
        assert_eq!(later.per_rate[1].remaining, 0, "{algorithm}");
        let full = store.decide_at("k", at(30), 1, Mode::Record).await.unwrap();
        assert!(!full.decision.allowed, "{algorithm}: 5/h is used up");
        assert!(
            full.per_rate[1].retry_after > RetryAfter::ZERO,
            "{algorithm}"
        );
    }
}

#[tokio::test]
async fn keys_share_a_hash_tag_and_expire_at_their_reset() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    let store = RedisStore::new(&conn, rule(Algorithm::SlidingLog, "5/10s; 50/m"), "api").unwrap();
    assert!(
        store
            .decide("alice", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    let keys = store.redis_keys("alice");
    assert_eq!(keys.len(), 2);
    for key in &keys {
        assert!(key.starts_with("limits:{api."), "{key}");
        assert!(key.contains(":alice}:"), "{key}");
        // Cluster hashes only what is between the first { and the next }.
        let tag = |k: &str| {
            k.split('{')
                .nth(1)
                .and_then(|t| t.split('}').next())
                .map(str::to_owned)
        };
        assert_eq!(
            tag(key),
            tag(&keys[0]),
            "one slot for every key of a decision"
        );
        let ttl = server.integer(&["PTTL", key]);
        assert!(ttl > 0, "{key} expires");
    }
    let (short, long) = (
        server.integer(&["PTTL", &keys[0]]),
        server.integer(&["PTTL", &keys[1]]),
    );
    assert!(
        short <= 10_002 && short > 9_000,
        "the 10 s rate's key lives 10 s: {short}"
    );
    assert!(
        long <= 60_002 && long > 59_000,
        "the minute's key lives a minute: {long}"
    );
    // A peek writes nothing.
    store.decide("bob", 1, Mode::Peek).await.unwrap();
    assert_eq!(server.integer(&["EXISTS", &store.redis_keys("bob")[0]]), 0);
    let bucket = RedisStore::new(&conn, rule(Algorithm::TokenBucket, "10/s"), "api").unwrap();
    bucket.decide("alice", 4, Mode::Record).await.unwrap();
    let ttl = server.integer(&["PTTL", &bucket.redis_keys("alice")[0]]);
    assert!(ttl <= 402 && ttl > 300, "full again 0.4 s later: {ttl}");
}

#[tokio::test]
async fn scripts_come_back_after_a_flush_and_none_never_asks_redis() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    let store = RedisStore::new(&conn, rule(Algorithm::LeakyBucket, "2/s"), "q").unwrap();
    assert!(
        store
            .decide("k", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    assert!(server.command(&["SCRIPT", "FLUSH"]).unwrap().contains("OK"));
    let second = store.decide("k", 1, Mode::Record).await.unwrap();
    assert!(second.decision.allowed);
    assert!(
        second.decision.delay > Duration::ZERO,
        "queued behind the first"
    );
    let none = RedisStore::new(&conn, rule(Algorithm::None, "1/s"), "n").unwrap();
    let calls = conn.calls();
    for _ in 0..3 {
        assert!(
            none.decide("k", 5, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed
        );
    }
    assert_eq!(conn.calls(), calls, "none needs no Redis");
}

#[tokio::test]
async fn rules_redis_cannot_keep_exact_are_refused() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    let err = RedisStore::new(&conn, rule(Algorithm::TokenBucket, "1000000/day"), "x")
        .err()
        .expect("refused");
    assert!(err.to_string().contains("2^53"), "{err}");
    assert!(RedisStore::new(&conn, rule(Algorithm::SlidingLog, "1000000/day"), "x").is_ok());
    let err = RedisStore::new(&conn, rule(Algorithm::FixedWindow, "10/1500ns"), "x")
        .err()
        .expect("refused");
    assert!(err.to_string().contains("microseconds"), "{err}");
}

/// Fills a sliding log of limit L with `requests` requests of equal cost and
/// returns MEMORY USAGE of its key.
async fn log_memory(
    server: &RedisServer,
    conn: &RedisConnection,
    limit: u64,
    requests: u64,
) -> i64 {
    let store = RedisStore::new(
        conn,
        rule(Algorithm::SlidingLog, &format!("{limit}/h")),
        "mem",
    )
    .unwrap();
    let key = format!("L{limit}");
    let cost = limit / requests;
    let mut t = 1_000_000_000;
    for taken in 0..requests {
        let d = store.decide_at(&key, t, cost, Mode::Record).await.unwrap();
        assert!(d.decision.allowed, "{taken} of {requests}");
        t += 1000;
    }
    let denied = store
        .decide_at(&key, t, limit - requests * cost + 1, Mode::Record)
        .await
        .unwrap()
        .decision;
    assert!(!denied.allowed);
    // The oldest entry (t = 1 s) leaves the window at 1 s + 1 h.
    let wait = Duration::from_secs(3601) - Duration::from_nanos(t);
    assert_eq!(denied.retry_after, RetryAfter::After(wait));
    let usage = server.integer(&[
        "MEMORY",
        "USAGE",
        &store.redis_keys(&key)[0],
        "SAMPLES",
        "0",
    ]);
    eprintln!(
        "sliding log, L = {limit}, {requests} requests: MEMORY USAGE {usage} bytes, {:.2} per request",
        usage as f64 / requests as f64
    );
    usage
}

#[tokio::test]
async fn the_sliding_log_takes_one_entry_a_request_whatever_its_cost() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    // An hour's times take 4 bytes, running totals 1 below a limit of 256,
    // 2 below 65,536, 3 below 2^24.
    let small = log_memory(&server, &conn, 10, 10).await;
    assert!(small < 200, "{small}");
    let thousand = log_memory(&server, &conn, 1000, 1000).await;
    assert!(thousand <= 6 * 1000 + 300, "{thousand}");
    // A thousand requests of cost 100 take what a thousand of cost 1 do
    // (in a ring of 1,024 entries of 7 bytes, in an allocation of 8 KiB).
    let costly = log_memory(&server, &conn, 100_000, 1000).await;
    assert!(costly <= 9 * 1000, "{costly}");
    // And each call still answers at once once full: expiry is a binary
    // search, not a scan (a thousand entries expire in one call here).
    let store = RedisStore::new(&conn, rule(Algorithm::SlidingLog, "100000/h"), "mem").unwrap();
    let later = store
        .decide_at("L100000", 7_300_000_000_000, 1, Mode::Record)
        .await
        .unwrap();
    assert!(later.decision.allowed);
    assert_eq!(later.decision.remaining, 99_999);
}

#[tokio::test]
async fn every_limiter_keeps_a_key_in_at_most_160_bytes() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingLog,
        Algorithm::TokenBucket,
        Algorithm::SlidingWindow,
        Algorithm::LeakyBucket,
    ] {
        let store = RedisStore::new(&conn, rule(algorithm, "100/m"), "api").unwrap();
        store.decide("user-12345", 1, Mode::Record).await.unwrap();
        let key = &store.redis_keys("user-12345")[0];
        let usage = server.integer(&["MEMORY", "USAGE", key]);
        eprintln!("{algorithm}: one key {key:?}, MEMORY USAGE {usage} bytes after one request");
        assert!(usage <= 160, "{algorithm}: {usage}");
    }
}

#[tokio::test]
async fn a_flood_from_one_key_is_denied_locally_until_it_could_pass() {
    let server = RedisServer::start();
    let conn = connect(&server).await;
    let store = RedisStore::new(&conn, rule(Algorithm::SlidingLog, "5/300ms"), "flood").unwrap();
    let calls = conn.calls();
    let mut allowed = 0;
    for _ in 0..1000 {
        allowed += u32::from(
            store
                .decide("k", 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed,
        );
    }
    assert_eq!(allowed, 5);
    let redis_calls = conn.calls() - calls;
    let hits = conn.deny_cache_hits();
    assert_eq!(redis_calls + hits, 1000);
    assert!(
        redis_calls < 50,
        "{redis_calls} Redis calls for 995 denials"
    );
    // Another key, and a cheaper request than the one denied, still ask Redis.
    assert!(
        store
            .decide("other", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    // Once the wait is over, Redis decides again, and allows.
    tokio::time::sleep(Duration::from_millis(320)).await;
    assert!(
        store
            .decide("k", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    // Off: every denial asks Redis.
    let options = RedisOptions {
        deny_cache: 0,
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    };
    let uncached = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    let store = RedisStore::new(&uncached, rule(Algorithm::SlidingLog, "5/h"), "off").unwrap();
    for _ in 0..20 {
        store.decide("k", 1, Mode::Record).await.unwrap();
    }
    assert_eq!((uncached.calls(), uncached.deny_cache_hits()), (20, 0));
}
