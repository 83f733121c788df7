//! The Memcached store's own promises on a real memcached: what it writes
//! and when, how long its items live, the keys it makes, the time it
//! decides at, and the rules and items it refuses.

use crate::memcached_server::MemcachedServer;

use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreErrorKind};
use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
use std::time::Duration;

fn rule(algorithm: Algorithm, rates: &str) -> Rule {
    Rule::new(algorithm, rates.parse().unwrap())
}

fn client(server: &MemcachedServer) -> MemcachedClient {
    let options = MemcachedOptions {
        timeout: Duration::from_secs(5),
        ..MemcachedOptions::default()
    };
    MemcachedClient::new(&server.url(), options).unwrap()
}

/// Whether `store` admits a request of `key` at `cost` in `mode`.
pub(crate) async fn allowed(store: &impl Store, key: &str, cost: u64, mode: Mode) -> bool {
    store
        .decide(key, cost, mode)
        .await
        .unwrap()
        .decision
        .allowed
}

fn store(server: &MemcachedServer, rule: Rule, clock: ManualClock) -> MemcachedStore<ManualClock> {
    MemcachedStore::with_clock(&client(server), rule, "api", clock).unwrap()
}

/// A memcached, and a store of `algorithm` at `rates` on it whose clock
/// stays at 0.
fn started(algorithm: Algorithm, rates: &str) -> (MemcachedServer, MemcachedStore<ManualClock>) {
    let server = MemcachedServer::start();
    let store = store(&server, rule(algorithm, rates), ManualClock::new(0));
    (server, store)
}

/// The item's CAS token as memcached reports it (`None`: no item).
fn cas_of(server: &MemcachedServer, item_key: &str) -> Option<String> {
    let answer = server.command(&format!("mg {item_key} c")).unwrap();
    (answer != "EN").then_some(answer)
}

