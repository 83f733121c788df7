//! `--store memcached://...` on a real memcached: two `serve` instances
//! admit exactly the limit between them, every limiter that answers at once;
//! two `rls` instances share a limit; `replay --store` decides row for row
//! as in memory, at the trace's nanoseconds; two instances whose clocks are
//! a quarter second apart read it in their metrics and `/healthz`.

use crate::common;
use crate::memcached_server;

use crate::replay_redis::trace;
use crate::rls::code;
use crate::serve_redis::load;
use common::server::Server;
use common::{limits, write};
use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store};
use limits_server::rls::proto::rate_limit_response::Code;
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use memcached_server::MemcachedServer;
use std::time::Duration;

/// How many of `n` unit requests at one instant a rule admits, in memory.
fn admitted_at_once(rule: Rule, n: usize) -> u64 {
    let memory = KeyedLimiter::<String, _>::with_clock(rule, ManualClock::new(0));
    (0..n)
        .filter(|_| {
            memory
                .decide_now("k", 1, Mode::Record)
                .unwrap()
                .unwrap()
                .decision
                .allowed
        })
        .count() as u64
}

/// The leaky bucket is left out: `serve` holds each admitted request for
/// its place in the queue, so its admissions cannot all come at once (the
/// store's own tests hold it to the limit under contention).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_serve_instances_on_one_memcached_admit_exactly_the_limit_between_them() {
    let memcached = MemcachedServer::start();
    let url = memcached.url();
    let mut retries = 0.0;
    for limiter in [
        "sliding-log",
        "fixed-window",
        "sliding-window",
        "token-bucket",
    ] {
        // A day's window: nothing comes back within the test (a fixed
        // window's edge falls inside it once in 20,000 runs).
        let args = [
            "--limiter",
            limiter,
            "--limit",
            "50",
            "--window",
            "1d",
            "--store",
            &url,
            "--store-timeout",
            "5s",
            "--on-store-error",
            "deny",
        ];
        let algorithm: Algorithm = limiter.parse().unwrap();
        let expected = admitted_at_once(Rule::new(algorithm, "50/1d".parse().unwrap()), 1000);
        let a = Server::start(&args, true);
        let b = Server::start(&args, true);
        let urls = [a.url.clone(), b.url.clone()];
        let (ok, limited) = load(&urls, 8, Duration::from_secs(2)).await;
        assert_eq!(ok, expected, "{limiter}: {limited} limited");
        assert!(limited > 0, "{limiter}: the clients went past the limit");
        for server in [&a, &b] {
            let metric = "limits_memcached_cas_retries_total";
            retries += server.metric(metric).await.expect(metric);
            let gave_up = server.metric("limits_memcached_gave_up_total").await;
            assert_eq!(gave_up, Some(0.0), "{limiter}");
        }
    }
    // Both instances wrote one key at once: some writes met the other's.
    assert!(retries > 0.0, "no CAS retry counted in /metrics");
}

