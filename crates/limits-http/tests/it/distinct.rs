//! A rule of distinct values (`HttpRule::distinct`): each request decided
//! with its value, a repeat free, a new value past the limit refused with
//! a 429 that says so, a request without its value refused (400), and the
//! value read where the upstream reads it (the form, the normalized path).

use crate::common::{header, json, request, send};
use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use http::Request;
use limits::{Distinct, DistinctLimiter, ManualClock};
use limits_http::{HttpRule, KeySpec, PeerAddr, Policy, RateLimitLayer};
use std::sync::Arc;
use std::time::Duration;

type Values = DistinctLimiter<String, ManualClock>;

fn at_most(n: u64, window: Duration, clock: &ManualClock) -> Values {
    DistinctLimiter::with_clock(Distinct::new(n, window).unwrap(), clock.clone())
}

const HOUR: Duration = Duration::from_secs(3600);

/// Two usernames per client address an hour on `POST /login`.
fn logins(clock: &ManualClock) -> Router {
    let of: KeySpec = "form:username".parse().unwrap();
    let rule = HttpRule::new("login.usernames", at_most(2, HOUR, clock), KeySpec::ip())
        .path("/login")
        .distinct(of);
    Router::new()
        .route("/login", post(|| async { "ok" }))
        .layer(RateLimitLayer::new(Policy::new(vec![rule])))
}

fn login(body: &str, peer: &str) -> Request<Body> {
    let mut r = Request::post("/login")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body.to_string()))
        .unwrap();
    r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
    r
}

#[tokio::test]
async fn a_new_username_past_the_limit_is_refused_and_a_repeat_is_free() {
    let clock = ManualClock::new(0);
    let app = logins(&clock);
    let from = "203.0.113.7:1";
    let first = send(&app, login("username=alice&password=1", from)).await;
    assert_eq!(first.status(), 200);
    assert_eq!(
        header(&first, "ratelimit-policy"),
        "\"login.usernames\";q=2;w=3600"
    );
    assert_eq!(
        header(&first, "ratelimit"),
        "\"login.usernames\";r=1;t=3600"
    );
    assert_eq!(
        send(&app, login("username=bob&password=1", from))
            .await
            .status(),
        200
    );
    for password in 2..10 {
        let again = login(&format!("username=alice&password={password}"), from);
        assert_eq!(send(&app, again).await.status(), 200, "a repeat is free");
    }
    clock.advance(Duration::from_secs(600));
    let refused = send(&app, login("username=carol&password=1", from)).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(
        header(&refused, "retry-after"),
        "3000",
        "until bob leaves the window"
    );
    let body = json(refused).await;
    assert_eq!(body["rule"], "login.usernames");
    assert_eq!(
        body["detail"],
        "rate limit \"login.usernames\" exceeded: at most 2 distinct values in 1h, and this one is new; retry in 3000 s"
    );
    let other = send(&app, login("username=carol&password=1", "198.51.100.1:1")).await;
    assert_eq!(other.status(), 200, "another address has its own values");
    clock.advance(Duration::from_secs(3000));
    let later = send(&app, login("username=carol&password=1", from)).await;
    assert_eq!(
        later.status(),
        200,
        "bob left the window; alice was refreshed"
    );
}

#[tokio::test]
async fn a_username_counts_as_the_upstream_reads_it() {
    let clock = ManualClock::new(0);
    let app = logins(&clock);
    let from = "203.0.113.7:1";
    // Form fields are normalized as accounts are: one username, three spellings.
    for body in ["username=alice", "username=Alice", "username=%20ALICE"] {
        assert_eq!(send(&app, login(body, from)).await.status(), 200, "{body}");
    }
    assert_eq!(send(&app, login("username=bob", from)).await.status(), 200);
    assert_eq!(
        send(&app, login("username=carol", from)).await.status(),
        429
    );
    let twice = send(&app, login("username=alice&username=dave", from)).await;
    assert_eq!(
        twice.status(),
        400,
        "two usernames: upstreams differ on which"
    );
}

