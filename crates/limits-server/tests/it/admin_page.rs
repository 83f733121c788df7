//! The admin listener's live page: `/` and its script, and the data it
//! reads every second from `/dashboard.json`: each rule as written with
//! its decisions per second, the keys limited most, the store's health and
//! the latency of awaited decisions. Read-only, bounded, and its own
//! (nothing fetched from elsewhere). The page in a real browser is
//! `limits-cli`'s `admin_page_in_a_browser`.

use crate::admin_counters::start;
use crate::redis_server::RedisServer;
use limits::{Algorithm, Rule};
use limits_http::KeySpec;
use limits_server::{Backend, RedisConnection, RedisOptions, RulesSource, ServerConfig};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;

fn config(rule: &str, key: KeySpec) -> ServerConfig {
    let rule = Rule::new(Algorithm::SlidingLog, rule.parse().unwrap());
    ServerConfig::new(RulesSource::One { rule, key, cost: 1 })
}

fn app() -> Backend {
    Backend::new(
        "app",
        axum::Router::new().route("/", axum::routing::get(|| async { "ok" })),
    )
}

async fn dashboard(admin: SocketAddr) -> Value {
    let answer = reqwest::get(format!("http://{admin}/dashboard.json"))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-type"], "application/json");
    assert_eq!(answer.headers()["cache-control"], "no-store");
    serde_json::from_str(&answer.text().await.unwrap()).unwrap()
}

async fn ask(main: SocketAddr, key: &str) -> u16 {
    let http = reqwest::Client::new();
    let answer = http
        .get(format!("http://{main}/"))
        .header("x-api-key", key)
        .send()
        .await
        .unwrap();
    answer.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_names_each_rule_its_seconds_and_the_keys_limited_most() {
    let key: KeySpec = "header:x-api-key".parse().unwrap();
    let (main, admin, stop) = start(config("3/h", key), app()).await;
    // The sampler's first second is its baseline: traffic comes after it.
    while dashboard(admin).await["rules"][0]["per_second"]
        .as_array()
        .unwrap()
        .is_empty()
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for _ in 0..10 {
        ask(main, "flood").await;
    }
    for _ in 0..4 {
        ask(main, "quiet").await;
    }
    // The sampler's next second holds them.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let d = dashboard(admin).await;
    let rule = &d["rules"][0];
    assert_eq!(
        rule["description"],
        "default: sliding-log 3/h, any method /, by header:x-api-key, in memory"
    );
    assert_eq!(
        (
            rule["allowed_total"].as_u64(),
            rule["limited_total"].as_u64()
        ),
        (Some(6), Some(8))
    );
    assert_eq!(rule["keys"], 2);
    let seconds = rule["per_second"].as_array().unwrap();
    let sum = |field: &str| {
        seconds
            .iter()
            .map(|s| s[field].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!((sum("allowed"), sum("limited")), (6, 8), "{seconds:?}");
    let limited = d["limited_keys"].as_array().unwrap();
    assert_eq!(limited.len(), 2);
    assert_eq!(limited[0]["key"], "header:x-api-key=flood");
    assert_eq!(limited[0]["refusals"], 7);
    assert_eq!(limited[1]["refusals"], 1);
    let retry = limited[0]["retry_in_seconds"].as_f64().unwrap();
    assert!(retry > 3500.0 && retry <= 3600.0, "{retry}");
    assert_eq!(d["store"]["kind"], "memory");
    assert_eq!(d["store"]["on_store_error"], Value::Null);
    assert_eq!(
        d["latency"],
        Value::Null,
        "in memory, decisions are not timed"
    );
    assert_eq!(d["seconds"], 300);
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_the_page_shows_its_health_and_the_latency_of_its_decisions() {
    let redis = RedisServer::start();
    let connection = RedisConnection::connect(&redis.url(), RedisOptions::default())
        .await
        .unwrap();
    let mut config = config("3/min", KeySpec::ip());
    config.stores.redis = Some(connection);
    let (main, admin, stop) = start(config, app()).await;
    for _ in 0..20 {
        ask(main, "").await;
    }
    let d = dashboard(admin).await;
    assert_eq!(d["store"]["kind"], "redis");
    assert_eq!(d["store"]["healthy"], true);
    assert_eq!(d["store"]["on_store_error"], "allow");
    let latency = &d["latency"];
    assert!(latency["timed"].as_u64().unwrap() >= 3, "{latency}");
    let (p50, p99) = (
        latency["p50_ms"].as_f64().unwrap(),
        latency["p99_ms"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99 && p99 < 1000.0, "{latency}");
    assert_eq!(d["rules"][0]["keys"], Value::Null, "Redis keeps the keys");
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_read_only_and_loads_nothing_from_elsewhere() {
    let (_main, admin, stop) = start(config("3/h", KeySpec::ip()), app()).await;
    let http = reqwest::Client::new();
    let page = http.get(format!("http://{admin}/")).send().await.unwrap();
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        policy.starts_with("default-src 'none'; script-src 'self'; connect-src 'self'"),
        "{policy}"
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("<script src=\"/page.js\"></script>"));
    let script = http
        .get(format!("http://{admin}/page.js"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for text in [&html, &script] {
        let elsewhere =
            text.matches("://").count() - text.matches("http://www.w3.org/2000/svg").count();
        assert_eq!(elsewhere, 0, "an address beside the SVG namespace");
        assert!(
            !text.contains("innerHTML"),
            "text from clients is set as text"
        );
    }
    for path in ["/", "/dashboard.json"] {
        let posted = http
            .post(format!("http://{admin}{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(posted.status(), 405, "{path}");
    }
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rls_serves_the_page_with_its_limits_and_the_keys_over_them() {
    use crate::rls_common::{Rls, OK, OVER};
    let yaml = "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 2}\n";
    let rls = Rls::start_with(yaml, |c| c.admin = Some("127.0.0.1:0".parse().unwrap())).await;
    let admin: SocketAddr = rls
        .admin
        .as_ref()
        .unwrap()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    while dashboard(admin).await["rules"][0]["per_second"]
        .as_array()
        .unwrap()
        .is_empty()
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        rls.codes("api", &[("user", "mallory")], 5).await,
        [OK, OK, OVER, OVER, OVER]
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let d = dashboard(admin).await;
    let rule = &d["rules"][0];
    assert_eq!(rule["name"], "api.user");
    assert_eq!(rule["description"], "api.user: fixed-window 2/h, in memory");
    assert_eq!(
        (
            rule["allowed_total"].as_u64(),
            rule["limited_total"].as_u64()
        ),
        (Some(2), Some(3))
    );
    let seconds = rule["per_second"].as_array().unwrap();
    let limited: u64 = seconds.iter().map(|s| s["limited"].as_u64().unwrap()).sum();
    assert_eq!(limited, 3, "{seconds:?}");
    let key = &d["limited_keys"][0];
    assert_eq!(
        (key["rule"].as_str(), key["refusals"].as_u64()),
        (Some("api.user"), Some(3))
    );
    assert!(key["key"].as_str().unwrap().contains("mallory"), "{key}");
    assert_eq!(d["store"]["kind"], "memory");
    let page = reqwest::get(format!("http://{admin}/")).await.unwrap();
    assert_eq!(page.status(), 200);
    rls.stop().await.unwrap();
}
