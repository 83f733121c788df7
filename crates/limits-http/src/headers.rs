//! The RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10) and
//! the legacy X-RateLimit-* ones, from decisions.
//!
//! `RateLimit-Policy: "NAME";q=LIMIT;w=WINDOW` and `RateLimit: "NAME";r=REMAINING;t=T`,
//! one list member per rate, times in whole seconds rounded up. A rule with
//! several rates names its members `NAME-WINDOW` ("api-1s", "api-1h") so that
//! a client can pair each RateLimit member with its policy.

use crate::last_value::{self, Source};
use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use limits::{Decision, RetryAfter, Rule, format_duration};
use smallvec::SmallVec;
use std::time::Duration;

mod ratelimit;
pub(crate) use ratelimit::RateLimitValue;

/// `RateLimit-Policy`.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Whole seconds, rounded up.
pub fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// One rule's contribution to the headers of a response.
#[derive(Clone, Debug)]
pub struct RuleStatus {
    /// Policy members: (name, limit, window).
    pub policies: Vec<(String, u64, Duration)>,
    /// Each rate's own decision, same order.
    pub per_rate: Vec<Decision>,
    /// The rule's combined decision.
    pub decision: Decision,
}

impl RuleStatus {
    /// The status of `rule` named `name` after `per_rate` decisions.
    pub fn new(name: &str, rule: &Rule, decision: Decision, per_rate: &[Decision]) -> RuleStatus {
        let several = rule.rates().len() > 1;
        let policies = rule
            .rates()
            .iter()
            .map(|r| {
                let member = if several {
                    format!("{name}-{}", format_duration(r.window()))
                } else {
                    name.to_string()
                };
                (member, r.limit(), r.window())
            })
            .collect();
        RuleStatus {
            policies,
            per_rate: per_rate.to_vec(),
            decision,
        }
    }
}

/// Adds RateLimit-Policy and RateLimit (and, with `legacy`, X-RateLimit-*)
/// for `statuses`; adds Retry-After when `denied` is a wait.
pub fn write(
    headers: &mut HeaderMap,
    statuses: &[RuleStatus],
    legacy: bool,
    denied: Option<RetryAfter>,
) {
    let members = statuses.iter().flat_map(|s| {
        s.policies
            .iter()
            .zip(&s.per_rate)
            .map(|((name, limit, window), d)| Member {
                rate: PolicyMember {
                    name: MemberName::Whole(name),
                    limit: *limit,
                    window: *window,
                },
                decision: d,
            })
    });
    write_members(headers, members, legacy, denied, MadeOnce::NOTHING);
}

/// A list member's name: given whole, or a rule's name and the rate's
/// window (`api-1s`), written where it is needed rather than kept.
#[derive(Clone, Copy)]
pub(crate) enum MemberName<'a> {
    Whole(&'a str),
    Windowed(&'a str),
}

/// One rate's RateLimit-Policy list member.
#[derive(Clone, Copy)]
pub(crate) struct PolicyMember<'a> {
    pub name: MemberName<'a>,
    pub limit: u64,
    pub window: Duration,
}

/// One rate's list members, with its decision.
#[derive(Clone, Copy)]
pub(crate) struct Member<'a> {
    pub rate: PolicyMember<'a>,
    pub decision: &'a Decision,
}

/// The RateLimit-Policy value of `rates` alone, as [`write`] writes it;
/// `None` if it is not a valid value (then it is not sent).
pub(crate) fn policy_value<'a>(
    rates: impl Iterator<Item = PolicyMember<'a>>,
) -> Option<HeaderValue> {
    let mut buf = Buf::default();
    buf.policy(rates);
    buf.value()
}

/// The pieces of the members' values made once per policy (each rule's
/// text, which the policy in force holds), lent to [`write_members`]: a view
/// of that one cache, not a cache of its own.
#[derive(Clone, Copy)]
pub(crate) struct MadeOnce<'a> {
    /// The RateLimit-Policy value of the members ([`policy_value`]).
    pub policy: Option<&'a HeaderValue>,
    /// Every member's name is visible ASCII: each of their rules has a
    /// RateLimit-Policy value ([`policy_value`] is `Some`), which holds the
    /// same names. A value of those names, digits and punctuation is then
    /// visible ASCII too, and only `HeaderValue`'s own check is made.
    pub visible_names: bool,
    /// The members when they are one, of a rule of one rate: its RateLimit
    /// value's text ([`RateLimitValue::new`] of its rate) and its decision.
    pub one: Option<(&'a RateLimitValue, &'a Decision)>,
}

impl MadeOnce<'_> {
    /// Nothing known: every value is checked as it is written.
    pub(crate) const NOTHING: MadeOnce<'static> = MadeOnce {
        policy: None,
        visible_names: false,
        one: None,
    };
}

