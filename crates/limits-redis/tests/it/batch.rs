//! `RedisStore::decide_batch`: many decisions, one round trip. Counted by
//! Redis itself (`INFO stats`): a batch of 16 reaches a Redis as one read
//! (one per node of a cluster), and answers as the same decisions made one
//! after the other.

use crate::redis_server;

use limits::{Algorithm, Decision, Mode, RetryAfter, Rule, Store, StoreErrorKind, Verdict};
use limits_redis::{BatchDecision, RedisConnection, RedisOptions, RedisStore};
use redis_server::{RedisCluster, RedisServer};
use std::time::Duration;

fn options(prefix: &str) -> RedisOptions {
    RedisOptions {
        prefix: prefix.into(),
        timeout: Duration::from_secs(5),
        // Nothing but the test's calls on the wire while it counts.
        clock_check: Duration::from_secs(3600),
        new_keys_per_client: None,
        ..RedisOptions::default()
    }
}

/// A connection to `url` once its first clock measurement (a background
/// call made at connection) is done: from then on, only the test's calls
/// reach Redis.
async fn quiet(url: &str, prefix: &str) -> RedisConnection {
    let conn = RedisConnection::connect(url, options(prefix))
        .await
        .unwrap();
    while conn.clock_offset_micros().is_none() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    conn
}

/// A store per algorithm, one rule of several rates among them.
fn stores(conn: &RedisConnection) -> Vec<RedisStore> {
    let rules = [
        (Algorithm::SlidingLog, "3/h"),
        (Algorithm::FixedWindow, "2/h"),
        (Algorithm::TokenBucket, "4/h"),
        (Algorithm::SlidingWindow, "3/h"),
        (Algorithm::LeakyBucket, "2/h"),
        (Algorithm::SlidingLog, "2/h; 5/d"),
        (Algorithm::None, "1/h"),
    ];
    rules
        .iter()
        .enumerate()
        .map(|(i, (algorithm, rates))| {
            let rule = Rule::new(*algorithm, rates.parse().unwrap());
            RedisStore::new(conn, rule, &format!("rule{i}")).unwrap()
        })
        .collect()
}

/// The 16 decisions of one request: (store, key, cost), some on the same
/// key of the same store, so that a later one sees an earlier one's hits.
const ASKS: [(usize, &str, u64); 16] = [
    (0, "ann", 1),
    (1, "ann", 1),
    (2, "ann", 2),
    (3, "ann", 1),
    (4, "ann", 1),
    (5, "ann", 1),
    (6, "ann", 1),
    (0, "ann", 1),
    (0, "bob", 3),
    (1, "bob", 1),
    (2, "bob", 5),
    (3, "bob", 1),
    (5, "bob", 2),
    (0, "ann", 1),
    (1, "ann", 1),
    (4, "ann", 1),
];

fn batch<'a>(stores: &'a [RedisStore], mode: Mode) -> Vec<BatchDecision<'a>> {
    ASKS.iter()
        .map(|&(store, key, cost)| BatchDecision {
            store: &stores[store],
            client: None,
            key,
            cost,
            mode,
        })
        .collect()
}

