//! The headers a proxy rewrites: hop-by-hop ones dropped, forwarding ones set.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::Uri;
use std::fmt::Write;
use std::net::IpAddr;

/// Headers that describe one connection, never forwarded (RFC 9110 §7.6.1),
/// besides those named in `Connection` itself.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
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
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

/// `X-Forwarded-For` gains the client; `-Proto` and `-Host` are set.
pub(super) fn add_forwarding(
    headers: &mut HeaderMap,
    client: Option<IpAddr>,
    host: Option<HeaderValue>,
) {
    if let Some(ip) = client {
        // Several X-Forwarded-For lines are one list (RFC 9110 §5.3): one
        // string for all of them, and no copy of it into the header value.
        let mut chain = String::with_capacity(64);
        let lines = headers.get_all(&X_FORWARDED_FOR).iter();
        for line in lines.filter_map(|v| v.to_str().ok()).map(str::trim) {
            if !line.is_empty() {
                chain.push_str(line);
                chain.push_str(", ");
            }
        }
        // Writing into a String cannot fail.
        let _ = write!(chain, "{ip}");
        if let Ok(value) = HeaderValue::from_maybe_shared(Bytes::from(chain)) {
            headers.insert(X_FORWARDED_FOR, value);
        }
    }
    headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static("http"));
    match host {
        Some(host) => headers.insert(X_FORWARDED_HOST, host),
        None => headers.remove(X_FORWARDED_HOST),
    };
}
