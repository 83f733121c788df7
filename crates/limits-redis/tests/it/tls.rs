//! TLS: `rediss://` to a redis-server started with `--tls-port` and a
//! certificate signed by a CA the test makes; the CA given as
//! `RedisOptions::ca_file`. A server whose certificate chains to another CA,
//! or names another host, is refused with an error that says so.

use crate::redis_server;

use crate::tls_pki::{make_pki, tls_server};
use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use redis_server::RedisServer;
use std::path::Path;
use std::time::Duration;

fn options(ca_file: Option<&Path>) -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_secs(2),
        ca_file: ca_file.map(Path::to_path_buf),
        ..RedisOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_redis_is_reached_with_its_ca_file_and_a_password() {
    let pki = make_pki("good", &["127.0.0.1", "localhost"]);
    let (server, tls_port) = tls_server(&pki, &["--requirepass", "s3cret"]);
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("rediss://:s3cret@{host}:{tls_port}");
        let conn = RedisConnection::connect(&url, options(Some(&pki.ca)))
            .await
            .unwrap();
        let rule = Rule::new(Algorithm::TokenBucket, "1/h".parse().unwrap());
        let store = RedisStore::new(&conn, rule, "tls").unwrap();
        let first = store.decide(host, 1, Mode::Record).await.unwrap();
        let second = store.decide(host, 1, Mode::Record).await.unwrap();
        assert!(first.decision.allowed && !second.decision.allowed);
    }
    assert_eq!(server.integer(&["DBSIZE"]), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_from_another_ca_is_refused() {
    let pki = make_pki("server", &["127.0.0.1"]);
    let other = make_pki("other", &["127.0.0.1"]);
    let (_server, tls_port) = tls_server(&pki, &[]);
    let url = format!("rediss://127.0.0.1:{tls_port}");
    // Another CA, then the system's roots: neither signed it.
    for ca in [Some(other.ca.as_path()), None] {
        for err in [
            RedisConnection::connect(&url, options(ca))
                .await
                .unwrap_err(),
            RedisConnection::start(&url, options(ca)).await.unwrap_err(),
        ] {
            let err = err.to_string();
            assert!(err.contains(&url), "{err}");
            assert!(err.contains("TLS certificate was refused"), "{err}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_host_name_is_refused() {
    let pki = make_pki("name", &["redis.example"]);
    let (_server, tls_port) = tls_server(&pki, &[]);
    let url = format!("rediss://127.0.0.1:{tls_port}");
    let err = RedisConnection::connect(&url, options(Some(&pki.ca)))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("TLS certificate was refused"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_ca_file_is_refused_naming_it() {
    let server = RedisServer::start();
    let tls = format!("rediss://127.0.0.1:{}", server.port);
    let missing = std::env::temp_dir().join("limits-tls-no-such-ca.pem");
    let err = RedisConnection::connect(&tls, options(Some(&missing)))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&missing.to_string_lossy().into_owned()),
        "{err}"
    );

    let not_pem = std::env::temp_dir().join(format!("limits-tls-not-pem-{}", std::process::id()));
    std::fs::write(&not_pem, "not a certificate").unwrap();
    let err = RedisConnection::connect(&tls, options(Some(&not_pem)))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no PEM certificate"), "{err}");
    assert!(
        err.contains(&not_pem.to_string_lossy().into_owned()),
        "{err}"
    );

    // A CA file with a URL that is not TLS is a mistake, not ignored.
    let pki = make_pki("plain", &["127.0.0.1"]);
    let err = RedisConnection::connect(&server.url(), options(Some(&pki.ca)))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("rediss://"), "{err}");
}
