//! The text of a key, written where it fits: inline, on the stack or in the
//! [`Key`](super::Key) that carries it, up to [`INLINE`] bytes (an address
//! key, `ip=` and an IPv6 address, is at most 42), on the heap beyond. The
//! layer builds one key per rule per request and hands the store a `&str`:
//! a `String` would cost one allocation per request for nothing. Inline, it
//! is an `ArrayString`, a `str` by construction: handing it to the store
//! costs no UTF-8 check.

use arrayvec::ArrayString;
use std::fmt;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};

/// The bytes a key holds without allocating.
pub(crate) const INLINE: usize = 64;

/// Text, inline up to [`INLINE`] bytes, on the heap beyond.
#[derive(Clone)]
pub(crate) enum KeyText {
    Inline(ArrayString<INLINE>),
    Heap(String),
}

impl Default for KeyText {
    fn default() -> KeyText {
        KeyText::new()
    }
}

impl KeyText {
    /// An empty text.
    pub(crate) fn new() -> KeyText {
        KeyText::Inline(ArrayString::new())
    }

    /// Appends `s`.
    pub(crate) fn push_str(&mut self, s: &str) {
        match self {
            KeyText::Inline(text) => {
                if text.try_push_str(s).is_err() {
                    let mut heap = String::with_capacity(text.len() + s.len());
                    heap.push_str(text);
                    heap.push_str(s);
                    *self = KeyText::Heap(heap);
                }
            }
            KeyText::Heap(text) => text.push_str(s),
        }
    }

    /// Appends `ip` as its `Display` writes it (dotted decimal, no leading
    /// zeros), in one piece: through `write!` it is seven pieces, each octet
    /// through the integer formatting machinery, on every request of an
    /// address-keyed rule.
    ///
    /// Written straight into the inline text when it has room for the
    /// longest address (always, in an address key), rather than into a text
    /// of its own that is then copied.
    pub(crate) fn push_ipv4(&mut self, ip: Ipv4Addr) {
        match self {
            KeyText::Inline(text) if text.remaining_capacity() >= IPV4_MAX => write_ipv4(text, ip),
            _ => {
                let mut text = ArrayString::<IPV4_MAX>::new();
                write_ipv4(&mut text, ip);
                self.push_str(&text);
            }
        }
    }

    /// Appends the `ip` part: `ip=` and `client` as its `Display` writes it
    /// (`ip=unknown` without an address). An address's text has no
    /// character to escape. One place for the part's text, whether it is
    /// the whole key (the common case, written without the loop over a
    /// key's parts) or one part.
    pub(crate) fn push_ip_part(&mut self, client: Option<IpAddr>) {
        self.push_str("ip=");
        match client {
            Some(IpAddr::V4(ip)) => self.push_ipv4(ip),
            Some(ip) => {
                let _ = write!(self, "{ip}");
            }
            None => self.push_str("unknown"),
        }
    }

    /// Appends `c`.
    pub(crate) fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            KeyText::Inline(text) => text,
            KeyText::Heap(text) => text,
        }
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.as_str().len()
    }

    /// Whether it is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }

    /// Whether it is on the heap (longer than [`INLINE`] bytes).
    #[cfg(test)]
    pub(crate) fn spilled(&self) -> bool {
        matches!(self, KeyText::Heap(_))
    }
}

/// The longest IPv4 text: 15 characters, digits and dots.
const IPV4_MAX: usize = 15;

/// Appends `ip` to `text` as its `Display` writes it; `text` has room for
/// [`IPV4_MAX`] more bytes.
fn write_ipv4<const N: usize>(text: &mut ArrayString<N>, ip: Ipv4Addr) {
    for (i, octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            text.push('.');
        }
        if octet >= 100 {
            text.push(char::from(b'0' + octet / 100));
        }
        if octet >= 10 {
            text.push(char::from(b'0' + octet / 10 % 10));
        }
        text.push(char::from(b'0' + octet % 10));
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
        match text {
            KeyText::Inline(text) => text.as_str().to_owned(),
            // The heap buffer is reused.
            KeyText::Heap(text) => text,
        }
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
mod tests;
