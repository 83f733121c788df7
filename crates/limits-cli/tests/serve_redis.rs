//! `limits serve --store redis://...`: several instances, one exact limit,
//! on a real redis-server; and what they do while Redis is down.

mod common;
#[path = "../../limits-redis/tests/common/redis_server.rs"]
mod redis_server;

use common::server::Server;
use redis_server::RedisServer;
use std::time::{Duration, Instant};

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// 8 clients for `run`, each sending to the servers in turn; the number of
/// 200s and 429s (anything else fails the test).
async fn load(urls: &[String], clients: usize, run: Duration) -> (u64, u64) {
    let deadline = Instant::now() + run;
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let urls = urls.to_vec();
            tokio::spawn(async move {
                let http = client();
                let (mut ok, mut limited) = (0, 0);
                let mut i = c;
                while Instant::now() < deadline {
                    let url = &urls[i % urls.len()];
                    i += 1;
                    let status = http.get(format!("{url}/")).send().await.unwrap().status();
                    match status.as_u16() {
                        200 => ok += 1,
                        429 => limited += 1,
                        other => panic!("{url}: {other}"),
                    }
                }
                (ok, limited)
            })
        })
        .collect();
    let mut total = (0, 0);
    for task in tasks {
        let (ok, limited) = task.await.unwrap();
        total = (total.0 + ok, total.1 + limited);
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_on_one_redis_allow_exactly_the_limit_between_them() {
    let redis = RedisServer::start();
    let url = redis.url();
    let args = [
        "--limiter",
        "sliding-log",
        "--limit",
        "50",
        "--window",
        "10s",
        "--store",
        &url,
        "--store-timeout",
        "2s",
    ];
    let a = Server::start(&args, false);
    let b = Server::start(&args, false);
    let (ok, limited) = load(&[a.url.clone(), b.url.clone()], 8, Duration::from_secs(3)).await;
    assert_eq!(
        ok, 50,
        "exactly the limit passes across both instances ({limited} limited)"
    );
    assert!(limited > 50, "the clients kept trying: {limited}");
}

#[test]
fn a_bad_store_url_or_an_unreachable_redis_stops_serve_with_the_reason() {
    let err = Server::try_start(&["--store", "memcached://x"], false)
        .err()
        .unwrap();
    assert!(err.contains("--store"), "{err}");
    let port = redis_server::free_port().to_string();
    let url = format!("redis://127.0.0.1:{port}");
    let err = Server::try_start(&["--store", &url], false).err().unwrap();
    assert!(err.contains("--store") && err.contains(&port), "{err}");
}
