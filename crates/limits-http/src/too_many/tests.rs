//! The 429 body made from a rule's pieces is, byte for byte, what the one
//! problem writer writes for it: for names that need escaping (quotes,
//! backslashes, control characters, non-ASCII) and numbers of every length.

mod repeated;

use super::{DETAIL_AFTER, TooManyBody, detail_before};
use crate::problem::problem_members;
use http::StatusCode;
use http_body_util::BodyExt;
use serde_json::Value;

const NAMES: [&str; 12] = [
    "per-ip",
    "",
    "a\"quoted\" rule",
    "back\\slash",
    "tab\tand\nnewline",
    "ctrl \u{1} \u{1f} del \u{7f}",
    "ünïcödé",
    "emoji 😀",
    "line sep \u{2028} para sep \u{2029}",
    "it's {braces} and %s",
    "</script>",
    "0123456789",
];

/// What `responses` wrote for a 429 before the pieces: the detail formatted
/// and escaped member by member.
fn reference(rule: &str, secs: u64) -> Vec<u8> {
    let detail = format!("{}{secs}{DETAIL_AFTER}", detail_before(rule, None));
    assert_eq!(
        detail,
        format!("rate limit {rule:?} exceeded; retry in {secs} s")
    );
    let members = [
        ("rule", Value::from(rule)),
        ("retry_after", Value::from(secs)),
    ];
    let r = problem_members(StatusCode::TOO_MANY_REQUESTS, detail, members);
    body_of(r.into_body())
}

fn body_of(body: http_body_util::Full<bytes::Bytes>) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(body.collect()).unwrap().to_bytes().to_vec()
}

fn seconds() -> Vec<u64> {
    let mut all = vec![0, 1, 59, 60, 3600, u64::MAX - 1, u64::MAX];
    let mut p = 10u64;
    while let Some(next) = p.checked_mul(10) {
        all.extend([p - 1, p, p + 1]);
        p = next;
    }
    all
}

#[test]
fn pieces_write_what_the_problem_writer_writes() {
    for name in NAMES {
        let pieces = TooManyBody::new(name, None);
        for secs in seconds() {
            let ours = pieces.body(secs);
            let expected = reference(name, secs);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&expected),
                "rule {name:?}, {secs} s"
            );
            assert_eq!(&ours[..], &expected[..], "rule {name:?}, {secs} s");
        }
    }
}

#[test]
fn the_body_is_the_problem_json_a_client_reads() {
    let body = TooManyBody::new("a\"b\\c", None).body(42);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["status"], 429);
    assert_eq!(v["title"], "Too Many Requests");
    assert_eq!(
        v["detail"],
        "rate limit \"a\\\"b\\\\c\" exceeded; retry in 42 s"
    );
    assert_eq!(v["rule"], "a\"b\\c");
    assert_eq!(v["retry_after"], 42);
}

#[test]
fn a_rule_of_distinct_values_says_a_new_value_was_refused() {
    let twenty_an_hour = "20/h".parse().unwrap();
    let body = TooManyBody::new("login.usernames", Some(twenty_an_hour)).body(7);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        v["detail"],
        "rate limit \"login.usernames\" exceeded: at most 20 distinct values in 1h, and this one is new; retry in 7 s"
    );
    assert_eq!(v["retry_after"], 7);
}
