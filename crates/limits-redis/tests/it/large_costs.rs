//! The key a huge cost leaves in Redis (the conformance suite's large-cost
//! cases, at limits of `u32::MAX`, hold the answers to the models').

use crate::redis_server::RedisServer;

use limits::{Algorithm, Mode, RetryAfter, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use std::time::Duration;

/// The regression: a cost of 3 x 10^7 took Redis 10 s in the script and left
/// a 180 MB key. Now it is one entry, and a denial behind it waits for it.
#[tokio::test]
async fn a_cost_of_thirty_million_is_one_entry_not_a_180_mb_key() {
    let server = RedisServer::start();
    let options = RedisOptions {
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    };
    let conn = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    for (limit, cost) in [
        (30_000_000u64, 30_000_000u64),
        (4_294_967_295, 4_294_967_295),
    ] {
        let rule = Rule::new(Algorithm::SlidingLog, format!("{limit}/h").parse().unwrap());
        let store = RedisStore::new(&conn, rule, "huge").unwrap();
        let key = format!("L{limit}");
        let t = 5_000_000_000;
        let d = store.decide_at(&key, t, cost, Mode::Record).await.unwrap();
        assert!(d.decision.allowed, "L = {limit}");
        assert_eq!(d.decision.remaining, limit - cost);
        let redis_key = &store.redis_keys(&key)[0];
        let bytes = server.integer(&["STRLEN", redis_key]);
        // The header and a ring of four entries of at most 12 bytes.
        assert!(bytes <= 28 + 4 * 12, "L = {limit}: {bytes} bytes");
        let denied = store
            .decide_at(&key, t + 1000, 1, Mode::Record)
            .await
            .unwrap()
            .decision;
        assert_eq!(
            denied.retry_after,
            RetryAfter::After(Duration::from_secs(3600) - Duration::from_micros(1)),
            "L = {limit}"
        );
        // Above the limit: never, and nothing written.
        let before = server.command(&["GET", redis_key]).unwrap();
        let never = store
            .decide_at(&key, t + 2000, limit + 1, Mode::Record)
            .await
            .unwrap()
            .decision;
        assert_eq!(never.retry_after, RetryAfter::Never);
        assert_eq!(server.command(&["GET", redis_key]).unwrap(), before);
    }
}
