//! Shutdown as a client sees it on a real socket: an idle keep-alive
//! connection is closed at once, a request in flight is answered in full
//! before its connection closes, and the server returns only after that
//! (the drain timeout is an hour, so it is the drain, not the timeout);
//! per core, on every thread.

use crate::serving::{thread_name, Serving};
use limits_server::Runtimes;
use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

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
    drains(Runtimes::Caller, 1).await;
}

/// Per core, every thread is told, and the server returns once each has
/// answered what it was serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_every_thread_closes_its_idle_connections_and_answers_its_requests_in_flight() {
    drains(Runtimes::PerCore(NonZeroUsize::new(2).unwrap()), 16).await;
}

/// `n` idle keep-alive connections and `n` requests in flight when the
/// shutdown comes, on `runtimes`; with several threads, the requests in
/// flight on more than one (16 of them land on one of two threads with a
/// chance of 2^-15).
async fn drains(runtimes: Runtimes, n: usize) {
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
                    format!("slow but answered by {}\n", thread_name())
                }),
            )
    };
    let mut config = crate::serving::one_rule("1000/s");
    config.bounds.drain_timeout = Duration::from_secs(3600);
    config.runtimes = runtimes;
    let Serving { addr, stop, task } = Serving::start(config, app).await;

    // Idle keep-alive connections that have served two requests.
    let mut idle = Vec::new();
    for _ in 0..n {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        for _ in 0..2 {
            stream
                .write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                .await
                .unwrap();
            let answer = response(&mut stream).await;
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            assert!(answer.ends_with("hello\n"), "{answer}");
        }
        idle.push(stream);
    }
    // Requests in flight when the shutdown comes.
    let mut busy = Vec::new();
    for _ in 0..n {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        busy.push(stream);
    }
    guarded("the slow requests", entered.acquire_many(n as u32))
        .await
        .unwrap()
        .forget();

    stop.send(()).unwrap();
    for stream in &mut idle {
        assert!(closed(stream).await, "an idle connection is closed");
    }
    assert!(!task.is_finished(), "the server waits for the requests");
    release.add_permits(n);
    let mut threads = BTreeSet::new();
    for stream in &mut busy {
        let answer = response(stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let thread = answer
            .rsplit_once("slow but answered by ")
            .unwrap_or_else(|| panic!("{answer}"))
            .1;
        threads.insert(thread.trim_end().to_string());
        assert!(closed(stream).await, "then its connection is closed");
    }
    if let Runtimes::PerCore(workers) = runtimes {
        assert_eq!(threads.len(), workers.get(), "{threads:?}");
    }
    guarded("the server's return", task)
        .await
        .unwrap()
        .expect("stopped cleanly");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}
