//! The key of a rule keyed by the client address alone (`ip=ADDRESS`), the
//! most common key, written in one step: the general loop over a key's
//! parts ([`KeySpec::build`](super::KeySpec)) tags, joins and bounds each
//! part, about 150 instructions per request more for the same text (tests
//! compare the two over many addresses).

use super::text::{write_ipv4, KeyText, INLINE};
use arrayvec::ArrayString;
use std::fmt::Write as _;
use std::net::IpAddr;

/// `ip=` and `client` as its `Display` writes it (`ip=unknown` without an
/// address): what the loop over the parts writes for a key of `ip` alone.
/// At most 42 bytes, so always inline and never hashed.
pub(super) fn key(client: Option<IpAddr>) -> KeyText {
    let mut text = ArrayString::<INLINE>::new();
    text.push_str("ip=");
    match client {
        Some(IpAddr::V4(ip)) => write_ipv4(&mut text, ip),
        // At most 39 characters: room enough.
        Some(ip) => {
            let _ = write!(text, "{ip}");
        }
        None => text.push_str("unknown"),
    }
    KeyText::Inline(text)
}
