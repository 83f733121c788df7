//! The one forwarding header the operator names, read into a chain of hops.
//!
//! Only one header is read because a proxy appends to the header it knows
//! and passes every other one through untouched: nginx with
//! `$proxy_add_x_forwarded_for` forwards a client's own `Forwarded: for=…`
//! verbatim, so reading it would let the client write its own address.
//!
//! Parsing works on bytes: an entry that is not valid UTF-8 (obs-text) is one
//! unreadable hop, never a reason to drop the whole line, and several lines
//! of the header form one list, in order (RFC 9110 §5.3).

use http::HeaderMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

/// The forwarding header that names the client (`--client-ip-header`), as
/// nginx's `real_ip_header` does. The others are ignored entirely.
///
/// ```
/// use limits_http::ClientIpHeader;
/// let h: ClientIpHeader = "Forwarded".parse().unwrap();
/// assert_eq!(h, ClientIpHeader::Forwarded);
/// assert_eq!(ClientIpHeader::default().to_string(), "x-forwarded-for");
/// assert!("via".parse::<ClientIpHeader>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClientIpHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2`, as nginx's
    /// `$proxy_add_x_forwarded_for` and most load balancers write it.
    #[default]
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239).
    Forwarded,
    /// `X-Real-IP: client`: one address, set (not appended) by the proxy.
    XRealIp,
}

impl ClientIpHeader {
    /// Every choice, in the order help texts list them.
    pub const ALL: [ClientIpHeader; 3] = [
        ClientIpHeader::XForwardedFor,
        ClientIpHeader::Forwarded,
        ClientIpHeader::XRealIp,
    ];

    /// The header's name, lowercase: `x-forwarded-for`, `forwarded`, `x-real-ip`.
    pub fn name(self) -> &'static str {
        match self {
            ClientIpHeader::XForwardedFor => "x-forwarded-for",
            ClientIpHeader::Forwarded => "forwarded",
            ClientIpHeader::XRealIp => "x-real-ip",
        }
    }
}

impl fmt::Display for ClientIpHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientIpHeader {
    type Err = String;

    /// A header name, in any case.
    fn from_str(s: &str) -> Result<ClientIpHeader, String> {
        ClientIpHeader::ALL
            .into_iter()
            .find(|h| h.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!("client IP header {s:?}: expected x-forwarded-for, forwarded or x-real-ip")
            })
    }
}

/// One entry of a forwarded chain: an address, or `None` when it cannot be
/// read (`unknown`, `_hidden`, garbage, not UTF-8, no `for=`).
pub(super) type Hop = Option<IpAddr>;

/// The chain in `header`, left (farthest, the client's claim) to right
/// (nearest proxy). Empty when the header is absent.
pub(super) fn chain(header: ClientIpHeader, headers: &HeaderMap) -> Vec<Hop> {
    let lines = headers.get_all(header.name());
    match header {
        ClientIpHeader::XForwardedFor => lines
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
            .map(trim)
            .filter(|e| !e.is_empty())
            .map(|e| text(e).and_then(parse_node))
            .collect(),
        ClientIpHeader::Forwarded => lines
            .iter()
            .flat_map(|v| split_unquoted(v.as_bytes(), b','))
            .map(trim)
            .filter(|e| !e.is_empty())
            .map(forwarded_for)
            .collect(),
        ClientIpHeader::XRealIp => {
            let mut it = lines.iter();
            match (it.next(), it.next()) {
                (None, _) => Vec::new(),
                // One address, on one line: anything else is unreadable.
                (Some(v), None) if !v.as_bytes().contains(&b',') => {
                    vec![text(trim(v.as_bytes())).and_then(parse_node)]
                }
                _ => vec![None],
            }
        }
    }
}

