//! TLS: `rediss://` to a redis-server started with `--tls-port` and a
//! certificate signed by a CA the test makes, and `rediss+cluster://` to a
//! cluster of them; the CA given in `RedisOptions::tls`. A server whose
//! certificate chains to another CA, or names another host, is refused with
//! an error that says so. Mutual TLS: a Redis started with
//! `--tls-auth-clients yes` refuses a client without a certificate of its
//! CA, and serves one with it; a certificate or key file that cannot be
//! used is refused at start, naming the file and what is wrong with it.

use crate::redis_server;

use crate::tls_pki::{make_pki, tls_cluster, tls_server, Pki};
use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore, TlsFiles};
use redis_server::RedisServer;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn options(ca_file: Option<&Path>) -> RedisOptions {
    with_files(TlsFiles {
        ca_file: ca_file.map(Path::to_path_buf),
        ..TlsFiles::default()
    })
}

fn with_files(tls: TlsFiles) -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_secs(2),
        tls,
        ..RedisOptions::default()
    }
}

/// `pki`'s CA, and the client certificate and key given.
fn client_files(pki: &Pki, cert: &Path, key: &Path) -> TlsFiles {
    TlsFiles {
        ca_file: Some(pki.ca.clone()),
        cert_file: Some(cert.to_path_buf()),
        key_file: Some(key.to_path_buf()),
    }
}

