//! The sliding log's ring buffer at sizes the conformance suite's small
//! limits never reach: growing, wrapping, shrinking, and times that cross
//! multiples of the power of 256 its entries keep times modulo (every
//! 65,536 us for these windows, and at 2^48 us), decision for decision
//! equal to the in-memory store.

use crate::redis_server;

use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::Duration;

/// A little deterministic generator (no dependency needed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

async fn compare(store: &RedisStore, start_us: u64, seed: u64) {
    let memory: KeyedLimiter<String, ManualClock> =
        KeyedLimiter::with_clock(store.rule().clone(), ManualClock::new(0));
    let mut rng = Lcg(seed);
    let mut t = start_us;
    let mut allowed = 0;
    for i in 0..3000 {
        // Bursts, then gaps up to a window and a half (10 ms and 25 ms).
        t += match rng.next(4) {
            0 => 0,
            1 => rng.next(200),
            2 => rng.next(2000),
            _ => rng.next(40_000),
        };
        let cost = if rng.next(5) == 0 { rng.next(12) } else { 1 };
        let key = format!("k{}", rng.next(2));
        let mode = if rng.next(6) == 0 {
            Mode::Peek
        } else {
            Mode::Record
        };
        let got = store.decide_at(&key, t * 1000, cost, mode).await.unwrap();
        let want = memory.decide_at(&key, t * 1000, cost, mode).await.unwrap();
        // The decisions; the time decided at is each store's own.
        assert_eq!(
            (got.decision, &got.per_rate),
            (want.decision, &want.per_rate),
            "event {i} at {t} us, {key}, cost {cost}, {mode:?}"
        );
        allowed += u64::from(got.decision.allowed && cost > 0);
    }
    assert!(
        allowed > 500,
        "the trace exercised the log: {allowed} allowed"
    );
}

#[tokio::test]
async fn the_ring_grows_wraps_and_shrinks_as_memory_decides() {
    let server = RedisServer::start();
    let options = RedisOptions {
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    };
    let conn = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    let rule = Rule::new(Algorithm::SlidingLog, "200/10ms; 64/2ms".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "ring").unwrap();
    compare(&store, 1_000_000, 1).await;
    // Across 2^48 us, where a stored 6-byte time wraps to zero.
    let fresh = RedisStore::new(
        &conn,
        Rule::new(Algorithm::SlidingLog, "300/10ms".parse().unwrap()),
        "wrap",
    )
    .unwrap();
    compare(&fresh, (1 << 48) - 20_000, 2).await;
    compare(&fresh, 3 * (1 << 48) - 50_000, 3).await;
}
