//! `limits serve --store redis://...` exports this host's clock minus
//! Redis's `TIME` on the admin metrics, as a gauge in seconds.

use crate::common;
use crate::redis_server;

use common::server::Server;
use redis_server::RedisServer;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clock_offset_gauge_is_on_the_admin_metrics_and_small() {
    let redis = RedisServer::start();
    let url = redis.url();
    let server = Server::start(&["--store", &url, "--store-timeout", "2s"], true);
    let admin = server.admin.clone().expect("--admin");
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("# UNIT limits_redis_clock_offset_seconds seconds"),
        "{text}"
    );
    // Absent until measured (at connection, so within moments).
    let deadline = Instant::now() + Duration::from_secs(5);
    let offset = loop {
        if let Some(v) = server.metric("limits_redis_clock_offset_seconds{} ").await {
            break v;
        }
        assert!(Instant::now() < deadline, "no clock offset within 5 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // One host, one clock: within half a round trip and some scheduling.
    assert!(offset.abs() < 0.05, "{offset} s");
}
