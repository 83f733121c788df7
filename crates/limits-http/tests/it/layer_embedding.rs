//! The layer as an embedder uses it: keys only the application knows, the
//! builder, closure observers.

use crate::common;

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use common::*;
use http::{Request, StatusCode};
use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreError, Verdict};
use limits_http::{
    ClientIp, ClientIpHeader, HttpRule, Key, KeyError, KeyErrorReason, KeyExtractor, KeySpec,
    Outcome, Policy, RateLimitLayer, TrustedProxies,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// Issue 8: keys only the application knows, the builder, closure observers.

/// The tenant named by `X-Tenant`, if it is one we know.
struct Tenant;

impl KeyExtractor for Tenant {
    fn key(
        &self,
        parts: &http::request::Parts,
        _: Option<std::net::IpAddr>,
        _: Option<&[u8]>,
    ) -> Result<Key, KeyError> {
        let error = |reason| KeyError {
            field: "header:x-tenant".into(),
            reason,
        };
        let tenant = parts.headers.get("x-tenant");
        let tenant = tenant.ok_or(error(KeyErrorReason::Missing))?;
        let tenant = tenant.to_str().unwrap_or_default();
        if tenant.starts_with("evil") {
            let why = "no such tenant".to_string();
            return Err(error(KeyErrorReason::Invalid(why)));
        }
        Ok(Key::custom("tenant", tenant))
    }
}

/// A store that remembers every key it was asked about.
struct Recording(Memory, Mutex<Vec<String>>);

impl Store for Recording {
    fn rule(&self) -> &Rule {
        self.0.rule()
    }
    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        self.1.lock().unwrap().push(key.to_string());
        Store::decide(&self.0, key, cost, mode).await
    }
}

fn layered<S: Store, K: KeyExtractor>(layer: RateLimitLayer<S, K>) -> Router {
    Router::new()
        .route("/a", get(|| async { "a" }))
        .route("/b", get(|| async { "b" }))
        .layer(layer)
}

fn tenant_request(path: &str, tenant: &str, peer: &str) -> Request<Body> {
    let mut r = request(path, peer);
    r.headers_mut().insert("x-tenant", tenant.parse().unwrap());
    r
}

#[tokio::test]
async fn a_custom_extractors_keys_never_meet_the_built_in_ones() {
    let clock = ManualClock::new(0);
    let limiter = KeyedLimiter::with_clock(
        Rule::new(Algorithm::FixedWindow, "1/m".parse().unwrap()),
        clock.clone(),
    );
    // One store shared by a rule keyed on the address and one keyed on the
    // tenant, each extractor behind `dyn`.
    let shared = Arc::new(Recording(limiter, Mutex::new(Vec::new())));
    let rule = |name: &str, path: &str, key: Arc<dyn KeyExtractor>| HttpRule {
        name: name.into(),
        path_prefix: path.into(),
        path_match: Default::default(),
        methods: vec![],
        key,
        distinct: None,
        cost: 1,
        count: Default::default(),
        cost_from: None,
        store: shared.clone(),
        lists: Default::default(),
        tier: None,
        in_flight: false,
    };
    let a = rule("by-ip", "/a", Arc::new(KeySpec::ip()));
    let b = rule("by-tenant", "/b", Arc::new(Tenant));
    let app = layered(RateLimitLayer::new(Policy::new(vec![a, b])));

    assert_eq!(send(&app, request("/a", "192.0.2.1:1")).await.status(), 200);
    assert_eq!(send(&app, request("/a", "192.0.2.1:1")).await.status(), 429);
    // Tenants spelling the address's key, or an escape of it, are tenants:
    // they neither spend nor meet its budget.
    for forged in ["ip=192.0.2.1", "ip=192.0.2.2", r"x|ip=192.0.2.2"] {
        let r = send(&app, tenant_request("/b", forged, "192.0.2.9:1")).await;
        assert_eq!(r.status(), 200, "{forged}");
    }
    assert_eq!(send(&app, request("/a", "192.0.2.2:1")).await.status(), 200);
    assert_eq!(
        *shared.1.lock().unwrap(),
        [
            "ip=192.0.2.1",
            "ip=192.0.2.1",
            "custom:tenant=ip=192.0.2.1",
            "custom:tenant=ip=192.0.2.2",
            r"custom:tenant=x\|ip=192.0.2.2",
            "ip=192.0.2.2",
        ]
    );
    // A tenant the extractor refuses is a 400 naming the rule and field.
    let r = send(&app, tenant_request("/b", "evil-corp", "192.0.2.9:1")).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body = json(r).await;
    assert_eq!(body["rule"], "by-tenant");
    assert_eq!(body["field"], "header:x-tenant");
    assert!(body["detail"].as_str().unwrap().contains("no such tenant"));
}

