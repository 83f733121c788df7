//! From one descriptor's decision to what the protocol says about it: the
//! cost a descriptor asks for, its `DescriptorStatus`, the hits the metrics
//! count, and the response's header fields. Pure functions, no store and no
//! I/O, so that each rule of the protocol is tested here on its own.
//!
//! The times in a `DescriptorStatus`: `duration_until_reset` is
//! [`Decision::retry_after`] when the descriptor is over its limit (the exact
//! earliest moment the same request would pass) and
//! [`Decision::reset_after`] when it is under (the moment the key is back to
//! its full limit). Envoy turns the status with the least `limit_remaining`
//! into `X-RateLimit-Reset` (draft 03: "seconds until the quota resets"), so
//! a denied client is told exactly when to retry and an admitted one when its
//! whole quota is back; for a fixed window both are the window's end, which
//! is what the reference service reports.
//!
//! Envoy reads only the whole seconds of the duration (a wait of 59.9 s
//! becomes `X-RateLimit-Reset: 59`, and a client that retries then is
//! early), so the duration is the exact time rounded up to a whole second,
//! the rounding of `Retry-After` and of the `RateLimit` field's `t`: a client
//! that waits what any of the three says is never turned away for being early.

use super::proto::rate_limit_response::{rate_limit::Unit, Code, DescriptorStatus, RateLimit};
use super::proto::{HeaderValue, RateLimitDescriptor};
use limits::{Decision, Mode, RetryAfter, Rule, Verdict};
use limits_http::headers::{self, RuleStatus};
use std::time::Duration;

/// What one descriptor asks to take, and how to record it: `record`, the
/// service's mode ([`Mode::Record`], or [`Mode::RecordAlways`] when denied
/// hits count).
///
/// As the reference service: the descriptor's own `hits_addend`, when set,
/// wins over the request's; a descriptor's explicit 0 checks without taking
/// anything (a peek); the request's 0 (the field unset) means 1.
pub fn cost(request_hits: u32, descriptor: &RateLimitDescriptor, record: Mode) -> (u64, Mode) {
    match descriptor.hits_addend {
        Some(0) => (0, Mode::Peek),
        Some(n) => (n, record),
        None => (u64::from(request_hits.max(1)), record),
    }
}

/// What the protocol says about one limit: `requests_per_unit` and its unit
/// (the proto enum's number), and the rate limit's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reported {
    /// `RateLimit.requests_per_unit`.
    pub requests_per_unit: u32,
    /// `RateLimit.unit`, as the proto enum's number.
    pub unit: i32,
    /// `RateLimit.name` (empty when the limit has none).
    pub name: String,
}

impl Reported {
    fn to_proto(&self) -> RateLimit {
        RateLimit {
            name: self.name.clone(),
            requests_per_unit: self.requests_per_unit,
            unit: Unit::try_from(self.unit).map_or(Unit::Unknown as i32, |u| u as i32),
        }
    }
}

/// The remaining quota the protocol reports: the least over the rates, each
/// at most its own limit (a leaky bucket can admit its burst + 1 at once;
/// never report more than the limit), saturated to the field's 32 bits.
pub fn remaining(rule: &Rule, verdict: &Verdict) -> u32 {
    let least = rule
        .rates()
        .iter()
        .zip(&verdict.per_rate)
        .map(|(rate, d)| d.remaining.min(rate.limit()))
        .min()
        .unwrap_or(verdict.decision.remaining);
    u32::try_from(least).unwrap_or(u32::MAX)
}

/// The time `duration_until_reset` reports (see the module's doc): the wait
/// before a retry passes when denied, the time to the full limit when
/// admitted. A request that can never pass (its cost is above the limit)
/// reports the time to the full limit.
pub fn until_reset(decision: &Decision) -> Duration {
    match (decision.allowed, decision.retry_after) {
        (false, RetryAfter::After(wait)) => wait,
        _ => decision.reset_after,
    }
}

/// The `DescriptorStatus` of a decided descriptor. `over` is the code's
/// choice (a shadow-mode limit over its limit still reports OK).
///
/// A denied descriptor reports nothing remaining, as the reference does
/// (Envoy copies it into `X-RateLimit-Remaining` beside the 429), though a
/// smaller request might still pass: what a smaller request could take is
/// in the `RateLimit` field's `r`.
pub fn status(reported: &Reported, rule: &Rule, verdict: &Verdict, over: bool) -> DescriptorStatus {
    let wait = until_reset(&verdict.decision);
    DescriptorStatus {
        code: if over { Code::OverLimit } else { Code::Ok } as i32,
        current_limit: Some(reported.to_proto()),
        limit_remaining: if verdict.decision.allowed {
            remaining(rule, verdict)
        } else {
            0
        },
        duration_until_reset: Some(whole_seconds(wait)),
        quota: None,
    }
}

