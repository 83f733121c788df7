//! Allocations per request on the allow path, counted (not timed): the
//! server's layer with its metrics, one rule keyed by the client address,
//! in front of a handler with a static body. A counting global allocator
//! sees every allocation made while the requests are served; the bound is
//! what the optimisations of BENCHMARKS.md ("HTTP: limits serve vs nginx")
//! reached, so that a new allocation on this path is noticed.
//!
//! One test in this file: the counter is process-wide.

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt;
use limits::{Algorithm, Rule};
use limits_http::{KeySpec, PeerAddr};
use limits_server::{RulesSource, Server, ServerConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use tower::ServiceExt;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The most allocations (and reallocations) one allowed request may cost in
/// the layer, its metrics and axum's routing.
const MOST_PER_REQUEST: u64 = 11;

const REQUESTS: u64 = 1000;

#[tokio::test(flavor = "current_thread")]
async fn an_allowed_request_allocates_at_most_the_figure_reached() {
    let rule = Rule::new(Algorithm::TokenBucket, "1000000000/s".parse().unwrap());
    let config = ServerConfig::new(RulesSource::One {
        rule,
        key: KeySpec::ip(),
        cost: 1,
    });
    let server = Server::new(config).unwrap();
    let routes = Router::new().route("/", axum::routing::get(|| async { "hello\n" }));
    // As the server serves it: the layer around the router.
    let app = tower::Layer::layer(server.layer(), routes);
    let peer = PeerAddr("192.0.2.7:4321".parse().unwrap());
    let request = || {
        let mut req = http::Request::get("/").body(Body::empty()).unwrap();
        req.extensions_mut().insert(peer);
        req
    };
    // The first requests create the key, the metrics' series and the like.
    for _ in 0..100 {
        let response = app.clone().oneshot(request()).await.unwrap();
        assert_eq!(response.status(), 200);
    }

    let mut counted = 0;
    for _ in 0..REQUESTS {
        let req = request();
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let response = app.clone().oneshot(req).await.unwrap();
        counted += ALLOCATIONS.load(Ordering::Relaxed) - before;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["ratelimit-policy"],
            "\"default\";q=1000000000;w=1"
        );
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"hello\n");
    }
    let per_request = counted.div_ceil(REQUESTS);
    eprintln!("allocations per allowed request: {per_request} ({counted} in {REQUESTS})");
    assert!(
        per_request <= MOST_PER_REQUEST,
        "{per_request} allocations per allowed request, more than the {MOST_PER_REQUEST} reached"
    );
}
