//! A RateLimit value is sent only when it is visible ASCII: a rule whose
//! name is not (a non-ASCII or control character) gets no RateLimit-Policy
//! or RateLimit field, alone or with other rules, while its numbers
//! (Retry-After, the legacy X-RateLimit-* fields) are still sent. The
//! layer checks a rule's name once, in its RateLimit-Policy value, and
//! writes the RateLimit value of known-visible names without a check of
//! its own: these are the answers either way.

use crate::common;

use common::{app, header, request, rule, send, store};
use limits::{Algorithm, ManualClock};
use limits_http::Policy;

fn policy(names: &[&str], legacy: bool, clock: &ManualClock) -> Policy<common::Memory> {
    let rules = names
        .iter()
        .map(|name| rule(name, "/", "ip", store(Algorithm::TokenBucket, "2/m", clock)))
        .collect();
    let mut policy = Policy::new(rules);
    policy.options.legacy_headers = legacy;
    policy
}

#[tokio::test]
async fn visible_names_get_their_values_one_rule_or_several() {
    let clock = ManualClock::new(0);
    let two = app(policy(&["api", "burst"], false, &clock));
    let r = send(&two, request("/", "192.0.2.1:1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "ratelimit-policy"),
        r#""api";q=2;w=60, "burst";q=2;w=60"#
    );
    assert_eq!(
        header(&r, "ratelimit"),
        r#""api";r=1;t=30, "burst";r=1;t=30"#
    );

    let one = app(policy(&["api"], false, &clock));
    let r = send(&one, request("/", "192.0.2.1:1")).await;
    assert_eq!(header(&r, "ratelimit"), r#""api";r=1;t=30"#);
}

#[tokio::test]
async fn a_name_that_is_not_visible_ascii_sends_no_ratelimit_fields() {
    for name in ["café", "tab\there", "bell\u{7}"] {
        let clock = ManualClock::new(0);
        for names in [vec![name], vec!["api", name], vec![name, "api"]] {
            let limited = app(policy(&names, true, &clock));
            let r = send(&limited, request("/", "192.0.2.9:1")).await;
            assert_eq!(r.status(), 200);
            let tab = name.contains('\t');
            // A tab is allowed in a field value; the others are not.
            assert_eq!(r.headers().contains_key("ratelimit"), tab, "{names:?}");
            assert_eq!(
                r.headers().contains_key("ratelimit-policy"),
                tab,
                "{names:?}"
            );
            // The numbers are sent all the same.
            assert_eq!(header(&r, "x-ratelimit-limit"), "2", "{names:?}");
            // A 429 still says when to come back.
            send(&limited, request("/", "192.0.2.9:1")).await;
            let denied = send(&limited, request("/", "192.0.2.9:1")).await;
            assert_eq!(denied.status(), 429);
            assert_eq!(header(&denied, "retry-after"), "30", "{names:?}");
            // The first rule denies: its status alone is in the 429.
            let visible = tab || names[0] == "api";
            assert_eq!(
                denied.headers().contains_key("ratelimit"),
                visible,
                "{names:?}"
            );
        }
    }
}
