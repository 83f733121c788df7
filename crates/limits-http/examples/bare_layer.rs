//! The layer alone, for `scripts/bench-http`'s `layer` cases against nginx
//! `limit_req`: the limits-http layer in front of a bare `service_fn` that
//! answers every request with the same bytes as the nginx side (the demo
//! API's `GET /`, 200, `application/json`), served by hyper 1 with the
//! settings of limits-server's listener (one HTTP/1 connection task per
//! client, keep-alive, a 10 s header-read timer, a 16 KiB buffer bound,
//! one `write` per response). No router, no metrics, no demo: what is left
//! between it and limits-server's `floor` example is the layer.
//!
//! ```text
//! cargo build --release -p limits-http --example bare_layer
//! TOKIO_WORKER_THREADS=1 target/release/examples/bare_layer 127.0.0.1:8080 allow
//! ```
//!
//! The rule, on every request, keyed by the client address: `allow`, a
//! token bucket so large that every request passes (as the bench's allow
//! case), or `deny`, one request a minute (every answer after the first is
//! a 429). It prints `bare_layer: listening on http://ADDR` and serves
//! until killed.

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use limits::{Algorithm, KeyedLimiter, Rule};
use limits_http::{HttpRule, KeySpec, RateLimitLayer};
use std::convert::Infallible;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::{Layer, ServiceExt};

/// The demo API's `GET /` body, byte for byte (crates/limits-cli's demo),
/// as limits-server's `floor` example answers.
const INDEX: &str = concat!(
    r#"{"endpoints":["GET /api/items","GET /api/items/{id}","POST /login"],"#,
    r#""headers":"every response carries RateLimit-Policy and RateLimit; a 429 adds Retry-After","#,
    r#""service":"limits demo API"}"#
);

/// The bench's two rules: every request passes, or one a minute does.
pub fn rule(which: &str) -> Result<Rule, String> {
    let rates = match which {
        "allow" => "100000000/s",
        "deny" => "1/min",
        other => return Err(format!("rule {other:?}: expected allow or deny")),
    };
    let rates = rates.parse().map_err(|e| format!("{rates}: {e}"))?;
    Ok(Rule::new(Algorithm::TokenBucket, rates))
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let which = args.next().unwrap_or_else(|| "allow".into());
    let rule = rule(&which)?;
    // As `limits serve` without `--workers`: a multi-thread runtime
    // (TOKIO_WORKER_THREADS sets its workers), the accept loop on the
    // thread that blocks on it, each connection a task of its own.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        println!("bare_layer: listening on http://{local}");
        serve(listener, rule).await;
        Ok(())
    })
}

/// Serves the layer with `rule` in front of the bare service on `listener`,
/// until the task is dropped.
pub async fn serve(listener: TcpListener, rule: Rule) {
    let store = KeyedLimiter::<String>::new(rule);
    let layer = RateLimitLayer::builder()
        .rule(HttpRule::new("bench", store, KeySpec::ip()))
        .build();
    let index = tower::service_fn(|_req: Request<Body>| async {
        let mut response = Response::new(Full::new(Bytes::from_static(INDEX.as_bytes())));
        let json = HeaderValue::from_static("application/json");
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, json);
        Ok::<_, Infallible>(response)
    });
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .max_buf_size(16 * 1024)
        .writev(false);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(pair) => pair,
            Err(e) => {
                eprintln!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // One service per connection, told its peer (no extension per request).
        let limited = layer.layer(index).with_peer(peer);
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            limited.clone().oneshot(req.map(Body::new))
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}
