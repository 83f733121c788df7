//! Allow and deny lists: clients a rule (or every rule) never limits, and
//! clients it refuses outright (403), by address or by an exact header
//! value.
//!
//! Addresses are looked up by prefix in a trie ([`prefix_trie`]), so that a
//! list of thousands of networks costs a walk of at most 32 (IPv4) or 128
//! (IPv6) levels per request, not a scan. The address is the client's whole
//! address as the layer resolved it ([`ClientIp`](crate::ClientIp): the peer,
//! or what a trusted proxy forwarded), never one the client names itself,
//! and before the IPv6 prefix a key is made of.
//!
//! A header entry (`header:x-api-key=internal-123`) matches when the
//! request's header of that name (any case) has exactly that value (case
//! matters: it is a secret, compared byte for byte in constant time). A
//! header sent more than once lets a request through an allow list only if
//! every one of its values is the entry's (an upstream may read either),
//! and puts it on a deny list if any one is.

mod entry;
mod screen;

pub use entry::ListEntryError;
pub(crate) use screen::{Screened, screen};

use entry::{Entry, HeaderEntry};
use http::HeaderMap;
use ipnet::{Ipv4Net, Ipv6Net};
use prefix_trie::PrefixSet;
use std::fmt;
use std::net::IpAddr;

/// Which list a request was found on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// An allow list: the rule (or every rule) let it through unlimited.
    Allow,
    /// A deny list: refused with 403.
    Deny,
}

impl ListKind {
    /// `"allow"` or `"deny"`, as in the rules file and the metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            ListKind::Allow => "allow",
            ListKind::Deny => "deny",
        }
    }
}

/// One list of networks and header values.
///
/// ```
/// use limits_http::AccessList;
/// let list = AccessList::parse(["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"]).unwrap();
/// assert!(list.contains_address("10.1.2.3".parse().unwrap()));
/// assert!(list.contains_address("2001:db8:ffff::1".parse().unwrap()));
/// assert!(list.contains_address("::ffff:192.0.2.7".parse().unwrap()));
/// assert!(!list.contains_address("192.0.2.8".parse().unwrap()));
/// assert_eq!(list.len(), 3);
///
/// let bad = AccessList::parse(["10.0.0.0/8", "10.0.0.0/33"]).unwrap_err();
/// assert_eq!(bad.index, 1);
/// assert_eq!(bad.to_string(), "\"10.0.0.0/33\": not an address, a network such as 10.0.0.0/8, or header:NAME=VALUE");
/// ```
#[derive(Clone, Default)]
pub struct AccessList {
    v4: PrefixSet<Ipv4Net>,
    v6: PrefixSet<Ipv6Net>,
    networks: usize,
    headers: Vec<HeaderEntry>,
}

impl AccessList {
    /// An empty list: it matches nothing.
    pub fn new() -> AccessList {
        AccessList::default()
    }

    /// A list of `entries`: addresses (`192.0.2.7`, `2001:db8::1`),
    /// networks (`10.0.0.0/8`, `2001:db8::/32`) and header values
    /// (`header:x-api-key=internal-123`); the first bad entry is the error,
    /// with its index.
    pub fn parse<I, S>(entries: I) -> Result<AccessList, ListEntryError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list = AccessList::new();
        for (index, entry) in entries.into_iter().enumerate() {
            list.push(entry.as_ref()).map_err(|mut e| {
                e.index = index;
                e
            })?;
        }
        Ok(list)
    }

    /// Adds one entry (as in [`AccessList::parse`]); a bad one is refused
    /// (its error's index is 0) and the list is unchanged.
    pub fn push(&mut self, entry: &str) -> Result<(), ListEntryError> {
        match Entry::parse(entry)? {
            Entry::V4(net) => {
                self.networks += usize::from(self.v4.insert(net));
            }
            Entry::V6(net) => {
                self.networks += usize::from(self.v6.insert(net));
            }
            Entry::Header(header) => self.headers.push(header),
        }
        Ok(())
    }

    /// Adds every entry of `other`.
    pub fn extend(&mut self, other: AccessList) {
        for net in other.v4 {
            self.networks += usize::from(self.v4.insert(net));
        }
        for net in other.v6 {
            self.networks += usize::from(self.v6.insert(net));
        }
        self.headers.extend(other.headers);
    }

    /// How many distinct networks and header entries it holds.
    pub fn len(&self) -> usize {
        self.networks + self.headers.len()
    }

    /// Whether it holds nothing (and so matches nothing).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `ip` is in one of its networks (an IPv4-mapped IPv6 address
    /// as the IPv4 address it is).
    pub fn contains_address(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(v4) => self.v4.get_spm(&Ipv4Net::from(v4)).is_some(),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => self.contains_address(IpAddr::V4(v4)),
                None => self.v6.get_spm(&Ipv6Net::from(v6)).is_some(),
            },
        }
    }

    /// Whether a request from `client` with `headers` is on the list, as a
    /// list of `kind` reads a repeated header (see the module's docs).
    pub fn matches(&self, kind: ListKind, client: Option<IpAddr>, headers: &HeaderMap) -> bool {
        client.is_some_and(|ip| self.networks > 0 && self.contains_address(ip))
            || self.headers.iter().any(|h| h.matches(kind, headers))
    }
}

impl fmt::Debug for AccessList {
    /// Counts and header names only: a header entry's value is a secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(HeaderEntry::name).collect();
        f.debug_struct("AccessList")
            .field("networks", &self.networks)
            .field("headers", &names)
            .finish()
    }
}

/// A rule's (or the layer's) allow and deny lists.
///
/// A request on the deny list is refused (403), whatever the allow list
/// says; one on the allow list alone is never limited.
///
/// ```
/// use limits_http::{AccessList, ListKind, Lists};
/// let lists = Lists {
///     allow: AccessList::parse(["10.0.0.0/8", "header:x-api-key=internal-123"]).unwrap(),
///     deny: AccessList::parse(["10.6.6.0/24"]).unwrap(),
/// };
/// let none = http::HeaderMap::new();
/// assert_eq!(lists.check(Some("10.1.1.1".parse().unwrap()), &none), Some(ListKind::Allow));
/// assert_eq!(lists.check(Some("10.6.6.6".parse().unwrap()), &none), Some(ListKind::Deny));
/// assert_eq!(lists.check(Some("192.0.2.1".parse().unwrap()), &none), None);
/// let mut key = http::HeaderMap::new();
/// key.insert("x-api-key", "internal-123".parse().unwrap());
/// assert_eq!(lists.check(Some("192.0.2.1".parse().unwrap()), &key), Some(ListKind::Allow));
/// key.insert("x-api-key", "INTERNAL-123".parse().unwrap());
/// assert_eq!(lists.check(Some("192.0.2.1".parse().unwrap()), &key), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Lists {
    /// Never limited (still counted: [`Observer::listed`](crate::Observer::listed)).
    pub allow: AccessList,
    /// Refused with 403.
    pub deny: AccessList,
}

impl Lists {
    /// Whether both lists are empty.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// The list a request from `client` with `headers` is on: the deny
    /// list first.
    pub fn check(&self, client: Option<IpAddr>, headers: &HeaderMap) -> Option<ListKind> {
        [ListKind::Deny, ListKind::Allow]
            .into_iter()
            .find(|&kind| self.list(kind).matches(kind, client, headers))
    }

    /// The list of `kind`.
    pub fn list(&self, kind: ListKind) -> &AccessList {
        match kind {
            ListKind::Allow => &self.allow,
            ListKind::Deny => &self.deny,
        }
    }
}
