//! The layer in front of a real axum router, driven in process with a manual
//! clock, so that every header value can be asserted exactly: limits,
//! headers, dry run, bodies, stores that fail.

use crate::common;

use axum::body::Body;
use common::*;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use limits::{Algorithm, ManualClock, Rule};
use limits_http::{
    ClientIp, ClientIpHeader, FailurePolicy, LayerOptions, Observer, Outcome, PeerAddr, Policy,
    TrustedProxies,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test]
async fn sliding_log_five_per_second_then_429_with_retry_after() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "5/s", &clock),
    )]));
    let mut remaining = Vec::new();
    for i in 0..20 {
        clock.set(i * 1_000_000); // one request a millisecond
        let r = send(&app, request("/", "192.0.2.1:5000")).await;
        if r.status() == StatusCode::OK {
            assert_eq!(header(&r, "ratelimit-policy"), r#""default";q=5;w=1"#);
            remaining.push(header(&r, "ratelimit").to_string());
        } else {
            assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(header(&r, "retry-after"), "1");
            assert_eq!(header(&r, "content-type"), "application/problem+json");
            assert_eq!(header(&r, "ratelimit"), r#""default";r=0;t=1"#);
            let body = json(r).await;
            assert_eq!(body["status"], 429);
            assert_eq!(body["rule"], "default");
        }
    }
    assert_eq!(
        remaining,
        (0..5)
            .rev()
            .map(|r| format!(r#""default";r={r};t=1"#))
            .collect::<Vec<_>>()
    );
    // The first entry (t = 0) leaves the window at t = 1 s.
    clock.set(999_999_999);
    assert_eq!(
        send(&app, request("/", "192.0.2.1:5000")).await.status(),
        429
    );
    clock.set(1_000_000_000);
    assert_eq!(
        send(&app, request("/", "192.0.2.1:5000")).await.status(),
        200
    );
    // Another client was never limited.
    assert_eq!(
        send(&app, request("/", "192.0.2.2:5000")).await.status(),
        200
    );
}

#[derive(Default)]
struct Counts(Mutex<Vec<(String, Outcome)>>);

impl Observer for Counts {
    fn decided(&self, rule: &str, outcome: Outcome, _: Duration) {
        self.0.lock().unwrap().push((rule.to_string(), outcome));
    }
}

#[tokio::test]
async fn dry_run_never_rejects_but_counts_and_sends_headers() {
    let clock = ManualClock::new(0);
    let counts = Arc::new(Counts::default());
    let mut policy = Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::FixedWindow, "2/m", &clock),
    )]);
    policy.options.dry_run = true;
    policy.observer = counts.clone();
    let app = app(policy);
    for _ in 0..5 {
        let r = send(&app, request("/", "192.0.2.1:1")).await;
        assert_eq!(r.status(), 200);
        assert!(header(&r, "ratelimit").starts_with(r#""default";r="#));
    }
    let outcomes: Vec<Outcome> = counts.0.lock().unwrap().iter().map(|c| c.1).collect();
    use Outcome::*;
    assert_eq!(
        outcomes,
        [Allowed, Allowed, WouldLimit, WouldLimit, WouldLimit]
    );
}

#[tokio::test]
async fn login_is_limited_per_account_and_per_address() {
    let clock = ManualClock::new(0);
    let per_account = store(Algorithm::SlidingLog, "2/m", &clock);
    let per_address = store(Algorithm::SlidingLog, "3/m", &clock);
    let app = app(Policy::new(vec![
        rule("login-account", "/login", "form:username", per_account),
        rule("login-address", "/login", "ip", per_address),
    ]));
    let login = |user: &str, peer: &str| {
        let mut r = Request::post("/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!("username={user}&password=guess")))
            .unwrap();
        r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
        r
    };
    // Two guesses at alice from two addresses: the third, from a third, is denied.
    assert_eq!(
        send(&app, login("alice", "192.0.2.1:1")).await.status(),
        200
    );
    let r = send(&app, login("alice", "192.0.2.2:1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "ratelimit-policy"),
        r#""login-account";q=2;w=60, "login-address";q=3;w=60"#
    );
    // The body still reaches the handler after being read for the key.
    assert_eq!(
        r.into_body().collect().await.unwrap().to_bytes(),
        "username=alice&password=guess"
    );
    let r = send(&app, login("alice", "192.0.2.3:1")).await;
    assert_eq!(r.status(), 429);
    assert_eq!(json(r).await["rule"], "login-account");
    // One address spraying accounts is stopped by the address rule.
    for user in ["bob", "carol"] {
        assert_eq!(send(&app, login(user, "192.0.2.9:1")).await.status(), 200);
    }
    assert_eq!(send(&app, login("dave", "192.0.2.9:1")).await.status(), 200);
    let r = send(&app, login("erin", "192.0.2.9:1")).await;
    assert_eq!(json(r).await["rule"], "login-address");
}

#[tokio::test]
async fn oversized_body_on_a_body_keyed_route_is_413() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "login",
        "/login",
        "form:username",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]));
    let mut r = Request::post("/login")
        .body(Body::from(vec![b'a'; 100_000]))
        .unwrap();
    r.extensions_mut()
        .insert(PeerAddr("192.0.2.1:1".parse().unwrap()));
    let r = send(&app, r).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json(r).await["status"], 413);
}

