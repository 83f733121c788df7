//! The Redis store on a 3-master Redis Cluster: the conformance suite and
//! the settle suite pass (every limiter, microsecond traces), and decisions over keys spread across
//! every slot never touch two slots at once.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_conformance::{check_settle, run_suite, Config};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisCluster;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn options(prefix: String) -> RedisOptions {
    RedisOptions {
        prefix,
        timeout: Duration::from_secs(5),
        ..RedisOptions::default()
    }
}

/// A store factory on `cluster`, each store under a prefix of its own.
fn stores_on(
    cluster: &RedisCluster,
) -> impl Fn(Rule) -> std::pin::Pin<Box<dyn std::future::Future<Output = RedisStore>>> {
    let url = cluster.url();
    let counter = Arc::new(AtomicU64::new(0));
    move |rule: Rule| {
        let url = url.clone();
        let n = counter.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let connection = RedisConnection::connect(&url, options(format!("c{n}:")))
                .await
                .unwrap();
            RedisStore::new(&connection, rule, "r").unwrap()
        })
    }
}

/// The suite on a cluster: fewer cases than on one node, the same traces.
fn cluster_config() -> Config {
    Config {
        cases: 24,
        time_step: 1000,
        ..crate::conformance::config()
    }
}

#[test]
fn the_conformance_suite_passes_on_a_cluster() {
    let cluster = RedisCluster::start();
    if let Err(failure) = run_suite(stores_on(&cluster), &cluster_config()) {
        panic!("the store does not conform on a cluster: {failure}");
    }
}

#[test]
fn settling_on_a_cluster_matches_the_models_for_every_limiter() {
    let cluster = RedisCluster::start();
    let make = stores_on(&cluster);
    for algorithm in limits_conformance::ALGORITHMS {
        if let Err(failure) = check_settle(&make, algorithm, &cluster_config()) {
            panic!("the store does not settle as the models do on a cluster: {failure}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_in_every_slot_are_decided_with_all_their_rates() {
    let cluster = RedisCluster::start();
    let conn = RedisConnection::connect(&cluster.url(), options("limits:".into()))
        .await
        .unwrap();
    let rule = Rule::new(Algorithm::SlidingLog, "2/h; 3/d".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "api").unwrap();
    for i in 0..200 {
        let key = format!("user-{i}");
        for expected in [true, true, false] {
            let verdict = store.decide(&key, 1, Mode::Record).await.unwrap();
            assert_eq!(verdict.decision.allowed, expected, "{key}");
        }
    }
    // The keys landed on every master.
    for node in &cluster.nodes {
        let size = node.integer(&["DBSIZE"]);
        assert!(size > 50, "node {}: {size} keys", node.port);
    }
}
