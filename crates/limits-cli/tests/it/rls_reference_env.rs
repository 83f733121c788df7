//! `limits rls` started as envoyproxy/ratelimit is deployed (its
//! docker-compose example's environment: RUNTIME_ROOT and
//! RUNTIME_SUBDIRECTORY for the config, REDIS_SOCKET_TYPE and REDIS_URL for
//! a real redis-server, PORT and GRPC_PORT for its listeners) answers as it
//! does when started with our flags; a flag wins over its variable; a bad
//! value stops it naming the variable; and the reference's counting of
//! denied hits is one variable away. Its TLS variables (REDIS_TLS,
//! REDIS_TLS_CACERT, REDIS_TLS_CLIENT_CERT, REDIS_TLS_CLIENT_KEY) reach a
//! Redis that asks for client certificates.

use crate::common;
use crate::redis_server::{free_port, RedisServer};
use crate::tls_pki;

use common::server::Server;
use limits_server::rls::proto::rate_limit_descriptor::Entry;
use limits_server::rls::proto::rate_limit_response::Code;
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitRequest};
use std::path::Path;
use std::process::Command;

const CONFIG: &str = "\
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 5 }
";

/// The reference's layout: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config/*.yaml.
fn runtime_root(config: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("ratelimit").join("config");
    std::fs::create_dir_all(&dir).unwrap();
    common::write(&dir, "config.yaml", config);
    root
}

fn config_dir(root: &Path) -> String {
    root.join("ratelimit/config").to_str().unwrap().to_owned()
}

