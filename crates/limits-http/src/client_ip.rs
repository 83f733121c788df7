//! The client's address: the direct peer, unless the peer is a proxy we
//! trust, in which case the address it forwarded. Trusting forwarding
//! headers from anyone would let every client pick its own key, so they are
//! read only from peers in `--trust-proxy`, and only the ONE header the
//! operator names (`--client-ip-header`, as nginx's `real_ip_header`): a
//! proxy appends to its own header and passes the others through, so any
//! other header may be the client's own words.
//!
//! The header is walked from the right (the nearest proxy) through trusted
//! hops; the first untrusted address is the client, or the leftmost entry
//! if every one is trusted. Several lines of the header are one list.
//!
//! An entry that is not an address (`for=unknown`, `for=_hidden`, obs-text,
//! garbage) ends the walk: the client is the nearest trusted hop, the one
//! that wrote or passed it. That cannot be used to escape a limit, because
//! the client cannot choose that hop, only share its limit with whoever else
//! came through it; [`ResolvedClient::unreadable`] says it happened, so that
//! it can be counted.
//!
//! IPv6 clients are keyed by prefix (`--ipv6-prefix`, /64 by default): one
//! host is usually given a whole /64, and would otherwise have 2^64 limits.
//! The prefix applies to whatever address the walk ends at; an IPv4-mapped
//! IPv6 address (`::ffff:192.0.2.1`) is IPv4.

mod header;
mod resolved;

pub use header::ClientIpHeader;
pub use resolved::ResolvedClient;

use http::HeaderMap;
use ipnet::IpNet;
use resolved::canonical;
use std::net::IpAddr;
use std::str::FromStr;

/// The networks whose forwarding headers we believe.
///
/// ```
/// use limits_http::TrustedProxies;
/// let trusted = TrustedProxies::parse(&["10.0.0.0/8", "::1"]).unwrap();
/// assert!(trusted.trusts("10.0.0.2".parse().unwrap()));
/// assert!(trusted.trusts("::1".parse().unwrap()));
/// assert!(!trusted.trusts("198.51.100.1".parse().unwrap()));
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

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is in one of the trusted networks.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// Who the client of a request is: the trusted networks, the one header
/// they name the client in, and the IPv6 prefix a client is keyed by.
///
/// ```
/// use limits_http::{ClientIp, ClientIpHeader, TrustedProxies};
/// use http::HeaderMap;
/// let trusted = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
/// let client_ip = ClientIp::new(trusted, ClientIpHeader::XForwardedFor, 64).unwrap();
/// let mut headers = HeaderMap::new();
/// headers.insert("x-forwarded-for", "203.0.113.9, 10.0.0.7".parse().unwrap());
/// headers.insert("forwarded", "for=198.51.100.66".parse().unwrap()); // not the chosen header
/// // From the trusted proxy 10.0.0.2: the first untrusted hop from the right.
/// let client = client_ip.resolve("10.0.0.2".parse().unwrap(), &headers);
/// assert_eq!(client.ip.to_string(), "203.0.113.9");
/// // From anyone else: the peer itself, IPv6 by its /64.
/// let client = client_ip.resolve("2001:db8:1:2:3:4:5:6".parse().unwrap(), &headers);
/// assert_eq!(client.to_string(), "2001:db8:1:2::/64");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIp {
    trusted: TrustedProxies,
    header: ClientIpHeader,
    ipv6_prefix: u8,
}

/// IPv6 clients are keyed by their /64 unless told otherwise: the block one
/// host (or one home) is usually given.
pub const DEFAULT_IPV6_PREFIX: u8 = 64;

impl Default for ClientIp {
    /// No proxy trusted, `X-Forwarded-For`, IPv6 by /64.
    fn default() -> ClientIp {
        ClientIp {
            trusted: TrustedProxies::none(),
            header: ClientIpHeader::default(),
            ipv6_prefix: DEFAULT_IPV6_PREFIX,
        }
    }
}

impl ClientIp {
    /// Believe `header` from `trusted` peers only; key IPv6 clients by their
    /// `/ipv6_prefix` (1 to 128).
    pub fn new(
        trusted: TrustedProxies,
        header: ClientIpHeader,
        ipv6_prefix: u8,
    ) -> Result<ClientIp, String> {
        if !(1..=128).contains(&ipv6_prefix) {
            return Err(format!(
                "--ipv6-prefix {ipv6_prefix}: must be 1 to 128 (64 keys each /64 as one client)"
            ));
        }
        Ok(ClientIp {
            trusted,
            header,
            ipv6_prefix,
        })
    }

