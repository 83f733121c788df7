//! The headers a proxy rewrites: hop-by-hop ones dropped, forwarding ones set.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::Uri;
use std::net::IpAddr;

/// Headers that describe one connection, never forwarded (RFC 9110 §7.6.1),
/// besides those named in `Connection` itself. As names, not strings: a
/// standard name compares and hashes as a number, not parsed per use.
const HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
];

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// The host the caller asked for: its `Host` header, else the authority of
/// an absolute-form (or HTTP/2) request target.
pub(super) fn original_host(headers: &HeaderMap, uri: &Uri) -> Option<HeaderValue> {
    if let Some(host) = headers.get(header::HOST) {
        return Some(host.clone());
    }
    uri.authority()
        .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
}

/// Removes `Connection`, every header it names, and the fixed hop-by-hop set.
pub(super) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // One look at the names present (most messages carry none of the set,
    // a response often `Connection` alone), then only those removed: not
    // nine removals, each a lookup.
    let mut present = 0u16;
    for name in headers.keys() {
        if let Some(i) = HOP_BY_HOP.iter().position(|hop| hop == name) {
            present |= 1 << i;
        }
    }
    if present == 0 {
        return;
    }
    // `Connection` is HOP_BY_HOP[0].
    if present & 1 != 0 {
        let named: Vec<HeaderName> = headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            // The usual token names a header of the fixed set, removed
            // below if present: no name to parse for it.
            .filter(|token| !token.eq_ignore_ascii_case("keep-alive"))
            .filter_map(|token| HeaderName::from_bytes(token.as_bytes()).ok())
            .collect();
        for name in named {
            headers.remove(name);
        }
    }
    for (i, name) in HOP_BY_HOP.iter().enumerate() {
        if present & (1 << i) != 0 {
            headers.remove(name);
        }
    }
}

/// The client's address as an `X-Forwarded-For` entry: written once per
/// connection (the address does not change), then shared by every request
/// that brings no `X-Forwarded-For` of its own, without a copy.
#[derive(Clone, Debug)]
pub(super) struct ClientAddr(HeaderValue);

impl ClientAddr {
    /// `ip` as `Display` writes it; `None` only if that were not a header
    /// value, which an address's text always is.
    pub(super) fn new(ip: IpAddr) -> Option<ClientAddr> {
        HeaderValue::from_maybe_shared(Bytes::from(ip.to_string()))
            .ok()
            .map(ClientAddr)
    }
}

/// `X-Forwarded-For` gains the client; `-Proto` and `-Host` are set.
pub(super) fn add_forwarding(
    headers: &mut HeaderMap,
    client: Option<&ClientAddr>,
    host: Option<HeaderValue>,
) {
    if let Some(ClientAddr(ip)) = client {
        let lines = || {
            let lines = headers.get_all(&X_FORWARDED_FOR).iter();
            lines
                .filter_map(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|line| !line.is_empty())
        };
        let before: usize = lines().map(|line| line.len() + 2).sum();
        let value = if before == 0 {
            Ok(ip.clone())
        } else {
            // Several X-Forwarded-For lines are one list (RFC 9110 §5.3):
            // one buffer of the exact size for all of them and the client,
            // which becomes the header value without a copy.
            let mut chain = Vec::with_capacity(before + ip.len());
            for line in lines() {
                chain.extend_from_slice(line.as_bytes());
                chain.extend_from_slice(b", ");
            }
            chain.extend_from_slice(ip.as_bytes());
            HeaderValue::from_maybe_shared(Bytes::from(chain))
        };
        if let Ok(value) = value {
            headers.insert(X_FORWARDED_FOR, value);
        }
    }
    headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static("http"));
    match host {
        Some(host) => headers.insert(X_FORWARDED_HOST, host),
        None => headers.remove(X_FORWARDED_HOST),
    };
}
