//! The cap on new keys per client address: a flood of distinct keys from
//! one address is cut at the cap (and Redis holds no more keys than the
//! cap let through), while another address, and the flooding address's
//! own existing keys, are decided as before.

use crate::redis_server;

use limits::{Algorithm, Mode, Rate, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::net::IpAddr;
use std::time::Duration;

#[tokio::test]
async fn a_flood_of_new_keys_from_one_address_is_cut_at_its_cap_and_another_address_is_unaffected()
{
    let server = RedisServer::start();
    let options = RedisOptions {
        timeout: Duration::from_secs(5),
        new_keys_per_client: Some(Rate::new(20, Duration::from_secs(60)).unwrap()),
        ..RedisOptions::default()
    };
    let conn = RedisConnection::connect(&server.url(), options)
        .await
        .unwrap();
    let rule = Rule::new(Algorithm::SlidingLog, "3/min".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "flood").unwrap();
    let flooder: IpAddr = "198.51.100.7".parse().unwrap();
    let other: IpAddr = "203.0.113.9".parse().unwrap();

    let mut allowed = 0;
    for i in 0..100 {
        let key = format!("rnd{i}");
        let verdict = store
            .decide_from(Some(flooder), &key, 1, Mode::Record)
            .await
            .unwrap();
        if verdict.decision.allowed {
            allowed += 1;
        } else {
            let wait = verdict.decision.retry_after.duration();
            assert!(wait.is_some_and(|w| w > Duration::ZERO), "{i}: a wait");
            assert_eq!(verdict.per_rate.len(), 1);
        }
    }
    assert_eq!(allowed, 20, "the cap");
    assert_eq!(conn.new_keys_refused(), 80);
    assert_eq!(
        server.integer(&["DBSIZE"]),
        20,
        "Redis holds only what passed"
    );

    // Answered at once too, without Redis.
    let calls = conn.calls();
    let now = store.decide_now_from(Some(flooder), "rnd-now", 1, Mode::Record);
    assert!(!now.expect("a refusal at once").unwrap().decision.allowed);
    assert_eq!(conn.calls(), calls);

    // Its existing keys are decided by their limit, as before.
    let old = store
        .decide_from(Some(flooder), "rnd0", 1, Mode::Record)
        .await;
    assert!(old.unwrap().decision.allowed);
    // Another address is unaffected, on new keys and on the flooder's.
    for key in ["mine", "rnd1", "rnd99"] {
        let verdict = store.decide_from(Some(other), key, 1, Mode::Record).await;
        assert!(verdict.unwrap().decision.allowed, "{key}");
    }
    // A caller that cannot name the client is not capped.
    let anonymous = store.decide("rnd-anonymous", 1, Mode::Record).await;
    assert!(anonymous.unwrap().decision.allowed);
    assert_eq!(conn.new_keys_refused(), 81);
}
