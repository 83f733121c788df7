//! `limits rls` through a real tonic client over TCP: the protocol's
//! semantics (counts per algorithm, hits_addend, replaces, shadow mode,
//! several rates, header fields, times, errors).

use crate::rls_common;

use limits::{Algorithm, Mode, Rule};
use limits_server::rls::proto::RateLimitDescriptor;
use limits_server::rls::ReferenceHeaderNames;
use rls_common::*;

const ALGORITHMS: &str = "
domain: algos
descriptors:
  - key: algo
    value: fixed-window
    rate_limit: {unit: day, requests_per_unit: 3}
  - key: algo
    value: sliding-log
    rate_limit: {algorithm: sliding-log, unit: day, requests_per_unit: 3}
  - key: algo
    value: sliding-window
    rate_limit: {algorithm: sliding-window, unit: day, requests_per_unit: 3}
  - key: algo
    value: token-bucket
    rate_limit: {algorithm: token-bucket, unit: day, requests_per_unit: 3}
  - key: algo
    value: leaky-bucket
    rate_limit: {algorithm: leaky-bucket, unit: day, requests_per_unit: 3}
";

#[tokio::test]
async fn every_algorithm_admits_exactly_what_the_core_admits() {
    let rls = Rls::start(ALGORITHMS).await;
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingLog,
        Algorithm::SlidingWindow,
        Algorithm::TokenBucket,
        Algorithm::LeakyBucket,
    ] {
        // The core's own answers over the same six requests at one instant
        // (a day's window: the calls take far less).
        let rule = Rule::new(algorithm, "3/d".parse().unwrap());
        let mut state = rule.new_state();
        let expected: Vec<i32> = (0..6)
            .map(|_| rule.decide(&mut state, 0, 1, Mode::Record, |_| {}).allowed)
            .map(|allowed| if allowed { OK } else { OVER })
            .collect();
        let got = rls.codes("algos", &[("algo", algorithm.name())], 6).await;
        assert_eq!(got, expected, "{algorithm}");
        let admitted = got.iter().filter(|&&c| c == OK).count();
        let most = if algorithm == Algorithm::LeakyBucket {
            4
        } else {
            3
        };
        assert_eq!(
            admitted, most,
            "{algorithm}: the limit (a leaky bucket: burst + 1)"
        );
    }
}

const PLANS: &str = "
domain: plans
descriptors:
  - key: plan
    value: free
    rate_limit: {name: free, unit: day, requests_per_unit: 1}
  - key: plan
    value: gold
    rate_limit:
      unit: day
      requests_per_unit: 3
      replaces: [{name: free}]
  - key: user
    rate_limit: {algorithm: sliding-log, unit: day, requests_per_unit: 5}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: both
    rate_limit:
      algorithm: sliding-log
      rates: [{unit: day, requests_per_unit: 4}, {window: 1h, requests_per_window: 3}]
  - key: open
    rate_limit: {unlimited: true}
";

#[tokio::test]
async fn hits_addend_is_the_cost_and_a_descriptors_own_wins() {
    let rls = Rls::start(PLANS).await;
    let user = [("user", "alice")];
    let first = rls.one("plans", &user, 2).await;
    assert_eq!(
        (first.overall_code, first.statuses[0].limit_remaining),
        (OK, 3)
    );
    // The request's 0 is 1.
    assert_eq!(
        rls.one("plans", &user, 0).await.statuses[0].limit_remaining,
        2
    );
    // The descriptor's hits_addend wins over the request's.
    let mut own = descriptor(&user);
    own.hits_addend = Some(2);
    let r = rls.call(request("plans", vec![own], 1)).await.unwrap();
    assert_eq!((r.overall_code, r.statuses[0].limit_remaining), (OK, 0));
    // A descriptor's explicit 0 checks without taking (the reference's peek).
    let mut peek = descriptor(&[("user", "bob")]);
    peek.hits_addend = Some(0);
    let r = rls
        .call(request("plans", vec![peek.clone()], 0))
        .await
        .unwrap();
    assert_eq!((r.overall_code, r.statuses[0].limit_remaining), (OK, 5));
    // Over: more hits than remain are refused whole, and take nothing.
    assert_eq!(
        rls.one("plans", &[("user", "bob")], 6).await.overall_code,
        OVER
    );
    let r = rls.call(request("plans", vec![peek], 0)).await.unwrap();
    assert_eq!(r.statuses[0].limit_remaining, 5);
}

