//! The layer hands out a RateLimit value, a Retry-After and a 429 body made
//! earlier while their numbers repeat: each response still carries its own
//! rule's name and numbers, across two layers on one thread, across a
//! reload that renames a rule, and as the numbers change.

use crate::common;

use axum::Router;
use common::{app, header, request, rule, send, store};
use http_body_util::BodyExt;
use limits::{Algorithm, ManualClock};
use limits_http::{Policy, RateLimitLayer};

/// RateLimit, Retry-After and the body of a `GET /` from `peer`.
async fn get(app: &Router, peer: &str) -> (u16, String, String, String) {
    let r = send(app, request("/", peer)).await;
    let status = r.status().as_u16();
    let ratelimit = header(&r, "ratelimit").to_string();
    let retry = header(&r, "retry-after").to_string();
    let body = r.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        ratelimit,
        retry,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[tokio::test(flavor = "current_thread")]
async fn two_layers_with_the_same_numbers_keep_their_names() {
    let clock = ManualClock::new(0);
    let a = app(Policy::new(vec![rule(
        "a",
        "/",
        "ip",
        store(Algorithm::TokenBucket, "3/m", &clock),
    )]));
    let b = app(Policy::new(vec![rule(
        "b",
        "/",
        "ip",
        store(Algorithm::TokenBucket, "3/m", &clock),
    )]));
    for remaining in (0..3).rev() {
        for (app, name) in [(&a, "a"), (&b, "b")] {
            let (status, ratelimit, _, _) = get(app, "192.0.2.1:1").await;
            assert_eq!(status, 200);
            assert_eq!(ratelimit, format!(r#""{name}";r={remaining};t=20"#));
        }
    }
    for _ in 0..3 {
        for (app, name) in [(&a, "a"), (&b, "b")] {
            let (status, ratelimit, retry, body) = get(app, "192.0.2.1:1").await;
            assert_eq!(status, 429);
            assert_eq!(ratelimit, format!(r#""{name}";r=0;t=20"#));
            assert_eq!(retry, "20");
            assert!(body.contains(&format!(r#""rule":"{name}""#)), "{body}");
            assert!(body.ends_with(r#""retry_after":20}"#), "{body}");
        }
    }
    // Time passes: the numbers change, and so do the values.
    clock.advance(std::time::Duration::from_millis(500));
    let (_, ratelimit, retry, body) = get(&a, "192.0.2.1:1").await;
    assert_eq!(
        (ratelimit.as_str(), retry.as_str()),
        (r#""a";r=0;t=20"#, "20")
    );
    assert!(body.ends_with(r#""retry_after":20}"#), "{body}");
    clock.advance(std::time::Duration::from_millis(1000));
    let (_, ratelimit, retry, body) = get(&a, "192.0.2.1:1").await;
    assert_eq!(
        (ratelimit.as_str(), retry.as_str()),
        (r#""a";r=0;t=19"#, "19")
    );
    assert!(body.ends_with(r#""retry_after":19}"#), "{body}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_reload_that_renames_a_rule_renames_its_values() {
    let clock = ManualClock::new(0);
    let layer = RateLimitLayer::new(Policy::new(vec![rule(
        "before",
        "/",
        "ip",
        store(Algorithm::TokenBucket, "100/s", &clock),
    )]));
    let app = Router::new()
        .route("/", axum::routing::get(|| async { "hello" }))
        .layer(layer.clone());
    let (_, ratelimit, _, _) = get(&app, "192.0.2.1:1").await;
    assert_eq!(ratelimit, r#""before";r=99;t=1"#);
    // The same numbers from a rule of another name, on the same thread.
    layer.handle().replace(Policy::new(vec![rule(
        "after",
        "/",
        "ip",
        store(Algorithm::TokenBucket, "100/s", &clock),
    )]));
    let (_, ratelimit, _, _) = get(&app, "192.0.2.1:1").await;
    assert_eq!(ratelimit, r#""after";r=99;t=1"#);
}