/// What [`write`] writes, for members however they are held: each value is
/// formatted once into a buffer on the stack and copied into its header.
pub(crate) fn write_members<'a>(
    headers: &mut HeaderMap,
    members: impl Iterator<Item = Member<'a>> + Clone,
    legacy: bool,
    denied: Option<RetryAfter>,
    made: MadeOnce<'_>,
) {
    let mut buf = Buf::default();
    let names = if made.visible_names {
        Check::Known
    } else {
        Check::Ours
    };
    match made.policy {
        Some(value) => {
            headers.insert(RATELIMIT_POLICY, value.clone());
        }
        None => {
            buf.policy(members.clone().map(|m| m.rate));
            buf.insert(headers, RATELIMIT_POLICY, names);
        }
    }
    match made.one {
        Some((value, decision)) => value.insert(headers, decision),
        None => {
            for (i, m) in members.clone().enumerate() {
                buf.separator(i);
                buf.name(m.rate);
                // A leaky bucket can admit burst + 1 at once; never tell a
                // client more remains than the policy's quota.
                let remaining = m.decision.remaining.min(m.rate.limit);
                let refill = ceil_secs(m.decision.refill_after);
                buf.0.extend_from_slice(b";r=");
                buf.number(remaining);
                buf.0.extend_from_slice(b";t=");
                buf.number(refill);
            }
            buf.insert(headers, RATELIMIT, names);
        }
    }
    // Digits only, from here on.
    if let Some(RetryAfter::After(wait)) = denied {
        // The same value for every 429 of the same second: made once.
        let secs = ceil_secs(wait);
        let make = || {
            HeaderValue::from_maybe_shared(last_value::shared(Decimal::new(secs).as_bytes())).ok()
        };
        if let Some(value) =
            last_value::value(&last_value::RETRY_AFTER, Source::NUMBERS, [secs, 0], make)
        {
            headers.insert(RETRY_AFTER, value);
        }
    }
    if legacy {
        // The tightest rate: the one with the least remaining.
        if let Some(m) = members.min_by_key(|m| m.decision.remaining) {
            buf.number(m.rate.limit);
            buf.insert(
                headers,
                HeaderName::from_static("x-ratelimit-limit"),
                Check::Known,
            );
            buf.number(m.decision.remaining.min(m.rate.limit));
            buf.insert(
                headers,
                HeaderName::from_static("x-ratelimit-remaining"),
                Check::Known,
            );
            buf.number(ceil_secs(m.decision.reset_after));
            buf.insert(
                headers,
                HeaderName::from_static("x-ratelimit-reset"),
                Check::Known,
            );
        }
    }
}

/// A number's decimal digits, as `Display` writes them, without the
/// formatting machinery (the numbers of every response's RateLimit value,
/// of a 429's Retry-After and problem body).
pub(crate) struct Decimal {
    digits: [u8; 20],
    start: usize,
}

impl Decimal {
    /// The digits of `n`.
    pub(crate) fn new(mut n: u64) -> Decimal {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Decimal { digits, start }
    }

    /// The digits.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

/// Whose check a value written into a [`Buf`] needs before it is sent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Ours (visible ASCII, as `HeaderValue::from_str` requires), then
    /// `HeaderValue`'s: a name of unknown bytes is in it.
    Ours,
    /// `HeaderValue`'s alone: every piece is known to be visible ASCII
    /// (digits, punctuation, names of [`MadeOnce::visible_names`]).
    Known,
}

/// A header value being written: on the stack unless it is long.
#[derive(Default)]
struct Buf(SmallVec<[u8; 256]>);

impl Buf {
    fn separator(&mut self, i: usize) {
        if i > 0 {
            self.0.extend_from_slice(b", ");
        }
    }

    /// The RateLimit-Policy list of `rates`.
    fn policy<'a>(&mut self, rates: impl Iterator<Item = PolicyMember<'a>>) {
        for (i, r) in rates.enumerate() {
            self.separator(i);
            self.name(r);
            self.0.extend_from_slice(b";q=");
            self.number(r.limit);
            self.0.extend_from_slice(b";w=");
            self.number(ceil_secs(r.window));
        }
    }

    /// Appends `n` in decimal, as `Display` writes it, without the
    /// formatting machinery (two numbers per member on every response): the
    /// one way this buffer writes a number.
    fn number(&mut self, n: u64) {
        self.0.extend_from_slice(Decimal::new(n).as_bytes());
    }

    fn name(&mut self, m: PolicyMember<'_>) {
        self.0.push(b'"');
        match m.name {
            MemberName::Whole(name) => self.0.extend_from_slice(name.as_bytes()),
            MemberName::Windowed(name) => {
                self.0.extend_from_slice(name.as_bytes());
                self.0.push(b'-');
                self.0
                    .extend_from_slice(format_duration(m.window).as_bytes());
            }
        }
        self.0.push(b'"');
    }

    /// Sets `name` to the value written (if it is one), and empties the
    /// buffer. Nothing written (no member: a store that could not decide)
    /// is no field at all: an empty list is not a value of either field.
    fn insert(&mut self, headers: &mut HeaderMap, name: HeaderName, check: Check) {
        if self.0.is_empty() {
            return;
        }
        let value = match check {
            Check::Ours => self.value(),
            Check::Known => {
                debug_assert!(self.visible(), "a value of known pieces is visible ASCII");
                HeaderValue::from_bytes(&self.0).ok()
            }
        };
        if let Some(v) = value {
            headers.insert(name, v);
        }
        self.0.clear();
    }

    /// Whether the value written is visible ASCII (as
    /// `HeaderValue::from_str` requires).
    fn visible(&self) -> bool {
        self.0.iter().all(|&b| (32..127).contains(&b) || b == b'\t')
    }

    /// The value written, if it is visible ASCII.
    fn value(&self) -> Option<HeaderValue> {
        self.visible()
            .then(|| HeaderValue::from_bytes(&self.0).ok())
            .flatten()
    }
}

#[cfg(test)]
mod tests;
