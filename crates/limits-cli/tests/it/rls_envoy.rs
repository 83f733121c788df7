//! `limits rls` behind a real Envoy: HTTP requests through Envoy's rate limit
//! filter, which asks `limits rls` over gRPC, to a recording upstream. Each
//! test asserts what the client got and what the upstream actually served.

use crate::common;
use crate::redis_server;

use common::envoy::{self, Envoy};
use common::server::Server;
use common::upstream::RecordingUpstream;
use common::{client, header};

/// A `limits rls` process serving the rate limit config `yaml` (one domain
/// file), on free ports, with its admin listener and our draft header
/// fields beside Envoy's own.
fn rls(yaml: &str, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "config.yaml", yaml);
    let config = dir.path().to_str().unwrap().to_string();
    let mut args = vec!["--config", config.as_str(), "--response-headers", "draft"];
    args.extend_from_slice(extra);
    (Server::start_command("rls", &args, true), dir)
}

/// Envoy in front of `upstream`, asking `rls` with the route's `rate_limits`.
fn envoy(
    upstream: &RecordingUpstream,
    rls: &str,
    rate_limits: &str,
    failure_mode_deny: bool,
) -> Envoy {
    let upstream = upstream.url.trim_start_matches("http://");
    Envoy::start(&envoy::config(
        upstream,
        rls,
        "edge",
        rate_limits,
        failure_mode_deny,
    ))
}

/// Sends `n` GETs with `headers`; the status of each, in order.
async fn statuses(envoy: &Envoy, n: usize, headers: &[(&str, &str)]) -> Vec<u16> {
    let client = client();
    let mut out = Vec::new();
    for _ in 0..n {
        let mut request = client.get(format!("{}/api", envoy.url));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        out.push(request.send().await.unwrap().status().as_u16());
    }
    out
}

const PER_CLIENT: &str = "\
domain: edge
algorithm: sliding-log
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 5, name: per_client }
";

#[tokio::test]
async fn envoy_answers_429_at_exactly_the_limit_and_the_upstream_serves_only_the_allowed() {
    let upstream = RecordingUpstream::start();
    let (rls, _dir) = rls(PER_CLIENT, &[]);
    let envoy = envoy(
        &upstream,
        &rls.url,
        "- actions: [{ remote_address: {} }]",
        true,
    );
    let got = statuses(&envoy, 8, &[]).await;
    assert_eq!(got, [200, 200, 200, 200, 200, 429, 429, 429]);
    assert_eq!(
        upstream.request_lines().len(),
        5,
        "the upstream serves what was allowed"
    );
    assert_eq!(envoy.stat("cluster.upstream.ratelimit.ok"), Some(5));
    assert_eq!(envoy.stat("cluster.upstream.ratelimit.over_limit"), Some(3));
}

#[tokio::test]
async fn envoy_responses_carry_envoys_headers_and_ours() {
    let upstream = RecordingUpstream::start();
    let (rls, _dir) = rls(PER_CLIENT, &[]);
    let envoy = envoy(
        &upstream,
        &rls.url,
        "- actions: [{ remote_address: {} }]",
        true,
    );
    let client = client();
    let url = format!("{}/api", envoy.url);
    let mut remaining = Vec::new();
    for _ in 0..5 {
        let r = client.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200);
        // Envoy's own (draft 03) header, from the descriptor status...
        assert_eq!(
            header(&r, "x-ratelimit-limit"),
            "5, 5;w=60;name=\"per_client\""
        );
        remaining.push(header(&r, "x-ratelimit-remaining"));
        // ...and ours, from response_headers_to_add, on allowed responses too.
        assert!(
            header(&r, "ratelimit-policy").contains("q=5;w=60"),
            "{:?}",
            r.headers()
        );
        assert!(header(&r, "ratelimit").contains(";r="), "{:?}", r.headers());
        assert_eq!(header(&r, "retry-after"), "", "no Retry-After when allowed");
    }
    assert_eq!(remaining, ["4", "3", "2", "1", "0"]);

    let r = client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "x-envoy-ratelimited"), "true");
    assert_eq!(header(&r, "x-ratelimit-remaining"), "0");
    // The first of the 5 requests leaves the sliding window 60 s after it
    // was sent: a few ms ago, so the wait is 60 s rounded up to whole seconds.
    let retry: u64 = header(&r, "retry-after").parse().unwrap();
    assert!((59..=60).contains(&retry), "Retry-After {retry}");
    let reset: u64 = header(&r, "x-ratelimit-reset").parse().unwrap();
    assert_eq!(
        reset, retry,
        "Envoy's reset is the time the request could pass"
    );
    assert!(header(&r, "ratelimit").contains("r=0"), "{:?}", r.headers());
}

