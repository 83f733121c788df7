//! The Redis URLs of production on the command line: `--store rediss://`
//! with `--redis-ca FILE` (serve, rls, replay and bench take it), a password
//! in the URL that no output or error ever shows.

use crate::common;
use crate::redis_server;
use crate::tls_pki;

use common::limits;
use common::server::Server;
use redis_server::RedisServer;
use serde_json::Value;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_limits_in_a_tls_redis_whose_ca_is_given_by_redis_ca() {
    let pki = tls_pki::make_pki("cli-serve", &["127.0.0.1"]);
    let (redis, tls_port) = tls_pki::tls_server(&pki, &[]);
    let store = format!("rediss://127.0.0.1:{tls_port}");
    let ca = pki.ca.to_string_lossy().into_owned();
    let serve = Server::start(
        &[
            "--limiter",
            "sliding-log",
            "--limit",
            "3",
            "--window",
            "1h",
            "--store",
            &store,
            "--redis-ca",
            &ca,
            "--require-store",
        ],
        false,
    );
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let r = http.get(format!("{}/", serve.url)).send().await.unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429]);
    assert!(
        redis.integer(&["DBSIZE"]) > 0,
        "the state is in the TLS Redis"
    );

    // Without the CA, the server's certificate is refused, and said so.
    let (_, err, code) = limits(&[
        "serve",
        "--limit",
        "3",
        "--store",
        &store,
        "--require-store",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("TLS certificate was refused"), "{err}");
}

#[test]
fn every_command_with_a_redis_store_takes_redis_ca() {
    for command in ["serve", "rls", "replay", "bench"] {
        let (out, err, code) = limits(&[command, "--help"]);
        assert_eq!(code, 0, "{command} --help: {err}");
        assert!(out.contains("--redis-ca <FILE>"), "{command}: {out}");
        assert!(out.contains("rediss://"), "{command}: {out}");
    }
}

#[test]
fn redis_ca_with_a_store_that_is_not_tls_is_refused() {
    let redis = RedisServer::start();
    for store in ["memory".to_owned(), redis.url()] {
        let (out, err, code) = limits(&[
            "bench",
            "--store",
            &store,
            "--redis-ca",
            "/nonexistent/ca.pem",
            "--decisions",
            "10",
        ]);
        assert_ne!(code, 0, "{store}: accepted: {out}");
        assert!(
            err.contains("--redis-ca: for a rediss:// --store only"),
            "{store}: {err}"
        );
    }
}

#[test]
fn a_password_in_the_store_url_is_never_printed() {
    let redis = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let store = format!("redis://:s3cret@127.0.0.1:{}", redis.port);
    let (out, err, code) = limits(&["bench", "--json", "--store", &store, "--decisions", "10"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        report["store"],
        format!("redis://:***@127.0.0.1:{}", redis.port).as_str()
    );
    assert!(
        !out.contains("s3cret") && !err.contains("s3cret"),
        "{out}{err}"
    );

    let wrong = format!("redis://:guess@127.0.0.1:{}", redis.port);
    let (out, err, code) = limits(&["bench", "--store", &wrong, "--decisions", "10"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("authentication failed"), "{err}");
    assert!(!err.contains("guess"), "{err}");

    let not_redis = "ftp://user:guess@host".to_owned();
    let (_, err, code) = limits(&["bench", "--store", &not_redis, "--decisions", "10"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("expected memory") && !err.contains("guess"),
        "{err}"
    );
}
