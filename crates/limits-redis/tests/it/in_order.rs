//! `Store::decide_in_order` on Redis stores: a request's decisions (an HTTP
//! request's rules) in one script call, one after the other up to the first
//! denied, answering as the same decisions made one by one, stopping where
//! they stop. Reads counted by Redis itself (`INFO stats`).

use crate::redis_server;

use limits::{
    Algorithm, Asked, Decision, Mode, RetryAfter, Rule, Store, StoreError, StoreErrorKind, Until,
    Verdict,
};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::{RedisCluster, RedisServer};
use std::net::IpAddr;
use std::time::Duration;

fn options(prefix: &str, deny_cache: usize) -> RedisOptions {
    RedisOptions {
        prefix: prefix.into(),
        timeout: Duration::from_secs(5),
        // Nothing but the test's calls on the wire while it counts.
        clock_check: Duration::from_secs(3600),
        deny_cache,
        new_keys_per_client: None,
        ..RedisOptions::default()
    }
}

async fn quiet(url: &str, options: RedisOptions) -> RedisConnection {
    let conn = RedisConnection::connect(url, options).await.unwrap();
    while conn.clock_offset_micros().is_none() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    conn
}

/// Three rules, the middle one the tightest, a `none` rule among them.
fn stores(conn: &RedisConnection) -> Vec<RedisStore> {
    [
        (Algorithm::SlidingLog, "5/h"),
        (Algorithm::None, "1/h"),
        (Algorithm::TokenBucket, "2/h"),
        (Algorithm::FixedWindow, "3/h; 4/d"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (algorithm, rates))| {
        let rule = Rule::new(*algorithm, rates.parse().unwrap());
        RedisStore::new(conn, rule, &format!("rule{i}")).unwrap()
    })
    .collect()
}

