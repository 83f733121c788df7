//! Helpers every layer test file shares: stores on a manual clock, rules,
//! an axum app around the layer, requests from a given peer.

#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use http::{Request, Response};
use http_body_util::BodyExt;
use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreError, Verdict};
use limits_http::{HttpRule, KeySpec, PeerAddr, Policy, RateLimitLayer};
use std::net::SocketAddr;
use std::sync::Arc;
use tower::ServiceExt;

pub type Memory = KeyedLimiter<String, ManualClock>;

pub fn store(limiter: Algorithm, rates: &str, clock: &ManualClock) -> Arc<Memory> {
    Arc::new(KeyedLimiter::with_clock(
        Rule::new(limiter, rates.parse().unwrap()),
        clock.clone(),
    ))
}

/// A store that cannot be reached: every decision fails.
pub struct Down(pub Rule);

impl Store for Down {
    fn rule(&self) -> &Rule {
        &self.0
    }
    async fn decide(&self, _: &str, _: u64, _: Mode) -> Result<Verdict, StoreError> {
        Err(StoreError::new("connection refused"))
    }
}

pub fn rule<S>(name: &str, path: &str, key: &str, store: Arc<S>) -> HttpRule<S> {
    HttpRule {
        name: name.into(),
        path_prefix: path.into(),
        path_match: Default::default(),
        methods: vec![],
        key: key.parse::<KeySpec>().unwrap(),
        distinct: None,
        cost: 1,
        count: Default::default(),
        cost_from: None,
        store,
        lists: Default::default(),
        tier: None,
        in_flight: false,
    }
}

pub fn app<S: Store>(policy: Policy<S>) -> Router {
    Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/login", post(|body: String| async move { body }))
        .layer(RateLimitLayer::new(policy))
}

pub fn request(path: &str, peer: &str) -> Request<Body> {
    let mut r = Request::get(path).body(Body::empty()).unwrap();
    r.extensions_mut()
        .insert(PeerAddr(peer.parse::<SocketAddr>().unwrap()));
    r
}

pub async fn send(app: &Router, req: Request<Body>) -> Response<Body> {
    app.clone().oneshot(req).await.unwrap()
}

pub fn header<'a>(r: &'a Response<Body>, name: &str) -> &'a str {
    r.headers().get(name).map_or("", |v| v.to_str().unwrap())
}

pub async fn json(r: Response<Body>) -> serde_json::Value {
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// The statuses of `reqs`, sent one after another.
pub async fn statuses(app: &Router, reqs: impl Iterator<Item = Request<Body>>) -> Vec<u16> {
    let mut out = Vec::new();
    for req in reqs {
        out.push(send(app, req).await.status().as_u16());
    }
    out
}
