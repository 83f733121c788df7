//! The admin endpoint's counts are counters: evictions, upstream and client
//! errors and the Redis store's counts were exposed as gauges, which
//! Prometheus's `rate()` and `increase()` do not take; each is now a
//! counter family whose samples end in `_total`, as the scrape parser
//! reads them back.

use crate::redis_server::RedisServer;
use limits::{Algorithm, Rule};
use limits_http::KeySpec;
use limits_server::{
    Backend, Proxy, RedisConnection, RedisOptions, RulesSource, Server, ServerConfig, ServerEvent,
    StoreOptions,
};
use openmetrics_parser::openmetrics::parse_openmetrics;
use openmetrics_parser::OpenMetricsType;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// A server of `config` around `backend`, its main and admin addresses, and
/// the sender that stops it (the live page's tests start theirs so too).
pub(crate) async fn start(
    mut config: ServerConfig,
    backend: Backend,
) -> (SocketAddr, SocketAddr, oneshot::Sender<()>) {
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.admin = Some("127.0.0.1:0".parse().unwrap());
    config.reload_on_hangup = false;
    let (tx, mut bound) = mpsc::unbounded_channel();
    let server = Server::new(config)
        .expect("valid config")
        .on_event(move |event| {
            let _ = tx.send(event.clone());
        });
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server.serve(backend, async {
        let _ = stopped.await;
    }));
    let mut admin = None;
    loop {
        match bound.recv().await.expect("the server's events") {
            ServerEvent::Admin { local } => admin = Some(local),
            ServerEvent::Listening { local, .. } => {
                return (local, admin.expect("admin bound first"), stop)
            }
            _ => {}
        }
    }
}

/// The scrape, checked by a real OpenMetrics parser: each family's type.
async fn scrape(admin: SocketAddr) -> (String, HashMap<String, OpenMetricsType>) {
    let text = reqwest::get(format!("http://{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let exposition =
        parse_openmetrics(&text).unwrap_or_else(|e| panic!("does not parse: {e:?}\n{text}"));
    let types = exposition
        .families
        .iter()
        .map(|(name, family)| (name.clone(), family.family_type))
        .collect();
    (text, types)
}

/// The value of the sample line that starts with `series ` (labels
/// included).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

fn counter(types: &HashMap<String, OpenMetricsType>, family: &str) {
    assert_eq!(
        types.get(family),
        Some(&OpenMetricsType::Counter),
        "{family} is not a counter"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_and_upstream_errors_are_counters_named_total() {
    // Nothing listens there (a port below the ephemeral range, which no
    // other test's server is given meanwhile): every forwarded request is
    // a 502. Regression: a port from bind(0) was taken by another test's
    // server, which answered 404.
    let upstream = format!("http://127.0.0.1:{}", crate::server_port::free_port());
    let rule = Rule::new(Algorithm::SlidingLog, "100/min".parse().unwrap());
    let mut config = ServerConfig::new(RulesSource::One {
        rule,
        key: "header:X-Key".parse().unwrap(),
        cost: 1,
    });
    const CAP: usize = 1000;
    const CLIENTS: usize = 1200;
    config.stores = StoreOptions {
        max_keys: CAP,
        ..StoreOptions::default()
    };
    let proxy = Proxy::new(&upstream, Duration::from_secs(5)).unwrap();
    let (main, admin, stop) = start(config, Backend::proxy(proxy, &upstream)).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    for i in 0..CLIENTS {
        let r = http
            .get(format!("http://{main}/x"))
            .header("x-key", i.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 502);
    }
    let (text, types) = scrape(admin).await;
    for family in [
        "limits_evictions",
        "limits_evictions_of_limited_keys",
        "limits_upstream_errors",
        "limits_client_errors",
    ] {
        counter(&types, family);
    }
    assert_eq!(types.get("limits_keys"), Some(&OpenMetricsType::Gauge));
    let evicted = sample(&text, r#"limits_evictions_total{rule="default"}"#).expect(&text);
    assert!(
        evicted >= (CLIENTS - CAP) as f64,
        "{evicted} evictions of {CLIENTS} keys under a cap of {CAP}"
    );
    let limited = r#"limits_evictions_of_limited_keys_total{rule="default"}"#;
    assert_eq!(sample(&text, limited), Some(0.0));
    let bad_gateway = r#"limits_upstream_errors_total{kind="bad_gateway"}"#;
    assert_eq!(sample(&text, bad_gateway), Some(CLIENTS as f64));
    let timeouts = r#"limits_upstream_errors_total{kind="gateway_timeout"}"#;
    assert_eq!(sample(&text, timeouts), Some(0.0));
    let bodies = r#"limits_client_errors_total{kind="bad_request_body"}"#;
    assert_eq!(sample(&text, bodies), Some(0.0));
    // Nothing by the old names.
    assert!(!text.contains("limits_evictions{"), "{text}");
    assert!(!text.contains("limits_upstream_errors{"), "{text}");
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_stores_counts_are_counters_and_its_states_gauges() {
    let redis = RedisServer::start();
    let connection = RedisConnection::connect(&redis.url(), RedisOptions::default())
        .await
        .unwrap();
    let rule = Rule::new(Algorithm::SlidingLog, "3/min".parse().unwrap());
    let mut config = ServerConfig::new(RulesSource::One {
        rule,
        key: KeySpec::ip(),
        cost: 1,
    });
    config.stores.redis = Some(connection);
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    let (main, admin, stop) = start(config, Backend::new("app", app)).await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let r = reqwest::get(format!("http://{main}/")).await.unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let (text, types) = scrape(admin).await;
    for kind in [
        "calls",
        "errors",
        "outages",
        "deny_cache_hits",
        "full_answers",
        "eviction_warnings",
        "local_decisions",
        "new_keys_refused",
    ] {
        counter(&types, &format!("limits_redis_{kind}"));
    }
    for state in ["limits_redis_healthy", "limits_redis_evictable"] {
        assert_eq!(types.get(state), Some(&OpenMetricsType::Gauge), "{state}");
    }
    // Four calls reached Redis; the fifth denial came from the deny cache.
    assert_eq!(sample(&text, "limits_redis_calls_total"), Some(4.0));
    assert_eq!(
        sample(&text, "limits_redis_deny_cache_hits_total"),
        Some(1.0)
    );
    assert_eq!(sample(&text, "limits_redis_errors_total"), Some(0.0));
    assert_eq!(sample(&text, "limits_redis_healthy"), Some(1.0));
    assert!(!text.contains("limits_redis{"), "{text}");
    let _ = stop.send(());
}
