//! Unix sockets: `redis+unix:///PATH` and `unix:///PATH`, with a database
//! and a password as query parameters.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::time::Duration;

fn options() -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_secs(2),
        ..RedisOptions::default()
    }
}

/// A directory of its own for a socket file.
fn socket_path(tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("limits-unix-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("redis.sock").to_string_lossy().into_owned()
}

async fn decide_twice(url: &str) -> Vec<bool> {
    let conn = RedisConnection::connect(url, options()).await.unwrap();
    let rule = Rule::new(Algorithm::SlidingLog, "1/h".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "unix").unwrap();
    let mut allowed = Vec::new();
    for _ in 0..2 {
        allowed.push(
            store
                .decide("k", 1, Mode::Record)
                .await
                .unwrap()
                .decision
                .allowed,
        );
    }
    allowed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_unix_url_forms_reach_the_socket() {
    let path = socket_path("forms");
    let server = RedisServer::start_with(&["--unixsocket", &path, "--unixsocketperm", "700"]);
    assert_eq!(
        decide_twice(&format!("redis+unix://{path}")).await,
        [true, false]
    );
    // The same key through the other form: already used up.
    assert_eq!(
        decide_twice(&format!("unix://{path}")).await,
        [false, false]
    );
    assert_eq!(server.integer(&["DBSIZE"]), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_takes_its_database_and_password_as_parameters() {
    let path = socket_path("auth");
    let server = RedisServer::start_with(&[
        "--unixsocket",
        &path,
        "--unixsocketperm",
        "700",
        "--requirepass",
        "s3cret",
    ]);
    let url = format!("redis+unix://{path}?db=2&pass=s3cret");
    assert_eq!(decide_twice(&url).await, [true, false]);
    let keyspace = server.command(&["INFO", "keyspace"]).unwrap();
    assert!(keyspace.contains("db2:keys=1"), "{keyspace}");

    let wrong = format!("redis+unix://{path}?pass=nope");
    let err = RedisConnection::connect(&wrong, options())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("authentication failed"), "{err}");
    assert!(
        err.contains(&format!("redis+unix://{path}?pass=***")),
        "{err}"
    );
    assert!(!err.contains("nope"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_socket_is_named() {
    let path = socket_path("missing");
    let url = format!("redis+unix://{path}");
    let err = RedisConnection::connect(&url, options())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&path), "{err}");
}
