//! gRPC clients get gRPC answers (issue 27 §6): a real tonic client through
//! the layer over HTTP/2 sees RESOURCE_EXHAUSTED with the exact wait as a
//! RetryInfo, PERMISSION_DENIED for a deny list, UNAVAILABLE for a store
//! outage, INTERNAL for a server that gives the layer no client address;
//! the RateLimit headers stay. Clients of other content types still get the
//! HTTP answers.

use crate::common;

use crate::examples::grpc_health;
use common::*;
use limits::{Algorithm, ManualClock, Rule, Store};
use limits_http::{AccessList, FailurePolicy, Policy, RateLimitLayer};
use std::net::SocketAddr;
use std::time::Duration;
use tonic::Code;
use tonic::transport::server::TcpIncoming;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tonic_types::StatusExt;

/// A tonic request as the layer reads it.
type ForTheLayer = fn(http::Request<tonic::body::Body>) -> http::Request<axum::body::Body>;

/// tonic-health behind the layer of `policy`, on 127.0.0.1: its address.
async fn serve<S: Store>(policy: Policy<S>) -> SocketAddr {
    serve_through(policy, grpc_health::for_the_layer).await
}

/// [`serve`], each request made ready for the layer by `for_the_layer`.
async fn serve_through<S: Store>(policy: Policy<S>, for_the_layer: ForTheLayer) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let stack = tower::ServiceBuilder::new()
        .map_request(for_the_layer)
        .layer(RateLimitLayer::new(policy));
    let server = tonic::transport::Server::builder()
        .layer(stack)
        .add_service(health)
        .serve_with_incoming(TcpIncoming::from(listener));
    tokio::spawn(server);
    addr
}

/// The rule the calls meet: "grpc", two a minute per client address.
fn two_a_minute(clock: &ManualClock) -> Vec<limits_http::HttpRule<Memory>> {
    vec![rule(
        "grpc",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "2/m", clock),
    )]
}

/// One `Check` call to `addr`: the gRPC status of its failure (`Ok(())` if
/// it succeeded).
async fn check(addr: SocketAddr) -> Result<(), tonic::Status> {
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let http2 = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<tonic::body::Body>();
    let mut client = HealthClient::with_origin(http2, format!("http://{addr}").parse().unwrap());
    client.check(HealthCheckRequest::default()).await.map(drop)
}

#[tokio::test]
async fn a_limited_grpc_call_is_resource_exhausted_with_the_exact_retry_info() {
    let clock = ManualClock::new(0);
    let rules = two_a_minute(&clock);
    let addr = serve(Policy::new(rules)).await;
    check(addr).await.unwrap();
    // The second call 1.5 s and 7 ns later: the third waits for the first
    // to leave the window, 58.499999993 s from then.
    clock.advance(Duration::new(1, 500_000_007));
    check(addr).await.unwrap();
    let status = check(addr).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(status.message(), "rate limit \"grpc\" exceeded");
    let retry = status.get_details_retry_info().expect("a RetryInfo");
    assert_eq!(retry.retry_delay, Some(Duration::new(58, 499_999_993)));
    // The RateLimit headers and Retry-After stay (in whole seconds, up).
    let headers = status.metadata();
    assert_eq!(headers.get("retry-after").unwrap(), "59");
    assert_eq!(
        headers.get("ratelimit-policy").unwrap(),
        "\"grpc\";q=2;w=60"
    );
    assert_eq!(headers.get("ratelimit").unwrap(), "\"grpc\";r=0;t=59");
}

#[tokio::test]
async fn a_grpc_call_on_a_deny_list_is_permission_denied() {
    let clock = ManualClock::new(0);
    let rules = two_a_minute(&clock);
    let mut policy = Policy::new(rules);
    policy.options.lists.deny = AccessList::parse(["127.0.0.0/8"]).unwrap();
    let addr = serve(policy).await;
    let status = check(addr).await.unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(status.message(), "refused by the deny list");
    assert!(status.get_details_retry_info().is_none());
}

#[tokio::test]
async fn a_grpc_call_during_a_store_outage_is_unavailable() {
    let down = Down(Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap()));
    let mut policy = Policy::new(vec![rule("grpc", "/", "ip", std::sync::Arc::new(down))]);
    policy.options.on_store_error = FailurePolicy::Deny;
    let addr = serve(policy).await;
    let status = check(addr).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(status.message(), "the rate limit store is unavailable");
    let retry = status.get_details_retry_info().expect("a RetryInfo");
    assert_eq!(retry.retry_delay, Some(Duration::from_secs(1)));
}

#[tokio::test]
async fn a_grpc_call_the_layer_cannot_key_is_internal_naming_the_fix() {
    let clock = ManualClock::new(0);
    let rules = two_a_minute(&clock);
    // The body made readable, and the peer not given.
    let without_peer: ForTheLayer = |req| req.map(axum::body::Body::new);
    let addr = serve_through(Policy::new(rules), without_peer).await;
    let status = check(addr).await.unwrap_err();
    assert_eq!(status.code(), Code::Internal);
    assert!(
        status.message().contains("no client address"),
        "{}",
        status.message()
    );
}

/// The answer on the wire: HTTP 200, trailers-only, the message
/// percent-encoded, the details base64 without padding; and a request of
/// another content type still gets the 429 problem.
#[tokio::test]
async fn the_grpc_answer_as_sent_and_the_http_answer_for_others() {
    let clock = ManualClock::new(0);
    let name = "grüße";
    let rules = vec![rule(
        name,
        "/",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )];
    let app = app(Policy::new(rules));
    let grpc = |content_type: &str| {
        let mut r = request("/", "192.0.2.1:1");
        r.headers_mut()
            .insert("content-type", content_type.parse().unwrap());
        r
    };
    assert_eq!(send(&app, grpc("application/grpc")).await.status(), 200);
    let r = send(&app, grpc("application/grpc+proto")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type"), "application/grpc");
    assert_eq!(header(&r, "grpc-status"), "8");
    assert_eq!(
        header(&r, "grpc-message"),
        "rate limit \"gr%C3%BC%C3%9Fe\" exceeded"
    );
    let details = header(&r, "grpc-status-details-bin");
    assert!(!details.is_empty() && !details.ends_with('='));
    assert_eq!(header(&r, "retry-after"), "60");
    let body = http_body_util::BodyExt::collect(r.into_body())
        .await
        .unwrap();
    assert!(body.to_bytes().is_empty());
    let r = send(&app, grpc("application/json")).await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "content-type"), "application/problem+json");
}
