//! An axum app behind the layer, built with the builder: two requests a
//! minute per client on `/api`, then 429 with Retry-After.
//!
//! `cargo run -p limits-http --example axum_app` serves on 127.0.0.1 (an
//! ephemeral port), sends three requests through a real connection, prints
//! their statuses and exits. tests/it/examples.rs runs [`run`].

use axum::routing::get;
use axum::Router;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use limits::{Algorithm, KeyedLimiter, Rule};
use limits_http::{HttpRule, KeySpec, Outcome, RateLimitLayer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tower_layer::Layer;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The app: the layer around the whole router, so that routing sees the
/// path the rules matched (the layer normalizes it).
pub fn app() -> Router {
    let two_a_minute = Rule::new(Algorithm::SlidingWindow, "2/m".parse().expect("a rate"));
    let layer = RateLimitLayer::builder()
        .rule(HttpRule {
            name: "api".into(),
            path_prefix: "/api".into(),
            path_match: Default::default(),
            methods: vec![],
            key: KeySpec::ip(),
            cost: 1,
            store: Arc::new(KeyedLimiter::<String>::new(two_a_minute)),
        })
        .observer(|rule: &str, outcome: Outcome, latency: Duration| {
            println!("rule {rule}: {outcome:?} in {latency:?}");
        })
        .build();
    let routes = Router::new().route("/api/hello", get(|| async { "hello\n" }));
    Router::new().fallback_service(layer.layer(routes))
}

/// Serves [`app`] on 127.0.0.1 and sends it `n` requests; their statuses.
pub async fn run(n: usize) -> Result<Vec<u16>, BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    // ConnectInfo gives the layer the peer address (the `axum` feature).
    let service = app().into_make_service_with_connect_info::<SocketAddr>();
    let server = tokio::spawn(async move { axum::serve(listener, service).await });
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<bytes::Bytes>>();
    let mut statuses = Vec::with_capacity(n);
    for _ in 0..n {
        let uri = format!("http://{addr}/api/hello").parse()?;
        statuses.push(client.get(uri).await?.status().as_u16());
    }
    server.abort();
    Ok(statuses)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    println!("statuses: {:?}", run(3).await?);
    Ok(())
}
