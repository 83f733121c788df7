//! The layer: the path rules match is the path the inner service gets, and
//! bodies read for a key are bounded in time.

use crate::common;

use axum::Router;
use axum::body::Body;
use common::*;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use limits::{Algorithm, ManualClock, Store};
use limits_http::{PeerAddr, Policy, RateLimitLayer};
use std::time::Duration;

/// The layer around a service that answers with the request target it saw,
/// as the reverse proxy would forward it.
fn echo_target<S: Store>(policy: Policy<S>) -> Router {
    let echo = tower::service_fn(|req: Request<Body>| async move {
        Ok::<_, std::convert::Infallible>(Response::new(Body::from(req.uri().to_string())))
    });
    Router::new().fallback_service(tower::Layer::layer(&RateLimitLayer::new(policy), echo))
}

async fn text(r: Response<Body>) -> String {
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn path_spellings_of_login_meet_the_login_rule_and_are_forwarded_normalized() {
    // Regression: /%6cogin, //login, /./login, /x/../login and /login;x all
    // reached an upstream's /login without meeting a 3-per-minute rule.
    let clock = ManualClock::new(0);
    let app = echo_target(Policy::new(vec![rule(
        "login",
        "/login",
        "ip",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let spellings = [
        ("/login", "/login"),
        ("/%6cogin", "/login"),
        ("//login", "/login"),
        ("/./login?next=%2F", "/login?next=%2F"),
        ("/x/../login", "/login"),
        ("/login;x", "/login;x"),
        ("/LOG%49N/../login", "/login"),
    ];
    for (i, (sent, forwarded)) in spellings.iter().enumerate() {
        let r = send(&app, request(sent, "192.0.2.1:1")).await;
        if i < 3 {
            assert_eq!(r.status(), 200, "{sent}");
            assert_eq!(text(r).await, *forwarded, "{sent}");
        } else {
            assert_eq!(r.status(), 429, "{sent} went around the login rule");
        }
    }
}

#[tokio::test]
async fn encoded_slashes_and_paths_above_the_root_are_400_problems() {
    let clock = ManualClock::new(0);
    let app = echo_target(Policy::new(vec![rule(
        "all",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "100/m", &clock),
    )]));
    for (bad, says) in [
        ("/api%2Fitems", "encoded slash"),
        ("/a%5cb", "encoded slash"),
        ("/../etc/passwd", "above the root"),
        ("/a/%2e%2e/%2e%2e/b", "above the root"),
        ("/%zz", "two hex digits"),
    ] {
        let r = send(&app, request(bad, "192.0.2.1:1")).await;
        assert_eq!(r.status(), 400, "{bad}");
        assert_eq!(header(&r, "content-type"), "application/problem+json");
        let body = json(r).await;
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{bad}: {body}"
        );
    }
}

#[tokio::test]
async fn options_asterisk_and_connect_meet_the_catch_all_rule() {
    // Regression: requests without a path matched no rule and passed
    // unlimited, without headers.
    let clock = ManualClock::new(0);
    let app = echo_target(Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]));
    let target = |method: http::Method, uri: &str| {
        let mut r = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        r.extensions_mut()
            .insert(PeerAddr("192.0.2.1:1".parse().unwrap()));
        r
    };
    let r = send(&app, target(http::Method::OPTIONS, "*")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "ratelimit"), r#""default";r=1;t=60"#);
    let r = send(&app, target(http::Method::CONNECT, "example.com:443")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "ratelimit"), r#""default";r=0;t=60"#);
    let r = send(&app, target(http::Method::OPTIONS, "*")).await;
    assert_eq!(r.status(), 429);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_on_a_body_keyed_route_is_408_after_the_body_timeout() {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![rule(
        "login",
        "/login",
        "form:username",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]);
    policy.options.body_timeout = Duration::from_secs(10);
    let app = app(policy);
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let body = Body::new(Trickle(rx));
    tx.send(bytes::Bytes::from_static(b"user")).await.unwrap();
    let mut r = Request::post("/login").body(body).unwrap();
    r.extensions_mut()
        .insert(PeerAddr("192.0.2.1:1".parse().unwrap()));
    let started = tokio::time::Instant::now();
    let r = send(&app, r).await;
    assert_eq!(r.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    drop(tx);
}

/// A request body whose frames arrive when the test sends them.
struct Trickle(tokio::sync::mpsc::Receiver<bytes::Bytes>);

impl http_body::Body for Trickle {
    type Data = bytes::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|frame| frame.map(|b| Ok(http_body::Frame::data(b))))
    }
}
