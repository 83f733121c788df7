//! `limits rls` behind a real Envoy: HTTP through Envoy's rate limit filter.

mod common;

use common::envoy::{self, Envoy};
use common::upstream::RecordingUpstream;

/// With the rate limit service unreachable and `failure_mode_deny: false`,
/// Envoy lets every request through to the upstream.
#[tokio::test]
async fn envoy_fails_open_when_the_rate_limit_service_is_down() {
    let upstream = RecordingUpstream::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let rls = closed.local_addr().unwrap().to_string();
    drop(closed);
    let config = envoy::config(
        upstream.url.trim_start_matches("http://"),
        &rls,
        "test",
        "- actions: [{ remote_address: {} }]",
        false,
    );
    let envoy = Envoy::start(&config);
    let client = common::client();
    for _ in 0..3 {
        let r = client
            .get(format!("{}/hello", envoy.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    assert_eq!(upstream.request_lines().len(), 3);
    assert!(
        envoy
            .stat("cluster.rls.upstream_cx_connect_fail")
            .unwrap_or(0)
            >= 1
    );
}
