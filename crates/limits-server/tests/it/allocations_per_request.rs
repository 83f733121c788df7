//! Allocations per request on the allow and the deny path, counted (not
//! timed): the server's layer with its metrics, one rule keyed by the client
//! address, in front of a handler with a static body, served as the server
//! serves it: one service per connection that knows the client's address,
//! and requests as hyper hands them over (no extensions). A counting global
//! allocator sees every allocation made while the requests are served; the
//! bounds are what the optimisations of BENCHMARKS.md ("HTTP: limits serve
//! vs nginx") reached, so that a new allocation on either path is noticed.
//!
//! The count is per thread, and each test serves its requests on its own
//! thread (a current-thread runtime), so the tests can run side by side.

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt;
use limits::{Algorithm, Rule};
use limits_http::KeySpec;
use limits_server::{RulesSource, Server, ServerConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tower::ServiceExt;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Counts one allocation on this thread (not during its teardown).
fn count() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

/// Allocations on this thread so far.
fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The most allocations (and reallocations) one allowed request may cost in
/// the layer, its metrics and axum's routing. (11 when the server inserted
/// a `PeerAddr` extension into each request, outside the count: its 3
/// allocations are gone, but axum's routing now creates the extension map
/// for its URL parameters, 2 more in the count: 14 before, 13 then; 12
/// since the key is written inline instead of into a `String`; 11 since the
/// layer decides in `call` and returns a named future instead of a boxed
/// one; 10 since a RateLimit value whose numbers repeat is the one made
/// last.)
const MOST_PER_REQUEST: u64 = 10;

const REQUESTS: u64 = 1000;

/// The most allocations one denied request may cost: the layer's 429 with
/// its headers and problem body, and its metrics (11 with a `PeerAddr`
/// extension per request, 8 with the key in a `String`, 7 with the layer's
/// boxed future, 6 before the values whose numbers repeat were the ones
/// made last: the RateLimit and Retry-After values and the body, which
/// took two). Left: the response's header map (the request here has none
/// to lend it).
const MOST_PER_DENIAL: u64 = 2;

/// The layer of a one-rule server (a token bucket of `rate`, keyed by the
/// client address) around a router, as the server serves one client's
/// connection, and a request on it.
fn app(
    rate: &str,
) -> (
    impl tower::Service<
            http::Request<Body>,
            Response = http::Response<impl http_body::Body<Error = impl std::fmt::Debug>>,
            Error = std::convert::Infallible,
            Future = impl Send,
        > + Clone,
    impl Fn() -> http::Request<Body>,
) {
    let rule = Rule::new(Algorithm::TokenBucket, rate.parse().unwrap());
    let config = ServerConfig::new(RulesSource::One {
        rule,
        key: KeySpec::ip(),
        cost: 1,
    });
    let server = Server::new(config).unwrap();
    let routes = Router::new().route("/", axum::routing::get(|| async { "hello\n" }));
    let peer = "192.0.2.7:4321".parse().unwrap();
    let app = tower::Layer::layer(server.layer(), routes).with_peer(peer);
    let request = || http::Request::get("/").body(Body::empty()).unwrap();
    (app, request)
}

/// Serves `REQUESTS` requests through `app`, each checked by `check`
/// (status, headers, body); the allocations made while serving them, per
/// request (rounded up).
async fn allocations_per_request<S, B>(
    app: &S,
    request: &impl Fn() -> http::Request<Body>,
    check: impl Fn(http::StatusCode, &http::HeaderMap, bytes::Bytes),
) -> u64
where
    S: tower::Service<http::Request<Body>, Response = http::Response<B>> + Clone,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    let mut counted = 0;
    for _ in 0..REQUESTS {
        let req = request();
        let before = allocations();
        let response = app.clone().oneshot(req).await.unwrap();
        counted += allocations() - before;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        check(parts.status, &parts.headers, body);
    }
    counted.div_ceil(REQUESTS)
}

#[tokio::test(flavor = "current_thread")]
async fn a_denied_request_allocates_at_most_the_figure_reached() {
    let (app, request) = app("1/h");
    let first = app.clone().oneshot(request()).await.unwrap();
    assert_eq!(first.status(), 200);
    // The first denials create the denied series of the metrics.
    for _ in 0..100 {
        let response = app.clone().oneshot(request()).await.unwrap();
        assert_eq!(response.status(), 429);
    }

    let per_request = allocations_per_request(&app, &request, |status, headers, body| {
        assert_eq!(status, 429);
        let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((3599..=3600).contains(&retry), "retry-after {retry}");
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["status"], 429);
        assert_eq!(problem["rule"], "default");
        assert_eq!(problem["retry_after"], retry);
    })
    .await;
    eprintln!("allocations per denied request: {per_request}");
    assert!(
        per_request <= MOST_PER_DENIAL,
        "{per_request} allocations per denied request, more than the {MOST_PER_DENIAL} reached"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_allowed_request_allocates_at_most_the_figure_reached() {
    let (app, request) = app("1000000000/s");
    // The first requests create the key, the metrics' series and the like.
    for _ in 0..100 {
        let response = app.clone().oneshot(request()).await.unwrap();
        assert_eq!(response.status(), 200);
    }

    let per_request = allocations_per_request(&app, &request, |status, headers, body| {
        assert_eq!(status, 200);
        assert_eq!(headers["ratelimit-policy"], "\"default\";q=1000000000;w=1");
        assert_eq!(&body[..], b"hello\n");
    })
    .await;
    eprintln!("allocations per allowed request: {per_request}");
    assert!(
        per_request <= MOST_PER_REQUEST,
        "{per_request} allocations per allowed request, more than the {MOST_PER_REQUEST} reached"
    );
}
