//! The windowed limiters' keys keep their expiry within a window (`SET ...
//! KEEPTTL`, cheaper for Redis than `SET ... PX`) and move it when a new
//! window starts: the key must live exactly as long as it matters, to the
//! window's end for the fixed window and to the next window's end for the
//! sliding window, on Redis's own time.

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
    let conn = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    RedisStore::new(&conn, Rule::new(algorithm, rates.parse().unwrap()), "w").unwrap()
}

/// How much later than the window's end an expiry may be: the script's
/// `TIME` and its `SET ... PX` are a few µs apart, but a loaded machine may
/// preempt Redis between them (the bound only rules out a wrong window).
const SLACK_MS: i64 = 500;

/// Redis's `TIME` in milliseconds.
fn redis_ms(server: &RedisServer) -> i64 {
    let reply = server.command(&["TIME"]).unwrap();
    let numbers: Vec<i64> = reply
        .split("\r\n")
        .filter(|line| !line.is_empty() && !line.starts_with(['*', '$']))
        .map(|n| n.parse().unwrap())
        .collect();
    numbers[0] * 1000 + numbers[1] / 1000
}

/// The key's expiry as Redis's absolute time in ms (`PEXPIRETIME`, 7.0).
fn expires_at(server: &RedisServer, key: &str) -> i64 {
    server.integer(&["PEXPIRETIME", key])
}

#[tokio::test]
async fn a_fixed_window_key_expires_at_its_window_end_however_many_writes() {
    let server = RedisServer::start();
    // Windows of 10 s: the calls below fall in one window unless they
    // straddle its end, which the window index read around them detects.
    let store = store(&server, Algorithm::FixedWindow, "100/10s").await;
    let key = &store.redis_keys("alice")[0];
    loop {
        let before = redis_ms(&server) / 10_000;
        store.decide("alice", 1, Mode::Record).await.unwrap();
        let first = expires_at(&server, key);
        for _ in 0..5 {
            store.decide("alice", 1, Mode::Record).await.unwrap();
        }
        let last = expires_at(&server, key);
        let after = redis_ms(&server) / 10_000;
        if before != after {
            server.command(&["DEL", key]).unwrap();
            continue;
        }
        let end = (before + 1) * 10_000;
        assert!(
            first > end && first <= end + SLACK_MS,
            "the window's end {end}, the key's expiry {first}"
        );
        assert_eq!(first, last, "later writes in the window keep it");
        break;
    }
}

#[tokio::test]
async fn a_sliding_window_key_expiry_moves_with_the_window_not_within_it() {
    let server = RedisServer::start();
    let store = store(&server, Algorithm::SlidingWindow, "100/s").await;
    let key = &store.redis_keys("alice")[0];
    // Start early in a window so that the writes below stay in it.
    while redis_ms(&server) % 1000 > 500 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let window = redis_ms(&server) / 1000;
    store.decide("alice", 1, Mode::Record).await.unwrap();
    let first = expires_at(&server, key);
    store.decide("alice", 1, Mode::Record).await.unwrap();
    assert_eq!(redis_ms(&server) / 1000, window, "still in the window");
    assert_eq!(expires_at(&server, key), first, "kept within the window");
    let end_of_next = (window + 2) * 1000;
    assert!(
        first > end_of_next && first <= end_of_next + SLACK_MS,
        "{first}"
    );
    // In the next window, the first write moves it to the window after.
    tokio::time::sleep(Duration::from_millis(
        u64::try_from((window + 1) * 1000 - redis_ms(&server)).unwrap_or(0) + 50,
    ))
    .await;
    let next = redis_ms(&server) / 1000;
    assert_eq!(next, window + 1);
    store.decide("alice", 1, Mode::Record).await.unwrap();
    let moved = expires_at(&server, key);
    let end = (next + 2) * 1000;
    assert!(
        moved > end && moved <= end + SLACK_MS,
        "expiry {moved}, end {end}"
    );
    // A denial writes nothing.
    let full = store.decide("alice", 1000, Mode::Record).await.unwrap();
    assert!(!full.decision.allowed);
    assert_eq!(expires_at(&server, key), moved);
}