#[test]
fn a_bad_memcached_url_stops_serve_naming_it() {
    let (_, stderr, code) = limits(&[
        "serve",
        "--store",
        "memcached://h:99999",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("memcached://h:99999") && stderr.contains("65535"),
        "{stderr}"
    );
    let (_, stderr, code) = limits(&[
        "serve",
        "--store",
        "memcache://h:1",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("memcached://HOST:PORT"), "{stderr}");
}

async fn rls_code(addr: &str) -> i32 {
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    code(&mut RateLimitServiceClient::new(channel)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_rls_instances_on_one_memcached_share_a_limit() {
    let memcached = MemcachedServer::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: day, requests_per_unit: 3}\n";
    write(dir.path(), "edge.yaml", yaml);
    let args = [
        "--config",
        dir.path().to_str().unwrap(),
        "--store",
        &memcached.url(),
    ];
    let a = Server::start_command("rls", &args, false);
    let b = Server::start_command("rls", &args, false);
    let mut codes = Vec::new();
    for i in 0..5 {
        let addr = if i % 2 == 0 { &a.url } else { &b.url };
        codes.push(rls_code(addr).await);
    }
    let (ok, over) = (Code::Ok as i32, Code::OverLimit as i32);
    assert_eq!(codes, [ok, ok, ok, over, over]);
}

#[test]
fn replay_in_memcached_decides_as_in_memory_row_for_row_at_nanoseconds() {
    let memcached = MemcachedServer::start();
    let url = memcached.url();
    let dir = tempfile::tempdir().unwrap();
    // Every time 123 ns past a microsecond: nothing may be floored.
    let trace = write(dir.path(), "t.csv", &trace(2000, 123));
    let trace = trace.to_str().unwrap();
    for limiter in [
        "fixed-window",
        "sliding-log",
        "sliding-window",
        "token-bucket",
        "leaky-bucket",
    ] {
        let rows = |store: Option<&str>| {
            let csv = dir
                .path()
                .join(format!("{limiter}-{}.csv", store.is_some()));
            let mut args = vec![
                "replay",
                "--limiter",
                limiter,
                trace,
                "--limit",
                "10/s; 25/3s",
            ];
            args.extend(["--decisions", csv.to_str().unwrap()]);
            if let Some(url) = store {
                args.extend(["--store", url]);
            }
            let (out, err, code) = limits(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            assert!(!err.contains("below the microsecond"), "{err}");
            (out, std::fs::read_to_string(csv).unwrap())
        };
        let (memory_out, memory_rows) = rows(None);
        let (shared_out, shared_rows) = rows(Some(&url));
        assert_eq!(shared_out, memory_out, "{limiter}: the summary");
        assert_eq!(memory_rows.lines().count(), 2001);
        for (i, (m, s)) in memory_rows.lines().zip(shared_rows.lines()).enumerate() {
            assert_eq!(s, m, "{limiter}: row {i}");
        }
        let denied = memory_rows
            .lines()
            .filter(|l| l.contains(",false,"))
            .count();
        assert!(denied > 100 && denied < 1900, "{limiter}: {denied} denied");
    }
}

/// `/readyz` follows the memcached servers: a server out is named while
/// the instance stays ready (its keys only are answered per the outage
/// policy); every server out is 503; both back, ready again.
#[tokio::test(flavor = "multi_thread")]
async fn readyz_names_the_memcached_servers_that_are_out() {
    let mut one = MemcachedServer::start();
    let mut two = MemcachedServer::start();
    let store = format!(
        "{},{}",
        one.url(),
        two.url().trim_start_matches("memcached://")
    );
    let args = [
        "--key",
        "header:x-api-key",
        "--limit",
        "1000",
        "--store",
        &store,
        "--on-store-error",
        "allow",
    ];
    let server = Server::start(&args, true);
    let admin = server.admin.clone().expect("--admin");
    let http = common::client();
    // Keys spread over both servers: each is asked.
    let ask_every_server = || async {
        for key in 0..32 {
            let url = format!("{}/api/items", server.url);
            let r = http
                .get(url)
                .header("x-api-key", format!("k{key}"))
                .send()
                .await;
            assert_eq!(r.unwrap().status(), 200);
        }
    };
    let readyz = || async {
        let r = http.get(format!("{admin}/readyz")).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    };
    ask_every_server().await;
    assert_eq!(readyz().await, (200, "ready\n".to_string()));
    let out = one.url().trim_start_matches("memcached://").to_string();
    one.stop();
    ask_every_server().await;
    let (status, body) = readyz().await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with(&format!("ready; memcached {out} unreachable")),
        "{body}"
    );
    two.stop();
    ask_every_server().await;
    let (status, body) = readyz().await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.starts_with("not ready: the memcached store is unreachable"),
        "{body}"
    );
    one.restart();
    two.restart();
    ask_every_server().await;
    assert_eq!(readyz().await, (200, "ready\n".to_string()));
}

/// Two instances on one memcached, the second's clock a quarter second
/// ahead (under `faketime`), comparing clocks every 2 s: each reads the
/// offset in its metrics, and `/healthz` names it.
#[tokio::test(flavor = "multi_thread")]
async fn instances_on_memcached_read_how_far_apart_their_clocks_are() {
    let memcached = MemcachedServer::start();
    let store = memcached.url();
    let args = ["--store", store.as_str(), "--clock-check-every", "2s"];
    let behind = Server::start(&args, true);
    let ahead = Server::start_with_faketime("+0.25s", &args);
    let compared = "limits_memcached_clock_instances ";
    let started = std::time::Instant::now();
    while behind.metric(compared).await != Some(2.0) || ahead.metric(compared).await != Some(2.0) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the two never measured the same tick"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Each within the two measurements' uncertainty (they measured one
    // tick), however busy the machine was, and the drift of the two clocks:
    // each instance reads the TSC calibrated against the OS clock when it
    // started, so each may run a few parts per million off it.
    let offset = "limits_memcached_clock_offset_seconds ";
    let (minus, plus) = (
        behind.metric(offset).await.unwrap(),
        ahead.metric(offset).await.unwrap(),
    );
    let uncertainty = "limits_memcached_clock_offset_uncertainty_seconds ";
    let drift = 0.002;
    let off_by = behind.metric(uncertainty).await.unwrap()
        + ahead.metric(uncertainty).await.unwrap()
        + drift;
    assert!((plus - 0.25).abs() <= off_by + 1e-6, "{plus} (±{off_by})");
    assert!((minus + 0.25).abs() <= off_by + 1e-6, "{minus} (±{off_by})");
    let healthz = |server: &Server| {
        let admin = server.admin.clone().unwrap();
        async move {
            let r = common::client()
                .get(format!("{admin}/healthz"))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, body) = healthz(&ahead).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("ok; this instance's clock is "), "{body}");
    assert!(
        body.contains("ms ahead of the other instances' on memcached"),
        "{body}"
    );
    let (status, body) = healthz(&behind).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("ms behind the other instances' on memcached"),
        "{body}"
    );
}
