//! A 429 through the layer, whole: status, every header, and the problem
//! body byte for byte, for a rule whose name needs escaping in JSON and
//! several numbers of seconds (the body is made from pieces kept per rule).

use crate::common;

use common::*;
use http::StatusCode;
use http_body_util::BodyExt;
use limits::{Algorithm, ManualClock};
use limits_http::Policy;

/// The problem body of RFC 9457 as the layer words a 429, written here
/// with serde_json's string escaping only.
fn expected(rule: &str, secs: u64) -> String {
    let detail = format!("rate limit {rule:?} exceeded; retry in {secs} s");
    let json = |s: &str| serde_json::to_string(s).unwrap();
    format!(
        r#"{{"type":"about:blank","title":"Too Many Requests","status":429,"detail":{},"rule":{},"retry_after":{secs}}}"#,
        json(&detail),
        json(rule)
    )
}

#[tokio::test]
async fn a_429_is_the_same_bytes_for_names_that_need_escaping() {
    // The second name is no header value: its 429 has no RateLimit fields.
    // (content-length: axum's, under the test's router.)
    let plain = [
        "content-type",
        "ratelimit-policy",
        "ratelimit",
        "retry-after",
        "content-length",
    ];
    let odd = ["content-type", "retry-after", "content-length"];
    for (name, fields) in [
        ("per-ip", &plain[..]),
        ("a \"quoted\"\\ rule\t\u{1} ü 😀", &odd[..]),
    ] {
        let clock = ManualClock::new(0);
        let store = store(Algorithm::FixedWindow, "1/h", &clock);
        let app = app(Policy::new(vec![rule(name, "/", "ip", store)]));
        assert_eq!(
            send(&app, request("/", "192.0.2.1:5000")).await.status(),
            200
        );
        // 3600 s, 3599 s (rounded up from 3598.5), 1 s before the window ends.
        for (at, secs) in [(0, 3600), (1_500_000_000, 3599), (3_599_000_000_000, 1)] {
            clock.set(at);
            let r = send(&app, request("/", "192.0.2.1:5000")).await;
            assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
            let names: Vec<_> = r.headers().keys().map(|k| k.as_str()).collect();
            assert_eq!(names, fields, "rule {name:?}");
            assert_eq!(header(&r, "content-type"), "application/problem+json");
            assert_eq!(header(&r, "retry-after"), secs.to_string());
            let body = r.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(String::from_utf8_lossy(&body), expected(name, secs));
        }
    }
}
