//! The problem body of a 429 that says when to retry, from pieces made once
//! per rule: on the deny path it is the whole answer, and written member by
//! member through serde_json it would format the detail with `{:?}` of the
//! rule's name, then escape it, for every denied request. Only the number
//! of seconds changes between two 429s of a rule.
//!
//! The pieces are what [`problem_members`](crate::problem::problem_members)
//! writes, cut around the two numbers: JSON escaping works character by
//! character, so the escaped detail is the escaped text before the number,
//! the digits (which need no escaping) and the escaped text after it. The
//! tests compare the two writers byte for byte.

use crate::headers::Decimal;
use crate::last_value::{self, Source};
use bytes::Bytes;
use http::StatusCode;
use limits::{Rate, format_duration};
use smallvec::SmallVec;

/// A rule's 429 body with `retry_after` seconds to wait: `head`, the
/// seconds, `middle`, the seconds again, `}`.
pub(crate) struct TooManyBody {
    head: Vec<u8>,
    middle: Vec<u8>,
    /// What its bodies are remembered by: a refused client is told the same
    /// for a second ([`last_value`]).
    source: Source,
}

/// The detail after the number of seconds.
pub(crate) const DETAIL_AFTER: &str = " s";

/// What a refused client is told was exceeded, for a rule of distinct
/// values (`distinct`: its limit) saying so: a new value was refused, not
/// a request too many. The 429's detail and a gRPC refusal's message.
pub(crate) fn exceeded(rule: &str, distinct: Option<Rate>) -> String {
    match distinct {
        None => format!("rate limit {rule:?} exceeded"),
        Some(rate) => format!(
            "rate limit {rule:?} exceeded: at most {} distinct values in {}, and this one is new",
            rate.limit(),
            format_duration(rate.window())
        ),
    }
}

/// The detail before the number of seconds (after it: [`DETAIL_AFTER`]).
pub(crate) fn detail_before(rule: &str, distinct: Option<Rate>) -> String {
    format!("{}; retry in ", exceeded(rule, distinct))
}

impl TooManyBody {
    /// The pieces of the 429 bodies of rule `rule` (of `distinct` values,
    /// for a rule that limits them).
    pub(crate) fn new(rule: &str, distinct: Option<Rate>) -> TooManyBody {
        // The standard members as the one writer writes them, up to the
        // detail's opening quote (the tests hold the two writers equal).
        let status = StatusCode::TOO_MANY_REQUESTS;
        let title = status.canonical_reason().unwrap_or("Error");
        let mut head = b"{\"type\":\"about:blank\",\"title\":".to_vec();
        head.extend_from_slice(json_string(title).as_bytes());
        head.extend_from_slice(b",\"status\":429,\"detail\":\"");
        head.extend_from_slice(escaped(&detail_before(rule, distinct)).as_bytes());
        let mut middle = escaped(DETAIL_AFTER).into_bytes();
        middle.extend_from_slice(b"\",\"rule\":");
        middle.extend_from_slice(json_string(rule).as_bytes());
        middle.extend_from_slice(b",\"retry_after\":");
        let source = Source::new();
        TooManyBody {
            head,
            middle,
            source,
        }
    }

    /// The body telling the client to retry in `secs` seconds.
    pub(crate) fn body(&self, secs: u64) -> Bytes {
        let make = || Some(last_value::shared(&self.write(secs)));
        last_value::value(&last_value::TOO_MANY_BODY, self.source, [secs, 0], make)
            .unwrap_or_default()
    }

    /// The body's bytes (on the stack: [`last_value::shared`] copies them).
    fn write(&self, secs: u64) -> SmallVec<[u8; 512]> {
        let digits = Decimal::new(secs);
        let digits = digits.as_bytes();
        let mut body = SmallVec::new();
        body.extend_from_slice(&self.head);
        body.extend_from_slice(digits);
        body.extend_from_slice(&self.middle);
        body.extend_from_slice(digits);
        body.push(b'}');
        body
    }
}

/// `s` as a JSON string, quotes included, as serde_json writes it.
fn json_string(s: &str) -> String {
    // Serializing a string into a String cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

/// `s` escaped as inside a JSON string, without the quotes.
fn escaped(s: &str) -> String {
    let quoted = json_string(s);
    quoted[1..quoted.len() - 1].to_string()
}

#[cfg(test)]
mod tests;
