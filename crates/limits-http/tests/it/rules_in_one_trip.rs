//! A request's rules whose stores share a round trip (`Store::shares_round_trip`,
//! several rules on one Redis) are asked together, in one
//! `Store::decide_in_order`, and decide exactly as they do one after the
//! other: each in order, recording as it allows, none after the first
//! denial (a dry run goes on past it), a store error answered by the
//! failure policy. A store standing in for Redis (never at once, its trips
//! counted) is compared, request by request, with the same rules in memory.

use crate::common::*;

use axum::Router;
use axum::body::Body;
use http::{Request, Response};
use limits::{
    Algorithm, Asked, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreError, Until, Verdict,
};
use limits_http::{FailurePolicy, HttpRule, Missing, RateLimitLayer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What a remote store's link saw: the size of each trip, and whether it
/// is down.
#[derive(Default)]
struct Link {
    trips: Mutex<Vec<usize>>,
    down: AtomicBool,
}

/// A store over memory that never answers at once and shares its round
/// trips with every store on the same link, as Redis stores on one
/// connection do.
struct Remote {
    memory: KeyedLimiter<String, ManualClock>,
    link: Arc<Link>,
}

impl Remote {
    fn answer(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        if self.link.down.load(Ordering::Relaxed) {
            return Err(StoreError::new("the link is down"));
        }
        Ok(self.memory.verdict(key, None, cost, mode))
    }
}

impl Store for Remote {
    fn rule(&self) -> &Rule {
        self.memory.rule()
    }

    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        self.link.trips.lock().unwrap().push(1);
        self.answer(key, cost, mode)
    }

    fn shares_round_trip(&self, other: &Remote) -> bool {
        Arc::ptr_eq(&self.link, &other.link)
    }

    async fn decide_in_order(
        asked: &[Asked<'_, Remote>],
        until: Until,
    ) -> Vec<Result<Verdict, StoreError>> {
        asked[0].store.link.trips.lock().unwrap().push(asked.len());
        let mut answers = Vec::new();
        for a in asked {
            let answer = a.store.answer(a.key, a.cost, a.mode);
            let stops = until.stops_after(&answer);
            answers.push(answer);
            if stops {
                break;
            }
        }
        answers
    }
}

/// The three rules of every test, over any store: keyed by three headers,
/// the middle one the tightest.
const RULES: [(&str, &str, &str); 3] = [
    ("first", "header:x-a", "6/h"),
    ("middle", "header:x-b", "2/h"),
    ("last", "header:x-c", "3/h; 5/d"),
];

fn rule_of(algorithm: Algorithm, rates: &str) -> Rule {
    Rule::new(algorithm, rates.parse().unwrap())
}

fn rules<S>(stores: &[Arc<S>]) -> Vec<HttpRule<S>> {
    RULES
        .iter()
        .zip(stores)
        .map(|(&(name, key, _), store)| {
            let mut rule = rule(name, "/", key, store.clone());
            rule.key = rule.key.with_missing(Missing::Reject);
            rule
        })
        .collect()
}

/// The rules on stores in memory and on remote stores of one link, the
/// same algorithms, on one manual clock.
struct Pair {
    memory: Vec<Arc<KeyedLimiter<String, ManualClock>>>,
    remote: Vec<Arc<Remote>>,
    link: Arc<Link>,
}

impl Pair {
    fn new(algorithm: Algorithm) -> Pair {
        let clock = ManualClock::new(0);
        let link = Arc::new(Link::default());
        let limiter =
            |rates: &str| KeyedLimiter::with_clock(rule_of(algorithm, rates), clock.clone());
        Pair {
            memory: RULES.iter().map(|r| Arc::new(limiter(r.2))).collect(),
            remote: RULES
                .iter()
                .map(|r| {
                    Arc::new(Remote {
                        memory: limiter(r.2),
                        link: link.clone(),
                    })
                })
                .collect(),
            link,
        }
    }

    fn apps(&self, dry_run: bool, on_store_error: FailurePolicy) -> (Router, Router) {
        let memory = RateLimitLayer::builder()
            .rules(rules(&self.memory))
            .dry_run(dry_run)
            .on_store_error(on_store_error)
            .build();
        let remote = RateLimitLayer::builder()
            .rules(rules(&self.remote))
            .dry_run(dry_run)
            .on_store_error(on_store_error)
            .build();
        (routes(memory), routes(remote))
    }

    fn trips(&self) -> Vec<usize> {
        std::mem::take(&mut *self.link.trips.lock().unwrap())
    }

    /// What each rule has left for the header values `values`, looked at
    /// in both.
    fn remaining(&self, values: [&str; 3]) -> (Vec<u64>, Vec<u64>) {
        let keys: Vec<String> = RULES
            .iter()
            .zip(values)
            .map(|(rule, value)| format!("{}={value}", rule.1))
            .collect();
        let peek = |store: &KeyedLimiter<String, ManualClock>, key: &String| {
            store.verdict(key, None, 1, Mode::Peek).decision.remaining
        };
        let memory = self.memory.iter().zip(&keys).map(|(s, k)| peek(s, k));
        let remote = self
            .remote
            .iter()
            .zip(&keys)
            .map(|(s, k)| peek(&s.memory, k));
        (memory.collect(), remote.collect())
    }
}

fn routes<S: Store>(layer: RateLimitLayer<S>) -> Router {
    Router::new().fallback(|| async { "hello" }).layer(layer)
}

fn keyed(a: &str, b: &str, c: Option<&str>) -> Request<Body> {
    let mut r = request("/", "127.0.0.1:1");
    let headers = r.headers_mut();
    headers.insert("x-a", a.parse().unwrap());
    headers.insert("x-b", b.parse().unwrap());
    if let Some(c) = c {
        headers.insert("x-c", c.parse().unwrap());
    }
    r
}

/// What of an answer the rules decide: the status and the RateLimit headers.
fn said(r: &Response<Body>) -> (u16, String, String, String) {
    (
        r.status().as_u16(),
        header(r, "ratelimit").to_owned(),
        header(r, "ratelimit-policy").to_owned(),
        header(r, "retry-after").to_owned(),
    )
}

/// A trace whose middle rule denies now and then (b1 and b2 take two
/// each); c9 only in a request the middle rule denies.
fn trace() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        ("a1", "b1", "c1"),
        ("a1", "b1", "c1"),
        ("a1", "b1", "c9"),
        ("a2", "b1", "c2"),
        ("a1", "b2", "c1"),
        ("a2", "b2", "c1"),
        ("a1", "b2", "c2"),
        ("a1", "b3", "c1"),
    ]
}

