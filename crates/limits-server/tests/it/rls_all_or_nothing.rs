//! `RlsOptions::all_or_nothing` (`--all-or-nothing`, the reference's
//! `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true`): a call over one limit
//! takes nothing from its other descriptors. The cases are the reference's
//! `TestOverLimitWithStopCacheKeyIncrementWhenOverlimitConfig` (two limits
//! of an hour, 15 and 14), on memory and on a real Redis; and many calls
//! at once, which must record both limits or neither.

use crate::redis_server;
use crate::rls_common;

use limits_server::rls::RlsOptions;
use limits_server::StoreOptions;
use redis_server::RedisServer;
use rls_common::*;
use std::sync::Arc;
use std::time::Duration;

const CONFIG: &str = "
domain: domain
descriptors:
  - key: key4
    value: value4
    rate_limit: {unit: hour, requests_per_unit: 15}
  - key: key5
    value: value5
    rate_limit: {unit: hour, requests_per_unit: 14}
  - key: blocked
    rate_limit: {unit: hour, requests_per_unit: 0}
";

async fn redis(url: &str) -> StoreOptions {
    on_redis(url, Duration::from_secs(5)).await
}

/// A server of CONFIG under `options`, on Redis when `store` is given.
async fn start(options: RlsOptions, store: Option<StoreOptions>) -> Rls {
    Rls::start_with(CONFIG, |c| {
        c.options = options;
        if let Some(store) = store {
            c.stores = store;
        }
    })
    .await
}

/// The call of both descriptors at `hits`: each status's (code, remaining).
async fn pair(rls: &Rls, hits: u32) -> [(i32, u32); 2] {
    let both = vec![
        descriptor(&[("key4", "value4")]),
        descriptor(&[("key5", "value5")]),
    ];
    let r = rls.call(request("domain", both, hits)).await.unwrap();
    [0, 1].map(|i| (r.statuses[i].code, r.statuses[i].limit_remaining))
}

async fn calls(rls: &Rls, hits: &[u32]) -> Vec<[(i32, u32); 2]> {
    let mut answers = Vec::new();
    for &h in hits {
        answers.push(pair(rls, h).await);
    }
    answers
}

/// The reference's sequence (its counts start at 10: a call of 10 first),
/// then one more hit.
const HITS: [u32; 5] = [10, 1, 2, 2, 1];

/// All or nothing, a denial counted as the reference counts it: key5,
/// going over, is counted and stays over; key4 takes nothing and says what
/// it still has (2, as its INCRBY 0 answers).
const REFERENCE: [[(i32, u32); 2]; 5] = [
    [(OK, 5), (OK, 4)],
    [(OK, 4), (OK, 3)],
    [(OK, 2), (OK, 1)],
    [(OK, 2), (OVER, 0)],
    [(OK, 2), (OVER, 0)],
];

/// All or nothing, a denial not counted (ours): key5 keeps its last hit
/// (over, it reports 0 left, as the reference does).
const UNCOUNTED: [[(i32, u32); 2]; 5] = [
    [(OK, 5), (OK, 4)],
    [(OK, 4), (OK, 3)],
    [(OK, 2), (OK, 1)],
    [(OK, 2), (OVER, 0)],
    [(OK, 1), (OK, 0)],
];

/// Each on its own (the default): key4 takes the hits key5 refused.
const INDEPENDENT: [[(i32, u32); 2]; 5] = [
    [(OK, 5), (OK, 4)],
    [(OK, 4), (OK, 3)],
    [(OK, 2), (OK, 1)],
    [(OK, 0), (OVER, 0)],
    [(OVER, 0), (OK, 0)],
];

fn reference() -> RlsOptions {
    RlsOptions::default()
        .all_or_nothing(true)
        .count_denied_hits(true)
}

#[tokio::test]
async fn in_memory_a_call_over_one_limit_takes_nothing_from_the_other() {
    let rls = start(reference(), None).await;
    assert_eq!(calls(&rls, &HITS).await, REFERENCE);
    let rls = start(RlsOptions::default().all_or_nothing(true), None).await;
    assert_eq!(calls(&rls, &HITS).await, UNCOUNTED);
    let rls = start(RlsOptions::default(), None).await;
    assert_eq!(calls(&rls, &HITS).await, INDEPENDENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_call_over_one_limit_takes_nothing_from_the_other() {
    let server = RedisServer::start();
    let rls = start(reference(), Some(redis(&server.url()).await)).await;
    assert_eq!(calls(&rls, &HITS).await, REFERENCE);
    server.command(&["FLUSHALL"]).unwrap();
    let rls = start(
        RlsOptions::default().all_or_nothing(true),
        Some(redis(&server.url()).await),
    )
    .await;
    assert_eq!(calls(&rls, &HITS).await, UNCOUNTED);
    server.command(&["FLUSHALL"]).unwrap();
    let rls = start(RlsOptions::default(), Some(redis(&server.url()).await)).await;
    assert_eq!(calls(&rls, &HITS).await, INDEPENDENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_limit_in_the_call_takes_nothing_from_the_others() {
    let server = RedisServer::start();
    for store in [None, Some(redis(&server.url()).await)] {
        let rls = start(reference(), store).await;
        for _ in 0..2 {
            let call = vec![
                descriptor(&[("key4", "value4")]),
                descriptor(&[("blocked", "x")]),
            ];
            let r = rls.call(request("domain", call, 1)).await.unwrap();
            assert_eq!(r.overall_code, OVER);
            assert_eq!(
                (r.statuses[0].code, r.statuses[0].limit_remaining),
                (OK, 15)
            );
        }
    }
}

/// 60 calls at once of both descriptors, 1 hit each, on `rls`: exactly 14
/// admitted (key5's limit), and key4 took exactly their 14.
async fn concurrent_calls_record_both_or_neither(rls: Arc<Rls>) {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..60 {
        let rls = rls.clone();
        tasks.spawn(async move { pair(&rls, 1).await.iter().all(|s| s.0 == OK) });
    }
    let mut admitted = 0;
    while let Some(done) = tasks.join_next().await {
        admitted += u32::from(done.unwrap());
    }
    assert_eq!(admitted, 14);
    let left = rls.one("domain", &[("key4", "value4")], 0).await;
    // The look above took a hit of its own: 15 - 14 - 1.
    assert_eq!(left.statuses[0].limit_remaining, 0);
    assert_eq!(left.overall_code, OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_in_memory_record_both_limits_or_neither() {
    let rls = start(RlsOptions::default().all_or_nothing(true), None).await;
    concurrent_calls_record_both_or_neither(Arc::new(rls)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_on_redis_record_both_limits_or_neither() {
    let server = RedisServer::start();
    let store = redis(&server.url()).await;
    let rls = start(RlsOptions::default().all_or_nothing(true), Some(store)).await;
    concurrent_calls_record_both_or_neither(Arc::new(rls)).await;
}
