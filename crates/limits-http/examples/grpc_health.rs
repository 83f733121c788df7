//! A tonic gRPC service behind the layer: tonic-health's ready-made
//! `HealthServer`, two checks a minute per client.
//!
//! Two things join tonic to the layer, in a `map_request` before it: tonic
//! hands the peer address in its `TcpConnectInfo`, which becomes a
//! [`PeerAddr`]; and the layer rebuilds bodies it reads from bytes, which
//! tonic's body type cannot be, so the body is boxed in axum's (tonic's
//! routes take any body). The layer answers gRPC requests in gRPC itself:
//! past the limit, a trailers-only `RESOURCE_EXHAUSTED` with the exact wait
//! as a `google.rpc.RetryInfo`, Retry-After and the RateLimit headers kept.

//! `cargo run -p limits-http --example grpc_health` serves on 127.0.0.1,
//! calls `Check` three times over HTTP/2, prints the results and exits.
//! tests/it/examples.rs runs [`run`].

use http::Request;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use limits::{Algorithm, KeyedLimiter, Rule};
use limits_http::{HttpRule, KeySpec, PeerAddr, RateLimitLayer};
use tonic::transport::Server;
use tonic::transport::server::{TcpConnectInfo, TcpIncoming};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::ServiceBuilder;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// tonic's request, as the layer reads it: the peer as [`PeerAddr`], the
/// body in a type the layer can rebuild from bytes.
pub fn for_the_layer(req: Request<tonic::body::Body>) -> Request<axum::body::Body> {
    let peer = req
        .extensions()
        .get::<TcpConnectInfo>()
        .and_then(TcpConnectInfo::remote_addr);
    let mut req = req.map(axum::body::Body::new);
    if let Some(peer) = peer {
        req.extensions_mut().insert(PeerAddr(peer));
    }
    req
}

/// The rate limit: two calls a minute per client address, on every method.
fn layer() -> RateLimitLayer<KeyedLimiter<String>> {
    let rule = Rule::new(Algorithm::SlidingLog, "2/m".parse().expect("a rate"));
    RateLimitLayer::builder()
        .rule(HttpRule::new(
            "grpc",
            KeyedLimiter::new(rule),
            KeySpec::ip(),
        ))
        .build()
}

/// Serves the health service behind the layer on 127.0.0.1 and calls
/// `Check` `n` times: each call's serving status, or its gRPC error code.
pub async fn run(n: usize) -> Result<Vec<String>, BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (_reporter, health) = tonic_health::server::health_reporter();
    let stack = ServiceBuilder::new()
        .map_request(for_the_layer)
        .layer(layer());
    let server = Server::builder()
        .layer(stack)
        .add_service(health)
        .serve_with_incoming(TcpIncoming::from(listener));
    let server = tokio::spawn(server);
    // tonic's client codegen over hyper's HTTP/2 client: no tonic transport.
    let http2 = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<tonic::body::Body>();
    let mut client = HealthClient::with_origin(http2, format!("http://{addr}").parse()?);
    let mut seen = Vec::with_capacity(n);
    for _ in 0..n {
        let check = client.check(HealthCheckRequest::default()).await;
        seen.push(match check {
            Ok(response) => format!("{:?}", response.into_inner().status()),
            Err(status) => format!("{:?}: {}", status.code(), status.message()),
        });
    }
    server.abort();
    Ok(seen)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    println!("checks: {:?}", run(3).await?);
    Ok(())
}