/// Whether a store on `conn` admits one request on `key` and then denies
/// the next (a limit of one per hour).
async fn admits_once(conn: &RedisConnection, key: &str) -> bool {
    let rule = Rule::new(Algorithm::TokenBucket, "1/h".parse().unwrap());
    let store = RedisStore::new(conn, rule, "tls").unwrap();
    let first = store.decide(key, 1, Mode::Record).await.unwrap();
    let second = store.decide(key, 1, Mode::Record).await.unwrap();
    first.decision.allowed && !second.decision.allowed
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
        assert!(admits_once(&conn, host).await);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_asking_for_client_certificates_refuses_a_client_without_one_and_serves_it_with_one(
) {
    let pki = make_pki("mtls", &["127.0.0.1"]);
    let (server, tls_port) = tls_server(&pki, &["--tls-auth-clients", "yes"]);
    let url = format!("rediss://127.0.0.1:{tls_port}");
    for err in [
        RedisConnection::connect(&url, options(Some(&pki.ca)))
            .await
            .unwrap_err(),
        // Waiting would not change it: refused at start too.
        RedisConnection::start(&url, options(Some(&pki.ca)))
            .await
            .unwrap_err(),
    ] {
        let err = err.to_string();
        assert!(err.contains("asks for a client certificate"), "{err}");
    }

    // A certificate of another CA is refused by the server.
    let other = make_pki("mtls-other", &["127.0.0.1"]);
    let err = RedisConnection::connect(
        &url,
        with_files(client_files(&pki, &other.client_cert, &other.client_key)),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("refused the client certificate"), "{err}");

    let files = client_files(&pki, &pki.client_cert, &pki.client_key);
    let conn = RedisConnection::connect(&url, with_files(files.clone()))
        .await
        .unwrap();
    assert!(admits_once(&conn, "mtls").await);
    assert_eq!(server.integer(&["DBSIZE"]), 1);
    // The same files when the server starts later.
    let conn = RedisConnection::start(&url, with_files(files))
        .await
        .unwrap();
    assert!(conn.is_healthy());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificate_and_key_files_that_cannot_be_used_are_refused_naming_them() {
    let pki = make_pki("mtls-files", &["127.0.0.1"]);
    let other = make_pki("mtls-files-other", &["127.0.0.1"]);
    // No server: each file is checked before any connection is tried.
    let url = "rediss://127.0.0.1:1";
    let dir = pki.ca.parent().unwrap();
    let missing = dir.join("no-such-client.pem");
    let not_pem = dir.join("not-pem.txt");
    std::fs::write(&not_pem, "not PEM at all").unwrap();
    let shown = |p: &PathBuf| p.to_string_lossy().into_owned();
    let cases: [(TlsFiles, &PathBuf, &str); 6] = [
        (
            client_files(&pki, &missing, &pki.client_key),
            &missing,
            "No such file",
        ),
        (
            client_files(&pki, &not_pem, &pki.client_key),
            &not_pem,
            "no PEM certificate",
        ),
        (
            client_files(&pki, &pki.client_cert, &not_pem),
            &not_pem,
            "no PEM private key",
        ),
        (
            client_files(&pki, &pki.client_cert, &other.client_key),
            &other.client_key,
            "not the key of the certificate",
        ),
        (
            TlsFiles {
                cert_file: Some(pki.client_cert.clone()),
                ..TlsFiles::default()
            },
            &pki.client_cert,
            "no key given",
        ),
        (
            TlsFiles {
                key_file: Some(pki.client_key.clone()),
                ..TlsFiles::default()
            },
            &pki.client_key,
            "no certificate given",
        ),
    ];
    for (files, named, what) in cases {
        let err = RedisConnection::start(url, with_files(files))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(&shown(named)), "{named:?}: {err}");
        assert!(err.contains(what), "{what}: {err}");
    }

    // Client files with a URL that is not TLS are a mistake, not ignored.
    let err = RedisConnection::start(
        "redis+cluster://127.0.0.1:1",
        with_files(client_files(&pki, &pki.client_cert, &pki.client_key)),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("rediss+cluster://"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_client_certificate_is_refused_naming_it_not_as_a_key_mismatch() {
    // `openssl x509 -req` without extensions signs an X.509 version 1
    // certificate, which rustls does not take: said at start, naming the
    // certificate and how to make one it takes.
    let pki = make_pki("mtls-v1", &["127.0.0.1"]);
    let dir = pki.ca.parent().unwrap();
    let (key, csr, cert) = (dir.join("v1.key"), dir.join("v1.csr"), dir.join("v1.pem"));
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl (Debian's openssl package)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let path = |p: &PathBuf| p.to_string_lossy().into_owned();
    openssl(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        &path(&key),
        "-out",
        &path(&csr),
        "-subj",
        "/CN=limits-client",
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        &path(&csr),
        "-signkey",
        &path(&key),
        "-out",
        &path(&cert),
        "-days",
        "1",
    ]);
    let err = RedisConnection::start(
        "rediss://127.0.0.1:1",
        with_files(client_files(&pki, &cert, &key)),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains(&path(&cert)), "{err}");
    assert!(err.contains("only X.509 version 3"), "{err}");
    assert!(!err.contains("not the key"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_of_a_tls_cluster_is_reached_over_tls_with_the_same_files() {
    let pki = make_pki("cluster", &["127.0.0.1"]);
    let (cluster, tls_ports) = tls_cluster(
        &pki,
        &["--tls-auth-clients", "yes", "--requirepass", "s3cret"],
    );
    // Two seeds: the third node is discovered, and reached the same way.
    let url = format!(
        "rediss+cluster://:s3cret@127.0.0.1:{},127.0.0.1:{}",
        tls_ports[0], tls_ports[1]
    );
    let files = client_files(&pki, &pki.client_cert, &pki.client_key);
    let conn = RedisConnection::connect(&url, with_files(files))
        .await
        .unwrap();
    for key in 0..64 {
        assert!(admits_once(&conn, &format!("k{key}")).await, "key k{key}");
    }
    for (node, tls_port) in cluster.nodes.iter().zip(&tls_ports) {
        assert!(node.integer(&["DBSIZE"]) > 0, "keys on every node");
        // The store's connections to this node came in on its TLS port.
        let clients = node.command(&["CLIENT", "LIST"]).unwrap();
        assert!(
            clients.contains(&format!("laddr=127.0.0.1:{tls_port} ")),
            "a client on the TLS port {tls_port}: {clients}"
        );
    }

    // Without the client certificate, the cluster refuses.
    let err = RedisConnection::connect(&url, options(Some(&pki.ca)))
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("s3cret"), "{err}");
    assert!(err.contains("rediss+cluster://:***@"), "{err}");
}
