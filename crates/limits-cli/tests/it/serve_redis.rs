//! `limits serve --store redis://...`: several instances, one exact limit,
//! on a real redis-server; and what they do while Redis is down.

use crate::common;
use crate::redis_server;

use common::server::Server;
use redis_server::RedisServer;
use std::time::{Duration, Instant};

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// 8 clients for `run`, each sending to the servers in turn; the number of
/// 200s and 429s (anything else fails the test).
pub(crate) async fn load(urls: &[String], clients: usize, run: Duration) -> (u64, u64) {
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
    two_instances_allow_exactly_50_between_them(&redis.url()).await;
}

/// The status of `GET url/` (a client error if no answer within 2 s).
async fn status(http: &reqwest::Client, url: &str) -> Result<u16, reqwest::Error> {
    Ok(http.get(format!("{url}/")).send().await?.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn while_redis_is_down_every_request_is_answered_per_policy_and_service_resumes() {
    let mut redis = RedisServer::start();
    let url = redis.url();
    let rule = [
        "--limiter",
        "sliding-log",
        "--limit",
        "100000",
        "--window",
        "10s",
    ];
    let store = ["--store", url.as_str(), "--store-timeout", "500ms"];
    let start = |policy: &str, admin: bool| {
        let mut args = rule.to_vec();
        args.extend(store);
        args.extend(["--on-store-error", policy]);
        Server::start(&args, admin)
    };
    let (deny, allow) = (start("deny", true), start("allow", false));
    let admin = deny.admin.clone().expect("--admin");
    // Liveness and readiness: (status, body) of /healthz and /readyz.
    let probe = |path: &'static str| {
        let url = format!("{admin}{path}");
        async move {
            let r = reqwest::get(url).await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(probe("/healthz").await, (200, "ok\n".to_string()));
    assert_eq!(probe("/readyz").await, (200, "ready\n".to_string()));
    // Answers within 2 s or the test fails: no request may wait on a dead Redis.
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    for _ in 0..20 {
        assert_eq!(status(&http, &deny.url).await.unwrap(), 200);
        assert_eq!(status(&http, &allow.url).await.unwrap(), 200);
    }
    // Redis dies under load: 4 clients keep sending to both servers.
    let stop_at = Instant::now() + Duration::from_millis(1500);
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (http, deny, allow) = (http.clone(), deny.url.clone(), allow.url.clone());
            tokio::spawn(async move {
                let mut seen = Vec::new();
                while Instant::now() < stop_at {
                    let d = status(&http, &deny).await.expect("deny answers");
                    let a = status(&http, &allow).await.expect("allow answers");
                    seen.push((d, a));
                }
                seen
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.stop();
    let killed = Instant::now();
    let mut answers = Vec::new();
    for client in clients {
        answers.extend(client.await.unwrap());
    }
    let outage = killed.elapsed();
    assert!(
        answers.iter().all(|&(_, a)| a == 200),
        "allow lets everything through"
    );
    assert!(
        answers.iter().all(|&(d, _)| d == 200 || d == 503),
        "{answers:?}"
    );
    let denied = answers.iter().filter(|&&(d, _)| d == 503).count();
    assert!(
        denied > 10,
        "deny answered 503 while Redis was down: {denied} in {outage:?}"
    );
    deny.wait_for_line("the Redis store is unreachable");
    allow.wait_for_line("the Redis store is unreachable");
    assert_eq!(status(&http, &deny.url).await.unwrap(), 503);
    // Alive (a restart would not bring Redis back), not ready.
    assert_eq!(probe("/healthz").await, (200, "ok\n".to_string()));
    let (code, why) = probe("/readyz").await;
    assert_eq!(code, 503, "{why}");
    assert!(
        why.starts_with("not ready: the Redis store is unreachable"),
        "{why}"
    );
    assert_eq!(deny.metric("limits_redis_outages_total").await, Some(1.0));
    assert_eq!(deny.metric("limits_redis_healthy").await, Some(0.0));
    let failed = deny.metric("limits_decisions_total{rule=\"default\",outcome=\"store_failed\"}");
    assert!(failed.await.unwrap_or(0.0) >= denied as f64);
    // Redis comes back (empty): both servers use it again within 2 s,
    // without a restart.
    redis.restart();
    let back = Instant::now();
    while status(&http, &deny.url).await.unwrap() != 200 {
        assert!(
            back.elapsed() < Duration::from_secs(2),
            "still 503 after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "{denied} of {} answered 503 in the {outage:?} outage; back {:?} after the restart",
        answers.len(),
        back.elapsed()
    );
    deny.wait_for_line("the Redis store answers again");
    allow.wait_for_line("the Redis store answers again");
    for _ in 0..10 {
        assert_eq!(status(&http, &deny.url).await.unwrap(), 200);
    }
    assert_eq!(probe("/healthz").await, (200, "ok\n".to_string()));
    assert_eq!(probe("/readyz").await, (200, "ready\n".to_string()));
    assert_eq!(deny.metric("limits_redis_outages_total").await, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_on_a_redis_cluster_allow_exactly_the_limit_between_them() {
    let cluster = redis_server::RedisCluster::start();
    two_instances_allow_exactly_50_between_them(&cluster.url()).await;
}

/// Two `limits serve` instances on the store at `url`, a sliding log of 50
/// per 10 s, 8 clients for 3 s: exactly 50 pass between them.
async fn two_instances_allow_exactly_50_between_them(url: &str) {
    let args = [
        "--limiter",
        "sliding-log",
        "--limit",
        "50",
        "--window",
        "10s",
        "--store",
        url,
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

/// A deployment moving to the limits Redis module: one instance decides
/// with the module, the other with the Lua scripts, on the same keys; the
/// limit is still exact between them, and each decided in its own way.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_on_the_redis_module_and_one_on_the_scripts_share_one_exact_limit() {
    let redis = RedisServer::start_with_module(&[]);
    let url = redis.url();
    let args = |module| {
        [
            "--limiter",
            "token-bucket",
            "--limit",
            "50",
            "--window",
            "1h",
            "--store",
            url.as_str(),
            "--store-timeout",
            "2s",
            "--redis-module",
            module,
        ]
    };
    let a = Server::start(&args("on"), false);
    let b = Server::start(&args("off"), false);
    let (ok, limited) = load(&[a.url.clone(), b.url.clone()], 8, Duration::from_secs(3)).await;
    assert_eq!(ok, 50, "exactly the limit between them ({limited} limited)");
    let stats = redis.command(&["INFO", "commandstats"]).unwrap();
    assert!(stats.contains("cmdstat_limits.decide:calls="), "{stats}");
    assert!(stats.contains("cmdstat_evalsha:calls="), "{stats}");
}

/// Rules mixed per store in one file: `store = "memory"` keeps a rule per
/// instance even when `--store` names a Redis, while the other rules share
/// Redis. Two instances, 3 per minute each rule, requests alternating
/// between them: the shared rule passes 3 in all, the local one 3 on each.
#[tokio::test(flavor = "multi_thread")]
async fn a_rule_with_store_memory_stays_per_instance_beside_rules_shared_in_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let config = common::write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"shared\"\npath = \"/api\"\nrates = \"3/minute\"\n\n\
         [[rule]]\nname = \"local\"\npath = \"/ping\"\nrates = \"3/minute\"\nstore = \"memory\"\n",
    );
    let config = config.to_str().unwrap();
    let args = ["--config", config, "--store", &url, "--store-timeout", "2s"];
    let a = Server::start(&args, false);
    let b = Server::start(&args, false);
    let http = client();
    let mut passed = std::collections::BTreeMap::new();
    for path in ["/api/items", "/ping"] {
        for i in 0..10 {
            let server = if i % 2 == 0 { &a } else { &b };
            if status(&http, &format!("{}{path}", server.url))
                .await
                .unwrap()
                != 429
            {
                *passed.entry(path).or_insert(0) += 1;
            }
        }
    }
    assert_eq!(
        passed.get("/api/items"),
        Some(&3),
        "shared in Redis: {passed:?}"
    );
    assert_eq!(
        passed.get("/ping"),
        Some(&6),
        "3 on each instance: {passed:?}"
    );
}
