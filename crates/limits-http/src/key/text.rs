//! The text of a key, written where it fits: inline, on the stack or in the
//! [`Key`](super::Key) that carries it, up to [`INLINE`] bytes (an address
//! key, `ip=` and an IPv6 address, is at most 42), on the heap beyond. The
//! layer builds one key per rule per request and hands the store a `&str`:
//! a `String` would cost one allocation per request for nothing.

use smallvec::SmallVec;
use std::fmt;
use std::net::Ipv4Addr;

/// The bytes a key holds without allocating.
pub(crate) const INLINE: usize = 64;

/// UTF-8 text, inline up to [`INLINE`] bytes. Only `str` and `char` are
/// ever written into it, so its bytes are always UTF-8.
#[derive(Clone, Default)]
pub(crate) struct KeyText(SmallVec<[u8; INLINE]>);

impl KeyText {
    /// An empty text.
    pub(crate) fn new() -> KeyText {
        KeyText(SmallVec::new())
    }

    /// Appends `s`.
    pub(crate) fn push_str(&mut self, s: &str) {
        self.0.extend_from_slice(s.as_bytes());
    }

    /// Appends `ip` as its `Display` writes it (dotted decimal, no leading
    /// zeros), in one piece: through `write!` it is seven pieces, each octet
    /// through the integer formatting machinery (about a thousand
    /// instructions per request of an address-keyed rule, BENCHMARKS.md
    /// "The floor").
    pub(crate) fn push_ipv4(&mut self, ip: Ipv4Addr) {
        let mut text = [0u8; 15];
        let mut n = 0;
        for (i, octet) in ip.octets().into_iter().enumerate() {
            if i > 0 {
                text[n] = b'.';
                n += 1;
            }
            if octet >= 100 {
                text[n] = b'0' + octet / 100;
                n += 1;
            }
            if octet >= 10 {
                text[n] = b'0' + octet / 10 % 10;
                n += 1;
            }
            text[n] = b'0' + octet % 10;
            n += 1;
        }
        // ASCII digits and dots only.
        self.0.extend_from_slice(&text[..n]);
    }

    /// Appends `c`.
    pub(crate) fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        // Written from `str` and `char` only (see `push_str`).
        std::str::from_utf8(&self.0).expect("a key is written from UTF-8 text only")
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it is on the heap (longer than [`INLINE`] bytes).
    #[cfg(test)]
    pub(crate) fn spilled(&self) -> bool {
        self.0.spilled()
    }
}

impl fmt::Write for KeyText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

impl From<KeyText> for String {
    fn from(text: KeyText) -> String {
        // The heap buffer is reused when there is one.
        String::from_utf8(text.0.into_vec()).expect("a key is written from UTF-8 text only")
    }
}

impl From<&str> for KeyText {
    fn from(s: &str) -> KeyText {
        let mut text = KeyText::new();
        text.push_str(s);
        text
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "ipv4_tests.rs"]
mod ipv4_tests;
