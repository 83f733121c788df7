//! The RateLimit value of a rule with one rate, from its text made once:
//! `"NAME";r=` (the rule's name checked once), then the two numbers of each
//! response. This is the value of most responses (one rule decided them,
//! of one rate), and its numbers mostly repeat, so the value made last is
//! handed out again while they do ([`last_value`](crate::last_value)).

use super::{Buf, PolicyMember, RATELIMIT, ceil_secs};
use crate::last_value::{self, Source};
use http::header::{HeaderMap, HeaderValue};
use limits::Decision;

/// The RateLimit value of one rate's member, but for its numbers.
pub(crate) struct RateLimitValue {
    /// `"NAME";r=`, as [`write`](super::write) writes a first member.
    head: Vec<u8>,
    /// The rate's limit (no member says more remains).
    limit: u64,
    /// What its values are remembered by.
    source: Source,
}

impl RateLimitValue {
    /// The value's text for `rate`, if its name is visible ASCII (else its
    /// values are written, checked and dropped by [`write`](super::write)).
    pub(crate) fn new(rate: PolicyMember<'_>) -> Option<RateLimitValue> {
        let mut buf = Buf::default();
        buf.name(rate);
        buf.0.extend_from_slice(b";r=");
        buf.visible().then(|| RateLimitValue {
            head: buf.0.to_vec(),
            limit: rate.limit,
            source: Source::new(),
        })
    }

    /// Sets RateLimit to the value after `decision`: the member
    /// [`write`](super::write) writes for it, the same bytes.
    pub(crate) fn insert(&self, headers: &mut HeaderMap, decision: &Decision) {
        // As `write_members`: never more remaining than the quota.
        let remaining = decision.remaining.min(self.limit);
        let refill = ceil_secs(decision.refill_after);
        let make = || {
            let mut buf = Buf::default();
            buf.0.extend_from_slice(&self.head);
            buf.number(remaining);
            buf.0.extend_from_slice(b";t=");
            buf.number(refill);
            HeaderValue::from_maybe_shared(last_value::shared(&buf.0)).ok()
        };
        let numbers = [remaining, refill];
        if let Some(value) = last_value::value(&last_value::RATELIMIT, self.source, numbers, make) {
            headers.insert(RATELIMIT, value);
        }
    }
}

#[cfg(test)]
mod tests;
