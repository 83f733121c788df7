//! `Observer::rule_observer`: a rule's own observer, asked once per rule as
//! a policy is put in force, hears that rule's decisions (and only them)
//! instead of the policy's observer; a rule it makes none for is still told
//! by name; a replaced policy asks again, for its own rules in its order.

use crate::common;

use axum::Router;
use axum::body::Body;
use common::{request, rule, send, store};
use http::Request;
use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreError, Verdict};
use limits_http::{Observer, Outcome, Policy, RateLimitLayer, RuleObserver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What was heard, in order: by whom ("policy", or the rule observer's
/// `ask` number and rule), the rule's name, the outcome, whether timed.
type Log = Arc<Mutex<Vec<(String, Outcome, bool)>>>;

/// Makes rule observers for the rules named in `own`; hears the others.
struct Policywide {
    own: Vec<&'static str>,
    log: Log,
    asked: Mutex<Vec<String>>,
}

impl Observer for Policywide {
    fn decided(&self, rule: &str, outcome: Outcome, _: Duration) {
        let by = format!("policy:{rule}");
        self.log.lock().unwrap().push((by, outcome, true));
    }

    fn decided_at_once(&self, rule: &str, outcome: Outcome) {
        let by = format!("policy:{rule}");
        self.log.lock().unwrap().push((by, outcome, false));
    }

    fn rule_observer(&self, rule: &str) -> Option<Box<dyn RuleObserver>> {
        let mut asked = self.asked.lock().unwrap();
        asked.push(rule.to_string());
        let one = OneRule {
            by: format!("own{}:{rule}", asked.len()),
            log: self.log.clone(),
        };
        self.own
            .contains(&rule)
            .then(|| Box::new(one) as Box<dyn RuleObserver>)
    }
}

/// One rule's observer, named by when it was made.
struct OneRule {
    by: String,
    log: Log,
}

impl RuleObserver for OneRule {
    fn decided(&self, outcome: Outcome, _: Duration) {
        self.log
            .lock()
            .unwrap()
            .push((self.by.clone(), outcome, true));
    }

    fn decided_at_once(&self, outcome: Outcome) {
        self.log
            .lock()
            .unwrap()
            .push((self.by.clone(), outcome, false));
    }
}

/// A store that always makes the caller wait (a store over the network).
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

fn app(layer: &RateLimitLayer<limits::KeyedLimiter<String, ManualClock>>) -> Router {
    Router::new()
        .route("/", axum::routing::get(|| async { "hello" }))
        .layer(layer.clone())
}

fn heard(log: &Log) -> Vec<(String, Outcome, bool)> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn entry(by: &str, outcome: Outcome, timed: bool) -> (String, Outcome, bool) {
    (by.to_string(), outcome, timed)
}

#[tokio::test]
async fn a_rules_observer_hears_its_decisions_and_a_replaced_policy_asks_again() {
    let clock = ManualClock::new(0);
    let log = Log::default();
    let observer = Arc::new(Policywide {
        own: vec!["a", "c"],
        log: log.clone(),
        asked: Mutex::default(),
    });
    let mut policy = Policy::new(vec![
        rule("a", "/", "ip", store(Algorithm::TokenBucket, "1/m", &clock)),
        rule("b", "/", "ip", store(Algorithm::TokenBucket, "5/m", &clock)),
    ]);
    policy.observer = observer.clone();
    let layer = RateLimitLayer::new(policy);
    assert_eq!(*observer.asked.lock().unwrap(), ["a", "b"]);
    let app = app(&layer);
    let get = || request("/", "192.0.2.1:1");
    assert_eq!(send(&app, get()).await.status(), 200);
    assert_eq!(send(&app, get()).await.status(), 429);
    assert_eq!(
        heard(&log),
        [
            entry("own1:a", Outcome::Allowed, false),
            entry("policy:b", Outcome::Allowed, false),
            entry("own1:a", Outcome::Limited, false),
        ]
    );

    // Replaced: "c" first (its own observer), then "a" (a new one).
    let mut replaced = Policy::new(vec![
        rule("c", "/", "ip", store(Algorithm::TokenBucket, "1/m", &clock)),
        rule("b", "/", "ip", store(Algorithm::TokenBucket, "5/m", &clock)),
        rule("a", "/", "ip", store(Algorithm::TokenBucket, "5/m", &clock)),
    ]);
    replaced.observer = observer.clone();
    layer.handle().replace(replaced);
    assert_eq!(*observer.asked.lock().unwrap(), ["a", "b", "c", "b", "a"]);
    assert_eq!(send(&app, get()).await.status(), 200);
    assert_eq!(send(&app, get()).await.status(), 429);
    assert_eq!(
        heard(&log),
        [
            entry("own3:c", Outcome::Allowed, false),
            entry("policy:b", Outcome::Allowed, false),
            entry("own5:a", Outcome::Allowed, false),
            entry("own3:c", Outcome::Limited, false),
        ]
    );
}

#[tokio::test]
async fn a_rules_observer_hears_awaited_decisions_timed() {
    let clock = ManualClock::new(0);
    let log = Log::default();
    let observer = Arc::new(Policywide {
        own: vec!["remote"],
        log: log.clone(),
        asked: Mutex::default(),
    });
    let limiter = KeyedLimiter::with_clock(
        Rule::new(Algorithm::TokenBucket, "1/m".parse().unwrap()),
        clock.clone(),
    );
    let mut policy = Policy::new(vec![rule("remote", "/", "ip", Arc::new(Waits(limiter)))]);
    policy.observer = observer;
    let app = Router::new()
        .route("/", axum::routing::get(|| async { "hello" }))
        .layer(RateLimitLayer::new(policy));
    let get = || -> Request<Body> { request("/", "192.0.2.1:1") };
    assert_eq!(send(&app, get()).await.status(), 200);
    assert_eq!(send(&app, get()).await.status(), 429);
    assert_eq!(
        heard(&log),
        [
            entry("own1:remote", Outcome::Allowed, true),
            entry("own1:remote", Outcome::Limited, true),
        ]
    );
}
