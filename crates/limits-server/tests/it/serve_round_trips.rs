//! `serve`'s rules on Redis in one round trip (issue 25 point 14, for
//! `serve`): a request matching three rules on one Redis reaches it as one
//! read, counted by Redis itself (`INFO stats`); and the server answers
//! what the same rules in memory answer, request by request (a middle rule
//! denying: the rules before it recorded, the ones after it not; a dry run
//! going on past it), on one Redis and on a Redis Cluster.

use crate::redis_server;

use limits_server::{RedisConnection, RedisOptions, RulesSource, Server, ServerConfig};
use redis_server::{RedisCluster, RedisServer};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Three rules on every path, the middle one the tightest, keyed by three
/// headers (a request without them: each by the client address).
const RULES: &str = r#"
[[rule]]
name = "client"
key = "header:x-a"
rates = "6/hour"

[[rule]]
name = "user"
limiter = "token-bucket"
key = "header:x-b"
rates = "2/hour"

[[rule]]
name = "path"
limiter = "fixed-window"
key = "header:x-c"
rates = "3/hour; 5/day"
"#;

/// A server of `RULES` on 127.0.0.1, in memory or on `redis`; the sender
/// stops it.
struct Serving {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn serve(rules: &Path, redis: Option<RedisConnection>, dry_run: bool) -> Serving {
    let mut config = ServerConfig::new(RulesSource::File(rules.to_owned()));
    config.reload_on_hangup = false;
    config.layer.dry_run = dry_run;
    config.stores.redis = redis;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::new(config).expect("valid config");
    let app = axum::Router::new().fallback(|| async { "hello\n" });
    tokio::spawn(server.serve_on(listener, app, async {
        let _ = stopped.await;
    }));
    Serving { addr, _stop: stop }
}

/// A connection on which only the server's decisions reach Redis once its
/// first clock measurement (made at connection) is done.
async fn quiet(url: &str, prefix: &str) -> RedisConnection {
    quiet_with(url, prefix, RedisOptions::default()).await
}

async fn quiet_with(url: &str, prefix: &str, options: RedisOptions) -> RedisConnection {
    let options = RedisOptions {
        prefix: prefix.into(),
        timeout: Duration::from_secs(5),
        clock_check: Duration::from_secs(3600),
        ..options
    };
    let conn = RedisConnection::connect(url, options).await.unwrap();
    while conn.clock_offset_micros().is_none() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    conn
}

/// A trace whose middle rule denies now and then (b1 and b2 take two each;
/// c9 only in a request it denies), then three requests to look with.
fn trace() -> Vec<[&'static str; 3]> {
    vec![
        ["a1", "b1", "c1"],
        ["a1", "b1", "c1"],
        ["a1", "b1", "c9"],
        ["a2", "b1", "c2"],
        ["a1", "b2", "c1"],
        ["a2", "b2", "c1"],
        ["a1", "b2", "c2"],
        ["a1", "b3", "c1"],
        // c9 again: what is left of it says whether it was recorded.
        ["a3", "b4", "c9"],
    ]
}

/// What of an answer the rules decide and does not depend on the instant:
/// the status and each rule's remaining (`r=`) in the RateLimit header.
async fn said(client: &reqwest::Client, at: SocketAddr, [a, b, c]: [&str; 3]) -> (u16, String) {
    let answer = client
        .get(format!("http://{at}/"))
        .header("x-a", a)
        .header("x-b", b)
        .header("x-c", c)
        .send()
        .await
        .unwrap();
    let header = answer
        .headers()
        .get("ratelimit")
        .map_or("", |v| v.to_str().unwrap());
    let remaining: Vec<&str> = header
        .split([',', ';'])
        .map(str::trim)
        .filter(|part| !part.starts_with("t="))
        .collect();
    (answer.status().as_u16(), remaining.join(";"))
}

/// The trace against a server in memory and one on `url`: the same
/// answers; and how many reads each request cost Redis.
async fn against_memory(url: &str, prefix: &str, dry_run: bool) -> Vec<(u16, String)> {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("limits.toml");
    std::fs::write(&rules, RULES).unwrap();
    let memory = serve(&rules, None, dry_run).await;
    let redis = serve(&rules, Some(quiet(url, prefix).await), dry_run).await;
    let client = reqwest::Client::new();
    let mut answers = Vec::new();
    for (n, request) in trace().into_iter().enumerate() {
        let expected = said(&client, memory.addr, request).await;
        let got = said(&client, redis.addr, request).await;
        assert_eq!(got, expected, "request {n}: {request:?}");
        answers.push(got);
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_rules_on_redis_answer_as_in_memory_a_middle_denial_stopping_the_rest() {
    let redis = RedisServer::start();
    let answers = against_memory(&redis.url(), "limits:", false).await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert_eq!(statuses, [200, 200, 429, 429, 200, 429, 429, 429, 200]);
    // c9's first request was denied by the middle rule before the last
    // rule decided it: its 3 an hour are whole for the second.
    assert!(answers[8].1.contains("\"path-1h\";r=2"), "{:?}", answers[8]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_on_redis_goes_on_past_a_denial_as_in_memory() {
    let redis = RedisServer::start();
    let answers = against_memory(&redis.url(), "limits:", true).await;
    assert!(answers.iter().all(|a| a.0 == 200), "{answers:?}");
    // The last rule decided c9's first request past the middle rule's denial.
    assert!(answers[8].1.contains("\"path-1h\";r=1"), "{:?}", answers[8]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_three_rules_answer_as_in_memory() {
    let cluster = RedisCluster::start();
    let answers = against_memory(&cluster.url(), "limits:", false).await;
    assert_eq!(answers[2].0, 429);
}

/// How many reads each request of `requests` cost Redis, and its status.
async fn reads(redis: &RedisServer, at: SocketAddr, requests: &[[&str; 3]]) -> Vec<(u64, u16)> {
    let client = reqwest::Client::new();
    let mut traffic = redis.traffic();
    let mut counted = Vec::new();
    for &request in requests {
        let before = traffic.now();
        let status = said(&client, at, request).await.0;
        counted.push((traffic.since(before).0, status));
    }
    counted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_matching_three_rules_on_one_redis_is_one_read() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("limits.toml");
    std::fs::write(&rules, RULES).unwrap();
    let no_cap = RedisOptions {
        new_keys_per_client: None,
        ..RedisOptions::default()
    };
    let conn = quiet_with(&redis.url(), "limits:", no_cap).await;
    let server = serve(&rules, Some(conn), false).await;
    let abc = ["a", "b", "c"];
    // The first request also loads the script (NOSCRIPT, SCRIPT LOAD,
    // EVALSHA again). The third is the middle rule's denial (2/h), in the
    // same read; from then on its deny cache answers it, after the first
    // rule's read alone (the last rule is not asked), whose own script the
    // fourth request loads.
    let counted = reads(&redis, server.addr, &[abc; 6]).await;
    assert_eq!(counted[1..3], [(1, 200), (1, 429)], "{counted:?}");
    assert_eq!(counted[4..], [(1, 429), (1, 429)], "{counted:?}");

    // With the cap on new keys per client (the default), a key new to a
    // rule's cap is counted when that rule decides, in a read of its own:
    // the first request of new keys is a read per rule, then one (after a
    // first request that loads each lone rule's own script).
    let server = serve(&rules, Some(quiet(&redis.url(), "capped:").await), false).await;
    let def = ["d", "e", "f"];
    let counted = reads(&redis, server.addr, &[abc, def, def]).await;
    assert_eq!(counted[1..], [(3, 200), (1, 200)], "{counted:?}");
}