#[tokio::test]
async fn the_builder_sets_rules_options_and_a_closure_observer() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    let proxy = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
    let layer = RateLimitLayer::builder()
        .rule(rule(
            "a",
            "/a",
            "ip",
            store(Algorithm::FixedWindow, "1/m", &clock),
        ))
        .rules([rule(
            "b",
            "/b",
            "ip",
            store(Algorithm::FixedWindow, "1/m", &clock),
        )])
        .dry_run(true)
        .legacy_headers(true)
        .client_ip(ClientIp::new(proxy, ClientIpHeader::XForwardedFor, 64).unwrap())
        .observer(move |rule: &str, outcome: Outcome, _: Duration| {
            log.lock().unwrap().push((rule.to_string(), outcome));
        })
        .build();
    let app = layered(layer);
    let forwarded = |path: &str| {
        let mut r = request(path, "10.0.0.1:1");
        r.headers_mut()
            .insert("x-forwarded-for", "192.0.2.7".parse().unwrap());
        r
    };
    for path in ["/a", "/a", "/b"] {
        let r = send(&app, forwarded(path)).await;
        // Dry run: never a 429; legacy headers too.
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-ratelimit-limit"), "1");
    }
    // The forwarded client, not the proxy, was the key: another client
    // behind the same proxy is allowed by rule a.
    let mut other = request("/a", "10.0.0.1:1");
    other
        .headers_mut()
        .insert("x-forwarded-for", "192.0.2.8".parse().unwrap());
    assert_eq!(send(&app, other).await.status(), 200);
    use Outcome::{Allowed, WouldLimit};
    let expected = [
        ("a", Allowed),
        ("a", WouldLimit),
        ("b", Allowed),
        ("a", Allowed),
    ];
    let heard: Vec<_> = heard.lock().unwrap().clone();
    let heard: Vec<_> = heard.iter().map(|(r, o)| (r.as_str(), *o)).collect();
    assert_eq!(heard, expected);
}

#[tokio::test]
async fn a_closure_or_unit_observer_fits_a_policy() {
    let clock = ManualClock::new(0);
    let limited = Arc::new(Mutex::new(0));
    let count = limited.clone();
    let mut policy = Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]);
    policy.observer = Arc::new(move |_: &str, outcome: Outcome, _: Duration| {
        if outcome == Outcome::Limited {
            *count.lock().unwrap() += 1;
        }
    });
    let app = app(policy);
    let seen = statuses(&app, (0..5).map(|_| request("/", "192.0.2.1:1"))).await;
    assert_eq!(seen, [200, 200, 429, 429, 429]);
    assert_eq!(*limited.lock().unwrap(), 3);

    let built = RateLimitLayer::builder()
        .rule(rule(
            "default",
            "/",
            "ip",
            store(Algorithm::SlidingLog, "1/m", &clock),
        ))
        .observer(())
        .build();
    let app = layered(built);
    let seen = statuses(&app, (0..2).map(|_| request("/a", "192.0.2.1:1"))).await;
    assert_eq!(seen, [200, 429]);
}
