//! A limit on distinct values on memcached (`MemcachedDistinct`): the
//! core's own decision on the values read and written with CAS, answer for
//! answer against the reference model on seeded random traces; one set of
//! values for every instance; a denial and a peek write nothing; every
//! writer under contention counted once.

use crate::memcached_server::MemcachedServer;

use limits::{Distinct, DistinctSketch, ManualClock, Mode, Store};
use limits_conformance::{DistinctAnswer, DistinctModel};
use limits_memcached::{MemcachedClient, MemcachedDistinct, MemcachedOptions};
use std::collections::HashMap;
use std::time::Duration;

fn client(server: &MemcachedServer) -> MemcachedClient {
    let options = MemcachedOptions {
        timeout: Duration::from_secs(5),
        ..MemcachedOptions::default()
    };
    MemcachedClient::new(&server.url(), options).unwrap()
}

/// xorshift64*: the traces are the same on every run, and the seed of a
/// failing one is printed.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[tokio::test]
async fn memcached_decides_distinct_values_as_the_model_on_random_traces() {
    let server = MemcachedServer::start();
    let client = client(&server);
    for seed in 1..=16u64 {
        let mut rng = Seeded(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let at_most = 1 + rng.below(4);
        let window = 2 + rng.below(50);
        let rule = Distinct::new(at_most, Duration::from_nanos(window)).unwrap();
        let store = MemcachedDistinct::new(&client, rule, &format!("trace{seed}")).unwrap();
        let mut models: HashMap<u64, DistinctModel> = HashMap::new();
        let mut t = 0;
        for step in 0..100 {
            t += match rng.below(8) {
                0..=2 => 0,
                3 => window - 1,
                4 => window,
                5 => window + 1,
                _ => rng.below(window),
            };
            let (key, value) = (rng.below(3), rng.below(6));
            let peek = rng.below(7) == 0;
            let mode = if peek { Mode::Peek } else { Mode::Record };
            let got = store
                .decide_value_at(&key.to_string(), &value.to_string(), Some(t), mode)
                .await
                .unwrap();
            // The model tells values apart by equality alone.
            let want = models.entry(key).or_default();
            let want = want.decide(at_most, window, value, t, !peek);
            assert_eq!(
                DistinctAnswer::from(got.decision),
                want,
                "seed {seed} step {step}: key {key} value {value} at {t} ns, {at_most} per {window} ns"
            );
        }
    }
}

/// Whether `store` admits `value` from one address now.
async fn ask(store: &MemcachedDistinct<ManualClock>, value: &str) -> bool {
    let verdict = store.decide_value(None, "203.0.113.7", value, Mode::Record);
    verdict.await.unwrap().decision.allowed
}

#[tokio::test]
async fn two_instances_share_each_keys_values_and_a_denial_writes_nothing() {
    let server = MemcachedServer::start();
    let usernames = Distinct::new(2, Duration::from_secs(3600)).unwrap();
    let clock = ManualClock::new(1_000_000_000);
    let a = MemcachedDistinct::with_clock(&client(&server), usernames, "logins", clock.clone())
        .unwrap();
    let b = MemcachedDistinct::with_clock(&client(&server), usernames, "logins", clock.clone())
        .unwrap();
    let from = "203.0.113.7";
    assert!(ask(&a, "alice").await);
    assert!(ask(&b, "bob").await);
    assert!(ask(&b, "alice").await, "a repeat is free on either");
    let item = a.item_key(from);
    let cas = server.command(&format!("mg {item} c")).unwrap();
    assert!(
        !ask(&a, "carol").await,
        "the third name, whichever instance sees it"
    );
    assert_eq!(
        server.command(&format!("mg {item} c")).unwrap(),
        cas,
        "a denial wrote"
    );
    let peek = a
        .decide_value_at(from, "dave", None, Mode::Peek)
        .await
        .unwrap();
    assert!(!peek.decision.allowed);
    clock.advance(Duration::from_secs(3600));
    assert!(ask(&b, "carol").await, "alice and bob left the window");
    assert!(
        a.decide(from, 1, Mode::Record).await.is_err(),
        "asked without a value"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_instances_admit_exactly_the_limit_of_new_values() {
    let server = MemcachedServer::start();
    let pages = Distinct::new(25, Duration::from_secs(3600)).unwrap();
    let stores: Vec<_> = (0..4)
        .map(|_| {
            std::sync::Arc::new(MemcachedDistinct::new(&client(&server), pages, "pages").unwrap())
        })
        .collect();
    let tasks: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut admitted = 0;
                for page in 0..20 {
                    let value = format!("/p/{i}-{page}");
                    let verdict = store.decide_value(None, "198.51.100.9", &value, Mode::Record);
                    admitted += u32::from(verdict.await.unwrap().decision.allowed);
                }
                admitted
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += task.await.unwrap();
    }
    assert_eq!(
        admitted, 25,
        "80 new pages from 4 writers at once, a limit of 25"
    );
}

#[tokio::test]
async fn a_sketch_or_values_past_an_item_are_refused() {
    let server = MemcachedServer::start();
    let client = client(&server);
    let sketch = DistinctSketch {
        from: 4,
        registers: 64,
        sub_windows: 4,
    };
    let sketched = Distinct::new(100, Duration::from_secs(60))
        .unwrap()
        .with_sketch(sketch)
        .unwrap();
    let err = MemcachedDistinct::new(&client, sketched, "x")
        .err()
        .unwrap();
    assert!(err.to_string().contains("not in memcached"), "{err}");
    let huge = Distinct::new(1_000_000, Duration::from_secs(60)).unwrap();
    let err = MemcachedDistinct::new(&client, huge, "x").err().unwrap();
    assert!(
        err.to_string().contains("more than a memcached item holds"),
        "{err}"
    );
}
