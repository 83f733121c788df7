//! The files of a TLS Redis connection: the CA its servers' certificates
//! must chain to, and the certificate and key this client shows them
//! (mutual TLS). Read and checked once, before any connection is tried, so
//! that a wrong file is named at start, not as a handshake failure later.

use redis::{ClientTlsConfig, TlsCertificates};
use rustls::crypto::ring::default_provider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::InconsistentKeys;
use std::path::{Path, PathBuf};

/// The PEM files of a TLS Redis (`rediss://`, `rediss+cluster://`,
/// `rediss+sentinel://`): each optional; the certificate and the key go
/// together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificates that the servers' certificates must chain to,
    /// instead of the system's trusted roots.
    pub ca_file: Option<PathBuf>,
    /// This client's certificate (with its chain), for a Redis that asks
    /// for one (`tls-auth-clients yes`).
    pub cert_file: Option<PathBuf>,
    /// The private key of [`cert_file`](Self::cert_file).
    pub key_file: Option<PathBuf>,
}

impl TlsFiles {
    /// Whether any file is given.
    pub fn any(&self) -> bool {
        self.ca_file.is_some() || self.cert_file.is_some() || self.key_file.is_some()
    }

    /// The files read and checked: each one readable and PEM, the key the
    /// certificate's; `None` when none is given (the system's roots, no
    /// client certificate). An error names the file and what is wrong.
    pub(crate) fn certificates(&self) -> Result<Option<TlsCertificates>, String> {
        if !self.any() {
            return Ok(None);
        }
        let root_cert = match &self.ca_file {
            Some(path) => {
                let pem = read(path, "CA file")?;
                let certs = certificates(&pem, path, "CA file")?;
                if certs.is_empty() {
                    return Err(no_certificate(path, "CA file"));
                }
                Some(pem)
            }
            None => None,
        };
        let client_tls = match (&self.cert_file, &self.key_file) {
            (None, None) => None,
            (Some(cert), None) => {
                return Err(format!(
                    "the Redis client certificate {}: no key given for it (--redis-key)",
                    cert.display()
                ))
            }
            (None, Some(key)) => {
                return Err(format!(
                    "the Redis client key {}: no certificate given for it (--redis-cert)",
                    key.display()
                ))
            }
            (Some(cert_path), Some(key_path)) => Some(client_identity(cert_path, key_path)?),
        };
        Ok(Some(TlsCertificates {
            client_tls,
            root_cert,
        }))
    }
}

/// The client certificate and key, checked to be a pair.
fn client_identity(cert_path: &Path, key_path: &Path) -> Result<ClientTlsConfig, String> {
    const CERT: &str = "client certificate";
    const KEY: &str = "client key";
    let cert_pem = read(cert_path, CERT)?;
    let chain = certificates(&cert_pem, cert_path, CERT)?;
    if chain.is_empty() {
        return Err(no_certificate(cert_path, CERT));
    }
    let key_pem = read(key_path, KEY)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        format!(
            "the Redis {KEY} {}: no PEM private key in it (expected -----BEGIN PRIVATE KEY-----, \
             RSA PRIVATE KEY or EC PRIVATE KEY; {e})",
            key_path.display()
        )
    })?;
    let signing_key = default_provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| {
            format!(
                "the Redis {KEY} {}: cannot be used ({e})",
                key_path.display()
            )
        })?;
    match CertifiedKey::new(chain, signing_key).keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => {}
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
            return Err(format!(
                "the Redis {KEY} {}: not the key of the certificate {}",
                key_path.display(),
                cert_path.display()
            ))
        }
        // rustls reads its own certificate before sending it, and takes
        // X.509 version 3 only.
        Err(e) => {
            let hint = match e.to_string().contains("UnsupportedCertVersion") {
                true => {
                    "; only X.509 version 3 certificates are taken: sign it with \
                     extensions (openssl x509 -req ... -extfile FILE)"
                }
                false => "",
            };
            return Err(format!(
                "the Redis {CERT} {}: cannot be used ({e}){hint}",
                cert_path.display()
            ));
        }
    }
    Ok(ClientTlsConfig {
        client_cert: cert_pem,
        client_key: key_pem,
    })
}

/// The bytes of `path`, or an error naming it as the `what` file.
fn read(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("the Redis {what} {}: {e}", path.display()))
}

/// The PEM certificates in `pem` (none: an empty list).
fn certificates(
    pem: &[u8],
    path: &Path,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the Redis {what} {}: {e}", path.display()))
}

fn no_certificate(path: &Path, what: &str) -> String {
    format!(
        "the Redis {what} {}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)",
        path.display()
    )
}