#[tokio::test]
async fn a_denial_and_a_peek_write_nothing() {
    let (server, store) = started(Algorithm::SlidingLog, "2/h");
    let peek = store.decide("alice", 1, Mode::Peek).await.unwrap();
    assert!(peek.decision.allowed);
    assert_eq!(
        cas_of(&server, &store.item_key("alice")),
        None,
        "a peek added an item"
    );
    for _ in 0..2 {
        assert!(
            store
                .decide("alice", 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed
        );
    }
    let written = cas_of(&server, &store.item_key("alice")).expect("an item");
    let denied = store.decide("alice", 1, Mode::Record).await.unwrap();
    assert!(!denied.decision.allowed);
    assert_eq!(
        cas_of(&server, &store.item_key("alice")),
        Some(written.clone())
    );
    store.decide("alice", 1, Mode::Peek).await.unwrap();
    assert_eq!(cas_of(&server, &store.item_key("alice")), Some(written));
}

#[tokio::test]
async fn decisions_follow_the_stores_clock_and_equal_the_in_memory_ones() {
    let server = MemcachedServer::start();
    for algorithm in limits_conformance::ALGORITHMS {
        let rule = rule(algorithm, "3/s; 5/10s");
        let clock = ManualClock::new(1_000_000_000);
        let shared = store(&server, rule.clone(), clock.clone());
        let memory = KeyedLimiter::<String, _>::with_clock(rule, clock.clone());
        for step in 0..40u64 {
            let cost = 1 + step % 3;
            let there = shared.decide("k", cost, Mode::Record).await.unwrap();
            let here = memory.decide_now("k", cost, Mode::Record).unwrap().unwrap();
            // The whole verdict, its time (its receipt's) included.
            assert_eq!(there, here, "{algorithm}, step {step}");
            clock.advance(Duration::from_millis(137 * (step % 5)));
        }
    }
}

#[tokio::test]
async fn two_clients_share_one_limit() {
    let server = MemcachedServer::start();
    let r = rule(Algorithm::TokenBucket, "4/h");
    let a = store(&server, r.clone(), ManualClock::new(5));
    let b = store(&server, r, ManualClock::new(5));
    let mut allowed = 0;
    for i in 0..6 {
        let store = if i % 2 == 0 { &a } else { &b };
        allowed += u32::from(
            store
                .decide("bob", 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed,
        );
    }
    assert_eq!(allowed, 4);
}

#[tokio::test]
async fn an_item_lives_until_its_state_stops_mattering() {
    let (server, store) = started(Algorithm::FixedWindow, "5/m");
    let verdict = store.decide("k", 1, Mode::Record).await.unwrap();
    assert_eq!(verdict.decision.reset_after, Duration::from_secs(60));
    let ttl = store.item_ttl("k").await.unwrap().expect("an item");
    // 60 s rounded up and one second for memcached's tick; it may have
    // ticked since.
    assert!((60..=61).contains(&ttl), "{ttl}");
    // Past memcached's 30 days a TTL is a Unix time: still the same life.
    // memcached's own clock moves once a second and may read up to a second
    // behind ours, so the absolute time may read a second longer.
    let store = store_with_rule(&server, rule(Algorithm::SlidingLog, "1/40d"));
    let verdict = store.decide("k", 1, Mode::Record).await.unwrap();
    let reset = verdict.decision.reset_after.as_secs() as i64;
    assert_eq!(reset, 40 * 24 * 3600);
    let ttl = store.item_ttl("k").await.unwrap().expect("an item");
    assert!(
        (reset - 1..=reset + 2).contains(&ttl),
        "ttl {ttl}, reset {reset}"
    );
}

fn store_with_rule(server: &MemcachedServer, rule: Rule) -> MemcachedStore {
    MemcachedStore::new(&client(server), rule, "api").unwrap()
}

#[tokio::test]
async fn keys_memcached_cannot_take_as_they_are_still_decide_apart() {
    let (_server, store) = started(Algorithm::FixedWindow, "1/h");
    let long = "x".repeat(400);
    let keys = ["a b", "a  b", "ключ", "tab\there", long.as_str(), "plain"];
    for key in keys {
        assert!(
            store
                .decide(key, 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed,
            "{key}"
        );
    }
    for key in keys {
        assert!(
            !store
                .decide(key, 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed,
            "{key}"
        );
    }
}

#[test]
fn a_rule_whose_state_could_outgrow_an_item_is_refused_with_the_reason() {
    let client =
        MemcachedClient::new("memcached://127.0.0.1:1", MemcachedOptions::default()).unwrap();
    let err = MemcachedStore::new(&client, rule(Algorithm::SlidingLog, "300000/m"), "api")
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("300000/m") && err.to_string().contains("item"),
        "{err}"
    );
    let bigger = MemcachedOptions {
        item_size_max: 2 << 20,
        ..MemcachedOptions::default()
    };
    let client = MemcachedClient::new("memcached://127.0.0.1:1", bigger).unwrap();
    assert!(MemcachedStore::new(&client, rule(Algorithm::SlidingLog, "300000/m"), "api").is_ok());
}

#[tokio::test]
async fn an_item_that_is_no_state_of_the_rule_is_an_error_naming_the_key() {
    let (server, store) = started(Algorithm::SlidingWindow, "3/m");
    let item_key = store.item_key("mallory");
    let answer = server
        .command(&format!("ms {item_key} 5 T60\r\nhello"))
        .unwrap();
    assert_eq!(answer, "HD");
    let err = store.decide("mallory", 1, Mode::Record).await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Unavailable);
    assert!(
        err.message.contains("\"mallory\"") && err.message.contains(&item_key),
        "{err}"
    );
    // It is left as it was, and other keys decide.
    assert!(cas_of(&server, &item_key).is_some());
    assert!(
        store
            .decide("alice", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
}

#[tokio::test]
async fn counted_denials_are_written_for_the_counters() {
    let (_server, store) = started(Algorithm::FixedWindow, "2/h");
    assert!(
        store
            .decide("k", 1, Mode::RecordAlways)
            .await
            .unwrap()
            .decision
            .allowed
    );
    // Denied, and counted up to the limit: the next unit is denied too.
    assert!(
        !store
            .decide("k", 5, Mode::RecordAlways)
            .await
            .unwrap()
            .decision
            .allowed
    );
    let after = store.decide("k", 1, Mode::Peek).await.unwrap();
    assert_eq!(after.decision.remaining, 0);
}

#[tokio::test]
async fn ping_answers_while_the_server_is_up_and_names_it_when_down() {
    let mut server = MemcachedServer::start();
    let client = client(&server);
    client.ping().await.unwrap();
    server.stop();
    let err = client.ping().await.unwrap_err();
    assert!(
        err.message.contains(&format!("127.0.0.1:{}", server.port)),
        "{err}"
    );
    let refused = MemcachedClient::connect(&server.url(), MemcachedOptions::default()).await;
    assert!(refused.is_err());
}

#[tokio::test]
async fn a_request_settled_by_another_instance_gives_back_to_both() {
    let server = MemcachedServer::start();
    let r = rule(Algorithm::SlidingLog, "2/h");
    let clock = ManualClock::new(1_000);
    let a = store(&server, r.clone(), clock.clone());
    let b = store(&server, r, clock.clone());
    let first = a.decide("carol", 1, Mode::Record).await.unwrap();
    let receipt = first.receipt(1).expect("a granted verdict has a receipt");
    assert_eq!(receipt.at, 1_000);
    a.decide("carol", 1, Mode::Record).await.unwrap();
    assert!(!allowed(&b, "carol", 1, Mode::Record).await);
    clock.advance(Duration::from_secs(1));
    // The first request turned out not to count: settled to nothing by b.
    Store::settle(&b, "carol", None, receipt, 0).await.unwrap();
    assert!(allowed(&a, "carol", 1, Mode::Record).await);
    // A refund on a key with no item changes nothing: nothing is written.
    Store::settle(&b, "dave", None, receipt, 0).await.unwrap();
    assert_eq!(cas_of(&server, &a.item_key("dave")), None);
    // A charge on a key with no item makes one: the debt is shared.
    Store::settle(&a, "erin", None, receipt, 3).await.unwrap();
    assert!(!allowed(&b, "erin", 1, Mode::Record).await);
}

#[tokio::test]
async fn usage_counts_the_items_and_remove_forgets_a_key() {
    let (_server, store) = started(Algorithm::FixedWindow, "1/h");
    let before = store.client().usage().await.unwrap();
    assert_eq!(before.items, 0);
    for key in ["a", "b", "c"] {
        store.decide(key, 1, Mode::Record).await.unwrap();
    }
    let after = store.client().usage().await.unwrap();
    assert_eq!(after.items, 3);
    // Each item: its key, its value (the fixed window's words) and a header.
    let value = (after.bytes - before.bytes) / 3;
    assert!(value > store.item_key("a").len() as u64 + 24, "{value}");
    assert!(store.remove("a").await.unwrap());
    assert!(!store.remove("a").await.unwrap());
    assert!(allowed(&store, "a", 1, Mode::Record).await);
    assert!(!allowed(&store, "b", 1, Mode::Record).await);
}
