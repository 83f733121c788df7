//! A rate limit call of many descriptors costs one round trip to Redis, not
//! one per descriptor (issue 25 point 14), counted by Redis itself (`INFO
//! stats`); and its answers are those of the same descriptors sent one
//! call each.

use crate::redis_server;
use crate::rls_common;

use limits_server::rls::proto::RateLimitResponse;
use limits_server::{RedisConnection, RedisOptions, StoreOptions};
use redis_server::{RedisCluster, RedisServer};
use rls_common::*;
use std::time::Duration;

const CONFIG: &str = "
domain: shop
descriptors:
  - key: user
    rate_limit: {algorithm: sliding-log, unit: hour, requests_per_unit: 3}
  - key: path
    rate_limit: {algorithm: token-bucket, unit: hour, requests_per_unit: 4}
  - key: plan
    value: free
    rate_limit: {unit: hour, requests_per_unit: 2}
";

async fn on_redis(url: &str, prefix: &str) -> StoreOptions {
    let options = RedisOptions {
        prefix: prefix.into(),
        timeout: Duration::from_secs(5),
        // Nothing but the calls on the wire while the test counts.
        clock_check: Duration::from_secs(3600),
        ..RedisOptions::default()
    };
    let conn = RedisConnection::connect(url, options).await.unwrap();
    // The first clock measurement is a background call made at connection:
    // once done, only the calls reach Redis.
    while conn.clock_offset_micros().is_none() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    StoreOptions {
        redis: Some(conn),
        ..StoreOptions::default()
    }
}

/// 16 descriptors: three limits, several keys, some repeated (a later one
/// sees the earlier one's hit), one matching no limit.
fn sixteen() -> Vec<[(&'static str, &'static str); 1]> {
    let values = ["ann", "bob", "cy", "ann", "dee", "ann"];
    let mut all = Vec::new();
    for v in values {
        all.push([("user", v)]);
    }
    for v in ["/a", "/b", "/a", "/c", "/a"] {
        all.push([("path", v)]);
    }
    for v in ["free", "free", "paid", "free"] {
        all.push([("plan", v)]);
    }
    all.push([("other", "x")]);
    assert_eq!(all.len(), 16);
    all
}

/// What of a response does not depend on the instant of the call.
fn timeless(response: &RateLimitResponse) -> Vec<(i32, u32, Option<u32>)> {
    response
        .statuses
        .iter()
        .map(|s| {
            let limit = s.current_limit.as_ref().map(|l| l.requests_per_unit);
            (s.code, s.limit_remaining, limit)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_16_descriptors_reaches_redis_as_one_read_with_the_answers_of_16_calls() {
    let redis = RedisServer::start();
    let (together, apart) = (
        on_redis(&redis.url(), "together:").await,
        on_redis(&redis.url(), "apart:").await,
    );
    let together = Rls::start_with(CONFIG, move |c| c.stores = together).await;
    let apart = Rls::start_with(CONFIG, move |c| c.stores = apart).await;
    let descriptors: Vec<_> = sixteen().iter().map(|e| descriptor(e)).collect();
    let mut traffic = redis.traffic();
    for round in 0..3 {
        // One call per descriptor first: the first calls also load the
        // scripts.
        let mut statuses = Vec::new();
        let mut overall = OK;
        for d in &descriptors {
            let one = apart
                .call(request("shop", vec![d.clone()], 0))
                .await
                .unwrap();
            overall = overall.max(one.overall_code);
            statuses.extend(one.statuses);
        }
        let before = traffic.now();
        let call = together
            .call(request("shop", descriptors.clone(), 0))
            .await
            .unwrap();
        let (reads, scripts) = traffic.since(before);
        assert_eq!(reads, 1, "round {round}: one read ({scripts} scripts)");
        if round == 0 {
            // Two descriptors match no limit (plan: paid, other).
            assert_eq!(scripts, 14, "every descriptor with a limit, in one read");
        }
        let separately = RateLimitResponse {
            statuses,
            overall_code: overall,
            ..RateLimitResponse::default()
        };
        assert_eq!(timeless(&call), timeless(&separately), "round {round}");
        assert_eq!(call.overall_code, separately.overall_code, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_call_reaches_each_node_as_one_read() {
    let cluster = RedisCluster::start();
    let stores = on_redis(&cluster.url(), "limits:").await;
    let rls = Rls::start_with(CONFIG, move |c| c.stores = stores).await;
    let users: Vec<String> = (0..16).map(|i| format!("user-{i}")).collect();
    let descriptors: Vec<_> = users
        .iter()
        .map(|u| descriptor(&[("user", u.as_str())]))
        .collect();
    // The first call also reads which node holds which slot.
    rls.call(request("shop", descriptors.clone(), 0))
        .await
        .unwrap();
    let mut counters: Vec<_> = cluster.nodes.iter().map(|n| n.traffic()).collect();
    let before: Vec<_> = counters.iter_mut().map(|t| t.now()).collect();
    let call = rls
        .call(request("shop", descriptors.clone(), 0))
        .await
        .unwrap();
    assert!(call.statuses.iter().all(|s| s.limit_remaining == 1));
    let traffic: Vec<_> = counters
        .iter_mut()
        .zip(before)
        .map(|(t, before)| t.since(before))
        .collect();
    assert_eq!(traffic.iter().map(|t| t.1).sum::<u64>(), 16, "{traffic:?}");
    for (node, (reads, commands)) in traffic.iter().enumerate() {
        assert_eq!(*reads, u64::from(*commands > 0), "node {node}: {traffic:?}");
    }
}
