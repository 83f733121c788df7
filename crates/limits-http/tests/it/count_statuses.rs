//! A rule that counts only some responses (`HttpRule::count`, issue 27
//! part 1): every request is counted on arrival; one whose response head
//! has a status the rule does not count is refunded then. A login rule
//! counting 401s limits failed logins, not successful ones; our own 429
//! for a later rule refunds what the earlier rules do not count by it; a
//! request whose response never comes (the client went away) stays
//! counted.

use crate::common::{Memory, request, rule, send, store};
use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use http::{Request, StatusCode};
use limits::{Algorithm, ManualClock};
use limits_http::{Counts, PeerAddr, Policy, RateLimitLayer};
use std::future::Future;
use std::net::SocketAddr;
use std::task::{Context, Waker};
use tower::ServiceExt;

fn failed_logins() -> Counts {
    Counts {
        status: vec![401, 403],
        unless_status: vec![],
    }
}

/// A login page: 401 for a wrong password, 200 otherwise; and a page that
/// never answers.
fn app(policy: Policy<Memory>) -> Router {
    let login = |body: String| async move {
        if body.contains("password=wrong") {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::OK
        }
    };
    Router::new()
        .route("/login", post(login))
        .route("/hang", get(std::future::pending::<()>))
        .layer(RateLimitLayer::new(policy))
}

fn login(password: &str) -> Request<Body> {
    let mut r = Request::post("/login")
        .body(Body::from(format!("username=alice&password={password}")))
        .unwrap();
    let peer: SocketAddr = "192.0.2.1:1".parse().unwrap();
    r.extensions_mut().insert(PeerAddr(peer));
    r
}

#[tokio::test]
async fn a_login_rule_counting_401_limits_failed_logins_only() {
    let clock = ManualClock::new(0);
    let attempts = store(Algorithm::SlidingLog, "3/m", &clock);
    let login_rule = rule("login", "/login", "ip", attempts.clone()).count(failed_logins());
    let app = app(Policy::new(vec![login_rule]));
    for n in 0..10 {
        assert_eq!(send(&app, login("right")).await.status(), 200, "#{n}");
    }
    assert_eq!(attempts.peek("ip=192.0.2.1", 1).remaining, 3);
    for n in 0..3 {
        assert_eq!(send(&app, login("wrong")).await.status(), 401, "#{n}");
    }
    assert_eq!(send(&app, login("right")).await.status(), 429);
    assert_eq!(send(&app, login("wrong")).await.status(), 429);
}

#[tokio::test]
async fn our_429_for_a_later_rule_refunds_an_earlier_rule_that_counts_only_401() {
    let clock = ManualClock::new(0);
    let failures = store(Algorithm::FixedWindow, "5/m", &clock);
    let everything = store(Algorithm::FixedWindow, "1/m", &clock);
    let app = app(Policy::new(vec![
        rule("failures", "/login", "ip", failures.clone()).count(failed_logins()),
        rule("everything", "/login", "ip", everything),
    ]));
    assert_eq!(send(&app, login("right")).await.status(), 200);
    assert_eq!(send(&app, login("wrong")).await.status(), 429);
    assert_eq!(failures.peek("ip=192.0.2.1", 1).remaining, 5);
}

#[tokio::test]
async fn unless_status_counts_everything_but_the_statuses_named() {
    let clock = ManualClock::new(0);
    let attempts = store(Algorithm::TokenBucket, "2/m", &clock);
    let counts = Counts {
        status: vec![],
        unless_status: vec![200],
    };
    let app = app(Policy::new(vec![
        rule("login", "/login", "ip", attempts.clone()).count(counts),
    ]));
    for _ in 0..5 {
        assert_eq!(send(&app, login("right")).await.status(), 200);
    }
    assert_eq!(send(&app, login("wrong")).await.status(), 401);
    assert_eq!(attempts.peek("ip=192.0.2.1", 1).remaining, 1);
}

#[tokio::test]
async fn a_request_whose_response_never_comes_stays_counted() {
    let clock = ManualClock::new(0);
    let hangs = store(Algorithm::SlidingLog, "3/m", &clock);
    let counts = Counts {
        status: vec![500],
        unless_status: vec![],
    };
    let app = app(Policy::new(vec![
        rule("hang", "/hang", "ip", hangs.clone()).count(counts),
    ]));
    // Polled once (decided, the inner service waiting), then dropped: the
    // client went away before any response head.
    {
        let mut future = std::pin::pin!(app.clone().oneshot(request("/hang", "192.0.2.1:1")));
        let polled = future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(polled.is_pending());
    }
    assert_eq!(hangs.peek("ip=192.0.2.1", 1).remaining, 2);
}

#[test]
fn an_every_response_rule_is_the_default() {
    let clock = ManualClock::new(0);
    let r = rule(
        "all",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "3/m", &clock),
    );
    assert!(r.count.is_every_response());
}
