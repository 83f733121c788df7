//! The headers a proxy rewrites: hop-by-hop ones dropped, forwarding ones set.

use bytes::Bytes;
use http::header::{self, Entry, HeaderMap, HeaderName, HeaderValue, OccupiedEntry};
use http::Uri;
use std::net::IpAddr;

/// Headers that describe one connection, never forwarded (RFC 9110 §7.6.1),
/// besides those named in `Connection` itself. As names, not strings: a
/// standard name compares and hashes as a number, not parsed per use. A
/// `static`, not a `const`: a `const` array of names is a new temporary at
/// every use, dropped name by name after it (about 330 instructions per
/// proxied request in all).
static HOP_BY_HOP: [HeaderName; 9] = [
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
        if let Some(i) = hop_by_hop(name) {
            present |= 1 << i;
        }
    }
    if present == 0 {
        return;
    }
    // `Connection` is HOP_BY_HOP[0].
    if present & 1 != 0 {
        let named = named_by_connection(headers);
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

/// The headers `Connection` names (RFC 9110 §7.6.1) besides `keep-alive`,
/// the usual token, which names a header of the fixed set (removed with it,
/// so no name to parse for it). Read as bytes, as `HeaderValue::to_str`
/// then `str::split` and `str::trim` would read them, without their
/// machinery (about 440 instructions for a lone `keep-alive`): a value with
/// anything but visible ASCII and tabs is not read at all, and tokens are
/// trimmed of spaces and tabs, the only whitespace such a value can hold.
fn named_by_connection(headers: &HeaderMap) -> Vec<HeaderName> {
    let mut named = Vec::new();
    for value in headers.get_all(header::CONNECTION) {
        let value = value.as_bytes();
        if !value
            .iter()
            .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
        {
            continue;
        }
        for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            if token.is_empty() || token.eq_ignore_ascii_case(b"keep-alive") {
                continue;
            }
            if let Ok(name) = HeaderName::from_bytes(token) {
                named.push(name);
            }
        }
    }
    named
}

/// `name`'s place in [`HOP_BY_HOP`]. Most names have a length no name of
/// the set has, and are let go on that alone (one table look-up for a
/// standard name), not compared with nine names.
fn hop_by_hop(name: &HeaderName) -> Option<usize> {
    // The lengths of the names in HOP_BY_HOP.
    const LENGTHS: u32 = 1 << 2 | 1 << 7 | 1 << 10 | 1 << 16 | 1 << 17 | 1 << 18 | 1 << 19;
    let length = name.as_str().len();
    if length >= 32 || LENGTHS & (1 << length) == 0 {
        return None;
    }
    HOP_BY_HOP.iter().position(|hop| hop == name)
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
        // One look-up of the name, whether the request brings the header
        // or not (a custom name is hashed byte by byte).
        match headers.entry(X_FORWARDED_FOR) {
            Entry::Vacant(entry) => {
                entry.insert(ip.clone());
            }
            Entry::Occupied(mut entry) => {
                let before: usize = lines(&entry).map(|line| line.len() + 2).sum();
                let value = if before == 0 {
                    Ok(ip.clone())
                } else {
                    // Several X-Forwarded-For lines are one list (RFC 9110
                    // §5.3): one buffer of the exact size for all of them
                    // and the client, which becomes the header value
                    // without a copy.
                    let mut chain = Vec::with_capacity(before + ip.len());
                    for line in lines(&entry) {
                        chain.extend_from_slice(line.as_bytes());
                        chain.extend_from_slice(b", ");
                    }
                    chain.extend_from_slice(ip.as_bytes());
                    HeaderValue::from_maybe_shared(Bytes::from(chain))
                };
                if let Ok(value) = value {
                    entry.insert(value);
                }
            }
        }
    }
    headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static("http"));
    match host {
        Some(host) => headers.insert(X_FORWARDED_HOST, host),
        None => headers.remove(X_FORWARDED_HOST),
    };
}

/// The non-blank `X-Forwarded-For` lines, trimmed.
fn lines<'a>(entry: &'a OccupiedEntry<'_, HeaderValue>) -> impl Iterator<Item = &'a str> {
    let lines = entry.iter().filter_map(|v| v.to_str().ok());
    lines.map(str::trim).filter(|line| !line.is_empty())
}
