//! The certificates of a TLS redis-server for tests, made at run time
//! (rcgen): a CA, and a server certificate it signs. Shared by the tests of
//! limits-redis and limits-cli (included by path).

#![allow(dead_code)]

use crate::redis_server::{free_port, RedisServer};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::path::{Path, PathBuf};

/// A CA, and a server certificate it signed, as PEM files in `dir`.
pub struct Pki {
    /// The CA's certificate.
    pub ca: PathBuf,
    /// The server's certificate.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
}

/// Makes a CA named `name` and a certificate it signs for `hosts`, in a
/// directory of their own.
pub fn make_pki(name: &str, hosts: &[&str]) -> Pki {
    let dir = std::env::temp_dir().join(format!("limits-tls-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("limits test CA {name}"));
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    let cert = CertificateParams::new(hosts)
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let write = |file: &str, text: String| {
        let path = dir.join(file);
        std::fs::write(&path, text).unwrap();
        path
    };
    Pki {
        ca: write("ca.pem", ca_cert.pem()),
        cert: write("server.pem", cert.pem()),
        key: write("server.key", key.serialize_pem()),
    }
}

/// A redis-server with a TLS port (and its plain one, for the test's own
/// commands); the TLS port.
pub fn tls_server(pki: &Pki, extra: &[&str]) -> (RedisServer, u16) {
    let tls_port = free_port();
    let port = tls_port.to_string();
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let (cert, key, ca) = (path(&pki.cert), path(&pki.key), path(&pki.ca));
    let mut args = vec![
        "--tls-port",
        &port,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-ca-cert-file",
        &ca,
        "--tls-auth-clients",
        "no",
    ];
    args.extend_from_slice(extra);
    (RedisServer::start_with(&args), tls_port)
}
