//! Shutdown as a client sees it on a real socket: an idle keep-alive
//! connection is closed at once, a request in flight is answered in full
//! before its connection closes, and the server returns only after that
//! (the drain timeout is an hour, so it is the drain, not the timeout).

use limits::{Algorithm, Rule};
use limits_http::KeySpec;
use limits_server::{RulesSource, Server, ServerConfig};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Semaphore};

/// Guards every wait against a hang (the test fails, it does not time).
const HANG: Duration = Duration::from_secs(60);

async fn guarded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(HANG, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: still waiting after {HANG:?}"))
}

/// Reads one response (head and `Content-Length` body) from `stream`.
async fn response(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    loop {
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                return text;
            }
        }
        let mut buf = [0u8; 4096];
        let n = guarded("a response", stream.read(&mut buf)).await.unwrap();
        assert!(n > 0, "closed mid-response: {text:?}");
        got.extend_from_slice(&buf[..n]);
    }
}

/// Whether the server closed `stream` (no bytes, end of stream).
async fn closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    guarded("the close", stream.read(&mut buf)).await.unwrap() == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_idle_connections_and_answers_requests_in_flight() {
    let entered = Arc::new(Semaphore::new(0));
    let release = Arc::new(Semaphore::new(0));
    let app = {
        use axum::routing::get;
        let (entered, release) = (entered.clone(), release.clone());
        axum::Router::new()
            .route("/hello", get(|| async { "hello\n" }))
            .route(
                "/slow",
                get(move || async move {
                    entered.add_permits(1);
                    release.acquire().await.unwrap().forget();
                    "slow but answered\n"
                }),
            )
    };
    let rule = Rule::new(Algorithm::TokenBucket, "1000/s".parse().unwrap());
    let mut config = ServerConfig::new(RulesSource::One {
        rule,
        key: KeySpec::ip(),
        cost: 1,
    });
    config.reload_on_hangup = false;
    config.bounds.drain_timeout = Duration::from_secs(3600);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::new(config).unwrap();
    let task = tokio::spawn(server.serve_on(listener, app, async {
        let _ = stopped.await;
    }));

    // An idle keep-alive connection that has served two requests.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    for _ in 0..2 {
        idle.write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let answer = response(&mut idle).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("hello\n"), "{answer}");
    }
    // A request in flight when the shutdown comes.
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    guarded("the slow request", entered.acquire())
        .await
        .unwrap()
        .forget();

    stop.send(()).unwrap();
    assert!(closed(&mut idle).await, "the idle connection is closed");
    assert!(!task.is_finished(), "the server waits for the request");
    release.add_permits(1);
    let answer = response(&mut busy).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("slow but answered\n"), "{answer}");
    assert!(closed(&mut busy).await, "then its connection is closed");
    guarded("the server's return", task)
        .await
        .unwrap()
        .expect("stopped cleanly");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}