/// A status of OK: for no limit (`remaining` 0, as the reference service)
/// or an unlimited one (`remaining` u32::MAX, as the reference service).
pub fn ok(remaining: u32) -> DescriptorStatus {
    DescriptorStatus {
        code: Code::Ok as i32,
        current_limit: None,
        limit_remaining: remaining,
        duration_until_reset: None,
        quota: None,
    }
}

/// OVER_LIMIT with nothing remaining and no time known: a limit of
/// `requests_per_unit: 0`, or a store that failed under `--on-store-error
/// deny`.
pub fn over_without_time(reported: &Reported) -> DescriptorStatus {
    DescriptorStatus {
        code: Code::OverLimit as i32,
        current_limit: Some(reported.to_proto()),
        limit_remaining: 0,
        duration_until_reset: None,
        quota: None,
    }
}

/// A duration as protobuf's, rounded up to whole seconds as the HTTP
/// header fields are (see the module's doc; saturated at i64::MAX seconds).
pub fn whole_seconds(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(headers::ceil_secs(d)).unwrap_or(i64::MAX),
        nanos: 0,
    }
}

/// A rate's near-limit threshold: 80% of its limit (the reference
/// service's default `NEAR_LIMIT_RATIO`), floored, without floating point
/// so that it is exact for any u64.
fn near_threshold(limit: u64) -> u64 {
    u64::try_from(u128::from(limit) * 4 / 5).unwrap_or(u64::MAX)
}

/// Of `cost` hits admitted, how many landed above 80% of a rate's limit:
/// counted on the rate that has the least left, as the reference counts
/// them on its one counter (hits from the threshold up, none below it).
pub fn near_limit_hits(rule: &Rule, verdict: &Verdict, cost: u64) -> u64 {
    rule.rates()
        .iter()
        .zip(&verdict.per_rate)
        .map(|(rate, d)| {
            let limit = rate.limit();
            let used_after = limit - d.remaining.min(limit);
            let used_before = used_after.saturating_sub(cost);
            used_after.saturating_sub(near_threshold(limit).max(used_before))
        })
        .max()
        .unwrap_or(0)
}

/// Of `cost` hits denied, (over, near) as the reference splits them: the
/// hits past the limit are over, and those between the near-limit
/// threshold (or what was used, if more) and the limit are near; all are
/// over when the limit was already used up. Counted on the rate that puts
/// the most past its limit. A denied request takes nothing here, so "used"
/// is what the rate held before it.
pub fn denied_hits(rule: &Rule, verdict: &Verdict, cost: u64) -> (u64, u64) {
    rule.rates()
        .iter()
        .zip(&verdict.per_rate)
        .filter_map(|(rate, d)| {
            let limit = rate.limit();
            let used = limit - d.remaining.min(limit);
            if used >= limit {
                return Some((cost, 0));
            }
            let over = used.saturating_add(cost).saturating_sub(limit);
            (over > 0).then(|| (over, limit - near_threshold(limit).max(used)))
        })
        .max()
        .unwrap_or((cost, 0))
}

/// The policy member's name of a limit in the RateLimit fields: a
/// structured-field string may hold only printable ASCII other than `"` and
/// `\`, so anything else becomes `_`.
pub fn member_name(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ' '..='~' if c != '"' && c != '\\' => c,
            _ => '_',
        })
        .collect()
}

/// The response's header fields: `RateLimit-Policy` and `RateLimit` of every
/// enforced limit decided (built by [`limits_http::headers`], as the HTTP
/// layer sends them), and `Retry-After` when `denied` is a wait. A field is
/// sent only with a value: a request denied by a blocked limit alone
/// (`requests_per_unit: 0`, no rate to describe, no wait to tell) gets none,
/// as an empty field tells a client nothing.
pub fn header_fields(statuses: &[RuleStatus], denied: Option<RetryAfter>) -> Vec<HeaderValue> {
    if statuses.is_empty() && denied.is_none() {
        return Vec::new();
    }
    let mut map = http::HeaderMap::new();
    headers::write(&mut map, statuses, false, denied);
    map.iter()
        .filter(|(_, value)| !value.as_bytes().trim_ascii().is_empty())
        .map(|(name, value)| HeaderValue {
            key: name.as_str().to_string(),
            value: String::from_utf8_lossy(value.as_bytes()).into_owned(),
            raw_value: Vec::new(),
        })
        .collect()
}

/// One limit's contribution to the header fields.
pub fn rule_status(name: &str, rule: &Rule, verdict: &Verdict) -> RuleStatus {
    RuleStatus::new(
        &member_name(name),
        rule,
        verdict.decision,
        &verdict.per_rate,
    )
}

#[cfg(test)]
mod tests;
