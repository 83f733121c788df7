//! The floor benchmark of `limits serve` (`FLOOR=1 scripts/bench-http`,
//! BENCHMARKS.md "The floor: a bare hyper server"): what hyper 1 and tokio
//! cost alone, with the listener's settings (one HTTP/1 connection task per
//! client, keep-alive, hyper's header-read timer of 10 s, the same buffer
//! bound, one `write` per response), answering every request with the demo
//! API's `GET /` (200, `application/json`, the same 186 bytes) from a
//! constant: no limits, no router, no metrics. No server built on hyper can
//! spend less CPU per request than this; the gap between it and nginx is
//! hyper's and tokio's, the gap between `limits serve` and it ours.
//!
//! ```text
//! cargo build --release -p limits-server --example floor
//! TOKIO_WORKER_THREADS=1 target/release/examples/floor 127.0.0.1:8080
//! ```
//!
//! It prints `floor: listening on http://ADDR` and serves until killed.

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::time::Duration;
use tokio::net::TcpListener;

/// The demo API's `GET /` body, byte for byte (crates/limits-cli's demo).
const INDEX: &str = concat!(
    r#"{"endpoints":["GET /api/items","GET /api/items/{id}","POST /login"],"#,
    r#""headers":"every response carries RateLimit-Policy and RateLimit; a 429 adds Retry-After","#,
    r#""service":"limits demo API"}"#
);

fn main() -> Result<(), String> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    // As `limits serve` without `--workers`: a multi-thread runtime
    // (TOKIO_WORKER_THREADS sets its workers), the accept loop on the
    // thread that blocks on it, each connection a task of its own.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(serve(addr))
}

async fn serve(addr: String) -> Result<(), String> {
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    println!("floor: listening on http://{local}");
    // The listener's settings (limits-server's `listener::serve` with the
    // default `Bounds`).
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .max_buf_size(16 * 1024)
        .writev(false);
    loop {
        let (stream, _peer) = match listener.accept().await {
            Ok(pair) => pair,
            Err(e) => {
                eprintln!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = hyper::service::service_fn(|_req| async {
            let mut response = http::Response::new(Full::new(Bytes::from_static(INDEX.as_bytes())));
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            Ok::<_, Infallible>(response)
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}
