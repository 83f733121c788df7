//! The text of a key, written where it fits: inline, on the stack or in the
//! [`Key`](super::Key) that carries it, up to [`INLINE`] bytes (an address
//! key, `ip=` and an IPv6 address, is at most 42), on the heap beyond. The
//! layer builds one key per rule per request and hands the store a `&str`:
//! a `String` would cost one allocation per request for nothing.

use smallvec::SmallVec;
use std::fmt;

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
