//! The Redis URLs of production on the command line: `--store rediss://`
//! with `--redis-ca FILE`, and `--redis-cert FILE --redis-key FILE` for a
//! Redis that asks for client certificates (serve, rls, replay and bench
//! take them), a password in the URL that no output or error ever shows.

use crate::common;
use crate::redis_server;
use crate::tls_pki;

use common::limits;
use common::server::Server;
use redis_server::RedisServer;
use serde_json::Value;

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
    assert_eq!(statuses(&serve, 4).await, [200, 200, 200, 429]);
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

/// The statuses of `n` requests to `serve`'s `/`, one after another.
async fn statuses(serve: &Server, n: usize) -> Vec<u16> {
    let http = common::client();
    let mut out = Vec::new();
    for _ in 0..n {
        let r = http.get(format!("{}/", serve.url)).send().await.unwrap();
        out.push(r.status().as_u16());
    }
    out
}

#[test]
fn every_command_with_a_redis_store_takes_the_tls_files() {
    for command in ["serve", "rls", "replay", "bench"] {
        let (out, err, code) = limits(&[command, "--help"]);
        assert_eq!(code, 0, "{command} --help: {err}");
        for flag in [
            "--redis-ca <FILE>",
            "--redis-cert <FILE>",
            "--redis-key <FILE>",
        ] {
            assert!(out.contains(flag), "{command}: {flag}: {out}");
        }
        assert!(out.contains("rediss://"), "{command}: {out}");
    }
}

/// `--redis-ca`, `--redis-cert` and `--redis-key` with `pki`'s files.
fn client_flags(pki: &tls_pki::Pki) -> Vec<String> {
    let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
    vec![
        "--redis-ca".to_owned(),
        path(&pki.ca),
        "--redis-cert".to_owned(),
        path(&pki.client_cert),
        "--redis-key".to_owned(),
        path(&pki.client_key),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_replay_and_bench_reach_a_redis_that_asks_for_client_certificates() {
    let pki = tls_pki::make_pki("cli-mtls", &["127.0.0.1"]);
    let (redis, tls_port) = tls_pki::tls_server(&pki, &["--tls-auth-clients", "yes"]);
    let store = format!("rediss://127.0.0.1:{tls_port}");
    let flags = client_flags(&pki);
    let with = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend(flags.iter().cloned());
        all
    };
    let serve_args = with(&[
        "--limit",
        "2",
        "--window",
        "1h",
        "--store",
        &store,
        "--require-store",
    ]);
    let serve_args: Vec<&str> = serve_args.iter().map(String::as_str).collect();
    let serve = Server::start(&serve_args, false);
    assert_eq!(statuses(&serve, 3).await, [200, 200, 429]);
    drop(serve);

    let dir = tempfile::tempdir().unwrap();
    let trace = common::write(
        dir.path(),
        "t.csv",
        "time,key,cost
0,a,1
1,a,1
2,b,1
",
    );
    let decisions = dir.path().join("decisions.csv");
    let replay_args = with(&[
        "replay",
        trace.to_str().unwrap(),
        "--limit",
        "1/h",
        "--store",
        &store,
        "--decisions",
        decisions.to_str().unwrap(),
    ]);
    let replay_args: Vec<&str> = replay_args.iter().map(String::as_str).collect();
    let (_, err, code) = limits(&replay_args);
    assert_eq!(code, 0, "replay: {err}");
    assert!(err.contains("replaying in rediss://"), "{err}");
    let rows = std::fs::read_to_string(&decisions).unwrap();
    let denied = rows.lines().filter(|l| l.contains(",false,")).count();
    assert_eq!(denied, 1, "a's second request: {rows}");

    let bench_args = with(&["bench", "--store", &store, "--decisions", "10"]);
    let bench_args: Vec<&str> = bench_args.iter().map(String::as_str).collect();
    let (_, err, code) = limits(&bench_args);
    assert_eq!(code, 0, "bench: {err}");
    assert!(
        redis.integer(&["DBSIZE"]) > 0,
        "the state is in the TLS Redis"
    );

    // Without the client certificate, each is refused, and said so.
    let ca = pki.ca.to_string_lossy().into_owned();
    for args in [
        vec![
            "serve",
            "--store",
            &store,
            "--redis-ca",
            &ca,
            "--require-store",
        ],
        vec![
            "bench",
            "--store",
            &store,
            "--redis-ca",
            &ca,
            "--decisions",
            "10",
        ],
    ] {
        refused_saying(&args, &["asks for a client certificate"]);
    }
}

/// Runs `limits ARGS`, which must fail with an error saying each of `what`.
fn refused_saying(args: &[&str], what: &[&str]) {
    let (out, err, code) = limits(args);
    assert_ne!(code, 0, "{args:?}: accepted: {out}");
    for what in what {
        assert!(err.contains(what), "{args:?}: {what:?} not in {err}");
    }
}

#[test]
fn a_client_key_that_is_not_the_certificates_is_refused_at_start_naming_it() {
    let pki = tls_pki::make_pki("cli-mtls-key", &["127.0.0.1"]);
    let other = tls_pki::make_pki("cli-mtls-other", &["127.0.0.1"]);
    let key = other.client_key.to_string_lossy().into_owned();
    let mut args: Vec<String> = ["serve", "--store", "rediss://127.0.0.1:1"]
        .map(str::to_owned)
        .to_vec();
    args.extend(client_flags(&pki));
    let at = args.iter().position(|a| a == "--redis-key").unwrap();
    args[at + 1] = key.clone();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    refused_saying(&args, &[&key, "not the key of the certificate"]);
}

#[test]
fn redis_ca_with_a_store_that_is_not_tls_is_refused() {
    let redis = RedisServer::start();
    for store in ["memory".to_owned(), redis.url()] {
        refused_saying(
            &[
                "bench",
                "--store",
                &store,
                "--redis-ca",
                "/nonexistent/ca.pem",
                "--decisions",
                "10",
            ],
            &["--redis-ca, --redis-cert, --redis-key: for a TLS --store only"],
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