#[tokio::test]
async fn envoy_lets_shadow_mode_over_the_limit_through_and_rls_counts_it() {
    let yaml = "\
domain: edge
descriptors:
  - key: api_key
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
";
    let upstream = RecordingUpstream::start();
    let (rls, _dir) = rls(yaml, &[]);
    let actions =
        "- actions: [{ request_headers: { header_name: x-api-key, descriptor_key: api_key } }]";
    let envoy = envoy(&upstream, &rls.url, actions, true);
    let got = statuses(&envoy, 5, &[("x-api-key", "k1")]).await;
    assert_eq!(got, [200; 5], "shadow mode never enforces");
    assert_eq!(upstream.request_lines().len(), 5);
    let shadowed = rls.metric("limits_rls_shadow_mode_total{").await;
    assert_eq!(
        shadowed,
        Some(3.0),
        "3 of 5 were over the limit in shadow mode"
    );
}

#[tokio::test]
async fn envoy_applies_the_replacing_limit_instead_of_the_replaced_one() {
    let yaml = "\
domain: edge
algorithm: sliding-log
descriptors:
  - key: api_key
    rate_limit: { unit: minute, requests_per_unit: 2, name: per_key }
  - key: plan
    value: gold
    rate_limit:
      unit: minute
      requests_per_unit: 4
      replaces: [{ name: per_key }]
";
    let upstream = RecordingUpstream::start();
    let (rls, _dir) = rls(yaml, &[]);
    let actions = "\
- actions: [{ request_headers: { header_name: x-api-key, descriptor_key: api_key } }]
- actions: [{ request_headers: { header_name: x-plan, descriptor_key: plan } }]";
    let envoy = envoy(&upstream, &rls.url, actions, true);
    let gold = statuses(&envoy, 6, &[("x-api-key", "k1"), ("x-plan", "gold")]).await;
    assert_eq!(
        gold,
        [200, 200, 200, 200, 429, 429],
        "gold replaces per_key: 4, not 2"
    );
    let plain = statuses(&envoy, 3, &[("x-api-key", "k2")]).await;
    assert_eq!(plain, [200, 200, 429], "without the plan, per_key applies");
}

#[tokio::test]
async fn envoy_decides_a_descriptor_with_two_rates_all_or_nothing() {
    let yaml = "\
domain: edge
algorithm: sliding-log
descriptors:
  - key: remote_address
    rate_limit:
      rates:
        - { unit: second, requests_per_unit: 3 }
        - { window: 1h, requests_per_window: 4 }
";
    let upstream = RecordingUpstream::start();
    let (rls, _dir) = rls(yaml, &[]);
    let envoy = envoy(
        &upstream,
        &rls.url,
        "- actions: [{ remote_address: {} }]",
        true,
    );
    let first = statuses(&envoy, 5, &[]).await;
    assert_eq!(first, [200, 200, 200, 429, 429], "3 per second");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // The two denials charged nothing to the hourly rate: one more passes.
    let second = statuses(&envoy, 2, &[]).await;
    assert_eq!(second, [200, 429], "4 per hour");
    assert_eq!(upstream.request_lines().len(), 4);
}

#[tokio::test]
async fn envoy_decides_by_failure_mode_deny_when_the_store_is_down() {
    let mut redis = redis_server::RedisServer::start();
    let upstream = RecordingUpstream::start();
    let store = ["--store", &redis.url(), "--on-store-error", "unavailable"];
    let (rls, _dir) = rls(PER_CLIENT, &store);
    let open = envoy(
        &upstream,
        &rls.url,
        "- actions: [{ remote_address: {} }]",
        false,
    );
    assert_eq!(
        statuses(&open, 2, &[]).await,
        [200; 2],
        "Redis up: decided there"
    );
    redis.stop();
    // limits rls answers UNAVAILABLE (--on-store-error unavailable), and
    // Envoy's failure_mode_deny decides.
    assert_eq!(
        statuses(&open, 3, &[]).await,
        [200; 3],
        "failure_mode_deny: false lets through"
    );
    assert_eq!(
        open.stat("cluster.upstream.ratelimit.failure_mode_allowed"),
        Some(3)
    );
    let closed = envoy(
        &upstream,
        &rls.url,
        "- actions: [{ remote_address: {} }]",
        true,
    );
    let got = statuses(&closed, 2, &[]).await;
    assert!(
        got.iter().all(|&s| s >= 500),
        "failure_mode_deny: true refuses: {got:?}"
    );
    assert_eq!(upstream.request_lines().len(), 5);
}

/// With the rate limit service unreachable and `failure_mode_deny: false`,
/// Envoy lets every request through to the upstream.
#[tokio::test]
async fn envoy_fails_open_when_the_rate_limit_service_is_down() {
    let upstream = RecordingUpstream::start();
    // Below the ephemeral range: no other test's server is given it.
    let rls = format!("127.0.0.1:{}", crate::server_port::free_port());
    let envoy = envoy(
        &upstream,
        &rls,
        "- actions: [{ remote_address: {} }]",
        false,
    );
    assert_eq!(statuses(&envoy, 3, &[]).await, [200; 3]);
    assert_eq!(upstream.request_lines().len(), 3);
    assert!(
        envoy
            .stat("cluster.rls.upstream_cx_connect_fail")
            .unwrap_or(0)
            >= 1
    );
}