fn asked<'a>(stores: &'a [RedisStore], keys: &[&'a str]) -> Vec<Asked<'a, RedisStore>> {
    stores
        .iter()
        .zip(keys)
        .map(|(store, &key)| Asked {
            store,
            client: None,
            key,
            cost: 1,
            value: None,
            mode: Mode::Record,
        })
        .collect()
}

/// What of a verdict does not depend on the microsecond it was made at.
fn timeless(
    answer: &Result<Verdict, StoreError>,
) -> Result<Vec<(bool, u64, bool)>, StoreErrorKind> {
    let of = |d: &Decision| (d.allowed, d.remaining, d.retry_after == RetryAfter::Never);
    match answer {
        Ok(v) => Ok(std::iter::once(&v.decision)
            .chain(&v.per_rate)
            .map(of)
            .collect()),
        Err(e) => Err(e.kind),
    }
}

/// The decisions made one by one, each with `decide_from`, up to the first
/// that `until` stops at.
async fn one_by_one(
    asked: &[Asked<'_, RedisStore>],
    until: Until,
) -> Vec<Result<Verdict, StoreError>> {
    let mut answers = Vec::new();
    for a in asked {
        let answer = a.store.decide_from(a.client, a.key, a.cost, a.mode).await;
        let stops = until.stops_after(&answer);
        answers.push(answer);
        if stops {
            break;
        }
    }
    answers
}

/// The decisions as the HTTP layer makes them: `decide_in_order` from the
/// first not answered, until it stops; and how many calls that took.
async fn as_the_layer_asks(
    asked: &[Asked<'_, RedisStore>],
    until: Until,
) -> (Vec<Result<Verdict, StoreError>>, usize) {
    let (mut answers, mut calls) = (Vec::new(), 0);
    while answers.len() < asked.len() {
        let more = Store::decide_in_order(&asked[answers.len()..], until).await;
        calls += 1;
        let stops = more.last().is_some_and(|a| until.stops_after(a));
        answers.extend(more);
        if stops {
            break;
        }
    }
    (answers, calls)
}

fn same(got: &[Result<Verdict, StoreError>], expected: &[Result<Verdict, StoreError>]) -> bool {
    got.iter().map(timeless).eq(expected.iter().map(timeless))
}

/// `rounds` requests of the four rules on key "ann", decided together (as
/// the layer asks) and one by one, with a deny cache of `deny_cache`: the
/// same answers each round; per round, how many were decided, in how many
/// calls and reads of Redis; and the stores that decided together.
async fn rounds(
    redis: &RedisServer,
    deny_cache: usize,
    until: Until,
    rounds: usize,
) -> (Vec<RedisStore>, Vec<(usize, usize, u64)>) {
    let together = stores(&quiet(&redis.url(), options("together:", deny_cache)).await);
    let apart = stores(&quiet(&redis.url(), options("apart:", deny_cache)).await);
    let keys = ["ann"; 4];
    let mut traffic = redis.traffic();
    let mut counted = Vec::new();
    for round in 0..rounds {
        let expected = one_by_one(&asked(&apart, &keys), until).await;
        let before = traffic.now();
        let (got, calls) = as_the_layer_asks(&asked(&together, &keys), until).await;
        let (reads, _) = traffic.since(before);
        assert!(
            same(&got, &expected),
            "round {round}: {got:?} != {expected:?}"
        );
        counted.push((got.len(), calls, reads));
    }
    (together, counted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_rules_reach_redis_as_one_read_and_stop_at_the_first_denial() {
    let redis = RedisServer::start();
    let (together, counted) = rounds(&redis, 0, Until::Denied, 4).await;
    // Rounds 0 and 1: all four admitted; then the third (2/h) denies, and
    // the fourth is not decided. The first call also loaded the script.
    assert_eq!(counted[1..], [(4, 1, 1), (3, 1, 1), (3, 1, 1)]);
    // The fourth rule recorded the two requests the third let through, not
    // the two it denied; the first recorded all four.
    let peek = together[3].decide("ann", 1, Mode::Peek).await.unwrap();
    assert_eq!(peek.decision.remaining, 1, "3/h, two recorded");
    let peek = together[0].decide("ann", 1, Mode::Peek).await.unwrap();
    assert_eq!(peek.decision.remaining, 1, "5/h, four recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_failed_goes_on_past_a_denial_in_the_same_read() {
    let redis = RedisServer::start();
    let (together, counted) = rounds(&redis, 0, Until::Failed, 4).await;
    assert_eq!(counted[1..], [(4, 1, 1); 3]);
    let peek = together[3].decide("ann", 1, Mode::Peek).await.unwrap();
    assert!(!peek.decision.allowed, "3/h: decided past the denials");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_redis_refuses_ends_the_call_and_the_ones_before_it_keep_their_records() {
    let redis = RedisServer::start();
    let conn = quiet(&redis.url(), options("limits:", 0)).await;
    let stores = stores(&conn);
    // The third rule's key holds a list: its script fails with WRONGTYPE.
    let broken = stores[2].redis_keys("ann").remove(0);
    assert_eq!(redis.integer(&["RPUSH", &broken, "x"]), 1);
    let keys = ["ann", "ann", "ann", "ann"];
    let got = Store::decide_in_order(&asked(&stores, &keys), Until::Denied).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got[0].as_ref().unwrap().decision.allowed);
    let error = got[2].as_ref().unwrap_err();
    assert!(error.message.contains("WRONGTYPE"), "{error}");
    assert!(conn.is_healthy(), "an answer from Redis is no outage");
    let first = stores[0].decide("ann", 1, Mode::Peek).await.unwrap();
    assert_eq!(first.decision.remaining, 4, "the first rule recorded it");
    let last = stores[3].decide("ann", 1, Mode::Peek).await.unwrap();
    assert_eq!(
        last.decision.remaining, 3,
        "the rule after the error was not decided"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_the_deny_cache_holds_is_answered_in_its_turn_without_redis() {
    let redis = RedisServer::start();
    let (together, counted) = rounds(&redis, 100, Until::Denied, 5).await;
    // Round 2: Redis denies at the third rule. From round 3 its denial is
    // cached: the first two go to Redis (the `none` rule with the first),
    // the third is answered here, in a second call without Redis.
    assert_eq!(counted[2..], [(3, 1, 1), (3, 2, 1), (3, 2, 1)]);
    assert!(together[2].connection().deny_cache_hits() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_new_to_the_cap_is_counted_only_when_its_rule_is_decided() {
    let redis = RedisServer::start();
    let options = RedisOptions {
        new_keys_per_client: Some("2/h".parse().unwrap()),
        ..options("limits:", 0)
    };
    let stores = stores(&quiet(&redis.url(), options).await);
    let client: IpAddr = "192.0.2.1".parse().unwrap();
    let from = |keys: [&'static str; 4]| -> Vec<Asked<'_, RedisStore>> {
        let mut asked = asked(&stores, &keys);
        for a in &mut asked {
            a.client = Some(client);
        }
        asked
    };
    // "k1" is new to each rule's cap (2 new keys an hour per client): each
    // is counted when its rule decides, so each starts a call of its own
    // (the `none` rule, which keeps no key, goes with the first).
    let (got, calls) = as_the_layer_asks(&from(["k1"; 4]), Until::Denied).await;
    assert!(got.iter().all(|a| a.as_ref().unwrap().decision.allowed));
    assert_eq!(calls, 3);
    // Seen now: one call.
    let (got, calls) = as_the_layer_asks(&from(["k1"; 4]), Until::Denied).await;
    assert!(got.iter().all(|a| a.as_ref().unwrap().decision.allowed));
    assert_eq!(calls, 1);
    // The third rule (2/h) denies "k1": the last rule's new key "k2" is
    // never decided, and so not counted against the client's cap there.
    let (got, _) = as_the_layer_asks(&from(["k1", "k1", "k1", "k2"]), Until::Denied).await;
    assert_eq!(got.len(), 3);
    assert!(!got[2].as_ref().unwrap().decision.allowed);
    // Had "k2" been counted, "k3" would be the client's third new key of
    // the last rule, and refused.
    let (got, _) = as_the_layer_asks(&from(["k3"; 4]), Until::Denied).await;
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got.iter().all(|a| a.as_ref().unwrap().decision.allowed));
    assert_eq!(stores[3].connection().new_keys_refused(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_each_slots_rules_go_together_in_order() {
    let cluster = RedisCluster::start();
    let together = stores(&quiet(&cluster.url(), options("together:", 0)).await);
    let apart = stores(&quiet(&cluster.url(), options("apart:", 0)).await);
    // Each rule's keys are in a slot of their own (the hash tag holds the
    // rule's name): one call per rule, in order, as one by one.
    let keys = ["ann", "ann", "ann", "ann"];
    for round in 0..4 {
        let expected = one_by_one(&asked(&apart, &keys), Until::Denied).await;
        let (got, _) = as_the_layer_asks(&asked(&together, &keys), Until::Denied).await;
        assert!(
            same(&got, &expected),
            "round {round}: {got:?} != {expected:?}"
        );
    }
    // One rule asked three times for one key: one slot, one call.
    let store = &together[0];
    let same_slot: Vec<Asked<'_, RedisStore>> = (0..3)
        .map(|_| Asked {
            store,
            client: None,
            key: "bob",
            cost: 1,
            value: None,
            mode: Mode::Record,
        })
        .collect();
    let got = Store::decide_in_order(&same_slot, Until::Denied).await;
    let remaining: Vec<u64> = got
        .iter()
        .map(|a| a.as_ref().unwrap().decision.remaining)
        .collect();
    assert_eq!(remaining, [4, 3, 2], "one call, each after the one before");
}
