//! The harness of sync_and_boxed_paths.rs: a store that answers at once or
//! makes the layer wait, a script of requests, and the comparison of every
//! way of running it.

use crate::common::request;
use axum::body::Body;
use http::{Request, Response};
use http_body_util::BodyExt;
use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreError, Verdict};
use limits_http::{HttpRule, KeySpec, LayerOptions, Missing, Outcome, Policy, RateLimitLayer};
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::{Layer, ServiceExt};

/// An in-memory limiter that answers at once or makes the caller wait, or
/// a store that is down; it counts the decisions it was asked to wait for.
pub struct Switch {
    limiter: KeyedLimiter<String, ManualClock>,
    at_once: bool,
    down: bool,
    waited: AtomicU64,
}

impl Store for Switch {
    fn rule(&self) -> &Rule {
        self.limiter.rule()
    }

    fn decide(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        self.waited.fetch_add(1, Ordering::Relaxed);
        async move {
            // Pending once, as a store over the network would be.
            tokio::task::yield_now().await;
            if self.down {
                return Err(StoreError::new("connection refused"));
            }
            Store::decide(&self.limiter, key, cost, mode).await
        }
    }

    fn decide_now(&self, key: &str, cost: u64, mode: Mode) -> Option<Result<Verdict, StoreError>> {
        if !self.at_once {
            return None;
        }
        if self.down {
            return Some(Err(StoreError::new("connection refused")));
        }
        Store::decide_now(&self.limiter, key, cost, mode)
    }
}

/// A rule of a scenario: name, path prefix, key, algorithm, rates, down. A
/// key missing from a request is refused (400), to reach the key errors.
pub type Def = (
    &'static str,
    &'static str,
    &'static str,
    Algorithm,
    &'static str,
    bool,
);

/// One step of a script: a request (path, peer, an `x-user` header), or
/// the limiters' clocks moved on by some milliseconds.
pub enum Act {
    Get(&'static str, &'static str, Option<&'static str>),
    Advance(u64),
}

/// Everything a response said, and how long it took (tokio's paused time).
#[derive(Debug, PartialEq)]
pub struct Seen {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub waited: Duration,
}

/// What one side answered, what its observer heard, and how many decisions
/// its stores made the layer wait for.
#[derive(Debug)]
pub struct Run {
    pub seen: Vec<Seen>,
    pub events: Vec<(String, Outcome)>,
    pub waited: u64,
}

pub async fn run(defs: &[Def], options: &LayerOptions, at_once: &[bool], script: &[Act]) -> Run {
    let clock = ManualClock::new(1_000_000_000);
    let stores: Vec<Arc<Switch>> = defs
        .iter()
        .zip(at_once)
        .map(|(&(_, _, _, algorithm, rates, down), &at_once)| {
            let rule = Rule::new(algorithm, rates.parse().unwrap());
            let limiter = KeyedLimiter::with_clock(rule, clock.clone());
            let waited = AtomicU64::new(0);
            Arc::new(Switch {
                limiter,
                at_once,
                down,
                waited,
            })
        })
        .collect();
    let rules = defs
        .iter()
        .zip(&stores)
        .map(|(&(name, path, key, ..), store)| HttpRule {
            name: name.into(),
            path_prefix: path.into(),
            path_match: Default::default(),
            methods: vec![],
            key: key
                .parse::<KeySpec>()
                .unwrap()
                .with_missing(Missing::Reject),
            distinct: None,
            cost: 1,
            count: Default::default(),
            cost_from: None,
            store: store.clone(),
            lists: Default::default(),
            tier: None,
            in_flight: false,
        })
        .collect();
    let events = Arc::new(Mutex::new(Vec::new()));
    let heard = events.clone();
    let mut policy = Policy::new(rules);
    policy.options = options.clone();
    policy.observer = Arc::new(move |rule: &str, outcome: Outcome, _: Duration| {
        heard.lock().unwrap().push((rule.to_owned(), outcome));
    });
    let inner = tower::service_fn(|_: Request<Body>| async {
        let mut r = Response::new(Body::from("hello"));
        r.headers_mut().insert("x-inner", "yes".parse().unwrap());
        Ok::<_, Infallible>(r)
    });
    let service = RateLimitLayer::new(policy).layer(inner);
    let mut seen = Vec::new();
    for act in script {
        let (path, peer, user) = match act {
            Act::Advance(ms) => {
                clock.advance(Duration::from_millis(*ms));
                continue;
            }
            Act::Get(path, peer, user) => (path, peer, user),
        };
        let mut req = request(path, peer);
        if let Some(user) = user {
            req.headers_mut().insert("x-user", user.parse().unwrap());
        }
        let started = tokio::time::Instant::now();
        let response = service.clone().oneshot(req).await.unwrap();
        let waited = started.elapsed();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        seen.push(Seen {
            status: parts.status.as_u16(),
            headers: (parts.headers.iter())
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                .collect(),
            body: String::from_utf8(body.to_vec()).unwrap(),
            waited,
        });
    }
    let events = events.lock().unwrap().clone();
    let waited = stores
        .iter()
        .map(|s| s.waited.load(Ordering::Relaxed))
        .sum();
    Run {
        seen,
        events,
        waited,
    }
}

/// Runs `script` with every store answering at once, with none, and with
/// each mix of the two; asserts that they all answered and heard the same,
/// and that only the stores that cannot answer at once were waited for.
/// Returns the statuses.
pub async fn same_both_ways(defs: &[Def], options: LayerOptions, script: &[Act]) -> Vec<u16> {
    let at_once = vec![true; defs.len()];
    let sync = run(defs, &options, &at_once, script).await;
    assert_eq!(sync.waited, 0, "every decision made in `call`");
    for mix in 0..(1u32 << defs.len()) - 1 {
        let at_once: Vec<bool> = (0..defs.len()).map(|i| mix & (1 << i) != 0).collect();
        let other = run(defs, &options, &at_once, script).await;
        assert_eq!(
            other.seen, sync.seen,
            "responses, stores at once: {at_once:?}"
        );
        assert_eq!(
            other.events, sync.events,
            "observer, stores at once: {at_once:?}"
        );
    }
    let boxed = run(defs, &options, &vec![false; defs.len()], script).await;
    let decided = sync.events.len() as u64;
    assert_eq!(boxed.waited, decided, "every decision waited for");
    sync.seen.iter().map(|s| s.status).collect()
}
