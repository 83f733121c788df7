//! An axum app behind the layer: two requests a minute per client address
//! on `/api`, then 429 with Retry-After.
//!
//! `cargo run -p limits-http --example axum_app` serves on 127.0.0.1 (an
//! ephemeral port), sends three requests through a real connection, prints
//! their statuses and exits. tests/it/examples.rs runs [`run`], and holds
//! the README's first library example to the lines between the two README
//! markers below.

// README begins
use axum::{Router, routing::get};
use limits::{Algorithm, KeyedLimiter, Rule};
use limits_http::{HttpRule, KeySpec, RateLimitLayer};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tower_layer::Layer;

/// Two requests a minute per client address on /api, then 429.
pub fn app() -> Router {
    let two_a_minute = Rule::new(Algorithm::SlidingLog, "2/min".parse().expect("a rate"));
    let store = KeyedLimiter::<String>::new(two_a_minute);
    let api = HttpRule::new("api", store, KeySpec::ip()).path("/api");
    let layer = RateLimitLayer::builder().rule(api).build();
    let routes = Router::new().route("/api/hello", get(|| async { "hello\n" }));
    // Around the whole router, so that routing sees the path the rules matched.
    Router::new().fallback_service(layer.layer(routes))
}

/// Serves the app on `listener`.
pub async fn serve(listener: TcpListener) -> std::io::Result<()> {
    // Each connection's peer address is the client's: without connect_info,
    // a rule keyed on the address answers 500.
    let app = app().into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).await
}
// README ends

use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves [`app`] on 127.0.0.1 and sends it `n` requests; their statuses.
pub async fn run(n: usize) -> Result<Vec<u16>, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(serve(listener));
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
