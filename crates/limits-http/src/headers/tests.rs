//! The header fields as a client reads them: members per rate, times
//! rounded up.

mod number;

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