/// Sends the trace to both apps: the same answers, one trip of three rules
/// each.
async fn replay(pair: &Pair, memory: &Router, remote: &Router, what: &str) {
    for (n, (a, b, c)) in trace().into_iter().enumerate() {
        let expected = said(&send(memory, keyed(a, b, Some(c))).await);
        let got = said(&send(remote, keyed(a, b, Some(c))).await);
        assert_eq!(got, expected, "{what}, request {n}");
        assert_eq!(pair.trips(), [3], "{what}, request {n}: one trip of 3");
    }
}

#[tokio::test]
async fn three_rules_on_one_link_decide_in_one_trip_as_memory_decides_them() {
    for algorithm in [
        Algorithm::SlidingLog,
        Algorithm::TokenBucket,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
    ] {
        let pair = Pair::new(algorithm);
        let (memory, remote) = pair.apps(false, FailurePolicy::Deny);
        replay(&pair, &memory, &remote, &format!("{algorithm:?}")).await;
        let (memory_left, remote_left) = pair.remaining(["a1", "b1", "c9"]);
        assert_eq!(remote_left, memory_left, "{algorithm:?}");
        // a1 recorded six requests, three of them refused by a later rule;
        // c9 was only in a request the middle rule refused: never decided.
        assert_eq!(memory_left, [0, 0, 3], "{algorithm:?}");
    }
}

#[tokio::test]
async fn a_dry_run_goes_on_past_the_middle_rules_denial_in_the_same_trip() {
    let pair = Pair::new(Algorithm::SlidingLog);
    let (memory, remote) = pair.apps(true, FailurePolicy::Deny);
    replay(&pair, &memory, &remote, "dry run").await;
    let (memory_left, remote_left) = pair.remaining(["a1", "b1", "c9"]);
    assert_eq!(remote_left, memory_left);
    // The last rule decided c9's request past the middle rule's denial.
    assert_eq!(memory_left, [0, 0, 2]);
}

#[tokio::test]
async fn a_rule_without_its_key_ends_the_trip_and_answers_400_in_its_turn() {
    let pair = Pair::new(Algorithm::SlidingLog);
    let (memory, remote) = pair.apps(false, FailurePolicy::Deny);
    // No x-c: the last rule refuses the request, after the two before it
    // recorded it.
    let expected = said(&send(&memory, keyed("a1", "b1", None)).await);
    let got = said(&send(&remote, keyed("a1", "b1", None)).await);
    assert_eq!((got.0, expected.0), (400, 400));
    assert_eq!(pair.trips(), [2], "the two rules with a key, in one trip");
    let (memory_left, remote_left) = pair.remaining(["a1", "b1", "c1"]);
    assert_eq!(remote_left, memory_left);
    assert_eq!(memory_left[..2], [5, 1]);
    // Once the middle rule denies, the last rule's missing key is never
    // looked at: a 429, not a 400.
    assert_eq!(send(&remote, keyed("a1", "b1", None)).await.status(), 400);
    pair.trips();
    let denied = send(&remote, keyed("a1", "b1", None)).await;
    assert_eq!(denied.status(), 429);
    assert_eq!(pair.trips(), [2]);
}

#[tokio::test]
async fn a_store_error_is_answered_by_the_failure_policy_rule_by_rule() {
    let pair = Pair::new(Algorithm::SlidingLog);
    pair.link.down.store(true, Ordering::Relaxed);
    // Allow: each rule's error lets the request on, and the rules after it
    // are asked again (Redis may answer them).
    let (_, remote) = pair.apps(false, FailurePolicy::Allow);
    let passed = send(&remote, keyed("a1", "b1", Some("c1"))).await;
    assert_eq!(passed.status(), 200);
    assert_eq!(pair.trips(), [3, 2, 1]);
    // Deny: the first rule's error refuses it; nothing after it is asked.
    let (_, remote) = pair.apps(false, FailurePolicy::Deny);
    let refused = send(&remote, keyed("a1", "b1", Some("c1"))).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(pair.trips(), [3]);
    pair.link.down.store(false, Ordering::Relaxed);
    let (_, remote_left) = pair.remaining(["a1", "b1", "c1"]);
    assert_eq!(remote_left, [6, 2, 3], "nothing was recorded while down");
}
