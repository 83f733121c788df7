//! The client's address: the direct peer, unless the peer is a proxy we
//! trust, in which case the address it forwarded (X-Forwarded-For or
//! Forwarded). Trusting those headers from anyone would let every client
//! pick its own key, so they are read only from peers in `--trust-proxy`.

use http::HeaderMap;
use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

/// The networks whose forwarding headers we believe.
///
/// ```
/// use limits_http::TrustedProxies;
/// use http::HeaderMap;
/// let trusted = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
/// let mut headers = HeaderMap::new();
/// headers.insert("x-forwarded-for", "203.0.113.9, 10.0.0.7".parse().unwrap());
/// // From the trusted proxy 10.0.0.2: the first untrusted hop from the right.
/// assert_eq!(trusted.client("10.0.0.2".parse().unwrap(), &headers).to_string(), "203.0.113.9");
/// // From anyone else: the peer itself.
/// assert_eq!(trusted.client("198.51.100.1".parse().unwrap(), &headers).to_string(), "198.51.100.1");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// No proxy is trusted: the peer is always the client.
    pub fn none() -> TrustedProxies {
        TrustedProxies(Vec::new())
    }

    /// CIDRs (`10.0.0.0/8`) or single addresses (`127.0.0.1`).
    pub fn parse(list: &[&str]) -> Result<TrustedProxies, String> {
        list.iter()
            .map(|s| {
                let s = s.trim();
                IpNet::from_str(s)
                    .or_else(|_| IpAddr::from_str(s).map(IpNet::from))
                    .map_err(|_| {
                        format!("--trust-proxy {s:?}: not an address or CIDR such as 10.0.0.0/8")
                    })
            })
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client behind `peer`: walking the forwarded chain from the right,
    /// the first address that is not a trusted proxy.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.trusts(peer) {
            return peer;
        }
        let chain = forwarded_for(headers);
        let mut client = peer;
        for hop in chain.iter().rev() {
            match hop {
                Some(ip) => {
                    client = canonical(*ip);
                    if !self.trusts(client) {
                        break;
                    }
                }
                // An entry we cannot read: stop at the last hop we trust.
                None => break,
            }
        }
        client
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) as the IPv4 they are.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The forwarded chain, left (client) to right (nearest proxy): from the
/// standard `Forwarded` header if present, else `X-Forwarded-For`.
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_string())
            .collect()
    };
    let forwarded = values("forwarded");
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.trim().split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("for"))
                    .and_then(|(_, v)| parse_node(v.trim().trim_matches('"')))
            })
            .collect();
    }
    values("x-forwarded-for")
        .iter()
        .map(|s| parse_node(s))
        .collect()
}

/// `1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]:80`, `2001:db8::1`.
fn parse_node(s: &str) -> Option<IpAddr> {
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

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn untrusted_peer_cannot_spoof() {
        let t = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
        let h = headers(&[("x-forwarded-for", "1.1.1.1")]);
        assert_eq!(t.client(ip("192.0.2.5"), &h), ip("192.0.2.5"));
    }

    #[test]
    fn trusted_chain_is_walked_from_the_right() {
        let t = TrustedProxies::parse(&["10.0.0.0/8", "127.0.0.1"]).unwrap();
        // A client may prepend anything; only what our proxies appended counts.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 203.0.113.9, 10.1.1.1")]);
        assert_eq!(t.client(ip("127.0.0.1"), &h), ip("203.0.113.9"));
        let h = headers(&[
            ("x-forwarded-for", "10.2.2.2"),
            ("x-forwarded-for", "10.1.1.1"),
        ]);
        assert_eq!(t.client(ip("10.0.0.1"), &h), ip("10.2.2.2"));
        let h = headers(&[("x-forwarded-for", "garbage, 10.1.1.1")]);
        assert_eq!(t.client(ip("10.0.0.1"), &h), ip("10.1.1.1"));
    }

    #[test]
    fn forwarded_header_is_preferred_and_parsed() {
        let t = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
        let h = headers(&[
            (
                "forwarded",
                r#"for="[2001:db8::7]:4711";proto=http, for=10.3.3.3"#,
            ),
            ("x-forwarded-for", "9.9.9.9"),
        ]);
        assert_eq!(t.client(ip("10.0.0.1"), &h), ip("2001:db8::7"));
    }

    #[test]
    fn mapped_ipv6_peers_match_ipv4_networks() {
        let t = TrustedProxies::parse(&["127.0.0.0/8"]).unwrap();
        let h = headers(&[("x-forwarded-for", "203.0.113.1")]);
        assert_eq!(t.client(ip("::ffff:127.0.0.1"), &h), ip("203.0.113.1"));
    }

    #[test]
    fn bad_cidrs_are_errors() {
        assert!(TrustedProxies::parse(&["10.0.0.0/33"]).is_err());
        assert!(TrustedProxies::parse(&["proxy.local"]).is_err());
    }
}
