use super::*;
use crate::rls::proto::rate_limit_response::rate_limit::Unit;
use crate::rls::proto::rate_limit_response::RateLimit;

fn status(
    code: Code,
    requests_per_unit: Option<u32>,
    remaining: u32,
    reset: i64,
) -> DescriptorStatus {
    DescriptorStatus {
        code: code as i32,
        current_limit: requests_per_unit.map(|n| RateLimit {
            name: String::new(),
            requests_per_unit: n,
            unit: Unit::Minute as i32,
        }),
        limit_remaining: remaining,
        duration_until_reset: Some(prost_types::Duration {
            seconds: reset,
            nanos: 0,
        }),
        quota: None,
    }
}

fn pairs(fields: &[HeaderValue]) -> Vec<(&str, &str)> {
    fields
        .iter()
        .map(|h| (h.key.as_str(), h.value.as_str()))
        .collect()
}

#[test]
fn the_descriptor_with_least_left_is_reported_under_the_reference_names() {
    let names = ReferenceHeaderNames::default();
    let statuses = [
        status(Code::Ok, Some(10), 7, 40),
        status(Code::Ok, None, 0, 0),
        status(Code::Ok, Some(5), 2, 30),
        status(Code::Ok, Some(50), 2, 10),
    ];
    assert_eq!(
        pairs(&names.fields(&statuses)),
        [
            ("RateLimit-Limit", "5"),
            ("RateLimit-Remaining", "2"),
            ("RateLimit-Reset", "30"),
        ]
    );
}

#[test]
fn the_last_descriptor_over_its_limit_wins_over_one_with_less_left() {
    let names = ReferenceHeaderNames {
        limit: "X-Limit".into(),
        remaining: "X-Left".into(),
        reset: "X-Reset".into(),
    };
    let statuses = [
        status(Code::OverLimit, Some(3), 0, 50),
        status(Code::Ok, Some(10), 0, 5),
        status(Code::OverLimit, Some(4), 0, 20),
        status(Code::Ok, Some(10), 1, 5),
    ];
    assert_eq!(
        pairs(&names.fields(&statuses)),
        [("X-Limit", "4"), ("X-Left", "0"), ("X-Reset", "20")]
    );
}

#[test]
fn no_descriptor_with_a_limit_sends_no_field() {
    let names = ReferenceHeaderNames::default();
    assert_eq!(names.fields(&[]), []);
    let unlimited = [status(Code::Ok, None, u32::MAX, 0)];
    assert_eq!(names.fields(&unlimited), []);
}
