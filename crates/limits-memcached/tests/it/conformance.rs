//! The Memcached store runs the whole conformance suite on a real memcached,
//! on traces with nanosecond times: the same decisions as the models (and
//! so as the in-memory store), every wait exact to the nanosecond.

use crate::memcached_server::MemcachedServer;

use limits::{ManualClock, Penalty, Rule};
use limits_conformance::Config;
use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A store factory over a fresh memcached (stopped when the factory is
/// dropped, at the end of the test): each store gets a key prefix of its
/// own, so it starts with no state.
#[allow(clippy::type_complexity)]
pub(crate) fn memcached(
) -> impl Fn(Rule) -> Pin<Box<dyn Future<Output = MemcachedStore<ManualClock>>>> {
    let server = Arc::new(MemcachedServer::start());
    let counter = Arc::new(AtomicU64::new(0));
    move |rule| {
        let url = server.url();
        let n = counter.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let options = MemcachedOptions {
                prefix: format!("t{n}:"),
                // Generous: the machine running the tests may be busy.
                timeout: Duration::from_secs(5),
                ..MemcachedOptions::default()
            };
            let client = MemcachedClient::new(&url, options).unwrap();
            // The suite gives every time: the clock is never read.
            MemcachedStore::with_clock(&client, rule, "r", ManualClock::new(0))
                .expect("the suite's rules fit an item")
        })
    }
}

/// The suite as memcached runs it: nanosecond times, as in memory; the
/// large costs at a limit whose sliding log fits a 1 MiB item in the
/// suite's two-rate case (32 bytes per unit of both limits).
pub(crate) fn config() -> Config {
    Config {
        cases: 100,
        large_cost_limit: 16_000,
        ..Config::default()
    }
}

limits_conformance::store_conformance_tests!(memcached(), config());
limits_conformance::store_settle_tests!(memcached(), config());

/// Stores banning by a penalty, made as [`memcached`] makes them.
#[allow(clippy::type_complexity)]
fn banning() -> impl Fn(Rule, Penalty) -> Pin<Box<dyn Future<Output = MemcachedStore<ManualClock>>>>
{
    let make = memcached();
    move |rule, penalty| {
        let store = make(rule);
        Box::pin(async move {
            let store = store.await;
            store
                .with_penalty(penalty)
                .expect("the suite's standings fit an item")
        })
    }
}

limits_conformance::store_penalty_tests!(banning(), config());
