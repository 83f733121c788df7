//! What the connection pool decides, seen from real upstreams that count
//! the connections they accept: reuse, closed connections left behind,
//! more connections for concurrent requests, an upstream that comes back.

use super::*;
use bytes::Bytes;
use http_body_util::Full;
use std::sync::atomic::AtomicUsize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Barrier;
use tokio::task::{JoinHandle, JoinSet};

/// An upstream answering 200 "ok", counting its connections; aborting its
/// task closes them all.
struct Upstream {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Upstream {
    /// Serves on `listener`; each response waits for `gate` if given.
    fn serve(listener: TcpListener, gate: Option<Arc<Barrier>>) -> Upstream {
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let gate = gate.clone();
                let service = hyper::service::service_fn(move |_req| {
                    let gate = gate.clone();
                    async move {
                        if let Some(gate) = gate {
                            gate.wait().await;
                        }
                        Ok::<_, std::convert::Infallible>(Response::new(Full::new(
                            Bytes::from_static(b"ok"),
                        )))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                connections.spawn(
                    hyper::server::conn::http1::Builder::new().serve_connection(io, service),
                );
            }
        });
        Upstream {
            addr,
            accepted,
            task,
        }
    }

    async fn start(gate: Option<Arc<Barrier>>) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Upstream::serve(listener, gate)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// One GET through `proxy`: its status and whole body.
async fn get(proxy: &Proxy) -> (StatusCode, Bytes) {
    let request = Request::get("/").body(Body::empty()).expect("request");
    let response = proxy.forward(request, Some(CLIENT)).await;
    let status = response.status();
    let body = response.into_body().collect().await.expect("body");
    (status, body.to_bytes())
}

/// Waits (without a deadline on success) until `proxy` holds `n` idle
/// connections; fails after a generous while.
async fn until_idle(proxy: &Proxy, n: usize) {
    for _ in 0..1000 {
        if proxy.inner.pool.idle() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} idle connections, not {n}", proxy.inner.pool.idle());
}

#[tokio::test]
async fn sequential_requests_share_one_connection() {
    let upstream = Upstream::start(None).await;
    let proxy = proxy(upstream.addr);
    for _ in 0..20 {
        assert_eq!(get(&proxy).await, (StatusCode::OK, Bytes::from("ok")));
    }
    assert_eq!(upstream.accepted(), 1);
    assert_eq!(proxy.errors(), ProxyErrors::default());
}

#[tokio::test]
async fn a_connection_the_upstream_closed_is_not_reused() {
    // Each connection: one keep-alive response, then the upstream hangs up
    // without saying so. The next request must go to a new connection.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let response = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                let _ = socket.write_all(response).await;
            });
        }
    });
    let proxy = proxy(addr);
    for i in 1..=10 {
        assert_eq!(
            get(&proxy).await,
            (StatusCode::OK, Bytes::from("ok")),
            "request {i}"
        );
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 10);
    assert_eq!(proxy.errors(), ProxyErrors::default());
}

#[tokio::test]
async fn concurrent_requests_open_more_connections_and_reuse_them() {
    // No response leaves the upstream before all four requests arrived:
    // served one connection at a time, they would wait forever.
    const N: usize = 4;
    let upstream = Upstream::start(Some(Arc::new(Barrier::new(N)))).await;
    let proxy = proxy(upstream.addr);
    for round in 1..=2 {
        let mut requests = JoinSet::new();
        for _ in 0..N {
            let proxy = proxy.clone();
            requests.spawn(async move { get(&proxy).await });
        }
        let answers = tokio::time::timeout(TIMEOUT, requests.join_all())
            .await
            .expect("the requests were not all sent at once");
        for answer in answers {
            assert_eq!(answer, (StatusCode::OK, Bytes::from("ok")), "round {round}");
        }
        until_idle(&proxy, N).await;
        assert_eq!(upstream.accepted(), N, "round {round}");
    }
}

#[tokio::test]
async fn an_upstream_gone_is_502_and_back_is_served() {
    let upstream = Upstream::start(None).await;
    let addr = upstream.addr;
    let proxy = proxy(addr);
    assert_eq!(get(&proxy).await.0, StatusCode::OK);

    // Gone: the listener and every connection closed.
    upstream.task.abort();
    let _ = upstream.task.await;
    let (status, body) = get(&proxy).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let problem: Value = serde_json::from_slice(&body).expect("problem");
    assert_eq!(problem["detail"], "upstream unavailable");
    assert_eq!(proxy.errors().bad_gateway, 1);

    // Back on the same port.
    let listener = TcpListener::bind(addr).await.expect("rebind");
    let back = Upstream::serve(listener, None);
    assert_eq!(get(&proxy).await, (StatusCode::OK, Bytes::from("ok")));
    assert_eq!(back.accepted(), 1);
    assert_eq!(proxy.errors().bad_gateway, 1);
}
