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
        if proxy.pool.idle() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} idle connections, not {n}", proxy.pool.idle());
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
async fn a_proxy_with_its_own_pool_takes_none_of_the_others_connections_and_counts_errors_with_it()
{
    let upstream = Upstream::start(None).await;
    let proxy = proxy(upstream.addr);
    assert_eq!(get(&proxy).await.0, StatusCode::OK);
    until_idle(&proxy, 1).await;
    let own = proxy.with_own_pool();
    assert_eq!(own.pool.idle(), 0, "made empty");
    for _ in 0..3 {
        assert_eq!(get(&own).await.0, StatusCode::OK);
    }
    assert_eq!(upstream.accepted(), 2, "a connection of its own, reused");
    until_idle(&own, 1).await;
    until_idle(&proxy, 1).await;
    // Nothing listening: a 502 through one copy is counted in the other.
    let free = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let gone = super::proxy(free.local_addr().expect("addr"));
    drop(free);
    assert_eq!(get(&gone.with_own_pool()).await.0, StatusCode::BAD_GATEWAY);
    assert_eq!(gone.errors().bad_gateway, 1);
}

#[tokio::test]
async fn a_connection_the_upstream_closed_is_not_reused() {
    // Each connection: one keep-alive response, then the upstream hangs up
    // without saying so. The next request must go to a new connection.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = raw_upstream(listener, |mut socket| async move {
        if read_head(&mut socket).await.is_some() {
            let _ = socket.write_all(OK_RESPONSE).await;
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

/// An upstream on raw TCP: each connection's requests are read one at a
/// time (a head, then as many body bytes as its Content-Length says) and
/// answered with `answer`; what comes of each connection is for `then`.
fn raw_upstream<F, Fut>(listener: TcpListener, then: F) -> Arc<AtomicUsize>
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    let then = Arc::new(then);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(then(socket));
        }
    });
    accepted
}

/// Reads one request head from `socket` (and whatever follows it in the
/// same reads): `None` when the socket closed first.
async fn read_head(socket: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    Some(head)
}

const OK_RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

/// An upstream answering one request per connection, keeping it open until
/// told to hang up (`hang_up`), then saying on `closed` that it has.
struct HangingUp {
    accepted: Arc<AtomicUsize>,
    hang_up: tokio::sync::broadcast::Sender<()>,
    closed: tokio::sync::mpsc::UnboundedReceiver<()>,
}

impl HangingUp {
    fn serve(listener: TcpListener) -> HangingUp {
        let (hang_up, _) = tokio::sync::broadcast::channel::<()>(1);
        let (closed_tx, closed) = tokio::sync::mpsc::unbounded_channel::<()>();
        let signal = hang_up.clone();
        let accepted = raw_upstream(listener, move |mut socket| {
            let mut hang_up = signal.subscribe();
            let closed = closed_tx.clone();
            async move {
                if read_head(&mut socket).await.is_some() {
                    let _ = socket.write_all(OK_RESPONSE).await;
                    let _ = hang_up.recv().await;
                }
                drop(socket);
                let _ = closed.send(());
            }
        });
        HangingUp {
            accepted,
            hang_up,
            closed,
        }
    }

    /// A proxy to a new `HangingUp` upstream, after one request: the
    /// connection it came on idle in the pool, then closed by the upstream.
    async fn idle_then_closed() -> (HangingUp, Proxy) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut upstream = HangingUp::serve(listener);
        let proxy = proxy(addr);
        assert_eq!(get(&proxy).await, (StatusCode::OK, Bytes::from("ok")));
        until_idle(&proxy, 1).await;
        upstream.hang_up().await;
        (upstream, proxy)
    }

    /// Hangs up the connection it holds, and returns once it has.
    async fn hang_up(&mut self) {
        self.hang_up
            .send(())
            .expect("the upstream holds a connection");
        self.closed
            .recv()
            .await
            .expect("the upstream closed its connection");
        // Once round the runtime (tokio's `yield_now` lets its I/O driver
        // run first), as a connection idle in production has been: the
        // hang-up has then reached the proxy's side.
        tokio::task::yield_now().await;
    }
}

/// The upstream hangs up on a connection while it sits idle in the pool
/// (not right after an answer, as above): the next request goes to a new
/// connection instead of failing.
#[tokio::test]
async fn a_connection_closed_while_idle_is_not_used_again() {
    let (upstream, proxy) = HangingUp::idle_then_closed().await;
    assert_eq!(get(&proxy).await, (StatusCode::OK, Bytes::from("ok")));
    assert_eq!(upstream.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(proxy.errors(), ProxyErrors::default());
}

/// A connection the upstream closed while idle is dropped at the reaper's
/// next look, not kept until the idle timeout.
#[tokio::test]
async fn the_reaper_drops_a_connection_the_upstream_closed() {
    let (_upstream, proxy) = HangingUp::idle_then_closed().await;
    let mut reaped = false;
    for _ in 0..1000 {
        proxy.pool.reap();
        if proxy.pool.idle() == 0 {
            reaped = true;
            break;
        }
        // The hang-up is on its way through the runtime.
        tokio::task::yield_now().await;
    }
    assert!(reaped, "a closed connection was kept");
}

/// An upstream may answer before it has read the whole request body; the
/// connection is ready again only once the body is sent. It goes back to
/// the pool then, and the next request reuses it.
#[tokio::test]
async fn a_connection_answered_before_its_body_was_sent_comes_back_once_it_is() {
    const BODY: usize = 10;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = raw_upstream(listener, |mut socket| async move {
        while let Some(head) = read_head(&mut socket).await {
            // Answers at once; then reads the body (if any) before the next head.
            let _ = socket.write_all(OK_RESPONSE).await;
            let end = head
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("head")
                + 4;
            let text = String::from_utf8_lossy(&head[..end]).to_ascii_lowercase();
            if text.contains("content-length: 10") {
                let mut body = head[end..].to_vec();
                let mut buf = [0u8; 64];
                while body.len() < BODY {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => body.extend_from_slice(&buf[..n]),
                    }
                }
            }
        }
    });
    let proxy = proxy(addr);
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
    let body = super::streaming::ChannelBody(rx);
    let request = Request::post("/")
        .header("content-length", BODY.to_string())
        .body(Body::new(body))
        .expect("request");
    tx.send(Bytes::from_static(b"hello")).await.expect("send");
    let response = proxy.forward(request, Some(CLIENT)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer = response.into_body().collect().await.expect("body");
    assert_eq!(answer.to_bytes(), Bytes::from("ok"));
    // The body is not sent in full: the connection is not back yet.
    assert_eq!(proxy.pool.idle(), 0);
    tx.send(Bytes::from_static(b"world")).await.expect("send");
    drop(tx);
    until_idle(&proxy, 1).await;
    assert_eq!(get(&proxy).await, (StatusCode::OK, Bytes::from("ok")));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_eq!(proxy.errors(), ProxyErrors::default());
}
