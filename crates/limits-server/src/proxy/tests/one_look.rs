//! One pass over a message's headers (`forwarding::look`), the request's
//! `Host` replaced in place and `X-Forwarded-For` inserted without a look-up
//! when the pass saw none, give what a plain reading gives (one look-up and
//! one edit per step, below): the same headers, values and order (the
//! order a `HeaderMap` iterates in is the order hyper's client writes), for
//! the request (`rewrite_request` against `original_host`, the stripping,
//! `add_forwarding` and the `Host` insert) and the response (the stripping
//! alone), over some thousands of header sets drawn from names the passes
//! treat apart: every hop-by-hop name, `Connection` values that name
//! `Host`, `X-Forwarded-For` or nothing but `keep-alive` in any case,
//! several `Host` and `X-Forwarded-For` lines, names of `X-Forwarded-For`'s
//! length, and requests without `Host`, in origin and absolute form.

use super::forwarding::{rewrite_request, strip_hop_by_hop, ClientAddr};
use super::rewrites::{listed, map};
use bytes::Bytes;
use http::header::{self, Entry, HeaderMap, HeaderName, HeaderValue, OccupiedEntry};
use http::Uri;
use std::net::IpAddr;

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

/// `forwarding::strip_hop_by_hop` at 49793f1.
fn strip_before(headers: &mut HeaderMap) {
    let mut present = 0u16;
    for name in headers.keys() {
        if let Some(i) = hop_by_hop_before(name) {
            present |= 1 << i;
        }
    }
    if present == 0 {
        return;
    }
    if present & 1 != 0 {
        for name in named_before(headers) {
            headers.remove(name);
        }
    }
    for (i, name) in HOP_BY_HOP.iter().enumerate() {
        if present & (1 << i) != 0 {
            headers.remove(name);
        }
    }
}

