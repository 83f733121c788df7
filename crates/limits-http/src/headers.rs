//! The RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10) and
//! the legacy X-RateLimit-* ones, from decisions.
//!
//! `RateLimit-Policy: "NAME";q=LIMIT;w=WINDOW` and `RateLimit: "NAME";r=REMAINING;t=T`,
//! one list member per rate, times in whole seconds rounded up. A rule with
//! several rates names its members `NAME-WINDOW` ("api-1s", "api-1h") so that
//! a client can pair each RateLimit member with its policy.

use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use limits::{format_duration, Decision, RetryAfter, Rule};
use std::time::Duration;

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
    let mut policy = Vec::new();
    let mut current = Vec::new();
    for s in statuses {
        for ((name, limit, window), d) in s.policies.iter().zip(&s.per_rate) {
            policy.push(format!("\"{name}\";q={limit};w={}", ceil_secs(*window)));
            // A leaky bucket can admit burst + 1 at once; never tell a client
            // more remains than the policy's quota.
            let remaining = d.remaining.min(*limit);
            current.push(format!(
                "\"{name}\";r={remaining};t={}",
                ceil_secs(d.refill_after)
            ));
        }
    }
    insert(headers, RATELIMIT_POLICY, policy.join(", "));
    insert(headers, RATELIMIT, current.join(", "));
    if let Some(RetryAfter::After(wait)) = denied {
        insert(headers, RETRY_AFTER, ceil_secs(wait).to_string());
    }
    if legacy {
        // The tightest rate: the one with the least remaining.
        let tightest = statuses
            .iter()
            .flat_map(|s| s.policies.iter().zip(&s.per_rate))
            .min_by_key(|(_, d)| d.remaining);
        if let Some(((_, limit, _), d)) = tightest {
            insert(
                headers,
                HeaderName::from_static("x-ratelimit-limit"),
                limit.to_string(),
            );
            insert(
                headers,
                HeaderName::from_static("x-ratelimit-remaining"),
                d.remaining.min(*limit).to_string(),
            );
            insert(
                headers,
                HeaderName::from_static("x-ratelimit-reset"),
                ceil_secs(d.reset_after).to_string(),
            );
        }
    }
}

fn insert(headers: &mut HeaderMap, name: HeaderName, value: String) {
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(name, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use limits::Algorithm;

    #[test]
    fn members_per_rate_with_times_rounded_up() {
        let rule = Rule::new(Algorithm::SlidingLog, "5/s; 100/h".parse().unwrap());
        let mut state = rule.new_state();
        let mut per_rate = Vec::new();
        let d = rule.decide(&mut state, 0, 1, limits::Mode::Record, |d| per_rate.push(d));
        let status = RuleStatus::new("api", &rule, d, &per_rate);
        let mut h = HeaderMap::new();
        write(&mut h, &[status], true, None);
        assert_eq!(
            h[RATELIMIT_POLICY],
            r#""api-1s";q=5;w=1, "api-1h";q=100;w=3600"#
        );
        assert_eq!(h[RATELIMIT], r#""api-1s";r=4;t=1, "api-1h";r=99;t=3600"#);
        assert_eq!(h["x-ratelimit-remaining"], "4");
        assert!(h.get(RETRY_AFTER).is_none());
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        let mut h = HeaderMap::new();
        write(
            &mut h,
            &[],
            false,
            Some(RetryAfter::After(Duration::from_millis(1001))),
        );
        assert_eq!(h[RETRY_AFTER], "2");
        write(
            &mut h,
            &[],
            false,
            Some(RetryAfter::After(Duration::from_nanos(1))),
        );
        assert_eq!(h[RETRY_AFTER], "1");
    }
}