/// The `for=` node of one `Forwarded` element; `None` if it has none, has
/// several, or it is not an address.
fn forwarded_for(element: &[u8]) -> Hop {
    let mut found = None;
    for pair in split_unquoted(element, b';') {
        let pair = trim(pair);
        let Some(eq) = pair.iter().position(|&b| b == b'=') else {
            continue;
        };
        if !trim(&pair[..eq]).eq_ignore_ascii_case(b"for") {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some(trim(&pair[eq + 1..]));
    }
    let value = text(found?)?;
    match value.strip_prefix('"') {
        Some(quoted) => parse_node(&unquote(quoted.strip_suffix('"')?)),
        None => parse_node(value),
    }
}

/// A quoted-string's content with its backslash escapes removed.
fn unquote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' {
            chars.next().unwrap_or(c)
        } else {
            c
        });
    }
    out
}

/// `bytes` split at `sep` outside double quotes (where `\` escapes).
fn split_unquoted(bytes: &[u8], sep: u8) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if quoted && b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            quoted = !quoted;
        } else if b == sep && !quoted {
            parts.push(&bytes[start..i]);
            start = i + 1;
        }
    }
    parts.push(&bytes[start..]);
    parts
}

fn trim(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

fn text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

/// `1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]:80`, `[2001:db8::1]`, `2001:db8::1`.
fn parse_node(s: &str) -> Hop {
    if let Ok(ip) = IpAddr::from_str(s) {
        return Some(ip);
    }
    if let Ok(sock) = SocketAddr::from_str(s) {
        return Some(sock.ip());
    }
    let inner = s.strip_prefix('[')?.split(']').next()?;
    IpAddr::from_str(inner).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn chain_of(header: ClientIpHeader, lines: &[&[u8]]) -> Vec<Hop> {
        let mut h = HeaderMap::new();
        for line in lines {
            h.append(header.name(), HeaderValue::from_bytes(line).unwrap());
        }
        chain(header, &h)
    }

    fn ip(s: &str) -> Hop {
        Some(s.parse().unwrap())
    }

    #[test]
    fn x_forwarded_for_lines_form_one_list_and_obs_text_is_one_unreadable_hop() {
        let c = chain_of(
            ClientIpHeader::XForwardedFor,
            &[b"1.1.1.1, \xff\xfe", b"[2001:db8::1]:80,, 10.0.0.1:4711 ,"],
        );
        assert_eq!(
            c,
            vec![ip("1.1.1.1"), None, ip("2001:db8::1"), ip("10.0.0.1")]
        );
    }

    #[test]
    fn forwarded_reads_for_with_quotes_ports_and_other_parameters() {
        let c = chain_of(
            ClientIpHeader::Forwarded,
            &[
                br#"for="[2001:db8::7]:4711";proto=http, FOR=192.0.2.60;by=x"#,
                br#"for=_hidden, for=unknown, proto=https, for="a,b", for=1.1.1.1;for=2.2.2.2"#,
                br#"by=10.0.0.1; for = "10.0.0.2""#,
            ],
        );
        assert_eq!(
            c,
            vec![
                ip("2001:db8::7"),
                ip("192.0.2.60"),
                None,
                None,
                None,
                None,
                None,
                ip("10.0.0.2")
            ]
        );
    }

    #[test]
    fn x_real_ip_is_one_address_on_one_line() {
        let real = |lines: &[&[u8]]| chain_of(ClientIpHeader::XRealIp, lines);
        assert_eq!(real(&[]), vec![]);
        assert_eq!(real(&[b" 203.0.113.5 "]), vec![ip("203.0.113.5")]);
        assert_eq!(real(&[b"203.0.113.5, 10.0.0.1"]), vec![None]);
        assert_eq!(real(&[b"203.0.113.5", b"10.0.0.1"]), vec![None]);
        assert_eq!(real(&[b"unknown"]), vec![None]);
    }

    #[test]
    fn header_names_parse_in_any_case_and_round_trip() {
        for h in ClientIpHeader::ALL {
            assert_eq!(
                h.to_string().to_uppercase().parse::<ClientIpHeader>(),
                Ok(h)
            );
        }
        let err = "forwarded-for".parse::<ClientIpHeader>().unwrap_err();
        assert!(err.contains("x-real-ip"), "{err}");
    }
}
