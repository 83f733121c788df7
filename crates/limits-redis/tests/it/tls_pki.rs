//! The certificates of a TLS redis-server for tests, made at run time
//! (rcgen): a CA, and a server and a client certificate it signs; and the
//! TLS servers themselves: one Redis, a cluster. Shared by the tests of
//! limits-redis and limits-cli (included by path).

#![allow(dead_code)]

use crate::redis_server::{free_cluster_port, free_port, RedisCluster, RedisServer};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::path::{Path, PathBuf};

/// A CA, and a server and a client certificate it signed, as PEM files in
/// a directory of their own.
pub struct Pki {
    /// The CA's certificate.
    pub ca: PathBuf,
    /// The server's certificate.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
    /// A client's certificate (for `tls-auth-clients yes`).
    pub client_cert: PathBuf,
    /// The client's private key.
    pub client_key: PathBuf,
}

/// Makes a CA named `name`, a server certificate it signs for `hosts` and a
/// client certificate, in a directory of their own.
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
    let client_key = KeyPair::generate().unwrap();
    let client_cert = CertificateParams::new(vec!["limits-client".to_owned()])
        .unwrap()
        .signed_by(&client_key, &issuer)
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
        client_cert: write("client.pem", client_cert.pem()),
        client_key: write("client.key", client_key.serialize_pem()),
    }
}

/// A redis-server with a TLS port (and its plain one, for the test's own
/// commands); the TLS port.
pub fn tls_server(pki: &Pki, extra: &[&str]) -> (RedisServer, u16) {
    let tls_port = free_port();
    (tls_server_on(pki, tls_port, extra), tls_port)
}

/// The arguments of a redis-server whose TLS port is `tls_port`, with
/// `pki`'s certificates, clients not asked for one (`extra` may say
/// otherwise: a later argument wins).
pub fn tls_args(pki: &Pki, tls_port: u16) -> Vec<String> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    [
        "--tls-port",
        &tls_port.to_string(),
        "--tls-cert-file",
        &path(&pki.cert),
        "--tls-key-file",
        &path(&pki.key),
        "--tls-ca-cert-file",
        &path(&pki.ca),
        "--tls-auth-clients",
        "no",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A redis-server with TLS on `tls_port` (and its plain port, for the
/// test's own commands).
pub fn tls_server_on(pki: &Pki, tls_port: u16, extra: &[&str]) -> RedisServer {
    let mut args = tls_args(pki, tls_port);
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    RedisServer::start_with(&args)
}

/// A 3-master Redis Cluster over TLS: each node's clients and cluster bus
/// on TLS (`tls-cluster yes`), so that the slots it tells a TLS client of
/// are at TLS ports; each node with `extra` too. The cluster, and each
/// node's TLS port.
pub fn tls_cluster(pki: &Pki, extra: &[&str]) -> (RedisCluster, Vec<u16>) {
    let mut nodes = Vec::new();
    let mut tls_ports = Vec::new();
    for _ in 0..3 {
        // The bus is at the TLS port + 10000 with tls-cluster.
        let tls_port = free_cluster_port();
        let mut args = vec!["--cluster-enabled", "yes", "--tls-cluster", "yes"];
        args.extend_from_slice(extra);
        nodes.push(tls_server_on(pki, tls_port, &args));
        tls_ports.push(tls_port);
    }
    let addrs: Vec<String> = tls_ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let path = |p: &Path| p.to_string_lossy().into_owned();
    // The client certificate too, in case `extra` asks clients for one.
    let cli = [
        "--tls".to_owned(),
        "--cacert".to_owned(),
        path(&pki.ca),
        "--cert".to_owned(),
        path(&pki.client_cert),
        "--key".to_owned(),
        path(&pki.client_key),
    ];
    (RedisCluster::join(nodes, &addrs, &cli), tls_ports)
}
