//! The proxy's floor benchmark (`CASES=proxyfloor scripts/bench-http`,
//! BENCHMARKS.md "The proxy's floor"): what hyper 1's server and client
//! sides and tokio cost alone for a proxied request, with the listener's
//! settings (one HTTP/1 connection task per client, keep-alive, hyper's
//! header-read timer of 10 s, the same buffer bound, one `write` per
//! response). Every request goes to the upstream on a hyper
//! `client::conn::http1` connection of its own client connection (opened on
//! its first request, TCP_NODELAY: one exchange at a time on each side, so
//! no pool), with what a proxy must do and no more: `Host` becomes the
//! upstream's, the client's address is appended to `X-Forwarded-For` (as
//! `limits serve` does), the upstream leg is HTTP/1.1, and the response's
//! `Connection` header stays on its hop. The bodies stream through unboxed.
//! No limits, no metrics, no timeout, no other header rewriting.
//!
//! No proxy built on hyper's connections can spend less CPU per request
//! than this; the gap between it and nginx's `proxy_pass` is hyper's and
//! tokio's, the gap between `limits serve --upstream` and it ours.
//!
//! ```text
//! cargo build --release -p limits-server --example proxyfloor
//! TOKIO_WORKER_THREADS=1 target/release/examples/proxyfloor 127.0.0.1:8080 127.0.0.1:9000
//! ```
//!
//! It prints `proxyfloor: listening on http://ADDR` and serves until killed.

use http::header::{self, HeaderName, HeaderValue};
use hyper::body::Incoming;
use hyper::client::conn::http1 as client;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(upstream)) = (args.next(), args.next()) else {
        return Err("usage: proxyfloor LISTEN_ADDR UPSTREAM_ADDR (both host:port)".into());
    };
    let upstream: SocketAddr = upstream
        .parse()
        .map_err(|e| format!("upstream {upstream:?}: {e}"))?;
    // As `limits serve` without `--workers`: a multi-thread runtime
    // (TOKIO_WORKER_THREADS sets its workers), the accept loop on the
    // thread that blocks on it, each connection a task of its own.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(serve(addr, upstream))
}

async fn serve(addr: String, upstream: SocketAddr) -> Result<(), String> {
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    println!("proxyfloor: listening on http://{local}");
    let host = HeaderValue::from_str(&upstream.to_string()).map_err(|e| e.to_string())?;
    // The listener's settings (limits-server's `listener::serve` with the
    // default `Bounds`).
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
        // This client's upstream connection: one request at a time comes
        // from the client, so one connection serves it, taken for each
        // exchange and put back once the response's head is in.
        let sender: Arc<Mutex<Option<client::SendRequest<Incoming>>>> = Arc::default();
        let host = host.clone();
        // The client's address as an X-Forwarded-For entry, once.
        let Ok(client) = HeaderValue::from_str(&peer.ip().to_string()) else {
            continue;
        };
        let service = hyper::service::service_fn(move |req| {
            forward(req, sender.clone(), host.clone(), client.clone(), upstream)
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}

async fn forward(
    mut req: http::Request<Incoming>,
    slot: Arc<Mutex<Option<client::SendRequest<Incoming>>>>,
    host: HeaderValue,
    client: HeaderValue,
    upstream: SocketAddr,
) -> Result<http::Response<Incoming>, Error> {
    let taken = slot.lock().map_err(|_| "poisoned")?.take();
    let mut sender = match taken {
        Some(sender) => sender,
        None => connect(upstream).await?,
    };
    let headers = req.headers_mut();
    let forwarded = match headers.get(&X_FORWARDED_FOR) {
        Some(before) => {
            let mut chain = before.as_bytes().to_vec();
            chain.extend_from_slice(b", ");
            chain.extend_from_slice(client.as_bytes());
            HeaderValue::from_bytes(&chain)?
        }
        None => client,
    };
    headers.insert(X_FORWARDED_FOR, forwarded);
    headers.insert(header::HOST, host);
    *req.version_mut() = http::Version::HTTP_11;
    // The previous exchange's body may still be finishing on its task.
    sender.ready().await?;
    let mut response = sender.send_request(req).await?;
    *slot.lock().map_err(|_| "poisoned")? = Some(sender);
    response.headers_mut().remove(header::CONNECTION);
    Ok(response)
}

async fn connect(upstream: SocketAddr) -> Result<client::SendRequest<Incoming>, Error> {
    let stream = TcpStream::connect(upstream).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = client::Builder::new()
        .handshake(TokioIo::new(stream))
        .await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}