#[tokio::test]
async fn a_replaced_limit_is_not_decided_and_reports_no_limit() {
    let rls = Rls::start(PLANS).await;
    let both = || {
        request(
            "plans",
            vec![
                descriptor(&[("plan", "free")]),
                descriptor(&[("plan", "gold")]),
            ],
            0,
        )
    };
    let mut codes = Vec::new();
    for _ in 0..4 {
        let r = rls.call(both()).await.unwrap();
        assert!(
            r.statuses[0].current_limit.is_none(),
            "free is replaced by gold"
        );
        assert_eq!(r.statuses[0].code, OK);
        codes.push(r.overall_code);
    }
    assert_eq!(codes, [OK, OK, OK, OVER], "gold's 3, free's 1 not applied");
    // Alone, free is untouched by all that.
    assert_eq!(rls.codes("plans", &[("plan", "free")], 2).await, [OK, OVER]);
}

#[tokio::test]
async fn shadow_mode_decides_and_counts_but_answers_ok() {
    let rls = Rls::start_with(PLANS, |c| c.admin = Some("127.0.0.1:0".parse().unwrap())).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let r = rls.one("plans", &[("shadow", "x")], 0).await;
        assert_eq!(r.overall_code, OK);
        assert!(
            r.response_headers_to_add.is_empty(),
            "a shadow limit sends no fields"
        );
        statuses.push((r.statuses[0].code, r.statuses[0].limit_remaining));
    }
    assert_eq!(statuses, [(OK, 0), (OK, 0), (OK, 0)]);
    let text = rls.metrics().await;
    let label = "{descriptor=\"plans.shadow\"}";
    assert_eq!(
        metric(&text, &format!("limits_rls_total_hits_total{label}")),
        Some(3.0)
    );
    assert_eq!(
        metric(&text, &format!("limits_rls_shadow_mode_total{label}")),
        Some(2.0)
    );
    assert_eq!(
        metric(&text, &format!("limits_rls_over_limit_total{label}")),
        Some(2.0)
    );
    assert_eq!(
        metric(&text, &format!("limits_rls_within_limit_total{label}")),
        Some(1.0)
    );
    assert_eq!(
        metric(&text, &format!("limits_rls_near_limit_total{label}")),
        Some(1.0)
    );
    assert!(
        text.contains("limits_rls_decision_seconds_count 3"),
        "{text}"
    );
}

