//! The header timeout as a client sees it on a real socket, with T = 300 ms:
//! a half-sent head, an idle keep-alive connection and a slowloris client
//! are closed after T (not at T/2; by 3T, generous for a loaded machine),
//! while a slow service, a response body streamed over 3T and a connection
//! sending a request every T/2 for 5T are served in full.

use bytes::Bytes;
use http_body::Frame;
use limits_server::{Runtimes, Server, ServerConfig};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{sleep, timeout, Instant, Sleep};

const T: Duration = Duration::from_millis(300);

/// Guards every wait against a hang (the test fails, it does not time).
const HANG: Duration = Duration::from_secs(60);

/// A body of `left` chunks, one every T/2.
struct Slow {
    left: usize,
    next: Pin<Box<Sleep>>,
}

impl http_body::Body for Slow {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        std::task::ready!(self.next.as_mut().poll(cx));
        self.left -= 1;
        let at = Instant::now() + T / 2;
        self.next.as_mut().reset(at);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"chunk\n")))))
    }
}

/// A server with T as its header timeout: `/hello`, `/slow` (answers after
/// 3T) and `/stream` (7 chunks over 3.5T).
async fn start() -> SocketAddr {
    let config = config();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::new(config).unwrap();
    tokio::spawn(server.serve_on(listener, app(), std::future::pending()));
    addr
}

/// `start`'s routes.
fn app() -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route("/hello", get(|| async { "hello\n" }))
        .route(
            "/slow",
            get(|| async {
                sleep(3 * T).await;
                "slow\n"
            }),
        )
        .route(
            "/stream",
            get(|| async {
                axum::body::Body::new(Slow {
                    left: 7,
                    next: Box::pin(sleep(T / 2)),
                })
            }),
        )
}

/// One rule that passes everything, and T as the header timeout.
fn config() -> ServerConfig {
    let mut config = crate::serving::one_rule("100000/s");
    config.bounds.header_timeout = T;
    config
}

/// Reads one whole response (`Content-Length` or chunked) from `stream`.
async fn response(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    loop {
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_ascii_lowercase();
            let body = &text[end + 4..];
            if head.contains("transfer-encoding: chunked") && body.ends_with("0\r\n\r\n") {
                return text;
            }
            let length = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                (name == "content-length").then(|| value.trim().parse::<usize>().unwrap())
            });
            if length.is_some_and(|length| body.len() >= length) {
                return text;
            }
        }
        let mut buf = [0u8; 4096];
        let n = timeout(HANG, stream.read(&mut buf))
            .await
            .expect("a response in time")
            .unwrap();
        assert!(n > 0, "closed mid-response: {text:?}");
        got.extend_from_slice(&buf[..n]);
    }
}

/// Waits up to `within` for the server to close `stream` (end of stream or
/// reset): whether it did. Fails on any byte received.
async fn closes_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    match timeout(within, stream.read(&mut buf)).await {
        Err(_) => false,
        Ok(Ok(0)) | Ok(Err(_)) => true,
        Ok(Ok(n)) => panic!("unexpected bytes: {:?}", String::from_utf8_lossy(&buf[..n])),
    }
}

/// Still open at T/2 after `began`, closed by 3T after it.
async fn closed_after_t(stream: &mut TcpStream, began: Instant, what: &str) {
    let half = (began + T / 2).saturating_duration_since(Instant::now());
    assert!(
        !closes_within(stream, half).await,
        "{what}: closed before T/2"
    );
    let left = (began + 3 * T).saturating_duration_since(Instant::now());
    assert!(
        closes_within(stream, left).await,
        "{what}: still open 3T after it began to wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_head_is_closed_after_the_timeout() {
    let addr = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let began = Instant::now();
    stream
        .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        .await
        .unwrap();
    closed_after_t(&mut stream, began, "a half-sent head").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_after_the_timeout() {
    let addr = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let answer = response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    closed_after_t(&mut stream, Instant::now(), "an idle connection").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_service_is_not_cut_off() {
    let addr = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let began = Instant::now();
    stream
        .write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let answer = response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nslow\n"), "{answer}");
    assert!(began.elapsed() >= 3 * T);
    // And the connection serves another request.
    stream
        .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    assert!(response(&mut stream).await.ends_with("hello\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_streamed_over_three_timeouts_is_not_cut_off() {
    let addr = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let began = Instant::now();
    stream
        .write_all(b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let answer = response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(answer.matches("chunk\n").count(), 7, "{answer}");
    assert!(began.elapsed() >= 3 * T);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_client_is_closed_after_the_timeout() {
    let addr = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let began = Instant::now();
    stream
        .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    // One more header line every T/3, for up to 10T.
    let mut closed = None;
    for line in 0..30 {
        if closes_within(&mut stream, T / 3).await {
            closed = Some(began.elapsed());
            break;
        }
        let header = format!("X-Line-{line}: a\r\n");
        if stream.write_all(header.as_bytes()).await.is_err() {
            closed = Some(began.elapsed());
            break;
        }
    }
    let closed = closed.expect("a slowloris client still served after 10T");
    assert!(closed >= T / 2, "closed before T/2: {closed:?}");
    assert!(closed <= 3 * T, "closed only after {closed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_each_under_the_timeout_keep_a_connection_open() {
    let addr = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let began = Instant::now();
    let mut answered = 0;
    while began.elapsed() < 5 * T {
        sleep(T / 2).await;
        stream
            .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let answer = response(&mut stream).await;
        assert!(answer.ends_with("hello\n"), "{answer}");
        answered += 1;
    }
    assert!(answered >= 10, "{answered} requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_idle_connections_on_every_thread_are_closed_after_the_timeout() {
    let mut config = config();
    config.runtimes = Runtimes::PerCore(std::num::NonZeroUsize::new(2).unwrap());
    let serving = crate::serving::Serving::start(config, app()).await;
    // 16 connections land on both threads but with a chance of 2^-15.
    let mut idle = Vec::new();
    for _ in 0..16 {
        let mut stream = TcpStream::connect(serving.addr).await.unwrap();
        stream
            .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        assert!(response(&mut stream).await.ends_with("hello\n"));
        idle.push((stream, Instant::now()));
    }
    let last = idle.last().map(|(_, began)| *began).unwrap();
    // Each still open until T/2 after it began to wait (those whose T/2
    // has not passed yet: setting up took a while on a loaded machine).
    for (stream, began) in &mut idle {
        let half = (*began + T / 2).saturating_duration_since(Instant::now());
        if !half.is_zero() {
            assert!(!closes_within(stream, half).await, "closed before T/2");
        }
    }
    let until = (last + 3 * T).saturating_duration_since(Instant::now());
    sleep(until).await;
    for (stream, _) in &mut idle {
        assert!(
            closes_within(stream, Duration::ZERO).await,
            "still open after 3T"
        );
    }
}
