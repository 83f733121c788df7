//! A one-rate rule's RateLimit value made from its text made once, and
//! handed out again while its numbers repeat, is byte for byte the value
//! [`write`](super::super::write) writes for the same decision: for numbers
//! around every power of ten, repeated and alternating, and for rules whose
//! values share their numbers but not their names.

use super::super::{MemberName, PolicyMember, RATELIMIT, RuleStatus, write};
use super::RateLimitValue;
use http::header::{HeaderMap, HeaderValue};
use limits::{Algorithm, Decision, RetryAfter, Rule};
use std::time::Duration;

/// A decision with `remaining` left and a refill in `refill`.
fn decision(remaining: u64, refill: Duration) -> Decision {
    Decision {
        allowed: true,
        remaining,
        retry_after: RetryAfter::After(Duration::ZERO),
        reset_after: refill,
        delay: Duration::ZERO,
        refill_after: refill,
    }
}

/// The RateLimit value `write` writes for rule `name` of `rates` after `d`.
fn written(name: &str, rule: &Rule, d: Decision) -> HeaderValue {
    let status = RuleStatus::new(name, rule, d, &[d]);
    let mut h = HeaderMap::new();
    write(&mut h, &[status], false, None);
    h[RATELIMIT].clone()
}

/// The value made from the text made once.
fn made(value: &RateLimitValue, d: &Decision) -> HeaderValue {
    let mut h = HeaderMap::new();
    value.insert(&mut h, d);
    h[RATELIMIT].clone()
}

fn numbers() -> Vec<u64> {
    let mut numbers = vec![0, 1, 12345, u64::MAX - 1, u64::MAX];
    let mut p = 1u64;
    while let Some(next) = p.checked_mul(10) {
        numbers.extend([p - 1, p, p + 1]);
        p = next;
    }
    numbers
}

fn value(name: &str, rule: &Rule) -> RateLimitValue {
    let rate = rule.rates().iter().next().unwrap();
    RateLimitValue::new(PolicyMember {
        name: MemberName::Whole(name),
        limit: rate.limit(),
        window: rate.window(),
    })
    .expect("a visible name")
}

#[test]
fn made_once_written_each_time_alike() {
    // The largest limit (2^62): numbers above it are cut down to it, by
    // both writers.
    let rule = Rule::new(
        Algorithm::TokenBucket,
        "4611686018427387904/s".parse().unwrap(),
    );
    let text = value("api", &rule);
    let refills = [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_secs(1),
        Duration::from_millis(1500),
        Duration::from_secs(3600),
    ];
    for remaining in numbers() {
        for refill in refills {
            let d = decision(remaining, refill);
            let expected = written("api", &rule, d);
            // Made, then handed out again, then made after another value.
            assert_eq!(made(&text, &d), expected, "{remaining} {refill:?}");
            assert_eq!(made(&text, &d), expected, "{remaining} {refill:?}, again");
            let other = decision(remaining ^ 1, refill + Duration::from_secs(1));
            assert_eq!(made(&text, &other), written("api", &rule, other));
            assert_eq!(
                made(&text, &d),
                expected,
                "{remaining} {refill:?}, after another"
            );
        }
    }
}

#[test]
fn remaining_is_never_more_than_the_quota() {
    let rule = Rule::new(Algorithm::LeakyBucket, "5/s".parse().unwrap());
    let text = value("burst", &rule);
    for remaining in [0, 4, 5, 6, 100] {
        let d = decision(remaining, Duration::from_millis(200));
        assert_eq!(made(&text, &d), written("burst", &rule, d));
    }
    assert_eq!(
        made(&text, &decision(6, Duration::ZERO)),
        r#""burst";r=5;t=0"#
    );
}

#[test]
fn rules_with_the_same_numbers_keep_their_names() {
    let rule = Rule::new(Algorithm::TokenBucket, "10/s".parse().unwrap());
    let (a, b) = (value("a", &rule), value("b", &rule));
    // The same rule's text made twice (as after a reload) is its own source.
    let a_again = value("a", &rule);
    let d = decision(9, Duration::from_millis(100));
    for _ in 0..3 {
        assert_eq!(made(&a, &d), r#""a";r=9;t=1"#);
        assert_eq!(made(&b, &d), r#""b";r=9;t=1"#);
        assert_eq!(made(&a_again, &d), r#""a";r=9;t=1"#);
    }
}

#[test]
fn a_name_that_is_not_visible_has_no_text() {
    let rule = Rule::new(Algorithm::TokenBucket, "10/s".parse().unwrap());
    let rate = PolicyMember {
        name: MemberName::Whole("new\nline"),
        limit: 10,
        window: rule.rates().iter().next().unwrap().window(),
    };
    assert!(RateLimitValue::new(rate).is_none());
}

#[test]
fn retry_after_repeated_and_alternating() {
    let retry = |h: &mut HeaderMap, d: Duration| {
        write(h, &[], false, Some(RetryAfter::After(d)));
        h[http::header::RETRY_AFTER].to_str().unwrap().to_string()
    };
    let mut h = HeaderMap::new();
    for secs in numbers().into_iter().filter(|&s| s < u64::MAX) {
        let d = Duration::from_secs(secs);
        assert_eq!(retry(&mut h, d), secs.to_string());
        assert_eq!(retry(&mut h, d), secs.to_string());
        assert_eq!(
            retry(&mut h, d + Duration::from_nanos(1)),
            (secs + 1).to_string()
        );
        assert_eq!(retry(&mut h, d), secs.to_string());
    }
}

#[test]
fn each_thread_makes_its_own() {
    let rule = Rule::new(Algorithm::TokenBucket, "10/s".parse().unwrap());
    let text = std::sync::Arc::new(value("api", &rule));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let text = text.clone();
            std::thread::spawn(move || {
                for i in 0..200u64 {
                    let remaining = (t + i) % 3;
                    let d = decision(remaining, Duration::from_secs(1));
                    let expected = format!(r#""api";r={remaining};t=1"#);
                    assert_eq!(made(&text, &d), expected.as_str());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