#[tokio::test]
async fn a_request_without_its_value_is_refused_naming_the_field() {
    let clock = ManualClock::new(0);
    let app = logins(&clock);
    let refused = send(&app, login("password=1", "203.0.113.7:1")).await;
    assert_eq!(refused.status(), 400);
    let body = json(refused).await;
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("form:username"), "{detail}");
}

#[tokio::test]
async fn distinct_pages_are_counted_by_their_normalized_path() {
    let clock = ManualClock::new(0);
    let of: KeySpec = "path".parse().unwrap();
    let rule = HttpRule::new("pages", at_most(3, HOUR, &clock), KeySpec::ip())
        .path("/p")
        .distinct(of);
    // The layer in front of the router, as the proxy is in front of the
    // upstream: it routes the path the layer forwards.
    let pages = Router::new()
        .route("/p/{id}", get(|| async { "page" }))
        .route("/", get(|| async { "home" }));
    let layered = tower::Layer::layer(&RateLimitLayer::new(Policy::new(vec![rule])), pages);
    let app = Router::new().fallback_service(layered);
    let from = "192.0.2.9:1";
    let pages = [
        "/p/1",
        "/p/2",
        "/p/./1",
        "/p/2?sort=asc",
        "/p/x/../3",
        "/p/1",
    ];
    for page in pages {
        assert_eq!(
            send(&app, request(page, from)).await.status(),
            200,
            "{page}"
        );
    }
    let fourth = send(&app, request("/p/4", from)).await;
    assert_eq!(fourth.status(), 429, "/p/1, /p/2 and /p/3 are the three");
    assert_eq!(
        send(&app, request("/", from)).await.status(),
        200,
        "outside the rule"
    );
    clock.advance(HOUR);
    assert_eq!(send(&app, request("/p/4", from)).await.status(), 200);
}

#[tokio::test]
async fn the_same_limiter_shared_by_two_rules_counts_their_values_together() {
    let clock = ManualClock::new(0);
    let values = Arc::new(at_most(2, HOUR, &clock));
    let of: KeySpec = "query:item".parse().unwrap();
    let rule = |name: &str| {
        let mut rule = HttpRule::new(name, at_most(2, HOUR, &clock), KeySpec::ip())
            .path(format!("/{name}"))
            .distinct(of.clone());
        rule.store = values.clone();
        rule
    };
    let rules = vec![rule("a"), rule("b")];
    let app = Router::new()
        .route("/a", get(|| async { "a" }))
        .route("/b", get(|| async { "b" }))
        .layer(RateLimitLayer::new(Policy::new(rules)));
    let from = "192.0.2.9:1";
    let statuses = [
        ("/a?item=1", 200),
        ("/b?item=2", 200),
        ("/b?item=1", 200),
        ("/a?item=3", 429),
    ];
    for (path, status) in statuses {
        assert_eq!(
            send(&app, request(path, from)).await.status(),
            status,
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_grpc_client_is_told_a_new_value_was_refused() {
    let clock = ManualClock::new(0);
    let of: KeySpec = "header:x-user".parse().unwrap();
    let minute = Duration::from_secs(60);
    let rule = HttpRule::new("g", at_most(1, minute, &clock), KeySpec::ip()).distinct(of);
    let app = Router::new()
        .route("/svc/Call", post(|| async { "ok" }))
        .layer(RateLimitLayer::new(Policy::new(vec![rule])));
    let call = |user: &str| {
        let mut r = Request::post("/svc/Call")
            .header("content-type", "application/grpc")
            .header("x-user", user)
            .body(Body::empty())
            .unwrap();
        r.extensions_mut()
            .insert(PeerAddr("192.0.2.9:1".parse().unwrap()));
        r
    };
    assert_eq!(header(&send(&app, call("ann")).await, "grpc-status"), "");
    let refused = send(&app, call("bob")).await;
    assert_eq!(header(&refused, "grpc-status"), "8");
    assert_eq!(
        header(&refused, "grpc-message"),
        "rate limit \"g\" exceeded: at most 1 distinct values in 1m, and this one is new"
    );
}