    /// The peers whose header is believed.
    pub fn trusted(&self) -> &TrustedProxies {
        &self.trusted
    }

    /// The one header read.
    pub fn header(&self) -> ClientIpHeader {
        self.header
    }

    /// The prefix length IPv6 clients are keyed by.
    pub fn ipv6_prefix(&self) -> u8 {
        self.ipv6_prefix
    }

    /// The client behind `peer`: walking the chosen header from the right
    /// through trusted hops, the first address that is not trusted (or the
    /// leftmost, if all are); an entry that cannot be read ends the walk at
    /// the nearest trusted hop. IPv6 is then reduced to its prefix.
    pub fn resolve(&self, peer: IpAddr, headers: &HeaderMap) -> ResolvedClient {
        let mut client = canonical(peer);
        let mut unreadable = false;
        if self.trusted.trusts(client) {
            for hop in header::chain(self.header, headers).into_iter().rev() {
                let Some(ip) = hop else {
                    unreadable = true;
                    break;
                };
                client = canonical(ip);
                if !self.trusted.trusts(client) {
                    break;
                }
            }
        }
        ResolvedClient::keyed(client, self.ipv6_prefix, unreadable)
    }
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

    fn client_ip(trusted: &[&str], header: ClientIpHeader, prefix: u8) -> ClientIp {
        ClientIp::new(TrustedProxies::parse(trusted).unwrap(), header, prefix).unwrap()
    }

    fn xff(trusted: &[&str]) -> ClientIp {
        client_ip(trusted, ClientIpHeader::XForwardedFor, 64)
    }

    #[test]
    fn untrusted_peer_cannot_spoof() {
        let c = xff(&["10.0.0.0/8"]);
        let h = headers(&[("x-forwarded-for", "1.1.1.1"), ("forwarded", "for=2.2.2.2")]);
        assert_eq!(c.resolve(ip("192.0.2.5"), &h).ip, ip("192.0.2.5"));
    }

    #[test]
    fn a_clients_own_forwarded_header_is_ignored_behind_nginx() {
        // nginx appends to X-Forwarded-For and passes the client's Forwarded through.
        let c = xff(&["127.0.0.1"]);
        let h = headers(&[
            ("forwarded", "for=9.9.9.9"),
            ("x-forwarded-for", "203.0.113.5"),
        ]);
        let client = c.resolve(ip("127.0.0.1"), &h);
        assert_eq!(client.ip, ip("203.0.113.5"));
        assert!(!client.unreadable);
    }

    #[test]
    fn with_forwarded_chosen_x_forwarded_for_is_ignored() {
        let c = client_ip(&["10.0.0.0/8"], ClientIpHeader::Forwarded, 128);
        let h = headers(&[
            ("x-forwarded-for", "9.9.9.9"),
            (
                "forwarded",
                r#"for="[2001:db8::7]:4711";proto=http, for=10.3.3.3"#,
            ),
        ]);
        assert_eq!(c.resolve(ip("10.0.0.1"), &h).ip, ip("2001:db8::7"));
        // Only X-Forwarded-For: the chosen header is absent, the peer is the client.
        let h = headers(&[("x-forwarded-for", "9.9.9.9")]);
        assert_eq!(c.resolve(ip("10.0.0.1"), &h).ip, ip("10.0.0.1"));
    }

    #[test]
    fn x_real_ip_is_read_alone_and_only_as_one_address() {
        let c = client_ip(&["127.0.0.1"], ClientIpHeader::XRealIp, 64);
        let h = headers(&[
            ("x-real-ip", "203.0.113.7"),
            ("x-forwarded-for", "9.9.9.9"),
            ("forwarded", "for=8.8.8.8"),
        ]);
        assert_eq!(c.resolve(ip("127.0.0.1"), &h).ip, ip("203.0.113.7"));
        let h = headers(&[("x-real-ip", "203.0.113.7, 9.9.9.9")]);
        let client = c.resolve(ip("127.0.0.1"), &h);
        assert_eq!((client.ip, client.unreadable), (ip("127.0.0.1"), true));
        let h = headers(&[("x-real-ip", "203.0.113.7"), ("x-real-ip", "9.9.9.9")]);
        assert!(c.resolve(ip("127.0.0.1"), &h).unreadable);
    }

