//! A metric label's value as the text exposition formats (Prometheus text
//! 0.0.4 and OpenMetrics 1.0) require it: a backslash, a double quote and a
//! line feed escaped (`\\`, `\"`, `\n`). Our metrics library writes label
//! values as they are, so one value holding a `"` broke the whole scrape and
//! one holding a line feed could forge a sample line.
//!
//! Beyond what the formats require, every other control character (C0,
//! DEL, C1) is written as U+FFFD: the formats have no escape for them, and a
//! bare carriage return is read as a line end by line-based tools. And a
//! value from a client is bounded ([`LabelValue::bounded`]): a label is
//! held once per series and written on every scrape.

use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};
use std::hash::{Hash, Hasher};

/// Longest value, in bytes, that [`LabelValue::bounded`] keeps whole.
pub(crate) const MAX_LABEL_VALUE_BYTES: usize = 128;

/// A label value, escaped when encoded.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct LabelValue(String);

impl LabelValue {
    /// `value` as it is (a value the operator wrote: a rule's name).
    pub(crate) fn new(value: impl Into<String>) -> LabelValue {
        LabelValue(value.into())
    }

    /// `value`, or when longer than [`MAX_LABEL_VALUE_BYTES`] its first
    /// bytes up to a character boundary, `~` and 16 hex digits of a hash of
    /// the whole (so that two long values stay two series), for a value a
    /// client chose: its size is then bounded whatever the client sent.
    pub(crate) fn bounded(value: &str) -> LabelValue {
        if value.len() <= MAX_LABEL_VALUE_BYTES {
            return LabelValue(value.to_string());
        }
        let mut end = MAX_LABEL_VALUE_BYTES;
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        // SipHash with fixed keys: the same value gives the same series for
        // the life of the process, which is all a series name needs.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        value.hash(&mut hasher);
        LabelValue(format!("{}~{:016x}", &value[..end], hasher.finish()))
    }

    /// The value, unescaped.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl EncodeLabelValue for LabelValue {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        write_escaped(encoder, &self.0)
    }
}

/// Writes `value` to `out` escaped for a label value (see the module).
pub(crate) fn write_escaped(out: &mut impl std::fmt::Write, value: &str) -> std::fmt::Result {
    // Runs of plain characters are written whole: a value usually has none
    // to escape.
    let mut plain = 0;
    for (i, c) in value.char_indices() {
        let escaped = match c {
            '\\' => "\\\\",
            '"' => "\\\"",
            '\n' => "\\n",
            c if c.is_control() => "\u{FFFD}",
            _ => continue,
        };
        out.write_str(&value[plain..i])?;
        out.write_str(escaped)?;
        plain = i + c.len_utf8();
    }
    out.write_str(&value[plain..])
}

/// `value` escaped, as a string (for tests and messages).
#[cfg(test)]
pub(crate) fn escaped(value: &str) -> String {
    let mut out = String::new();
    let _ = write_escaped(&mut out, value);
    out
}

#[cfg(test)]
mod tests;
