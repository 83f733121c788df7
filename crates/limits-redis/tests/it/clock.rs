//! The clock difference between this host and Redis's `TIME`, measured in
//! the background on a real redis-server (and a cluster): on one host, it
//! is small.

use crate::redis_server;

use limits_redis::{RedisConnection, RedisOptions};
use redis_server::{RedisCluster, RedisServer};
use std::time::{Duration, Instant};

/// The offset once measured (within 5 s, or the test fails).
async fn measured(conn: &RedisConnection) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(offset) = conn.clock_offset_micros() {
            return offset;
        }
        assert!(Instant::now() < deadline, "no clock measurement within 5 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn options() -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_millis(500),
        ..RedisOptions::default()
    }
}

/// Same host, same clock: off by no more than half a round trip and the
/// scheduling around it (Redis's TIME is the wall clock too).
const SAME_HOST_US: i64 = 50_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clock_difference_is_measured_at_connection_and_small_on_one_host() {
    let server = RedisServer::start();
    let conn = RedisConnection::connect(&server.url(), options())
        .await
        .unwrap();
    let offset = measured(&conn).await;
    assert!(offset.abs() < SAME_HOST_US, "{offset} us on one host");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clock_difference_is_measured_on_a_cluster_too() {
    let cluster = RedisCluster::start();
    let conn = RedisConnection::connect(&cluster.url(), options())
        .await
        .unwrap();
    let offset = measured(&conn).await;
    assert!(offset.abs() < SAME_HOST_US, "{offset} us on one host");
}