    #[test]
    fn trusted_chain_is_walked_from_the_right() {
        let c = xff(&["10.0.0.0/8", "127.0.0.1"]);
        // A client may prepend anything; only what our proxies appended counts.
        let h = headers(&[(
            "x-forwarded-for",
            "6.6.6.6, 203.0.113.9, 10.1.1.1, 10.2.2.2",
        )]);
        assert_eq!(c.resolve(ip("127.0.0.1"), &h).ip, ip("203.0.113.9"));
        // Several lines are one list, in order.
        let h = headers(&[
            ("x-forwarded-for", "6.6.6.6, 203.0.113.9"),
            ("x-forwarded-for", "10.1.1.1"),
        ]);
        assert_eq!(c.resolve(ip("10.0.0.1"), &h).ip, ip("203.0.113.9"));
        // Every hop trusted: the leftmost.
        let h = headers(&[
            ("x-forwarded-for", "10.2.2.2"),
            ("x-forwarded-for", "10.1.1.1"),
        ]);
        assert_eq!(c.resolve(ip("10.0.0.1"), &h).ip, ip("10.2.2.2"));
    }

    #[test]
    fn an_unreadable_hop_is_keyed_as_the_nearest_trusted_hop_and_flagged() {
        let c = xff(&["10.0.0.0/8"]);
        for chain in [
            "6.6.6.6, garbage, 10.1.1.1",
            "unknown, 10.1.1.1",
            "_hidden,10.1.1.1",
        ] {
            let client = c.resolve(ip("10.0.0.1"), &headers(&[("x-forwarded-for", chain)]));
            assert_eq!(
                (client.ip, client.unreadable),
                (ip("10.1.1.1"), true),
                "{chain}"
            );
        }
        let c = client_ip(&["10.0.0.0/8"], ClientIpHeader::Forwarded, 64);
        let h = headers(&[("forwarded", "for=1.1.1.1, for=_hidden")]);
        let client = c.resolve(ip("10.0.0.1"), &h);
        assert_eq!((client.ip, client.unreadable), (ip("10.0.0.1"), true));
        // Beyond the first untrusted hop nothing is read, readable or not.
        let h = headers(&[("forwarded", "for=unknown, for=203.0.113.1")]);
        assert!(!c.resolve(ip("10.0.0.1"), &h).unreadable);
    }

    #[test]
    fn ipv6_clients_are_keyed_by_prefix_after_the_walk() {
        let h = headers(&[("x-forwarded-for", "2001:db8:1:2:aaaa:bbbb:cccc:dddd")]);
        let peer = ip("10.0.0.1");
        let at = |prefix| client_ip(&["10.0.0.0/8"], ClientIpHeader::XForwardedFor, prefix);
        let client = ClientIp::default().resolve(ip("2001:db8:1:2::9"), &h);
        assert_eq!(client.ip, ip("2001:db8:1:2::"));
        assert_eq!(client.to_string(), "2001:db8:1:2::/64");
        assert_eq!(at(64).resolve(peer, &h).ip, ip("2001:db8:1:2::"));
        assert_eq!(at(48).resolve(peer, &h).to_string(), "2001:db8:1::/48");
        let full = at(128).resolve(peer, &h);
        assert_eq!(full.ip, ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd"));
        assert_eq!(full.to_string(), "2001:db8:1:2:aaaa:bbbb:cccc:dddd/128");
        // A trusted IPv6 proxy is matched before masking, by its full address.
        let c = client_ip(&["2001:db8:ffff::1"], ClientIpHeader::XForwardedFor, 48);
        let h = headers(&[("x-forwarded-for", "203.0.113.1")]);
        assert_eq!(c.resolve(ip("2001:db8:ffff::1"), &h).ip, ip("203.0.113.1"));
        assert_eq!(
            c.resolve(ip("2001:db8:ffff::2"), &h).ip,
            ip("2001:db8:ffff::")
        );
    }

    #[test]
    fn mapped_ipv6_is_ipv4_for_trust_and_for_the_key() {
        let c = xff(&["127.0.0.0/8"]);
        let h = headers(&[("x-forwarded-for", "::ffff:203.0.113.1")]);
        let client = c.resolve(ip("::ffff:127.0.0.1"), &h);
        assert_eq!(client.ip, ip("203.0.113.1"));
        assert_eq!(client.to_string(), "203.0.113.1");
    }

    #[test]
    fn bad_cidrs_and_prefixes_are_errors() {
        assert!(TrustedProxies::parse(&["10.0.0.0/33"]).is_err());
        assert!(TrustedProxies::parse(&["proxy.local"]).is_err());
        for bad in [0, 129, 255] {
            let err =
                ClientIp::new(TrustedProxies::none(), ClientIpHeader::Forwarded, bad).unwrap_err();
            assert!(err.contains("--ipv6-prefix"), "{err}");
        }
    }
}
