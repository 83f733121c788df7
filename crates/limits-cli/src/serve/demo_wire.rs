//! For the demo's tests: a service's answer as hyper writes it on the wire,
//! so that the static answers (whose Content-Length hyper writes) and the
//! axum routes' (whose Content-Length axum puts in the map) are compared
//! byte for byte where the client sees them.

use axum::extract::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use std::error::Error;
use std::future::poll_fn;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower_service::Service;

/// The bytes hyper writes in answer to `request` (raw, as a client sends
/// it, on a keep-alive connection), without its `date` field (the only
/// one that varies), its body read by its Content-Length (none for a
/// `HEAD`).
pub(super) async fn exchange<S, B>(service: S, request: &[u8]) -> String
where
    S: Service<Request, Response = http::Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<Box<dyn Error + Send + Sync>>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn Error + Send + Sync>>,
{
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let mut service = service.clone();
        async move {
            poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(req.map(axum::body::Body::new)).await
        }
    });
    let conn = tokio::spawn(async move {
        let mut http = http1::Builder::new();
        http.auto_date_header(false);
        http.serve_connection(TokioIo::new(server), service).await
    });
    client.write_all(request).await.unwrap();
    let mut read = Vec::new();
    let head_end = loop {
        if let Some(at) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut chunk = [0; 4096];
        let n = client.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before a whole head: {read:?}");
        read.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(read[..head_end].to_vec()).unwrap();
    let length = if request.starts_with(b"HEAD ") {
        0
    } else {
        head.lines()
            .find_map(|line| line.strip_prefix("content-length: "))
            .unwrap_or_else(|| panic!("no content-length: {head}"))
            .parse::<usize>()
            .unwrap()
    };
    while read.len() < head_end + length {
        let mut chunk = [0; 4096];
        let n = client.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before the whole body");
        read.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(read.len(), head_end + length, "nothing more than the body");
    drop(client);
    // The client gone, the connection ends (how is no matter here).
    let _ = conn.await;
    String::from_utf8_lossy(&read).into_owned()
}
