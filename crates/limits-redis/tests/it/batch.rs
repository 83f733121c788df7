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
            value: None,
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
                value: None,
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

/// Two fixed-window limits of an hour, 15 and 14 (the reference's
/// `TestOverLimitWithStopCacheKeyIncrementWhenOverlimitConfig`), decided
/// all or nothing in `mode`: each call is the pair at `cost`; the answers'
/// (allowed, remaining).
async fn reference_pair(
    conn: &RedisConnection,
    mode: Mode,
    costs: &[u64],
) -> Vec<[(bool, u64); 2]> {
    let hour = |limit: &str| Rule::new(Algorithm::FixedWindow, limit.parse().unwrap());
    let four = RedisStore::new(conn, hour("15/h"), "key4").unwrap();
    let five = RedisStore::new(conn, hour("14/h"), "key5").unwrap();
    let mut answers = Vec::new();
    for &cost in costs {
        let pair = [&four, &five].map(|store| BatchDecision {
            store,
            client: None,
            key: "value",
            cost,
            value: None,
            mode,
        });
        let got = RedisStore::decide_all_or_nothing(&pair, false).await;
        answers.push([0, 1].map(|i| {
            let d = got[i].as_ref().unwrap().decision;
            (d.allowed, d.remaining)
        }));
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_a_request_over_one_limit_takes_nothing_from_the_other() {
    let redis = RedisServer::start();
    let conn = quiet(&redis.url(), "aon:").await;
    // 10, then 1, 2: both admit and record; then 2 would take key5 to 15
    // of 14: key4 records nothing and says what it has left (2, as the
    // reference's INCRBY 0 answers), key5 is over; then 1: key4 still
    // has 2 (it took nothing), and key5, which a denial did not count,
    // takes its last hit.
    let answers = reference_pair(&conn, Mode::Record, &[10, 1, 2, 2, 1]).await;
    assert_eq!(
        answers,
        [
            [(true, 5), (true, 4)],
            [(true, 4), (true, 3)],
            [(true, 2), (true, 1)],
            [(true, 2), (false, 1)],
            [(true, 1), (true, 0)],
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_with_counted_denials_is_the_reference_call_for_call() {
    // STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true: the descriptor going
    // over is counted (INCRBY), the other is not (INCRBY 0); the reference
    // then answers key5 over until its window ends, key4 as it was.
    let redis = RedisServer::start();
    let conn = quiet(&redis.url(), "aon-counted:").await;
    let answers = reference_pair(&conn, Mode::RecordAlways, &[10, 1, 2, 2, 1, 1]).await;
    assert_eq!(
        answers,
        [
            [(true, 5), (true, 4)],
            [(true, 4), (true, 3)],
            [(true, 2), (true, 1)],
            [(true, 2), (false, 0)],
            [(true, 2), (false, 0)],
            [(true, 2), (false, 0)],
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_is_one_script_call_and_records_every_limiter_or_none() {
    let redis = RedisServer::start();
    let conn = quiet(&redis.url(), "aon-one:").await;
    let stores = stores(&conn);
    // Every limiter (and `none`) in one request, each key once.
    let asks = |cost: u64| -> Vec<BatchDecision<'_>> {
        stores
            .iter()
            .map(|store| BatchDecision {
                store,
                client: None,
                key: "carol",
                cost,
                value: None,
                mode: Mode::Record,
            })
            .collect()
    };
    let mut traffic = redis.traffic();
    // The first call also loads the script.
    let first = RedisStore::decide_all_or_nothing(&asks(1), false).await;
    assert!(first.iter().all(|a| a.as_ref().unwrap().decision.allowed));
    for round in 0..2 {
        let before = traffic.now();
        let peeks: Vec<_> = asks(1)
            .into_iter()
            .map(|d| BatchDecision {
                mode: Mode::Peek,
                ..d
            })
            .collect();
        let looked = RedisStore::decide_batch(&peeks).await;
        let _ = traffic.since(before);
        // A cost of 2 is over the fixed window's and the leaky bucket's
        // 2/h after one hit: the request is refused, and nothing records.
        let before = traffic.now();
        let answers = RedisStore::decide_all_or_nothing(&asks(2), false).await;
        // Round 1: the deny cache answers round 0's denial at once, and the
        // rest only look, in one pipeline.
        let (reads, scripts) = traffic.since(before);
        assert_eq!(reads, 1, "round {round}: one read");
        assert_eq!(scripts == 1, round == 0, "round {round}: {scripts} scripts");
        assert!(answers
            .iter()
            .any(|a| !a.as_ref().unwrap().decision.allowed));
        let after = RedisStore::decide_batch(&peeks).await;
        for (i, (l, a)) in looked.iter().zip(&after).enumerate() {
            assert_eq!(
                timeless(l.as_ref().unwrap()),
                timeless(a.as_ref().unwrap()),
                "store {i}: a refused request recorded nothing"
            );
        }
    }
    // A cost every limiter admits: every one records.
    let before: Vec<u64> = RedisStore::decide_batch(
        &asks(1)
            .into_iter()
            .map(|d| BatchDecision {
                mode: Mode::Peek,
                ..d
            })
            .collect::<Vec<_>>(),
    )
    .await
    .iter()
    .map(|a| a.as_ref().unwrap().decision.remaining)
    .collect();
    let answers = RedisStore::decide_all_or_nothing(&asks(1), false).await;
    for (i, (answer, before)) in answers.iter().zip(before).enumerate() {
        let d = answer.as_ref().unwrap().decision;
        assert!(d.allowed, "store {i}");
        if i != 6 {
            assert!(
                d.remaining < before,
                "store {i} recorded: {} < {before}",
                d.remaining
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn all_or_nothing_under_concurrent_requests_records_both_limits_or_neither() {
    // 40 requests at once, each one hit of a limit of 10 and one of 25:
    // exactly 10 are admitted, and the larger limit took exactly their 10.
    let redis = RedisServer::start();
    let conn = quiet(&redis.url(), "aon-race:").await;
    let rule = |r: &str| Rule::new(Algorithm::SlidingLog, r.parse().unwrap());
    let small = std::sync::Arc::new(RedisStore::new(&conn, rule("10/h"), "small").unwrap());
    let large = std::sync::Arc::new(RedisStore::new(&conn, rule("25/h"), "large").unwrap());
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..40 {
        let (small, large) = (small.clone(), large.clone());
        calls.spawn(async move {
            let pair = [&*small, &*large].map(|store| BatchDecision {
                store,
                client: None,
                key: "k",
                cost: 1,
                value: None,
                mode: Mode::Record,
            });
            let answers = RedisStore::decide_all_or_nothing(&pair, false).await;
            answers.iter().all(|a| a.as_ref().unwrap().decision.allowed)
        });
    }
    let mut admitted = 0;
    while let Some(call) = calls.join_next().await {
        admitted += u32::from(call.unwrap());
    }
    assert_eq!(admitted, 10);
    let left = large.decide("k", 0, Mode::Peek).await.unwrap();
    assert_eq!(left.decision.remaining, 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_on_a_cluster_is_one_script_in_one_slot_and_two_batches_across() {
    let cluster = RedisCluster::start();
    let conn = quiet(&cluster.url(), "aon-cluster:").await;
    let rule = |r: &str| Rule::new(Algorithm::FixedWindow, r.parse().unwrap());
    let (small, large) = (
        RedisStore::new(&conn, rule("1/h"), "small").unwrap(),
        RedisStore::new(&conn, rule("5/h"), "large").unwrap(),
    );
    let ask = |store, key| BatchDecision {
        store,
        client: None,
        key,
        cost: 1,
        value: None,
        mode: Mode::Record,
    };
    // One key in both stores: one slot (the key is the hash tag).
    for (round, want) in [(0, true), (1, false)] {
        let pair = [ask(&small, "same"), ask(&large, "same")];
        let answers = RedisStore::decide_all_or_nothing(&pair, false).await;
        let allowed: Vec<bool> = answers
            .iter()
            .map(|a| a.as_ref().unwrap().decision.allowed)
            .collect();
        assert_eq!(allowed, [want, true], "round {round}");
        let left = large.decide("same", 0, Mode::Peek).await.unwrap();
        assert_eq!(
            left.decision.remaining, 4,
            "round {round}: the large limit took one hit"
        );
    }
    // Keys in other slots: answered all or nothing all the same.
    let keys: Vec<String> = (0..8).map(|i| format!("user-{i}")).collect();
    for round in 0..2 {
        let asks: Vec<_> = keys
            .iter()
            .map(|k| ask(&large, k))
            .chain(std::iter::once(ask(&small, "other")))
            .collect();
        let answers = RedisStore::decide_all_or_nothing(&asks, false).await;
        let small_admits = answers[8].as_ref().unwrap().decision.allowed;
        assert_eq!(small_admits, round == 0, "round {round}");
    }
    for key in &keys {
        let left = large.decide(key, 0, Mode::Peek).await.unwrap();
        assert_eq!(
            left.decision.remaining, 4,
            "{key}: only the admitted request took a hit"
        );
    }
}