/// (overall code, limit_remaining) of one call of `hits` for `address`.
async fn call(url: &str, address: &str, hits: u32) -> (i32, u32) {
    let channel = tonic::transport::Channel::from_shared(format!("http://{url}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = RateLimitServiceClient::new(channel);
    let request = RateLimitRequest {
        domain: "edge".into(),
        descriptors: vec![RateLimitDescriptor {
            entries: vec![Entry {
                key: "remote_address".into(),
                value: address.into(),
            }],
            ..RateLimitDescriptor::default()
        }],
        hits_addend: hits,
    };
    let response = client
        .should_rate_limit(request)
        .await
        .unwrap()
        .into_inner();
    (response.overall_code, response.statuses[0].limit_remaining)
}

/// The answers to one sequence of calls (hits per call) on a fresh Redis.
async fn answers(url: &str, hits: &[u32]) -> Vec<(i32, u32)> {
    let mut out = Vec::new();
    for &h in hits {
        out.push(call(url, "192.0.2.7", h).await);
    }
    out
}

const SEQUENCE: [u32; 6] = [1, 2, 1, 3, 1, 1];

#[tokio::test]
async fn rls_started_with_the_references_environment_answers_as_with_our_flags() {
    let redis = RedisServer::start();
    let redis_port = redis.url().rsplit(':').next().unwrap().to_owned();
    let root = runtime_root(CONFIG);
    let (grpc_port, http_port) = (free_port().to_string(), free_port().to_string());
    let env = [
        ("USE_STATSD", "false"),
        ("LOG_LEVEL", "info"),
        ("REDIS_SOCKET_TYPE", "tcp"),
        ("REDIS_URL", &format!("127.0.0.1:{redis_port}")),
        ("RUNTIME_ROOT", root.path().to_str().unwrap()),
        ("RUNTIME_SUBDIRECTORY", "ratelimit"),
        ("RUNTIME_WATCH_ROOT", "false"),
        ("HOST", "127.0.0.1"),
        ("PORT", &http_port),
        ("GRPC_HOST", "127.0.0.1"),
        ("GRPC_PORT", &grpc_port),
    ];
    let reference = Server::try_start_with_env("rls", &[], &env).unwrap();
    assert_eq!(reference.url, format!("127.0.0.1:{grpc_port}"));
    let admin = reference.admin.clone().expect("PORT is the admin listener");
    assert_eq!(admin, format!("http://127.0.0.1:{http_port}"));
    let said = reference.line_since_start("not applied");
    assert!(
        said.contains("not applied: USE_STATSD: no statsd"),
        "USE_STATSD logged as ignored: {said}"
    );
    let health = common::client()
        .get(format!("{admin}/healthcheck"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "the reference's health check path");
    let with_env = answers(&reference.url, &SEQUENCE).await;
    assert!(
        redis.integer(&["DBSIZE"]) > 0,
        "the counts live in REDIS_URL's Redis"
    );
    drop(reference);
    redis.command(&["FLUSHALL"]).unwrap();

    let dir = config_dir(root.path());
    let ours = Server::start_command("rls", &["--config", &dir, "--store", &redis.url()], false);
    let with_flags = answers(&ours.url, &SEQUENCE).await;
    let ok = Code::Ok as i32;
    let over = Code::OverLimit as i32;
    assert_eq!(
        with_flags,
        [(ok, 4), (ok, 2), (ok, 1), (over, 0), (ok, 0), (over, 0)]
    );
    assert_eq!(with_env, with_flags);
}

#[tokio::test]
async fn the_references_tls_variables_reach_a_redis_that_asks_for_client_certificates() {
    let pki = tls_pki::make_pki("rls-mtls", &["127.0.0.1"]);
    let (redis, tls_port) = tls_pki::tls_server(&pki, &["--tls-auth-clients", "yes"]);
    let root = runtime_root(CONFIG);
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let (ca, cert, key) = (path(&pki.ca), path(&pki.client_cert), path(&pki.client_key));
    let mut env = vec![
        ("REDIS_SOCKET_TYPE", "tcp".to_owned()),
        ("REDIS_URL", format!("127.0.0.1:{tls_port}")),
        ("REDIS_TLS", "true".to_owned()),
        ("REDIS_TLS_CACERT", ca),
        ("REDIS_TLS_CLIENT_CERT", cert),
        ("REDIS_TLS_CLIENT_KEY", key),
        ("RUNTIME_ROOT", path(root.path())),
        ("RUNTIME_SUBDIRECTORY", "ratelimit".to_owned()),
        ("HOST", "127.0.0.1".to_owned()),
        ("PORT", "0".to_owned()),
        ("GRPC_HOST", "127.0.0.1".to_owned()),
        ("GRPC_PORT", free_port().to_string()),
    ];
    let started: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let rls = Server::try_start_with_env("rls", &["--require-store"], &started).unwrap();
    let ok = Code::Ok as i32;
    let over = Code::OverLimit as i32;
    assert_eq!(
        answers(&rls.url, &[4, 1, 1]).await,
        [(ok, 1), (ok, 0), (over, 0)]
    );
    assert!(
        redis.integer(&["DBSIZE"]) > 0,
        "the counts live in the TLS Redis"
    );
    drop(rls);

    // Without the client key, the certificate alone is refused at start.
    env.retain(|(k, _)| *k != "REDIS_TLS_CLIENT_KEY");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let err = refused(&["--require-store"], &env);
    assert!(err.contains("no key given"), "{err}");
}

#[tokio::test]
async fn a_flag_wins_over_its_variable() {
    let root = runtime_root(CONFIG);
    let taken = free_port().to_string();
    let env = [
        ("RUNTIME_ROOT", root.path().to_str().unwrap()),
        ("RUNTIME_SUBDIRECTORY", "ratelimit"),
        ("GRPC_PORT", &taken),
        ("HOST", "127.0.0.1"),
        ("PORT", "0"),
        ("REDIS_SOCKET_TYPE", "tcp"),
        ("REDIS_URL", "127.0.0.1:1"),
    ];
    let elsewhere = tempfile::tempdir().unwrap();
    common::write(
        elsewhere.path(),
        "other.yaml",
        &CONFIG.replace("5 }", "1 }"),
    );
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        "memory",
        "--config",
        elsewhere.path().to_str().unwrap(),
    ];
    let rls = Server::try_start_with_env("rls", &args, &env).unwrap();
    assert!(!rls.url.ends_with(&format!(":{taken}")), "{}", rls.url);
    // --config's limit of 1, in memory (REDIS_URL's port 1 answers nothing).
    assert_eq!(call(&rls.url, "a", 1).await.0, Code::Ok as i32);
    assert_eq!(call(&rls.url, "a", 1).await.0, Code::OverLimit as i32);
}

/// `limits rls` with `envs`, expected to stop at start: its stderr.
fn refused(args: &[&str], envs: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_limits"))
        .arg("rls")
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    assert!(!out.status.success(), "started with {envs:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_variable_with_a_bad_value_stops_rls_naming_it_and_the_value() {
    let root = runtime_root(CONFIG);
    let root = root.path().to_str().unwrap();
    for (var, value) in [
        ("GRPC_PORT", "grpc"),
        ("REDIS_TYPE", "ring"),
        ("REDIS_TLS", "yes"),
        ("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "sometimes"),
        ("LOG_LEVEL", "loud"),
    ] {
        let env = [
            ("RUNTIME_ROOT", root),
            ("RUNTIME_SUBDIRECTORY", "ratelimit"),
            ("REDIS_SOCKET_TYPE", "tcp"),
            ("REDIS_URL", "127.0.0.1:1"),
            (var, value),
        ];
        let stderr = refused(&["--listen", "127.0.0.1:0"], &env);
        assert!(
            stderr.contains(&format!("error: {var}={value}:")),
            "{var}: {stderr}"
        );
    }
    let stderr = refused(&["--listen", "127.0.0.1:0"], &[]);
    assert!(stderr.contains("--config FILE|DIR is required"), "{stderr}");
}

#[tokio::test]
async fn stop_cache_key_increment_false_counts_denied_hits_as_count_denied_hits_does() {
    let root = runtime_root(CONFIG);
    let dir = config_dir(root.path());
    // 5 an hour: 4 taken, a call of 3 denied; counted, it closes the hour.
    let sequence = [4, 3, 1];
    let ok = Code::Ok as i32;
    let over = Code::OverLimit as i32;
    let ours = Server::start_command("rls", &["--config", &dir], false);
    assert_eq!(
        answers(&ours.url, &sequence).await,
        [(ok, 1), (over, 0), (ok, 0)],
        "by default a denial takes nothing"
    );
    let flag = Server::start_command("rls", &["--config", &dir, "--count-denied-hits"], false);
    let counted = answers(&flag.url, &sequence).await;
    assert_eq!(counted, [(ok, 1), (over, 0), (over, 0)]);
    let env = [("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "false")];
    let listen = ["--config", dir.as_str(), "--listen", "127.0.0.1:0"];
    let variable = Server::try_start_with_env("rls", &listen, &env).unwrap();
    assert_eq!(answers(&variable.url, &sequence).await, counted);
}

#[test]
fn counting_denied_hits_refuses_a_limiter_without_a_count_naming_it() {
    let bucket = CONFIG.replace("5 }", "5, algorithm: token-bucket }");
    let root = runtime_root(&bucket);
    let dir = config_dir(root.path());
    let stderr = refused(
        &["--config", &dir, "--listen", "127.0.0.1:0"],
        &[("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "false")],
    );
    assert!(stderr.contains("config.yaml:4:"), "{stderr}");
    assert!(stderr.contains("decides with token-bucket"), "{stderr}");
}

/// Two limits of one call: 3 an hour on the address, 5 on the route.
const TWO_LIMITS: &str = "\
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 3 }
  - key: route
    rate_limit: { unit: hour, requests_per_unit: 5 }
";

/// Each status's (code, limit_remaining) of a call of both limits.
async fn both(url: &str, hits: u32) -> Vec<(i32, u32)> {
    let channel = tonic::transport::Channel::from_shared(format!("http://{url}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let entry = |key: &str, value: &str| RateLimitDescriptor {
        entries: vec![Entry {
            key: key.into(),
            value: value.into(),
        }],
        ..RateLimitDescriptor::default()
    };
    let request = RateLimitRequest {
        domain: "edge".into(),
        descriptors: vec![entry("remote_address", "192.0.2.7"), entry("route", "/a")],
        hits_addend: hits,
    };
    let response = RateLimitServiceClient::new(channel)
        .should_rate_limit(request)
        .await
        .unwrap()
        .into_inner();
    response
        .statuses
        .iter()
        .map(|s| (s.code, s.limit_remaining))
        .collect()
}

/// Calls of 2, 2 and 1 hits of both limits.
async fn three_calls(url: &str) -> Vec<Vec<(i32, u32)>> {
    let mut answers = Vec::new();
    for hits in [2, 2, 1] {
        answers.push(both(url, hits).await);
    }
    answers
}

#[tokio::test]
async fn stop_cache_key_increment_true_leaves_a_calls_other_limits_untouched() {
    let root = runtime_root(TWO_LIMITS);
    let dir = config_dir(root.path());
    let (ok, over) = (Code::Ok as i32, Code::OverLimit as i32);
    // 2 hits, then 2 more: over the address's 3. With the variable true,
    // the route takes nothing (5 - 2 left) and the address, counted, stays
    // over; unset, the route takes them (ours: each on its own).
    let env = [("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true")];
    let listen = ["--config", dir.as_str(), "--listen", "127.0.0.1:0"];
    let stopped = Server::try_start_with_env("rls", &listen, &env).unwrap();
    let got = three_calls(&stopped.url).await;
    assert_eq!(
        got,
        [
            vec![(ok, 1), (ok, 3)],
            vec![(over, 0), (ok, 3)],
            vec![(over, 0), (ok, 3)],
        ]
    );
    let flags = ["--config", &dir, "--all-or-nothing", "--count-denied-hits"];
    let flagged = Server::start_command("rls", &flags, false);
    assert_eq!(
        three_calls(&flagged.url).await,
        got,
        "the variable is the two flags"
    );
    let ours = Server::start_command("rls", &["--config", &dir], false);
    assert_eq!(
        three_calls(&ours.url).await,
        [
            vec![(ok, 1), (ok, 3)],
            vec![(over, 0), (ok, 1)],
            vec![(ok, 0), (ok, 0)],
        ]
    );
}

/// The start's log line saying a variable is not applied, parsed as JSON:
/// its level and message.
fn not_applied_as_json(server: &Server) -> (String, String) {
    let line = server.line_since_start("not applied");
    let json = line.strip_prefix("stderr: ").unwrap();
    let parsed: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    (text(&parsed["level"]), text(&parsed["fields"]["message"]))
}

#[test]
fn log_format_json_writes_each_log_line_as_a_json_object() {
    let root = runtime_root(CONFIG);
    let dir = config_dir(root.path());
    let listen = ["--config", dir.as_str(), "--listen", "127.0.0.1:0"];
    // USE_STATSD is logged at start as not applied: a line to read.
    let env = [("LOG_FORMAT", "json"), ("USE_STATSD", "true")];
    let json = Server::try_start_with_env("rls", &listen, &env).unwrap();
    let (level, message) = not_applied_as_json(&json);
    assert_eq!(level, "WARN");
    assert!(message.contains("USE_STATSD"), "{message}");
    // The flag does the same, and wins over the variable.
    let flag = [&listen[..], &["--log-format", "json"]].concat();
    let by_flag = Server::try_start_with_env("rls", &flag, &[("USE_STATSD", "true")]).unwrap();
    assert_eq!(not_applied_as_json(&by_flag).0, "WARN");
    let text = [&listen[..], &["--log-format", "text"]].concat();
    let as_text = Server::try_start_with_env("rls", &text, &env).unwrap();
    let line = as_text.line_since_start("not applied");
    assert!(!line.contains('{'), "{line}");
}
