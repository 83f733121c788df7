//! A request meets the rules of the route its upstream serves it from
//! (issue 22, points 5 to 7): a backslash in the path and a standard method
//! in another case are refused, HEAD counts under GET, and a rule can match
//! without regard to case and with format suffixes.

use crate::common;

use axum::Router;
use axum::body::Body;
use common::*;
use http::{Method, Request, Response, StatusCode};
use limits::{Algorithm, ManualClock, Store};
use limits_http::{HttpRule, PathMatch, PeerAddr, Policy, RateLimitLayer};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The layer around a service that counts what reaches it.
fn counted<S: Store>(policy: Policy<S>) -> (Router, Arc<AtomicUsize>) {
    let reached = Arc::new(AtomicUsize::new(0));
    let count = reached.clone();
    let inner = tower::service_fn(move |_: Request<Body>| {
        count.fetch_add(1, Ordering::Relaxed);
        async { Ok::<_, std::convert::Infallible>(Response::new(Body::from("ok"))) }
    });
    let app =
        Router::new().fallback_service(tower::Layer::layer(&RateLimitLayer::new(policy), inner));
    (app, reached)
}

fn sent(method: &str, uri: &str) -> Request<Body> {
    let mut r = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).unwrap())
        .uri(uri)
        .body(Body::empty())
        .unwrap();
    r.extensions_mut()
        .insert(PeerAddr("192.0.2.1:1".parse().unwrap()));
    r
}

fn login_rule(methods: &[Method], path_match: PathMatch) -> HttpRule<Memory> {
    HttpRule {
        methods: methods.to_vec(),
        path_match,
        ..rule(
            "login",
            "/login",
            "ip",
            store(Algorithm::SlidingLog, "3/m", &ManualClock::new(0)),
        )
    }
}

#[tokio::test]
async fn a_raw_backslash_in_the_path_is_400_like_an_encoded_one() {
    // Regression: `/x\..\login` reached the upstream unlimited, and WHATWG
    // URL parsers (Node, Bun, Deno) and IIS read it as /login.
    let (app, reached) = counted(Policy::new(vec![login_rule(&[], PathMatch::default())]));
    for path in ["/x\\..\\login", "/x%5C..%5Clogin", "\\login", "/login\\"] {
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        let r = send(&app, sent("POST", &path)).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(header(&r, "content-type"), "application/problem+json");
        assert!(
            json(r).await["detail"]
                .as_str()
                .unwrap()
                .contains("backslash")
        );
    }
    assert_eq!(reached.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_lowercase_post_is_400_and_head_counts_under_a_get_rule() {
    // Regression: `post` skipped a methods = ["POST"] rule (8 of 8 passed)
    // and HEAD a methods = ["GET"] rule (7 of 7).
    let (app, reached) = counted(Policy::new(vec![login_rule(
        &[Method::POST],
        PathMatch::default(),
    )]));
    for method in ["post", "Post", "pOsT"] {
        let r = send(&app, sent(method, "/login")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{method}");
        let detail = json(r).await["detail"].as_str().unwrap().to_string();
        assert!(
            detail.contains("POST") && detail.contains(method),
            "{detail}"
        );
    }
    assert_eq!(reached.load(Ordering::Relaxed), 0);
    // Lowercase spellings are refused wherever they go, matched or not.
    let r = send(&app, sent("get", "/elsewhere")).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // An extension method in any case is no standard method's spelling.
    let r = send(&app, sent("purge", "/elsewhere")).await;
    assert_eq!(r.status(), StatusCode::OK);

    let (app, _) = counted(Policy::new(vec![login_rule(
        &[Method::GET],
        PathMatch::default(),
    )]));
    let mut statuses = Vec::new();
    for method in ["GET", "HEAD", "HEAD", "HEAD", "GET"] {
        statuses.push(send(&app, sent(method, "/login")).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    // A rule that names HEAD alone is not a GET rule.
    let (app, _) = counted(Policy::new(vec![login_rule(
        &[Method::HEAD],
        PathMatch::default(),
    )]));
    let mut statuses = Vec::new();
    for method in ["GET", "GET", "GET", "GET", "HEAD"] {
        statuses.push(send(&app, sent(method, "/login")).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200]);
}

#[tokio::test]
async fn case_and_format_suffixes_are_covered_by_a_rule_that_asks() {
    // Regression: Express and ASP.NET Core route /LOGIN to /login, and
    // Rails /login.json: both passed a /login rule.
    let spellings = [
        "/login",
        "/LOGIN",
        "/Login.json",
        "/login.xml",
        "/LOGIN.JSON",
        "/LoGiN/",
    ];
    let wide = PathMatch {
        case_insensitive: true,
        format_suffixes: true,
    };
    let (app, _) = counted(Policy::new(vec![login_rule(&[], wide)]));
    let mut statuses = Vec::new();
    for path in spellings {
        statuses.push(send(&app, sent("POST", path)).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429]);
    // Other routes stay apart.
    for path in ["/logins", "/loginx.json", "/api/login"] {
        let r = send(&app, sent("POST", path)).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(header(&r, "ratelimit"), "", "{path} met the login rule");
    }
    // Each alone covers its own spellings only.
    let cases = PathMatch {
        case_insensitive: true,
        format_suffixes: false,
    };
    let (app, _) = counted(Policy::new(vec![login_rule(&[], cases)]));
    let matched = |r: &Response<Body>| !header(r, "ratelimit").is_empty();
    assert!(matched(&send(&app, sent("POST", "/LOGIN")).await));
    assert!(!matched(&send(&app, sent("POST", "/login.json")).await));
    let suffixes = PathMatch {
        case_insensitive: false,
        format_suffixes: true,
    };
    let (app, _) = counted(Policy::new(vec![login_rule(&[], suffixes)]));
    assert!(matched(&send(&app, sent("POST", "/login.json")).await));
    assert!(!matched(&send(&app, sent("POST", "/LOGIN")).await));
    // The default is neither, byte for byte.
    let (app, _) = counted(Policy::new(vec![login_rule(&[], PathMatch::default())]));
    assert!(!matched(&send(&app, sent("POST", "/LOGIN")).await));
    assert!(!matched(&send(&app, sent("POST", "/login.json")).await));
    assert!(matched(&send(&app, sent("POST", "/login/")).await));
}

#[tokio::test]
async fn a_post_that_overrides_its_method_meets_the_rules_of_that_method() {
    // Rails, Laravel, Symfony and Express's method-override run the DELETE
    // handler for a POST that names DELETE in a header or `_method`.
    let (app, _) = counted(Policy::new(vec![login_rule(
        &[Method::DELETE],
        PathMatch::default(),
    )]));
    let overriding = |n: usize| {
        let mut r = match n % 3 {
            0 => sent("POST", "/login?_method=delete"),
            1 => sent("POST", "/login"),
            _ => sent("DELETE", "/login"),
        };
        if n % 3 == 1 {
            r.headers_mut()
                .insert("x-http-method-override", "DELETE".parse().unwrap());
        }
        r
    };
    let mut statuses = Vec::new();
    for n in 0..5 {
        statuses.push(send(&app, overriding(n)).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    // A plain POST is no DELETE.
    let r = send(&app, sent("POST", "/login")).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header(&r, "ratelimit"), "");
}
