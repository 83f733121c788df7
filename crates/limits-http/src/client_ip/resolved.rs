//! The client a request was resolved to, in the form it is keyed by: IPv6
//! reduced to its prefix, so that one host's /64 is one client and not 2^64.

use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

/// The client of one request, as [`ClientIp::resolve`](super::ClientIp::resolve) found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedClient {
    /// The client's address: IPv4 as is, IPv6 as the network address of its
    /// prefix (`2001:db8:1:2::` for anything in `2001:db8:1:2::/64`).
    pub ip: IpAddr,
    /// The client's whole address (IPv4-mapped IPv6 as IPv4): what allow
    /// and deny lists are matched against.
    pub address: IpAddr,
    /// How many leading bits of `ip` name the client: 32 for IPv4, the IPv6
    /// prefix for IPv6.
    pub prefix: u8,
    /// The walk met an entry it could not read (`unknown`, `_hidden`,
    /// garbage) and stopped at the nearest trusted hop.
    pub unreadable: bool,
}

impl ResolvedClient {
    /// `client` (already canonical), keyed: IPv6 reduced to its network.
    pub(super) fn keyed(client: IpAddr, ipv6_prefix: u8, unreadable: bool) -> ResolvedClient {
        let prefix = match client {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => ipv6_prefix,
        };
        let ip = IpNet::new(client, prefix).map_or(client, |net| net.network());
        ResolvedClient {
            ip,
            address: client,
            prefix,
            unreadable,
        }
    }
}

impl fmt::Display for ResolvedClient {
    /// IPv4 as the address, IPv6 as its network (`2001:db8:1:2::/64`), so
    /// that the text never reads as a single address when it is not one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            IpAddr::V4(v4) => v4.fmt(f),
            IpAddr::V6(v6) => write!(f, "{v6}/{}", self.prefix),
        }
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) as the IPv4 they are.
pub(super) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}
