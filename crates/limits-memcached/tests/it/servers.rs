//! Several memcached servers, as memcached is deployed: keys spread over
//! them by ketama, and a server killed under load fails the decisions of
//! its own keys only (the outage policy's input), while the keys on the
//! others keep deciding; once it is back, its keys decide again.

use crate::memcached_server::MemcachedServer;
use crate::store::allowed;

use limits::{Algorithm, Mode, Rule, Store};
use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Three servers and a client of all three.
fn three(options: MemcachedOptions) -> (Vec<MemcachedServer>, MemcachedClient) {
    let servers: Vec<_> = (0..3).map(|_| MemcachedServer::start()).collect();
    let addrs: Vec<String> = servers
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    let url = format!("memcached://{}", addrs.join(","));
    (servers, MemcachedClient::new(&url, options).unwrap())
}

fn options() -> MemcachedOptions {
    MemcachedOptions {
        timeout: Duration::from_secs(2),
        ..MemcachedOptions::default()
    }
}

/// How many items each server holds (`stats`' `curr_items`).
fn items(server: &MemcachedServer) -> u64 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    use std::io::{BufRead, BufReader, Write};
    stream.write_all(b"stats\r\n").unwrap();
    for line in BufReader::new(stream).lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("STAT curr_items ") {
            return n.parse().unwrap();
        }
        assert_ne!(line, "END", "no curr_items in stats");
    }
    panic!("stats cut short")
}

#[tokio::test]
async fn keys_spread_over_every_server_each_on_the_one_its_ring_names() {
    let (servers, client) = three(options());
    let rule = Rule::new(Algorithm::FixedWindow, "1/h".parse().unwrap());
    let store = MemcachedStore::new(&client, rule, "api").unwrap();
    let mut placed: BTreeMap<String, u64> = BTreeMap::new();
    for k in 0..300 {
        let key = format!("client{k}");
        assert!(allowed(&store, &key, 1, Mode::Record).await);
        *placed.entry(store.server_of(&key).to_owned()).or_default() += 1;
        // The same key, asked again, meets its own state: one server holds it.
        assert!(!allowed(&store, &key, 1, Mode::Record).await);
    }
    for server in &servers {
        let addr = format!("127.0.0.1:{}", server.port);
        let expected = placed.get(&addr).copied().unwrap_or(0);
        assert_eq!(items(server), expected, "{addr}");
        assert!(
            expected > 50,
            "{addr} holds {expected} of 300 keys: {placed:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_under_load_fails_its_own_keys_only_then_recovers() {
    let (mut servers, client) = three(options());
    let rule = Rule::new(Algorithm::SlidingWindow, "1000000/h".parse().unwrap());
    let store = Arc::new(MemcachedStore::new(&client, rule, "r").unwrap());
    let victim = format!("127.0.0.1:{}", servers[1].port);
    let keys: Vec<String> = (0..24).map(|k| format!("k{k}")).collect();
    let on_victim: Vec<bool> = keys.iter().map(|k| store.server_of(k) == victim).collect();
    assert!(on_victim.iter().any(|&v| v) && !on_victim.iter().all(|&v| v));
    // Per key: decisions answered, and failed, while the victim was down.
    let ok: Arc<Vec<AtomicU64>> = Arc::new(keys.iter().map(|_| AtomicU64::new(0)).collect());
    let failed: Arc<Vec<AtomicU64>> = Arc::new(keys.iter().map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..keys.len())
        .map(|i| {
            let (store, ok, failed, stop, key) = (
                store.clone(),
                ok.clone(),
                failed.clone(),
                stop.clone(),
                keys[i].clone(),
            );
            let victim = victim.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match store.decide(&key, 1, Mode::Record).await {
                        Ok(_) => ok[i].fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            assert!(e.message.contains(&victim), "{key}: {e}");
                            failed[i].fetch_add(1, Ordering::Relaxed)
                        }
                    };
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let total = |counts: &Vec<AtomicU64>, pick: &dyn Fn(usize) -> bool| -> u64 {
        (0..keys.len())
            .filter(|&i| pick(i))
            .map(|i| counts[i].load(Ordering::Relaxed))
            .sum()
    };
    let wait_for = |what: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !what() {
            assert!(std::time::Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let victims = |i: usize| on_victim[i];
    let others = |i: usize| !on_victim[i];
    wait_for(&|| total(&ok, &victims) > 200 && total(&ok, &others) > 200);
    servers[1].stop();
    wait_for(&|| total(&failed, &victims) > 50);
    // While it is down, the other servers' keys keep deciding...
    let others_before = total(&ok, &others);
    wait_for(&|| total(&ok, &others) > others_before + 500);
    // ...and none of their decisions failed, at any time.
    assert_eq!(total(&failed, &others), 0);
    servers[1].restart();
    let victims_before = total(&ok, &victims);
    wait_for(&|| total(&ok, &victims) > victims_before + 200);
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.expect("no load task panicked");
    }
    assert_eq!(total(&failed, &others), 0);
}

#[tokio::test]
async fn with_a_local_fallback_only_the_lost_servers_keys_are_decided_here() {
    let options = MemcachedOptions {
        local_fallback: Some(100),
        ..options()
    };
    let (mut servers, client) = three(options);
    let rule = Rule::new(Algorithm::FixedWindow, "2/h".parse().unwrap());
    let store = MemcachedStore::new(&client, rule, "r").unwrap();
    let victim = format!("127.0.0.1:{}", servers[0].port);
    let keys: Vec<String> = (0..30).map(|k| format!("k{k}")).collect();
    for key in &keys {
        store.decide(key, 1, Mode::Record).await.unwrap();
    }
    servers[0].stop();
    let mut lost = 0;
    for key in &keys {
        let before = client.local_decisions();
        let second = store.decide(key, 1, Mode::Record).await.unwrap();
        let here = client.local_decisions() > before;
        assert_eq!(here, store.server_of(key) == victim, "{key}");
        // Kept on its server: its second request of 2. Lost: the local
        // limiter's first.
        assert!(second.decision.allowed, "{key}");
        let expected_remaining = if here { 1 } else { 0 };
        assert_eq!(second.decision.remaining, expected_remaining, "{key}");
        lost += usize::from(here);
    }
    assert!(
        lost > 0 && lost < keys.len(),
        "{lost} of {} keys lost",
        keys.len()
    );
}
