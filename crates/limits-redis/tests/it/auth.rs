//! AUTH: a password (`--requirepass`) or an ACL user and password in the
//! URL, on one Redis and on every node of a cluster; a refusal names the URL
//! with its password hidden, and fails at once even where the connection
//! would otherwise wait for Redis.

use crate::redis_server;

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::{RedisCluster, RedisServer};
use std::time::Duration;

fn options() -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_secs(2),
        ..RedisOptions::default()
    }
}

fn rule() -> Rule {
    Rule::new(Algorithm::FixedWindow, "2/h".parse().unwrap())
}

/// Decides three times on one key: two admitted, the third denied, so the
/// state was kept in Redis.
async fn two_then_denied(conn: &RedisConnection, key: &str) {
    let store = RedisStore::new(conn, rule(), "auth").unwrap();
    let mut allowed = Vec::new();
    for _ in 0..3 {
        let verdict = store.decide(key, 1, Mode::Record).await.unwrap();
        allowed.push(verdict.decision.allowed);
    }
    assert_eq!(allowed, [true, true, false]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_the_url_logs_in_and_selects_its_database() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let url = format!("redis://:s3cret@127.0.0.1:{}/3", server.port);
    let conn = RedisConnection::connect(&url, options()).await.unwrap();
    two_then_denied(&conn, "k").await;
    let keyspace = server.command(&["INFO", "keyspace"]).unwrap();
    assert!(
        keyspace.contains("db3:keys=1"),
        "the key is in database 3: {keyspace}"
    );
    assert!(!keyspace.contains("db0:"), "{keyspace}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_in_the_url_logs_in_as_that_user() {
    // The default user has another password: only alice's can work.
    let server = RedisServer::start_with(&[
        "--requirepass",
        "other",
        "--user",
        "alice",
        "on",
        ">wonder",
        "~limits:*",
        "+@all",
    ]);
    let url = format!("redis://alice:wonder@127.0.0.1:{}", server.port);
    let conn = RedisConnection::connect(&url, options()).await.unwrap();
    two_then_denied(&conn, "k").await;
    let clients = server.command(&["CLIENT", "LIST"]).unwrap();
    assert!(clients.contains("user=alice"), "{clients}");

    let wrong = format!("redis://alice:other@127.0.0.1:{}", server.port);
    let err = RedisConnection::connect(&wrong, options())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("authentication failed"), "{err}");
    assert!(
        err.contains(&format!("redis://alice:***@127.0.0.1:{}", server.port)),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_password_is_named_with_the_url_and_never_printed() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    for url in [
        format!("redis://:not-the-password@127.0.0.1:{}", server.port),
        format!("redis://127.0.0.1:{}", server.port),
    ] {
        for err in [
            RedisConnection::connect(&url, options()).await.unwrap_err(),
            // Waiting for Redis would not change its answer: start fails too.
            RedisConnection::start(&url, options()).await.unwrap_err(),
        ] {
            let err = err.to_string();
            assert!(err.contains("authentication failed"), "{url}: {err}");
            assert!(err.contains(&format!("127.0.0.1:{}", server.port)), "{err}");
            assert!(!err.contains("not-the-password"), "{err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_password_is_used_on_every_node() {
    let cluster = RedisCluster::start_with(&["--requirepass", "s3cret", "--masterauth", "s3cret"]);
    let nodes: Vec<String> = cluster
        .nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let url = format!("redis+cluster://:s3cret@{}", nodes.join(","));
    let conn = RedisConnection::connect(&url, options()).await.unwrap();
    // Keys on every node (their slots spread over the three).
    for i in 0..30 {
        two_then_denied(&conn, &format!("user-{i}")).await;
    }
    for node in &cluster.nodes {
        let keys = node.integer(&["DBSIZE"]);
        assert!(keys > 0, "node {} holds no key", node.port);
    }

    let wrong = format!("redis+cluster://:nope@{}", nodes.join(","));
    let err = RedisConnection::connect(&wrong, options())
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("nope"), "{err}");
    assert!(err.contains("redis+cluster://:***@"), "{err}");
}
