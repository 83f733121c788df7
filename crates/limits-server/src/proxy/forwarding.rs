//! The headers a proxy rewrites: hop-by-hop ones dropped, forwarding ones set.

use bytes::Bytes;
use http::header::{self, Entry, HeaderMap, HeaderName, HeaderValue, OccupiedEntry};
use http::Uri;
use std::net::IpAddr;

/// Headers that describe one connection, never forwarded (RFC 9110 §7.6.1),
/// besides those named in `Connection` itself. As names, not strings: a
/// standard name compares and hashes as a number, not parsed per use. A
/// `static`, not a `const`: a `const` array of names is a new temporary at
/// every use, dropped name by name after it, on every proxied request.
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
    let found = look(headers);
    strip_found(headers, found);
}

/// What one pass over a message's headers found, so that the rewrites
/// after it need not look names up again (each look-up hashes the name,
/// a custom one byte by byte).
#[derive(Clone, Copy, Debug, Default)]
struct Found {
    /// The names of [`HOP_BY_HOP`] present, bit `i` for `HOP_BY_HOP[i]`.
    hop: u16,
    /// A `Connection` value other than a lone `keep-alive`: it may name
    /// other headers, so its tokens are to be read (and any header, `Host`
    /// or `X-Forwarded-For` too, may go).
    named: bool,
    /// An `X-Forwarded-For` is present.
    forwarded_for: bool,
}

/// One pass over the headers (most messages carry none of the hop-by-hop
/// set, a response from nginx `Connection: keep-alive` alone).
fn look(headers: &HeaderMap) -> Found {
    let mut found = Found::default();
    for (name, value) in headers {
        match hop_by_hop(name) {
            Some(HopOrForwarded::Hop(i)) => {
                found.hop |= 1 << i;
                // `Connection` is HOP_BY_HOP[0]. nginx's lone `keep-alive`
                // names a header of the fixed set, removed anyway. Compared
                // as it is sent first: a case-blind comparison goes byte by
                // byte.
                if i == 0 {
                    let value = value.as_bytes();
                    found.named |=
                        value != b"keep-alive" && !value.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            Some(HopOrForwarded::ForwardedFor) => found.forwarded_for = true,
            None => {}
        }
    }
    found
}

/// Removes what [`look`] found: the headers `Connection` names, then the
/// hop-by-hop names present, in [`HOP_BY_HOP`]'s order.
fn strip_found(headers: &mut HeaderMap, found: Found) {
    if found.named {
        for name in named_by_connection(headers) {
            headers.remove(name);
        }
    }
    let mut present = found.hop;
    while present != 0 {
        headers.remove(&HOP_BY_HOP[present.trailing_zeros() as usize]);
        present &= present - 1;
    }
}

/// The request as the upstream is to get it, as [`original_host`], then
/// [`strip_hop_by_hop`], then [`add_forwarding`] with the host it read,
/// then `Host` set to `upstream` would leave it, header for header and in
/// the same order, with fewer look-ups: when `Connection` can name no
/// header (absent, or a lone `keep-alive`), `Host` is replaced in place,
/// its old value the original host (one look-up, not a `get`, a clone and
/// an `insert`), and `X-Forwarded-For` is inserted without the entry
/// API's look-up when the pass saw none. Otherwise, as those four steps.
pub(super) fn rewrite_request(
    headers: &mut HeaderMap,
    uri: &Uri,
    client: Option<&ClientAddr>,
    upstream: &HeaderValue,
) {
    let found = look(headers);
    if found.named {
        let host = original_host(headers, uri);
        strip_found(headers, found);
        add_forwarding(headers, client, host);
        headers.insert(header::HOST, upstream.clone());
        return;
    }
    // Only the fixed set goes, which holds neither `Host` nor
    // `X-Forwarded-For`: what is replaced now stays where it is.
    let replaced = match headers.entry(header::HOST) {
        Entry::Occupied(mut entry) => Some(entry.insert(upstream.clone())),
        Entry::Vacant(_) => None,
    };
    strip_found(headers, found);
    match replaced {
        Some(host) => add_forwarding_to(headers, client, Some(host), found.forwarded_for),
        None => {
            let host = original_host(headers, uri);
            add_forwarding_to(headers, client, host, found.forwarded_for);
            headers.insert(header::HOST, upstream.clone());
        }
    }
}

/// The headers `Connection` names (RFC 9110 §7.6.1) besides `keep-alive`,
/// the usual token, which names a header of the fixed set (removed with it,
/// so no name to parse for it). Read as bytes, as `HeaderValue::to_str`
/// then `str::split` and `str::trim` would read them, without their
/// machinery, on every proxied request that sends one: a value with
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

/// What a name is to [`look`].
enum HopOrForwarded {
    /// `HOP_BY_HOP[i]`.
    Hop(usize),
    /// `X-Forwarded-For`.
    ForwardedFor,
}

/// `name`'s place in [`HOP_BY_HOP`], or `X-Forwarded-For`. Most names have
/// a length none of those has, and are let go on that alone (one table
/// look-up for a standard name), not compared with ten names.
fn hop_by_hop(name: &HeaderName) -> Option<HopOrForwarded> {
    // The lengths of the names in HOP_BY_HOP, and X-Forwarded-For's (15).
    const LENGTHS: u32 =
        1 << 2 | 1 << 7 | 1 << 10 | 1 << 15 | 1 << 16 | 1 << 17 | 1 << 18 | 1 << 19;
    let length = name.as_str().len();
    if length >= 32 || LENGTHS & (1 << length) == 0 {
        return None;
    }
    if length == 15 {
        return (*name == X_FORWARDED_FOR).then_some(HopOrForwarded::ForwardedFor);
    }
    HOP_BY_HOP
        .iter()
        .position(|hop| hop == name)
        .map(HopOrForwarded::Hop)
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
    add_forwarding_to(headers, client, host, true);
}

/// [`add_forwarding`], told whether `X-Forwarded-For` may be present: if
/// not, the client is inserted, without the entry API's look-up first.
fn add_forwarding_to(
    headers: &mut HeaderMap,
    client: Option<&ClientAddr>,
    host: Option<HeaderValue>,
    forwarded_for: bool,
) {
    if let (Some(ClientAddr(ip)), false) = (client, forwarded_for) {
        headers.insert(X_FORWARDED_FOR, ip.clone());
    } else if let Some(ClientAddr(ip)) = client {
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