#[tokio::test]
async fn two_rates_take_nothing_unless_both_admit() {
    let rls = Rls::start_with(PLANS, draft_headers).await;
    let me = [("both", "me")];
    // 2 taken: the day has 2 left, the hour 1.
    let r = rls.one("plans", &me, 2).await;
    assert_eq!((r.overall_code, r.statuses[0].limit_remaining), (OK, 1));
    // The hour refuses 2; the day would admit them but must not take them.
    assert_eq!(rls.one("plans", &me, 2).await.overall_code, OVER);
    // So the day still has 2: one more passes both.
    let r = rls.one("plans", &me, 1).await;
    assert_eq!((r.overall_code, r.statuses[0].limit_remaining), (OK, 0));
    assert_eq!(
        header(&r, "ratelimit-policy").as_deref(),
        Some(r#""plans.both-1d";q=4;w=86400, "plans.both-1h";q=3;w=3600"#)
    );
    let fields = header(&r, "ratelimit").unwrap();
    assert!(fields.starts_with(r#""plans.both-1d";r=1;t="#), "{fields}");
    assert!(fields.contains(r#""plans.both-1h";r=0;t="#), "{fields}");
}

#[tokio::test]
async fn times_and_fields_are_those_of_the_exact_decision() {
    let rls = Rls::start_with(PLANS, draft_headers).await;
    let user = [("user", "carol")];
    let first = rls.one("plans", &user, 4).await;
    let status = &first.statuses[0];
    // Admitted: the time until the whole limit is back, a day after the entry.
    assert_eq!(reset_nanos(status), 86_400 * 1_000_000_000);
    let limit = status.current_limit.clone().unwrap();
    assert_eq!((limit.requests_per_unit, limit.unit), (5, 4), "5 per DAY");
    assert_eq!(
        header(&first, "ratelimit-policy").as_deref(),
        Some(r#""plans.user";q=5;w=86400"#)
    );
    assert_eq!(
        header(&first, "ratelimit").as_deref(),
        Some(r#""plans.user";r=1;t=86400"#)
    );
    assert_eq!(header(&first, "retry-after"), None);
    let over = rls.one("plans", &user, 2).await;
    let status = &over.statuses[0];
    // Over: nothing remaining, as the reference reports it (Envoy's
    // X-RateLimit-Remaining: 0 beside the 429), though 1 hit would still
    // pass: the RateLimit field's r says so.
    assert_eq!(
        (over.overall_code, status.code, status.limit_remaining),
        (OVER, OVER, 0)
    );
    assert_eq!(
        header(&over, "ratelimit").as_deref(),
        Some(r#""plans.user";r=1;t=86400"#)
    );
    // Denied: the exact wait until 2 hits pass (the first 4 leave the log a
    // day after they came), rounded up to whole seconds as Envoy reads only
    // the seconds: the same number as Retry-After.
    let wait = reset_nanos(status);
    assert_eq!(wait % 1_000_000_000, 0, "whole seconds");
    assert!(
        wait > 86_300 * 1_000_000_000 && wait <= 86_400 * 1_000_000_000,
        "{wait}"
    );
    let seconds = (wait / 1_000_000_000).to_string();
    assert_eq!(header(&over, "retry-after"), Some(seconds));
}

#[tokio::test]
async fn no_config_no_match_and_unlimited_are_ok_as_the_reference_answers() {
    let rls = Rls::start(PLANS).await;
    for (domain, entries) in [("nowhere", [("user", "x")]), ("plans", [("nothing", "x")])] {
        let r = rls.one(domain, &entries, 0).await;
        assert_eq!((r.overall_code, r.statuses[0].code), (OK, OK));
        assert!(r.statuses[0].current_limit.is_none());
        assert_eq!(r.statuses[0].limit_remaining, 0);
    }
    let r = rls.one("plans", &[("open", "x")], 0).await;
    assert_eq!(
        (r.overall_code, r.statuses[0].limit_remaining),
        (OK, u32::MAX)
    );
}

#[tokio::test]
async fn refunds_and_empty_requests_are_invalid_arguments() {
    let rls = Rls::start(PLANS).await;
    let mut refund = descriptor(&[("user", "dave")]);
    refund.is_negative_hits = true;
    let err = rls
        .call(request("plans", vec![refund], 1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains("is_negative_hits"),
        "{}",
        err.message()
    );
    let empty: Vec<RateLimitDescriptor> = Vec::new();
    let err = rls.call(request("plans", empty, 1)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    let err = rls
        .call(request("", vec![descriptor(&[("user", "x")])], 1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    // Nothing was taken by the refused calls.
    assert_eq!(
        rls.one("plans", &[("user", "dave")], 0).await.statuses[0].limit_remaining,
        4
    );
    rls.stop().await.unwrap();
}

#[tokio::test]
async fn one_request_decides_each_descriptor_independently() {
    let rls = Rls::start(PLANS).await;
    let call = || {
        request(
            "plans",
            vec![
                descriptor(&[("plan", "free")]),
                descriptor(&[("user", "erin")]),
            ],
            0,
        )
    };
    let first = rls.call(call()).await.unwrap();
    assert_eq!(first.overall_code, OK);
    let second = rls.call(call()).await.unwrap();
    assert_eq!(second.overall_code, OVER);
    let codes: Vec<i32> = second.statuses.iter().map(|s| s.code).collect();
    assert_eq!(codes, [OVER, OK]);
    // The user's limit took its hit although the request was over, as the reference.
    assert_eq!(second.statuses[1].limit_remaining, 3);
}

/// A blocked descriptor (`requests_per_unit: 0`) is over with no rate to
/// describe: its answer carries no header field, never an empty one; beside
/// a decided limit, only that limit's fields.
#[tokio::test]
async fn a_blocked_descriptor_sends_no_empty_header_fields() {
    let rls = Rls::start_with(
        "
domain: edge
descriptors:
  - key: remote_address
    value: 50.0.0.5
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: path
    rate_limit: {unit: minute, requests_per_unit: 10}
",
        draft_headers,
    )
    .await;
    let blocked = rls.one("edge", &[("remote_address", "50.0.0.5")], 0).await;
    assert_eq!(
        (blocked.overall_code, blocked.statuses[0].code),
        (OVER, OVER)
    );
    assert_eq!(blocked.response_headers_to_add, []);
    let both = rls
        .call(request(
            "edge",
            vec![
                descriptor(&[("remote_address", "50.0.0.5")]),
                descriptor(&[("path", "/")]),
            ],
            0,
        ))
        .await
        .unwrap();
    assert_eq!(both.overall_code, OVER);
    for field in &both.response_headers_to_add {
        assert!(!field.value.trim().is_empty(), "{both:?}");
    }
    assert_eq!(
        header(&both, "ratelimit-policy").as_deref(),
        Some(r#""edge.path";q=10;w=60"#)
    );
}

/// The reference reports `limit_remaining: 0` for every descriptor over its
/// limit, whatever a smaller request could still take.
#[tokio::test]
async fn limit_remaining_is_zero_when_a_descriptor_is_over_as_the_reference() {
    let rls = Rls::start(PLANS).await;
    let user = [("user", "zed")];
    assert_eq!(
        rls.one("plans", &user, 3).await.statuses[0].limit_remaining,
        2
    );
    // 3 more is over (2 left): 0, not 2.
    let over = rls.one("plans", &user, 3).await;
    assert_eq!(
        (over.statuses[0].code, over.statuses[0].limit_remaining),
        (OVER, 0)
    );
    // Nothing was taken: 2 still pass, and leave 0.
    let last = rls.one("plans", &user, 2).await;
    assert_eq!(
        (last.statuses[0].code, last.statuses[0].limit_remaining),
        (OK, 0)
    );
}

/// The reference sends no header field unless told to: an answer, allowed
/// or denied, carries none by default.
#[tokio::test]
async fn answers_carry_no_header_field_by_default_as_the_reference() {
    let rls = Rls::start(PLANS).await;
    let user = [("user", "dave")];
    let allowed = rls.one("plans", &user, 5).await;
    assert_eq!(allowed.overall_code, OK);
    assert_eq!(allowed.response_headers_to_add, []);
    let denied = rls.one("plans", &user, 1).await;
    assert_eq!(denied.overall_code, OVER);
    assert_eq!(denied.response_headers_to_add, []);
}

/// With the reference's fields asked for, the descriptor closest to its
/// limit is reported under their names, over its limit at 0 left; with
/// both sets, ours follow.
#[tokio::test]
async fn the_reference_fields_report_the_descriptor_closest_to_its_limit() {
    let rls = Rls::start_with(PLANS, |c| {
        c.response_headers.reference = Some(ReferenceHeaderNames::default());
    })
    .await;
    let user = [("user", "erin")];
    let r = rls.one("plans", &user, 3).await;
    assert_eq!(header(&r, "RateLimit-Limit").as_deref(), Some("5"));
    assert_eq!(header(&r, "RateLimit-Remaining").as_deref(), Some("2"));
    assert_eq!(header(&r, "RateLimit-Reset").as_deref(), Some("86400"));
    assert_eq!(header(&r, "ratelimit-policy"), None);
    let r = rls.one("plans", &user, 3).await;
    assert_eq!(r.overall_code, OVER);
    assert_eq!(header(&r, "RateLimit-Remaining").as_deref(), Some("0"));

    let both = Rls::start_with(PLANS, |c| {
        c.response_headers.reference = Some(ReferenceHeaderNames::default());
        c.response_headers.draft = true;
    })
    .await;
    let r = both.one("plans", &user, 1).await;
    assert_eq!(header(&r, "RateLimit-Remaining").as_deref(), Some("4"));
    assert_eq!(
        header(&r, "ratelimit-policy").as_deref(),
        Some(r#""plans.user";q=5;w=86400"#)
    );
}
