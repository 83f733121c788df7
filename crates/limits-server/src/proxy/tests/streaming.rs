//! Bodies pass through chunk by chunk, both ways, and arrive intact.

use super::*;
use axum::routing::any;
use bytes::Bytes;
use hyper::body::Frame;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Long enough that a test would rather fail than hang on a broken proxy.
const PATIENCE: Duration = Duration::from_secs(10);

/// A body whose chunks the test hands over one at a time.
pub(super) struct ChannelBody(pub(super) mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

/// The response, failing rather than hanging if the proxy waits for a
/// whole body before answering.
async fn patiently(forward: impl std::future::Future<Output = Response<Body>>) -> Response<Body> {
    let response = tokio::time::timeout(PATIENCE, forward).await;
    response.expect("no response: the proxy is buffering")
}

/// The next data chunk of `body`, failing rather than hanging.
async fn next_chunk(body: &mut Body) -> Option<Bytes> {
    loop {
        let frame = tokio::time::timeout(PATIENCE, body.frame()).await;
        match frame.expect("chunk did not arrive: the proxy is buffering")? {
            Ok(frame) => match frame.into_data() {
                Ok(data) if data.is_empty() => continue,
                Ok(data) => return Some(data),
                Err(_trailers) => continue,
            },
            Err(e) => panic!("body error: {e}"),
        }
    }
}

#[tokio::test]
async fn response_streams_chunk_by_chunk() {
    // The upstream sends the second chunk only after the test has read the
    // first through the proxy: a buffering proxy would deadlock (and fail).
    let (tx, rx) = mpsc::channel::<Bytes>(1);
    let rx = Arc::new(std::sync::Mutex::new(Some(rx)));
    let upstream = spawn(Router::new().route(
        "/stream",
        any(move || {
            let rx = rx.lock().expect("lock").take().expect("one request");
            async move { Body::new(ChannelBody(rx)) }
        }),
    ))
    .await;
    tx.send(Bytes::from("one")).await.expect("send");
    let request = Request::get("/stream").body(Body::empty()).expect("req");
    let response = patiently(proxy(upstream).forward(request, None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    assert_eq!(next_chunk(&mut body).await.as_deref(), Some(&b"one"[..]));
    for chunk in ["two", "three"] {
        tx.send(Bytes::from(chunk)).await.expect("send");
        assert_eq!(
            next_chunk(&mut body).await.as_deref(),
            Some(chunk.as_bytes())
        );
    }
    drop(tx);
    assert_eq!(next_chunk(&mut body).await, None);
}

/// An upstream that streams the request body straight back.
async fn mirror_upstream() -> SocketAddr {
    spawn(Router::new().fallback(|req: AxumRequest| async move { req.into_body() })).await
}

#[tokio::test]
async fn request_streams_chunk_by_chunk() {
    // Each chunk must make the round trip before the next is sent.
    let (tx, rx) = mpsc::channel::<Bytes>(1);
    let request = Request::post("/")
        .body(Body::new(ChannelBody(rx)))
        .expect("req");
    let proxy = proxy(mirror_upstream().await);
    tx.send(Bytes::from("ping 1")).await.expect("send");
    let response = patiently(proxy.forward(request, None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    assert_eq!(next_chunk(&mut body).await.as_deref(), Some(&b"ping 1"[..]));
    tx.send(Bytes::from("ping 2")).await.expect("send");
    assert_eq!(next_chunk(&mut body).await.as_deref(), Some(&b"ping 2"[..]));
    drop(tx);
    assert_eq!(next_chunk(&mut body).await, None);
}

#[tokio::test]
async fn large_request_body_arrives_intact() {
    let sent: Vec<u8> = (0..5 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let request = Request::put("/big")
        .body(Body::from(sent.clone()))
        .expect("req");
    let response = proxy(mirror_upstream().await).forward(request, None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let back = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    assert_eq!(back.len(), sent.len());
    assert!(back == sent, "the body changed on the way");
}
