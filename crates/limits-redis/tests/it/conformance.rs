//! The Redis store runs the whole conformance suite on a real Redis, on
//! traces with microsecond times: the same decisions as the models (and so as
//! the in-memory store), every wait exact to the nanosecond.

use crate::redis_server;

use limits::{Algorithm, Penalty, Rule};
use limits_conformance::Config;
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A store factory over a fresh redis-server (stopped when the factory is
/// dropped, at the end of the test): each store gets a key prefix of its own,
/// so it starts with no state.
pub(crate) fn redis() -> impl Fn(Rule) -> std::pin::Pin<Box<dyn Future<Output = RedisStore>>> {
    let server = Arc::new(RedisServer::start());
    let counter = Arc::new(AtomicU64::new(0));
    move |rule| {
        let url = server.url();
        let n = counter.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let options = RedisOptions {
                prefix: format!("t{n}:"),
                // Generous: the machine running the tests may be busy.
                timeout: Duration::from_secs(5),
                ..RedisOptions::default()
            };
            let connection = RedisConnection::connect(&url, options).await.unwrap();
            RedisStore::new(&connection, rule, "r").expect("the suite's rules fit Redis")
        })
    }
}

/// The suite as Redis runs it: microsecond times.
pub(crate) fn config() -> Config {
    Config {
        cases: 100,
        time_step: 1000,
        refused: vec![Algorithm::SmoothedRate],
        ..Config::default()
    }
}

/// The limiters the store decides: all the suite's but those it refuses.
pub(crate) fn decided() -> impl Iterator<Item = Algorithm> {
    let refused = config().refused;
    limits_conformance::ALGORITHMS
        .into_iter()
        .filter(move |a| !refused.contains(a))
}

limits_conformance::store_conformance_tests!(redis(), config());

limits_conformance::store_settle_tests!(redis(), config());

/// Stores banning by a penalty, made as [`redis`] makes them.
fn banning() -> impl Fn(Rule, Penalty) -> std::pin::Pin<Box<dyn Future<Output = RedisStore>>> {
    let make = redis();
    move |rule, penalty| {
        let store = make(rule);
        Box::pin(async move {
            let store = store.await;
            store
                .with_penalty(penalty)
                .expect("the suite's penalties fit Redis")
        })
    }
}

limits_conformance::store_penalty_tests!(banning(), config());
