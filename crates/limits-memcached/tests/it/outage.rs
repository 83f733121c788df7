//! A memcached killed under load and started again: every decision meanwhile
//! is a StoreError (the outage policy's input), none panics, and decisions
//! come back once it answers.

use crate::memcached_server::MemcachedServer;

use limits::{Algorithm, Mode, Rule, Store};
use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_and_restarted_under_load_gives_errors_then_recovers() {
    let mut server = MemcachedServer::start();
    let options = MemcachedOptions {
        timeout: Duration::from_secs(2),
        ..MemcachedOptions::default()
    };
    let client = MemcachedClient::new(&server.url(), options).unwrap();
    let rule = Rule::new(Algorithm::SlidingWindow, "1000000/h".parse().unwrap());
    let store = Arc::new(MemcachedStore::new(&client, rule, "r").unwrap());
    let (ok, failed, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let load: Vec<_> = (0..16)
        .map(|i| {
            let (store, ok, failed, stop) =
                (store.clone(), ok.clone(), failed.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match store.decide(&format!("k{}", i % 4), 1, Mode::Record).await {
                        Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            assert!(e.message.contains("memcached 127.0.0.1:"), "{e}");
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let until = |counter: Arc<AtomicU64>, above: u64| async move {
        while counter.load(Ordering::Relaxed) <= above {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    until(ok.clone(), 100).await;
    server.stop();
    until(failed.clone(), 50).await;
    let ok_while_down = ok.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        ok.load(Ordering::Relaxed) <= ok_while_down + 16,
        "decisions kept succeeding with the server down"
    );
    server.restart();
    let ok_restarted = ok.load(Ordering::Relaxed);
    until(ok.clone(), ok_restarted + 100).await;
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.expect("no load task panicked");
    }
    // Recovered: a fresh decision on the restarted (empty) server.
    let verdict = store.decide("after", 1, Mode::Record).await.unwrap();
    assert_eq!(verdict.decision.remaining, 999_999);
}

#[tokio::test]
async fn with_a_local_fallback_an_unreachable_server_is_decided_here_exactly() {
    let mut server = MemcachedServer::start();
    let options = MemcachedOptions {
        timeout: Duration::from_secs(2),
        local_fallback: Some(100),
        ..MemcachedOptions::default()
    };
    let client = MemcachedClient::new(&server.url(), options).unwrap();
    let rule = Rule::new(Algorithm::FixedWindow, "3/h".parse().unwrap());
    let store = MemcachedStore::new(&client, rule, "r").unwrap();
    assert!(
        store
            .decide("k", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    assert_eq!(client.local_decisions(), 0);
    server.stop();
    // The local limiter starts afresh: its own limit, exactly.
    let mut decided = Vec::new();
    for _ in 0..4 {
        decided.push(
            store
                .decide("k", 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed,
        );
    }
    assert_eq!(decided, [true, true, true, false]);
    assert_eq!(client.local_decisions(), 4);
}
