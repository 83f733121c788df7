//! The connection caps as clients see them on real sockets: over the total
//! or over one address's share, a new connection is closed before it is
//! served, and counted; the admin listener answers while the main one is
//! full; a closed connection frees its place. Clients come from several
//! loopback addresses (127.0.0.2, 127.0.0.3, ...: the whole 127/8 is the
//! loopback on Linux). Per core, the caps count the connections of every
//! thread as one.

use crate::serving::{thread_name, Serving};
use limits_server::Runtimes;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;

/// Guards every wait against a hang (the test fails, it does not time).
const HANG: Duration = Duration::from_secs(60);

/// A server with the given caps, a `/hello` route and an admin listener.
struct Running {
    addr: SocketAddr,
    admin: String,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl Running {
    async fn start(max_connections: usize, per_client: usize) -> Running {
        Running::start_on(max_connections, per_client, Runtimes::Caller).await
    }

    /// As [`start`](Self::start), serving on `runtimes`; its `/hello` names
    /// the thread that served it.
    async fn start_on(max_connections: usize, per_client: usize, runtimes: Runtimes) -> Running {
        let mut config = crate::serving::one_rule("100000/s");
        config.bounds.max_connections = max_connections;
        config.bounds.max_connections_per_client = per_client;
        // Long enough that no idle connection of a test is closed under it.
        config.bounds.header_timeout = Duration::from_secs(120);
        let port = crate::server_port::free_port();
        let admin_addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        config.admin = Some(admin_addr);
        config.runtimes = runtimes;
        let app = axum::Router::new().route(
            "/hello",
            axum::routing::get(|| async { format!("{}: hello\n", thread_name()) }),
        );
        let Serving { addr, stop, task } = Serving::start(config, app).await;
        let running = Running {
            addr,
            admin: format!("http://{admin_addr}"),
            stop: Some(stop),
            task,
        };
        // The admin listener binds before the main one says it listens.
        running.metrics().await;
        running
    }

    async fn metrics(&self) -> String {
        let url = format!("{}/metrics", self.admin);
        let get = async {
            loop {
                match reqwest::get(&url).await {
                    Ok(r) => return r.text().await.unwrap(),
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        };
        tokio::time::timeout(HANG, get)
            .await
            .expect("the admin listener answers")
    }

    /// The value of the sample line `name` in /metrics, 0 when absent.
    async fn sample(&self, name: &str) -> f64 {
        sample(&self.metrics().await, name)
    }

    /// Waits until the main listener holds `n` connections open.
    async fn wait_open(&self, n: usize) {
        self.wait_sample(r#"limits_connections_open{listener="main"}"#, n as f64)
            .await;
    }

    /// Waits until the sample `name` reads `value`.
    async fn wait_sample(&self, name: &str, value: f64) {
        let wait = async {
            while self.sample(name).await != value {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(HANG, wait)
            .await
            .unwrap_or_else(|_| panic!("{name} never {value}"));
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(HANG, self.task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// A connection to `addr` from the loopback address `source`.
async fn connect_from(source: &str, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(source.parse().unwrap(), 0))
        .unwrap();
    socket.connect(addr).await.unwrap()
}

/// Sends a request on `stream`: the response's status line, or None when the
/// server closed the connection without a byte.
async fn request(stream: &mut TcpStream) -> Option<String> {
    answer(stream).await.map(|(status, _)| status)
}

/// Sends a request on `stream`: the response's status line and the thread
/// that answered, or None when the server closed the connection without a
/// byte.
async fn answer(stream: &mut TcpStream) -> Option<(String, String)> {
    // A write to a socket the server closed may fail: then nothing was served.
    let _ = stream
        .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        .await;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let read = tokio::time::timeout(HANG, stream.read(&mut buf))
            .await
            .expect("an answer or a close, not silence");
        match read {
            Ok(0) | Err(_) if got.is_empty() => return None,
            Ok(0) | Err(_) => panic!("closed mid-response: {:?}", String::from_utf8_lossy(&got)),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&got);
        if let Some(body) = text.strip_suffix(": hello\n") {
            let status = text.lines().next().unwrap_or_default().to_string();
            let thread = body.rsplit("\r\n").next().unwrap_or_default().to_string();
            return Some((status, thread));
        }
    }
}

/// `n` connections from `source`, each served once and left open.
async fn held(source: &str, addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    held_on(source, addr, n).await.0
}

/// As [`held`], and the threads that served them.
async fn held_on(source: &str, addr: SocketAddr, n: usize) -> (Vec<TcpStream>, BTreeSet<String>) {
    let mut streams = Vec::new();
    let mut threads = BTreeSet::new();
    for _ in 0..n {
        let mut s = connect_from(source, addr).await;
        let (status, thread) = answer(&mut s).await.expect("served");
        assert_eq!(status, "HTTP/1.1 200 OK");
        threads.insert(thread);
        streams.push(s);
    }
    (streams, threads)
}

/// Two worker threads, each accepting for itself.
fn two_threads() -> Runtimes {
    Runtimes::PerCore(NonZeroUsize::new(2).unwrap())
}

/// Connections from this many ports of one address land on both of two
/// threads but with a chance of 2^-15 (the kernel hashes each connection's
/// addresses to one of the sockets).
const SPREAD: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_connections_spread_over_the_threads_and_the_total_counts_them_all() {
    let server = Running::start_on(SPREAD, 100, two_threads()).await;
    let (mut open, threads) = held_on("127.0.0.2", server.addr, SPREAD).await;
    assert_eq!(
        threads,
        BTreeSet::from(["limits-worker-0".to_string(), "limits-worker-1".to_string()]),
        "{SPREAD} connections, served by their own threads"
    );
    server.wait_open(SPREAD).await;
    // Over the total, whichever thread accepts it.
    for source in ["127.0.0.3", "127.0.0.4", "127.0.0.5"] {
        let mut extra = connect_from(source, server.addr).await;
        assert_eq!(request(&mut extra).await, None, "one more from {source}");
    }
    assert_eq!(
        server
            .sample(r#"limits_connections_refused_total{listener="main",reason="total"}"#)
            .await,
        3.0
    );
    // Each connection stays with the thread that accepted it.
    for s in &mut open {
        let (_, first) = answer(s).await.expect("served");
        let (_, second) = answer(s).await.expect("served");
        assert_eq!(first, second);
    }
    drop(open.pop());
    server.wait_open(SPREAD - 1).await;
    held("127.0.0.3", server.addr, 1).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_one_addresss_share_counts_its_connections_on_every_thread() {
    let server = Running::start_on(100, SPREAD, two_threads()).await;
    let (mut mine, threads) = held_on("127.0.0.6", server.addr, SPREAD).await;
    assert_eq!(threads.len(), 2, "{threads:?}");
    for _ in 0..3 {
        let mut over = connect_from("127.0.0.6", server.addr).await;
        assert_eq!(request(&mut over).await, None, "over the address's share");
    }
    let others = held("127.0.0.7", server.addr, 3).await;
    assert_eq!(
        server
            .sample(r#"limits_connections_refused_total{listener="main",reason="per_client"}"#)
            .await,
        3.0
    );
    drop(mine.drain(..2));
    server.wait_open(SPREAD - 2 + others.len()).await;
    held("127.0.0.6", server.addr, 2).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_total_a_connection_is_closed_the_admin_answers_and_a_close_frees_a_place() {
    let server = Running::start(4, 100).await;
    let mut open = held("127.0.0.2", server.addr, 2).await;
    open.extend(held("127.0.0.3", server.addr, 2).await);
    server.wait_open(4).await;

    for source in ["127.0.0.4", "127.0.0.2"] {
        let mut extra = connect_from(source, server.addr).await;
        assert_eq!(
            request(&mut extra).await,
            None,
            "a fifth connection from {source}"
        );
    }
    let text = server.metrics().await;
    if let Err(e) = openmetrics_parser::openmetrics::parse_openmetrics(&text) {
        panic!("the scrape does not parse: {e:?}\n{text}");
    }
    assert_eq!(
        sample(
            &text,
            r#"limits_connections_refused_total{listener="main",reason="total"}"#
        ),
        2.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"limits_connections_refused_total{listener="main",reason="per_client"}"#
        ),
        0.0
    );
    // Every connection held is still served.
    for s in &mut open {
        assert_eq!(request(s).await.as_deref(), Some("HTTP/1.1 200 OK"));
    }

    drop(open.pop());
    server.wait_open(3).await;
    let mut next = connect_from("127.0.0.4", server.addr).await;
    assert_eq!(request(&mut next).await.as_deref(), Some("HTTP/1.1 200 OK"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_one_addresss_share_a_connection_is_closed_and_other_addresses_still_connect() {
    let server = Running::start(100, 3).await;
    let mut mine = held("127.0.0.5", server.addr, 3).await;
    server.wait_open(3).await;
    let mut fourth = connect_from("127.0.0.5", server.addr).await;
    assert_eq!(
        request(&mut fourth).await,
        None,
        "a fourth from one address"
    );
    let others = held("127.0.0.6", server.addr, 3).await;
    assert_eq!(
        server
            .sample(r#"limits_connections_refused_total{listener="main",reason="per_client"}"#)
            .await,
        1.0
    );
    // Its own connections closed, the address connects again.
    drop(mine.drain(..2));
    server.wait_open(4).await;
    held("127.0.0.5", server.addr, 2).await;
    drop(others);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_listener_answers_while_idle_sockets_fill_the_main_one() {
    let server = Running::start(8, 8).await;
    // Idle sockets that never send a byte: accepted, counted, held.
    let mut idle = Vec::new();
    for i in 0..30 {
        idle.push(connect_from(&format!("127.0.1.{}", i % 3 + 1), server.addr).await);
    }
    server
        .wait_sample(
            r#"limits_connections_refused_total{listener="main",reason="total"}"#,
            22.0,
        )
        .await;
    assert_eq!(
        server
            .sample(r#"limits_connections_open{listener="main"}"#)
            .await,
        8.0
    );
    let health = reqwest::get(format!("{}/healthz", server.admin))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    drop(idle);
    server.wait_open(0).await;
    held("127.0.0.7", server.addr, 1).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rls_closes_a_connection_over_one_addresss_share_and_still_answers_others() {
    use crate::rls_common::{Rls, OK};
    let yaml = "domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 100 }\n";
    let rls = Rls::start_with(yaml, |c| {
        c.admin = Some("127.0.0.1:0".parse().unwrap());
        c.max_connections = 10;
        c.max_connections_per_client = 1;
    })
    .await;
    let mut first = connect_from("127.0.0.8", rls.addr).await;
    let mut second = connect_from("127.0.0.8", rls.addr).await;
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(HANG, second.read(&mut buf))
        .await
        .expect("closed at once, not left waiting");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    let still_open = tokio::time::timeout(Duration::from_millis(300), first.read(&mut buf)).await;
    assert!(
        still_open.is_err() || matches!(still_open, Ok(Ok(n)) if n > 0),
        "the first connection from the address is served: {still_open:?}"
    );
    // The test's own client, from 127.0.0.1, is another address.
    assert_eq!(rls.one("d", &[("k", "v")], 0).await.overall_code, OK);
    let text = rls.metrics().await;
    assert_eq!(
        sample(
            &text,
            r#"limits_rls_connections_refused_total{listener="grpc",reason="per_client"}"#
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"limits_rls_connections_open{listener="grpc"}"#),
        2.0,
        "{text}"
    );
    rls.stop().await.unwrap();
}