#[tokio::test]
async fn forwarded_for_counts_only_from_trusted_proxies() {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]);
    policy.options.client_ip = ClientIp::new(
        TrustedProxies::parse(&["10.0.0.0/8"]).unwrap(),
        ClientIpHeader::XForwardedFor,
        64,
    )
    .unwrap();
    let app = app(policy);
    let spoofed = |xff: &str, peer: &str| {
        let mut r = request("/", peer);
        r.headers_mut()
            .insert("x-forwarded-for", xff.parse().unwrap());
        r
    };
    // An untrusted peer's X-Forwarded-For is ignored: still one key.
    assert_eq!(
        send(&app, spoofed("1.1.1.1", "192.0.2.1:1")).await.status(),
        200
    );
    assert_eq!(
        send(&app, spoofed("2.2.2.2", "192.0.2.1:1")).await.status(),
        429
    );
    // Through the trusted proxy, each forwarded client has its own key.
    assert_eq!(
        send(&app, spoofed("203.0.113.1", "10.0.0.1:1"))
            .await
            .status(),
        200
    );
    assert_eq!(
        send(&app, spoofed("203.0.113.2", "10.0.0.1:1"))
            .await
            .status(),
        200
    );
    assert_eq!(
        send(&app, spoofed("203.0.113.1", "10.0.0.1:1"))
            .await
            .status(),
        429
    );
}

#[tokio::test(start_paused = true)]
async fn leaky_bucket_holds_an_admitted_request_for_its_delay() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "smooth",
        "/",
        "ip",
        store(Algorithm::LeakyBucket, "10/s", &clock),
    )]));
    // A burst at one instant of the limiter's clock: each request waits its
    // turn in the queue, 0, 100 and 200 ms (time is paused: exact).
    for i in 0..3u64 {
        let started = tokio::time::Instant::now();
        let r = send(&app, request("/", "192.0.2.1:1")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(started.elapsed(), Duration::from_millis(100 * i));
    }
}

#[tokio::test]
async fn a_store_outage_gets_the_configured_policy() {
    let down = || {
        Arc::new(Down(Rule::new(
            Algorithm::SlidingLog,
            "1/s".parse().unwrap(),
        )))
    };
    let allow = app(Policy::new(vec![rule("default", "/", "ip", down())]));
    assert_eq!(
        send(&allow, request("/", "192.0.2.1:1")).await.status(),
        200
    );
    let mut policy = Policy::new(vec![rule("default", "/", "ip", down())]);
    policy.options = LayerOptions {
        on_store_error: FailurePolicy::Deny,
        ..LayerOptions::default()
    };
    let deny = app(policy);
    let r = send(&deny, request("/", "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&r, "retry-after"), "1");
}

#[tokio::test]
async fn unmatched_routes_pass_untouched() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "login",
        "/login",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]));
    for _ in 0..3 {
        let r = send(&app, request("/", "192.0.2.1:1")).await;
        assert_eq!(r.status(), 200);
        assert!(r.headers().get("ratelimit").is_none());
    }
}
