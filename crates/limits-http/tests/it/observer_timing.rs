//! Which decisions the observer is told the time of: those a store was
//! awaited for (`Observer::decided`, with the time), not those it made at
//! once (`Observer::decided_at_once`, untimed), on the layer's path in
//! `call` and on its boxed path (a key that reads the body) alike.

use crate::common;

use axum::body::Body;
use common::{app, request, rule, send, store};
use http::Request;
use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreError, Verdict};
use limits_http::{Observer, Outcome, PeerAddr, Policy};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the observer heard: the rule, the outcome, and the latency if the
/// decision was timed.
#[derive(Default)]
struct Heard(Mutex<Vec<(String, Outcome, Option<Duration>)>>);

impl Observer for Heard {
    fn decided(&self, rule: &str, outcome: Outcome, latency: Duration) {
        let mut heard = self.0.lock().unwrap();
        heard.push((rule.to_string(), outcome, Some(latency)));
    }

    fn decided_at_once(&self, rule: &str, outcome: Outcome) {
        let mut heard = self.0.lock().unwrap();
        heard.push((rule.to_string(), outcome, None));
    }
}

/// An in-memory limiter behind a store that always makes the caller wait,
/// as a store over the network does.
struct Waits(KeyedLimiter<String, ManualClock>);

impl Store for Waits {
    fn rule(&self) -> &Rule {
        self.0.rule()
    }

    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        tokio::task::yield_now().await;
        Store::decide(&self.0, key, cost, mode).await
    }
}

fn login(peer: &str) -> Request<Body> {
    let mut r = Request::post("/login")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("user=alice"))
        .unwrap();
    r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
    r
}

#[tokio::test]
async fn decisions_made_at_once_are_untimed_in_call_and_after_a_body_read() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Heard::default());
    let mut policy = Policy::new(vec![
        rule(
            "by-ip",
            "/",
            "ip",
            store(Algorithm::TokenBucket, "1/m", &clock),
        ),
        rule(
            "by-user",
            "/login",
            "form:user",
            store(Algorithm::TokenBucket, "5/m", &clock),
        ),
    ]);
    policy.observer = heard.clone();
    let app = app(policy);
    assert_eq!(send(&app, request("/", "192.0.2.1:1")).await.status(), 200);
    assert_eq!(send(&app, request("/", "192.0.2.1:1")).await.status(), 429);
    // Both rules match; the body is read first, on the boxed path.
    assert_eq!(send(&app, login("192.0.2.2:1")).await.status(), 200);
    let heard = heard.0.lock().unwrap().clone();
    let expected = [
        ("by-ip", Outcome::Allowed),
        ("by-ip", Outcome::Limited),
        ("by-ip", Outcome::Allowed),
        ("by-user", Outcome::Allowed),
    ];
    assert_eq!(heard.len(), expected.len(), "{heard:?}");
    for ((rule, outcome, latency), (want_rule, want)) in heard.iter().zip(expected) {
        assert_eq!((rule.as_str(), *outcome), (want_rule, want));
        assert_eq!(*latency, None, "{rule}: made at once, not timed");
    }
}

#[tokio::test]
async fn decisions_a_store_was_awaited_for_are_timed() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Heard::default());
    let limiter = KeyedLimiter::with_clock(
        Rule::new(Algorithm::TokenBucket, "1/m".parse().unwrap()),
        clock.clone(),
    );
    let mut policy = Policy::new(vec![rule("remote", "/", "ip", Arc::new(Waits(limiter)))]);
    policy.observer = heard.clone();
    let app = app(policy);
    assert_eq!(send(&app, request("/", "192.0.2.1:1")).await.status(), 200);
    assert_eq!(send(&app, request("/", "192.0.2.1:1")).await.status(), 429);
    let heard = heard.0.lock().unwrap().clone();
    let outcomes: Vec<_> = heard
        .iter()
        .map(|(r, o, l)| (r.as_str(), *o, l.is_some()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("remote", Outcome::Allowed, true),
            ("remote", Outcome::Limited, true)
        ]
    );
}

#[tokio::test]
async fn an_observer_without_decided_at_once_hears_a_zero_latency() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let mut policy = Policy::new(vec![rule(
        "by-ip",
        "/",
        "ip",
        store(Algorithm::TokenBucket, "1/m", &clock),
    )]);
    let sink = heard.clone();
    policy.observer = Arc::new(move |_: &str, outcome: Outcome, latency: Duration| {
        sink.lock().unwrap().push((outcome, latency));
    });
    let app = app(policy);
    assert_eq!(send(&app, request("/", "192.0.2.1:1")).await.status(), 200);
    assert_eq!(*heard.lock().unwrap(), [(Outcome::Allowed, Duration::ZERO)]);
}