fn named_before(headers: &HeaderMap) -> Vec<HeaderName> {
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

fn hop_by_hop_before(name: &HeaderName) -> Option<usize> {
    const LENGTHS: u32 = 1 << 2 | 1 << 7 | 1 << 10 | 1 << 16 | 1 << 17 | 1 << 18 | 1 << 19;
    let length = name.as_str().len();
    if length >= 32 || LENGTHS & (1 << length) == 0 {
        return None;
    }
    HOP_BY_HOP.iter().position(|hop| hop == name)
}

/// `forwarding::add_forwarding` at 49793f1.
fn add_forwarding_before(
    headers: &mut HeaderMap,
    ip: Option<&HeaderValue>,
    host: Option<HeaderValue>,
) {
    if let Some(ip) = ip {
        match headers.entry("x-forwarded-for") {
            Entry::Vacant(entry) => {
                entry.insert(ip.clone());
            }
            Entry::Occupied(mut entry) => {
                let before: usize = lines(&entry).map(|line| line.len() + 2).sum();
                let value = if before == 0 {
                    Ok(ip.clone())
                } else {
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
    headers.insert("x-forwarded-proto", HeaderValue::from_static("http"));
    match host {
        Some(host) => headers.insert("x-forwarded-host", host),
        None => headers.remove("x-forwarded-host"),
    };
}

fn lines<'a>(entry: &'a OccupiedEntry<'_, HeaderValue>) -> impl Iterator<Item = &'a str> {
    let lines = entry.iter().filter_map(|v| v.to_str().ok());
    lines.map(str::trim).filter(|line| !line.is_empty())
}

/// `Proxy::prepare`'s header steps at 49793f1.
fn rewrite_before(
    headers: &mut HeaderMap,
    uri: &Uri,
    ip: Option<&HeaderValue>,
    upstream: &HeaderValue,
) {
    let host = match headers.get(header::HOST) {
        Some(host) => Some(host.clone()),
        None => uri
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok()),
    };
    strip_before(headers);
    add_forwarding_before(headers, ip, host);
    headers.insert(header::HOST, upstream.clone());
}

/// Names and values the passes treat apart.
const POOL: &[(&str, &[u8])] = &[
    ("host", b"front.example"),
    ("host", b"second.example"),
    ("x-forwarded-for", b"198.51.100.1"),
    ("x-forwarded-for", b" 198.51.100.2, 10.0.0.1 "),
    ("x-forwarded-for", b""),
    ("x-forwarded-host", b"earlier.example"),
    ("x-forwarded-proto", b"https"),
    ("connection", b"keep-alive"),
    ("connection", b"Keep-Alive"),
    ("connection", b"keep-alive "),
    ("connection", b"close"),
    ("connection", b"host"),
    ("connection", b"X-Forwarded-For, keep-alive"),
    ("connection", b"x-a, te"),
    ("keep-alive", b"timeout=5"),
    ("proxy-connection", b"keep-alive"),
    ("te", b"trailers"),
    ("trailer", b"x-sum"),
    ("transfer-encoding", b"chunked"),
    ("upgrade", b"h2c"),
    ("proxy-authenticate", b"Basic"),
    ("proxy-authorization", b"x"),
    ("accept-encoding", b"gzip"),
    ("accept-language", b"en"),
    ("x-forwarded-fox", b"1"),
    ("x-a", b"1"),
    ("close", b"1"),
    ("server", b"nginx"),
    ("content-length", b"9"),
];

/// A message's headers, as names and values, in order.
type Pairs = [(&'static str, &'static [u8])];

/// Some thousands of header sets, up to 9 headers drawn from [`POOL`] in
/// any order (repeats too), the same ones every run.
fn header_sets() -> Vec<Vec<(&'static str, &'static [u8])>> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut sets: Vec<Vec<(&str, &[u8])>> = POOL.iter().map(|&pair| vec![pair]).collect();
    for _ in 0..4000 {
        let n = (next() % 10) as usize;
        sets.push(
            (0..n)
                .map(|_| POOL[(next() % POOL.len() as u64) as usize])
                .collect(),
        );
    }
    sets
}

#[test]
fn the_response_is_stripped_as_before() {
    for pairs in header_sets() {
        let mut ours = map(&pairs);
        let mut before = map(&pairs);
        strip_hop_by_hop(&mut ours);
        strip_before(&mut before);
        assert_eq!(listed(&ours), listed(&before), "{pairs:?}");
    }
}

#[test]
fn the_request_is_rewritten_as_before() {
    let upstream = HeaderValue::from_static("127.0.0.1:8080");
    let uris: [Uri; 3] = [
        Uri::from_static("/p?q=1"),
        Uri::from_static("http://absolute.example/p"),
        Uri::from_static("*"),
    ];
    let ips: [Option<IpAddr>; 3] = [
        None,
        Some("203.0.113.7".parse().expect("ip")),
        Some("2001:db8::1".parse().expect("ip")),
    ];
    let mut cases = 0;
    for pairs in header_sets() {
        for uri in &uris {
            for ip in ips {
                let client = ip.map(|ip| ClientAddr::new(ip).expect("address"));
                let text = ip.map(|ip| HeaderValue::from_str(&ip.to_string()).expect("value"));
                let mut ours = map(&pairs);
                let mut before = map(&pairs);
                rewrite_request(&mut ours, uri, client.as_ref(), &upstream);
                rewrite_before(&mut before, uri, text.as_ref(), &upstream);
                assert_eq!(listed(&ours), listed(&before), "{pairs:?} {uri} {ip:?}");
                cases += 1;
            }
        }
    }
    assert!(cases > 30_000, "{cases}");
}

#[test]
fn the_sets_reach_every_branch() {
    // The draws hold what each branch needs: Host replaced in place (no
    // Connection but keep-alive), Host named by Connection, no Host at all,
    // X-Forwarded-For present or not beside a lone keep-alive.
    let sets = header_sets();
    let has = |pairs: &[(&str, &[u8])], name: &str, value: Option<&[u8]>| {
        pairs
            .iter()
            .any(|(n, v)| *n == name && value.is_none_or(|value| *v == value))
    };
    let lone_keep_alive = |pairs: &[(&str, &[u8])]| {
        pairs
            .iter()
            .filter(|(n, _)| *n == "connection")
            .all(|(_, v)| v.eq_ignore_ascii_case(b"keep-alive"))
    };
    let count = |f: &dyn Fn(&Pairs) -> bool| sets.iter().filter(|p| f(p)).count();
    assert!(count(&|p| has(p, "host", None) && lone_keep_alive(p)) > 100);
    assert!(count(&|p| has(p, "host", None) && has(p, "connection", Some(b"host"))) > 20);
    assert!(count(&|p| !has(p, "host", None)) > 100);
    assert!(count(&|p| has(p, "x-forwarded-for", None) && lone_keep_alive(p)) > 100);
    assert!(count(&|p| !has(p, "x-forwarded-for", None) && lone_keep_alive(p)) > 100);
    assert!(count(&|p| has(p, "connection", Some(b"X-Forwarded-For, keep-alive"))) > 20);
}
