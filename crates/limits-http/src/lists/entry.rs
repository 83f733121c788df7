//! One entry of a list, as written: an address, a network, or
//! `header:NAME=VALUE`; and how a header entry meets a request.

use super::ListKind;
use http::HeaderMap;
use http::header::HeaderName;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::fmt;
use std::net::IpAddr;

/// A list entry that is not one: which entry, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListEntryError {
    /// Its index in the entries given (0 for [`AccessList::push`](super::AccessList::push)).
    pub index: usize,
    /// The entry as written (a header entry's value hidden).
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for ListEntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.entry, self.reason)
    }
}

impl std::error::Error for ListEntryError {}

/// A parsed entry.
pub(super) enum Entry {
    V4(Ipv4Net),
    V6(Ipv6Net),
    Header(HeaderEntry),
}

const HEADER: &str = "header:";

impl Entry {
    pub(super) fn parse(text: &str) -> Result<Entry, ListEntryError> {
        let entry = text.trim();
        let error = |shown: &str, reason: &str| ListEntryError {
            index: 0,
            entry: shown.to_string(),
            reason: reason.to_string(),
        };
        if let Some(header) = entry.strip_prefix(HEADER) {
            let Some((name, value)) = header.split_once('=') else {
                return Err(error(entry, "a header entry is header:NAME=VALUE"));
            };
            let shown = format!("{HEADER}{name}=...");
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| error(&shown, "not a header name"))?;
            if value.is_empty() {
                return Err(error(&shown, "the header value is empty"));
            }
            if http::HeaderValue::from_str(value).is_err() {
                return Err(error(&shown, "the value is not one a header can carry"));
            }
            let value = value.as_bytes().into();
            return Ok(Entry::Header(HeaderEntry { name, value }));
        }
        let net = entry
            .parse::<IpNet>()
            .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
            .map_err(|_| {
                error(
                    entry,
                    "not an address, a network such as 10.0.0.0/8, or header:NAME=VALUE",
                )
            })?;
        // The address bits beyond the prefix say nothing: 10.1.2.3/8 is 10.0.0.0/8.
        Ok(match net.trunc() {
            IpNet::V4(v4) => Entry::V4(v4),
            IpNet::V6(v6) => match v6.addr().to_ipv4_mapped() {
                // Clients are looked up as the IPv4 they are.
                Some(v4) if v6.prefix_len() >= 96 => {
                    let len = v6.prefix_len() - 96;
                    Entry::V4(Ipv4Net::new(v4, len).map_err(|_| error(entry, "a bad prefix"))?)
                }
                _ => Entry::V6(v6),
            },
        })
    }
}

/// `header:NAME=VALUE`: the header's name, and its value (a secret).
#[derive(Clone)]
pub(super) struct HeaderEntry {
    name: HeaderName,
    value: Box<[u8]>,
}

impl HeaderEntry {
    pub(super) fn name(&self) -> &str {
        self.name.as_str()
    }

    /// Whether the request's headers match: every value of the header (an
    /// allow list), or any one (a deny list).
    pub(super) fn matches(&self, kind: ListKind, headers: &HeaderMap) -> bool {
        let mut values = headers.get_all(&self.name).iter().peekable();
        if values.peek().is_none() {
            return false;
        }
        let mut same = values.map(|v| same_bytes(v.as_bytes(), &self.value));
        match kind {
            ListKind::Allow => same.all(|s| s),
            ListKind::Deny => same.any(|s| s),
        }
    }
}

/// `a == b` in a time that depends on their lengths only, not on where
/// they first differ: a client timing its answers learns nothing of a
/// secret value but its length.
pub(super) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Entry, String> {
        Entry::parse(s).map_err(|e| e.to_string())
    }

    #[test]
    fn addresses_and_networks() {
        assert!(matches!(parse("10.1.2.3/8"), Ok(Entry::V4(n)) if n.to_string() == "10.0.0.0/8"));
        assert!(
            matches!(parse(" 192.0.2.7 "), Ok(Entry::V4(n)) if n.to_string() == "192.0.2.7/32")
        );
        assert!(
            matches!(parse("2001:db8::/32"), Ok(Entry::V6(n)) if n.to_string() == "2001:db8::/32")
        );
        assert!(
            matches!(parse("::ffff:10.0.0.0/104"), Ok(Entry::V4(n)) if n.to_string() == "10.0.0.0/8")
        );
    }

    #[test]
    fn bad_entries_say_why_and_hide_header_values() {
        for (entry, said) in [
            ("10.0.0.0/33", "\"10.0.0.0/33\": not an address"),
            ("", "\"\": not an address"),
            (
                "header:x-api-key",
                "\"header:x-api-key\": a header entry is",
            ),
            (
                "header:x api=secret",
                "\"header:x api=...\": not a header name",
            ),
            (
                "header:x-api-key=",
                "\"header:x-api-key=...\": the header value is empty",
            ),
            (
                "header:x-api-key=se\u{7f}cret",
                "\"header:x-api-key=...\": the value is not",
            ),
        ] {
            let e = parse(entry).err().unwrap();
            assert!(e.starts_with(said), "{entry:?}: {e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }

    #[test]
    fn header_values_compare_exactly() {
        let Ok(Entry::Header(h)) = parse("header:X-Api-Key=internal-123") else {
            panic!("a header entry");
        };
        let mut headers = HeaderMap::new();
        assert!(!h.matches(ListKind::Allow, &headers));
        headers.insert("x-api-key", "internal-123".parse().unwrap());
        assert!(h.matches(ListKind::Allow, &headers));
        headers.append("x-api-key", "other".parse().unwrap());
        assert!(
            !h.matches(ListKind::Allow, &headers),
            "one value is not the secret"
        );
        assert!(h.matches(ListKind::Deny, &headers), "one value is");
        for other in [
            "Internal-123",
            "internal-1234",
            "internal-12",
            " internal-123",
        ] {
            let mut headers = HeaderMap::new();
            headers.insert("x-api-key", other.parse().unwrap());
            assert!(!h.matches(ListKind::Allow, &headers), "{other:?}");
        }
    }

    #[test]
    fn same_bytes_is_equality() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(same_bytes(b"", b""));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"ab"));
    }
}
