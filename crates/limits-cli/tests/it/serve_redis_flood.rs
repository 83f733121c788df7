//! `limits serve --store redis://...` against a key flood and an outage:
//! a full Redis (OOM) is denied by default and counted, a Redis that may
//! evict the limiter's keys is warned about at start, one address's flood
//! of new keys is cut at `--max-new-keys-per-client` while another address
//! passes, and `--on-store-error local` (the default) still limits while
//! Redis is down.

use crate::common;
use crate::redis_server;

use common::server::Server;
use redis_server::RedisServer;
use std::time::Duration;

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// The status of `GET url/` keyed by `key`, from the client `from` (a
/// trusted proxy's X-Forwarded-For).
async fn status(url: &str, key: &str, from: &str) -> u16 {
    http()
        .get(format!("{url}/"))
        .header("x-key", key)
        .header("x-forwarded-for", from)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// A rule keyed by X-Key, 3 per minute, in the Redis at `url`, the client
/// read from 127.0.0.1's X-Forwarded-For; then `extra`.
fn serve(url: &str, extra: &[&str]) -> Server {
    let mut args = vec![
        "--limiter",
        "sliding-log",
        "--limit",
        "3",
        "--window",
        "60s",
        "--key",
        "header:X-Key",
        "--trust-proxy",
        "127.0.0.1/32",
        "--store",
        url,
        "--store-timeout",
        "500ms",
    ];
    args.extend(extra);
    Server::start(&args, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_redis_is_denied_by_default_and_counted_and_allowed_only_when_asked() {
    let redis =
        RedisServer::start_with(&["--maxmemory", "3mb", "--maxmemory-policy", "noeviction"]);
    let url = redis.url();
    let default = serve(&url, &[]);
    let allow = serve(&url, &["--on-store-full", "allow"]);
    assert_eq!(status(&default.url, "before", "198.51.100.1").await, 200);
    redis.fill_until_oom();
    for i in 0..5 {
        let key = format!("fresh{i}");
        assert_eq!(
            status(&default.url, &key, "198.51.100.1").await,
            503,
            "{key}"
        );
        assert_eq!(status(&allow.url, &key, "198.51.100.1").await, 200, "{key}");
    }
    default.wait_for_line("the Redis store is FULL");
    let full = default.metric("limits_redis_full_answers_total").await;
    assert_eq!(full, Some(5.0), "every OOM answer counted");
    let failed = "limits_decisions_total{rule=\"default\",outcome=\"store_failed\"}";
    assert_eq!(default.metric(failed).await, Some(5.0));
    assert_eq!(
        default.metric("limits_redis_outages_total").await,
        Some(0.0),
        "a full Redis is not an outage"
    );
    assert_eq!(default.metric("limits_redis_healthy").await, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_that_may_evict_keys_is_warned_about_at_start_and_noeviction_is_not() {
    let needle = "may EVICT the limiter's keys";
    for (policy, warned) in [
        ("allkeys-lru", true),
        ("volatile-lru", true),
        ("noeviction", false),
    ] {
        let redis = RedisServer::start_with(&["--maxmemory", "3mb", "--maxmemory-policy", policy]);
        let server = serve(&redis.url(), &[]);
        let evictable = server.metric("limits_redis_evictable").await;
        assert_eq!(evictable, Some(f64::from(u8::from(warned))), "{policy}");
        let warnings = server.metric("limits_redis_eviction_warnings_total").await;
        assert_eq!(warnings, Some(f64::from(u8::from(warned))), "{policy}");
        let mut lines = server.startup.clone();
        lines.extend(server.lines_so_far());
        let said: Vec<&String> = lines.iter().filter(|l| l.contains(needle)).collect();
        if warned {
            let line = match said.first() {
                Some(line) => (*line).clone(),
                None => server.wait_for_line(needle),
            };
            assert!(
                line.contains(policy) && line.contains("noeviction"),
                "{line}"
            );
        } else {
            assert!(said.is_empty(), "{policy}: {said:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_keys_from_one_address_is_cut_at_the_cap_and_another_address_passes() {
    let redis = RedisServer::start();
    let server = serve(&redis.url(), &["--max-new-keys-per-client", "20/min"]);
    let flooder = "198.51.100.7";
    let mut answers = Vec::new();
    for i in 0..60 {
        answers.push(status(&server.url, &format!("rnd{i}"), flooder).await);
    }
    let passed = answers.iter().filter(|&&s| s == 200).count();
    let refused = answers.iter().filter(|&&s| s == 429).count();
    assert_eq!((passed, refused), (20, 40), "{answers:?}");
    assert!(answers[..20].iter().all(|&s| s == 200), "the first 20 pass");
    assert_eq!(redis.integer(&["DBSIZE"]), 20, "Redis holds what passed");
    // The flooder's own keys still count against their limit (3 a minute).
    assert_eq!(status(&server.url, "rnd0", flooder).await, 200);
    // Another address is unaffected.
    assert_eq!(status(&server.url, "mine", "203.0.113.9").await, 200);
    assert_eq!(status(&server.url, "rnd59", "203.0.113.9").await, 200);
    assert_eq!(
        server.metric("limits_redis_new_keys_refused_total").await,
        Some(40.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_store_error_local_the_default_limits_during_an_outage() {
    let mut redis = RedisServer::start();
    let url = redis.url();
    let default = serve(&url, &[]);
    let local = serve(&url, &["--on-store-error", "local"]);
    assert_eq!(status(&default.url, "warm", "198.51.100.1").await, 200);
    assert_eq!(status(&local.url, "warm", "198.51.100.1").await, 200);
    redis.stop();
    for server in [&default, &local] {
        let mut answers = Vec::new();
        for _ in 0..10 {
            answers.push(status(&server.url, "alice", "198.51.100.2").await);
        }
        assert_eq!(answers, [[200; 3].as_slice(), &[429; 7]].concat());
        server.wait_for_line("the Redis store is unreachable");
        let decided = server.metric("limits_redis_local_decisions_total").await;
        assert_eq!(decided, Some(10.0));
    }
}
