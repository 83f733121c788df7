//! The proxy behind the server on either runtime, seen from the upstream:
//! on the caller's runtime one pool serves every connection; per core each
//! thread keeps its own, so requests made one at a time over connections
//! spread on two threads reach the upstream on exactly two connections.

use crate::serving::Serving;
use limits_server::{Backend, Proxy, Runtimes};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

/// An upstream answering each request with the port its connection came
/// from (one port per connection of the proxy's).
async fn port_echo() -> SocketAddr {
    use axum::extract::ConnectInfo;
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
            peer.port().to_string()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, app).await.unwrap();
    });
    addr
}

/// The upstream connections 16 client connections used, two requests each,
/// one request at a time, through a proxy served on `runtimes`.
async fn upstream_connections(runtimes: Runtimes) -> usize {
    let upstream = port_echo().await;
    let mut config = crate::serving::one_rule("100000/s");
    config.runtimes = runtimes;
    let url = format!("http://{upstream}");
    let proxy = Proxy::new(&url, Duration::from_secs(30)).unwrap();
    let serving = Serving::start(config, Backend::proxy(proxy, url)).await;
    let mut ports = BTreeSet::new();
    for _ in 0..16 {
        // A client of its own: a new connection, kept for its two requests.
        let client = reqwest::Client::new();
        for _ in 0..2 {
            let r = client
                .get(format!("http://{}/", serving.addr))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            ports.insert(r.text().await.unwrap());
        }
    }
    serving.stop.send(()).unwrap();
    serving.task.await.unwrap().expect("stopped cleanly");
    ports.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_callers_runtime_one_pool_serves_every_connection() {
    assert_eq!(upstream_connections(Runtimes::Caller).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_each_thread_keeps_its_own_upstream_connections() {
    let two = Runtimes::PerCore(NonZeroUsize::new(2).unwrap());
    // 16 connections land on both threads but with a chance of 2^-15.
    assert_eq!(upstream_connections(two).await, 2);
}
