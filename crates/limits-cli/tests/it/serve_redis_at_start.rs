//! Redis need not be up when `limits serve` (or `rls`) starts: under
//! Kubernetes or compose it often starts after its clients. The command
//! used to exit 1; now it starts, answers per `--on-store-error` while
//! Redis is unreachable (logged once), and decides in Redis as soon as it
//! answers. `--require-store` keeps the strict start.

use crate::common;
use crate::redis_server;

use common::server::Server;
use redis_server::RedisServer;
use std::time::{Duration, Instant};

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

async fn get(url: &str) -> (u16, String) {
    let r = http().get(url).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// The statuses of `n` requests to `url/`.
async fn statuses(url: &str, n: usize) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(get(&format!("{url}/")).await.0);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_started_before_redis_answers_per_policy_then_limits_in_redis() {
    let port = redis_server::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let rule = ["--limiter", "sliding-log", "--limit", "3", "--window", "1h"];
    let start = |policy: &str, admin: bool| {
        let mut args = rule.to_vec();
        args.extend(["--store", url.as_str(), "--on-store-error", policy]);
        Server::start(&args, admin)
    };
    let deny = start("deny", true);
    let local = start("local", false);
    let admin = deny.admin.clone().expect("--admin");
    // Said once. It is a stderr line and `listening` a stdout line, each
    // read by its own thread, so it may arrive after `listening` did.
    let unreachable = "the Redis store is unreachable at start";
    let mut said = deny
        .startup
        .iter()
        .filter(|l| l.contains(unreachable))
        .count();
    if said == 0 {
        deny.wait_for_line(unreachable);
        said = 1;
    }
    let later = deny.lines_so_far();
    said += later.iter().filter(|l| l.contains(unreachable)).count();
    assert_eq!(said, 1, "{:?} then {later:?}", deny.startup);

    // Nothing listens on the port yet: each answers per its policy.
    assert_eq!(statuses(&deny.url, 4).await, [503, 503, 503, 503]);
    assert_eq!(statuses(&local.url, 5).await, [200, 200, 200, 429, 429]);
    assert_eq!(get(&format!("{admin}/healthz")).await, (200, "ok\n".into()));
    let (code, why) = get(&format!("{admin}/readyz")).await;
    assert_eq!(code, 503, "{why}");
    assert!(why.contains("Redis store is unreachable"), "{why}");

    // Redis comes up on that port: both connect without a restart.
    let redis = RedisServer::start_on(port).expect("redis-server on the port kept free");
    let up = Instant::now();
    deny.wait_for_line("the Redis store answers: connected");
    local.wait_for_line("the Redis store answers: connected");
    eprintln!("connected {:?} after Redis started", up.elapsed());
    assert_eq!(
        get(&format!("{admin}/readyz")).await,
        (200, "ready\n".into())
    );

    // One limit in Redis for both: 3 per hour in all, whatever the local
    // fallback counted while Redis was away.
    assert_eq!(statuses(&deny.url, 2).await, [200, 200]);
    assert_eq!(statuses(&local.url, 2).await, [200, 429]);
    assert_eq!(statuses(&deny.url, 1).await, [429]);
    let keys = redis.integer(&["DBSIZE"]);
    assert!(keys > 0, "no state in Redis");
    assert_eq!(deny.metric("limits_redis_outages_total").await, Some(1.0));
    assert_eq!(deny.metric("limits_redis_healthy").await, Some(1.0));
    let calls = deny.metric("limits_redis_calls_total").await.unwrap();
    assert!(calls >= 3.0, "{calls} calls to Redis");

    // The outage at start was logged once, not per request.
    let said: Vec<String> = deny
        .lines_so_far()
        .into_iter()
        .filter(|l| l.contains("unreachable"))
        .collect();
    assert!(said.is_empty(), "logged again: {said:?}");
}

#[test]
fn require_store_keeps_the_strict_start_and_a_bad_url_is_always_refused() {
    let port = redis_server::free_port().to_string();
    let url = format!("redis://127.0.0.1:{port}");
    let err = Server::try_start(&["--store", &url, "--require-store"], false)
        .err()
        .expect("--require-store exits when Redis does not answer");
    assert!(err.contains("--store") && err.contains(&port), "{err}");
    let err = Server::try_start(&["--store", "etcd://x"], false)
        .err()
        .unwrap();
    assert!(
        err.contains("--store") && err.contains("memcached://"),
        "{err}"
    );
    let err = Server::try_start(&["--store", "redis://127.0.0.1:99999"], false)
        .err()
        .expect("a port out of range can never connect");
    assert!(err.contains("--store"), "{err}");
}

#[test]
fn rls_starts_before_redis_answers() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: day, requests_per_unit: 2}\n";
    common::write(dir.path(), "edge.yaml", yaml);
    let url = format!("redis://127.0.0.1:{}", redis_server::free_port());
    let config = dir.path().to_str().unwrap();
    let rls = Server::try_start_command("rls", &["--config", config, "--store", &url], false);
    assert!(rls.is_ok(), "{:?}", rls.err());
}