/// What of a verdict does not depend on the microsecond it was made at.
fn timeless(v: &Verdict) -> Vec<(bool, u64, bool)> {
    let of = |d: &Decision| (d.allowed, d.remaining, d.retry_after == RetryAfter::Never);
    std::iter::once(&v.decision)
        .chain(&v.per_rate)
        .map(of)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_16_reaches_redis_as_one_read_and_answers_as_one_by_one() {
    let redis = RedisServer::start();
    let batched = quiet(&redis.url(), "batched:").await;
    let one_by_one = quiet(&redis.url(), "one:").await;
    let (batched_conn, one_by_one_conn) = (batched.clone(), one_by_one.clone());
    let (batched, one_by_one) = (stores(&batched), stores(&one_by_one));
    let mut traffic = redis.traffic();
    let idle = traffic.now();
    assert_eq!(
        traffic.since(idle),
        (0, 0),
        "the count counts only what happens between"
    );
    for round in 0..3 {
        // One by one first: the first decisions also load the scripts.
        let (before, calls) = (traffic.now(), one_by_one_conn.calls());
        let mut expected = Vec::new();
        for &(store, key, cost) in &ASKS {
            expected.push(one_by_one[store].decide(key, cost, Mode::Record).await);
        }
        let (reads, commands) = traffic.since(before);
        if round > 0 {
            assert_eq!(one_by_one_conn.calls() - calls, commands);
            assert_eq!(reads, commands, "one by one: a read per decision sent");
        }
        let (before, calls) = (traffic.now(), batched_conn.calls());
        let answers = RedisStore::decide_batch(&batch(&batched, Mode::Record)).await;
        let (reads, commands) = traffic.since(before);
        // `none` needs no Redis; from the second round the deny cache
        // answers what Redis denied, so fewer scripts run: still one read.
        assert_eq!(reads, 1, "round {round}: one read for the whole batch");
        assert!(
            (1..=15).contains(&commands),
            "round {round}: {commands} scripts"
        );
        assert_eq!(
            batched_conn.calls() - calls,
            commands,
            "calls count decisions sent"
        );
        for (i, (got, want)) in answers.iter().zip(&expected).enumerate() {
            let (got, want) = (got.as_ref().unwrap(), want.as_ref().unwrap());
            assert_eq!(
                timeless(got),
                timeless(want),
                "round {round}, decision {i} {:?}",
                ASKS[i]
            );
        }
    }
    // A peek batch records nothing: the same answers twice.
    let peek = |stores| async move { RedisStore::decide_batch(&batch(stores, Mode::Peek)).await };
    let first: Vec<_> = peek(&batched)
        .await
        .iter()
        .map(|v| timeless(v.as_ref().unwrap()))
        .collect();
    let again: Vec<_> = peek(&batched)
        .await
        .iter()
        .map(|v| timeless(v.as_ref().unwrap()))
        .collect();
    assert_eq!(first, again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_after_redis_forgot_its_scripts_loads_them_and_answers_every_decision() {
    let redis = RedisServer::start();
    let conn = quiet(&redis.url(), "flush:").await;
    let stores = stores(&conn);
    let mut traffic = redis.traffic();
    for flushed in 0..2 {
        assert_eq!(traffic.command(&["SCRIPT", "FLUSH"]), "+OK");
        let before = traffic.now();
        let answers = RedisStore::decide_batch(&batch(&stores, Mode::Record)).await;
        for (i, answer) in answers.iter().enumerate() {
            assert!(answer.is_ok(), "flush {flushed}, decision {i}: {answer:?}");
        }
        // The batch, then the scripts and the decisions again in one
        // pipeline: Redis reads a client's socket 16 KiB at a time, and the
        // six scripts' sources are some 32 KB, so two or three reads; sent
        // again one by one (a load, then a call per decision), 22.
        let (reads, _) = traffic.since(before);
        assert!((2..=4).contains(&reads), "flush {flushed}: {reads} reads");
        // Loaded again: the next batch is one read.
        let before = traffic.now();
        RedisStore::decide_batch(&batch(&stores, Mode::Peek)).await;
        assert_eq!(traffic.since(before).0, 1, "flush {flushed}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_to_a_redis_that_is_gone_fails_every_decision_it_sent() {
    let mut redis = RedisServer::start();
    let conn = RedisConnection::connect(&redis.url(), options("gone:"))
        .await
        .unwrap();
    let stores = stores(&conn);
    redis.stop();
    let answers = RedisStore::decide_batch(&batch(&stores, Mode::Record)).await;
    for (i, answer) in answers.iter().enumerate() {
        let (store, _, _) = ASKS[i];
        match answer {
            // `none` needs no Redis.
            Ok(_) => assert_eq!(store, 6, "decision {i}"),
            Err(e) => assert_eq!(e.kind, StoreErrorKind::Unavailable, "decision {i}: {e}"),
        }
    }
    assert!(!conn.is_healthy(), "the batch's failure opens the circuit");
    // While the circuit is open nothing is sent, and nothing counted as sent.
    let calls = conn.calls();
    RedisStore::decide_batch(&batch(&stores, Mode::Record)).await;
    assert_eq!(conn.calls(), calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_batch_reaches_each_node_as_one_read() {
    let cluster = RedisCluster::start();
    let conn = quiet(&cluster.url(), "cluster:").await;
    let rule = Rule::new(Algorithm::SlidingLog, "2/h".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "api").unwrap();
    let keys: Vec<String> = (0..16).map(|i| format!("user-{i}")).collect();
    let asks = |mode| -> Vec<BatchDecision<'_>> {
        keys.iter()
            .map(|key| BatchDecision {
                store: &store,
                client: None,
                key,
                cost: 1,
                mode,
            })
            .collect()
    };
    // The first batch also reads which node holds which slot.
    for answer in RedisStore::decide_batch(&asks(Mode::Record)).await {
        assert_eq!(answer.unwrap().decision.remaining, 1);
    }
    let mut counters: Vec<_> = cluster.nodes.iter().map(|n| n.traffic()).collect();
    let before: Vec<_> = counters.iter_mut().map(|t| t.now()).collect();
    for answer in RedisStore::decide_batch(&asks(Mode::Record)).await {
        let verdict = answer.unwrap();
        assert!(verdict.decision.allowed);
        assert_eq!(verdict.decision.remaining, 0);
    }
    let traffic: Vec<_> = counters
        .iter_mut()
        .zip(before)
        .map(|(t, before)| t.since(before))
        .collect();
    let commands: u64 = traffic.iter().map(|t| t.1).sum();
    assert_eq!(commands, 16, "{traffic:?}");
    for (node, (reads, commands)) in traffic.iter().enumerate() {
        let expected = u64::from(*commands > 0);
        assert_eq!(*reads, expected, "node {node}: {traffic:?}");
    }
    let busy = traffic.iter().filter(|t| t.1 > 0).count();
    assert!(busy >= 2, "16 keys spread over the nodes: {traffic:?}");
    for answer in RedisStore::decide_batch(&asks(Mode::Record)).await {
        assert!(!answer.unwrap().decision.allowed);
    }
}
