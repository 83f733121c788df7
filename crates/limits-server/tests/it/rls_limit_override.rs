//! The request's own limit (`RateLimitDescriptor.limit`), as the
//! reference's `TestConfigLimitOverride` applies it: the descriptor gets
//! that limit in a configured domain whatever its entries match, and its
//! stats are named after the descriptor, across changes of the override.

use crate::rls_common;

use limits_server::rls::proto::rate_limit_descriptor::RateLimitOverride;
use limits_server::rls::proto::RateLimitDescriptor;
use rls_common::*;

const BASIC: &str = "
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit: {unit: second, requests_per_unit: 5}
";

/// The protocol's units: SECOND 1, MINUTE 2, HOUR 3, DAY 4.
const HOUR: i32 = 3;
const DAY: i32 = 4;

fn with_limit(entries: &[(&str, &str)], requests_per_unit: u32, unit: i32) -> RateLimitDescriptor {
    RateLimitDescriptor {
        limit: Some(RateLimitOverride {
            requests_per_unit,
            unit,
        }),
        ..descriptor(entries)
    }
}

async fn start() -> Rls {
    Rls::start_with(BASIC, |c| c.admin = Some("127.0.0.1:0".parse().unwrap())).await
}

#[tokio::test]
async fn a_descriptors_own_limit_replaces_the_configured_one_and_names_its_stats() {
    let rls = start().await;
    let something = [("key1", "value1"), ("subkey1", "something")];
    let mut codes = Vec::new();
    let mut last = None;
    for _ in 0..11 {
        let r = rls
            .call(request(
                "test-domain",
                vec![with_limit(&something, 10, DAY)],
                0,
            ))
            .await
            .unwrap();
        codes.push(r.overall_code);
        last = Some(r);
    }
    // 10 per day, not the configured 5 per second.
    assert_eq!(codes, [[OK; 10].as_slice(), &[OVER]].concat());
    let status = &last.unwrap().statuses[0];
    let reported = status.current_limit.clone().unwrap();
    assert_eq!((reported.requests_per_unit, reported.unit), (10, DAY));
    let stat = "{descriptor=\"test-domain.key1_value1.subkey1_something\"}";
    let text = rls.metrics().await;
    assert_eq!(
        metric(&text, &format!("limits_rls_total_hits_total{stat}")),
        Some(11.0)
    );
    assert_eq!(
        metric(&text, &format!("limits_rls_over_limit_total{stat}")),
        Some(1.0)
    );
    assert_eq!(
        metric(&text, &format!("limits_rls_within_limit_total{stat}")),
        Some(10.0)
    );

    // Another override of the same descriptor counts under the same name.
    let r = rls
        .call(request(
            "test-domain",
            vec![with_limit(&something, 42, HOUR)],
            0,
        ))
        .await
        .unwrap();
    assert_eq!(r.overall_code, OK);
    let reported = r.statuses[0].current_limit.clone().unwrap();
    assert_eq!((reported.requests_per_unit, reported.unit), (42, HOUR));
    let text = rls.metrics().await;
    assert_eq!(
        metric(&text, &format!("limits_rls_total_hits_total{stat}")),
        Some(12.0)
    );

    // Another value is another counter and another name.
    let other = [("key1", "value1"), ("subkey1", "something_else")];
    let r = rls
        .call(request("test-domain", vec![with_limit(&other, 10, DAY)], 0))
        .await
        .unwrap();
    assert_eq!((r.overall_code, r.statuses[0].limit_remaining), (OK, 9));
    let text = rls.metrics().await;
    let stat = "{descriptor=\"test-domain.key1_value1.subkey1_something_else\"}";
    assert_eq!(
        metric(&text, &format!("limits_rls_total_hits_total{stat}")),
        Some(1.0)
    );
}

#[tokio::test]
async fn an_override_applies_in_a_configured_domain_whatever_the_entries_match() {
    let rls = start().await;
    // No configured limit matches `anything`: the override still applies.
    let unmatched = [("anything", "x")];
    let codes: Vec<i32> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            let r = rls
                .call(request(
                    "test-domain",
                    vec![with_limit(&unmatched, 2, DAY)],
                    0,
                ))
                .await
                .unwrap();
            v.push(r.overall_code);
        }
        v
    };
    assert_eq!(codes, [OK, OK, OVER]);
    // A domain with no configuration: no limit, as the reference.
    let r = rls
        .call(request(
            "foo_domain",
            vec![with_limit(&unmatched, 1, DAY)],
            0,
        ))
        .await
        .unwrap();
    assert_eq!(
        (r.overall_code, r.statuses[0].current_limit.is_none()),
        (OK, true)
    );
    // 0 per unit blocks, as a configured 0 does.
    let r = rls
        .call(request(
            "test-domain",
            vec![with_limit(&unmatched, 0, DAY)],
            0,
        ))
        .await
        .unwrap();
    assert_eq!((r.overall_code, r.statuses[0].code), (OVER, OVER));
    // Without an override, the configuration decides: 5 per second.
    let configured = [("key1", "value1"), ("subkey1", "something")];
    let r = rls.one("test-domain", &configured, 0).await;
    let reported = r.statuses[0].current_limit.clone().unwrap();
    assert_eq!((reported.requests_per_unit, reported.unit), (5, 1));
}

#[tokio::test]
async fn an_override_without_a_unit_is_an_invalid_argument_naming_the_descriptor() {
    let rls = start().await;
    let d = [("key1", "value1")];
    for unit in [0, 99] {
        let err = rls
            .call(request(
                "test-domain",
                vec![descriptor(&d), with_limit(&d, 3, unit)],
                0,
            ))
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
        assert!(
            err.message().starts_with("descriptor 1: limit override"),
            "{}",
            err.message()
        );
    }
}

#[tokio::test]
async fn an_override_is_decided_by_the_algorithm_of_its_domains_file() {
    let yaml = "domain: exact\nalgorithm: sliding-log\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n";
    let rls = Rls::start(yaml).await;
    let r = rls
        .call(request("exact", vec![with_limit(&[("k", "v")], 5, DAY)], 0))
        .await
        .unwrap();
    // A sliding log is full again a whole day after its one entry; a fixed
    // window would say the time to the next midnight (UTC).
    assert_eq!(reset_nanos(&r.statuses[0]), 86_400 * 1_000_000_000, "{r:?}");
    assert_eq!(r.statuses[0].limit_remaining, 4);
}

/// A client cannot make unbounded stores by sending a new limit each call:
/// up to `MAX_OVERRIDES` distinct overrides are decided, the next new one is
/// refused naming the cap, and those already made keep deciding.
#[tokio::test]
async fn distinct_overrides_beyond_the_cap_are_refused_and_the_known_ones_still_decide() {
    use limits_server::rls::MAX_OVERRIDES;
    let rls = start().await;
    let d = [("key1", "value1")];
    let cap = u32::try_from(MAX_OVERRIDES).unwrap();
    for n in 1..=cap {
        let r = rls
            .call(request("test-domain", vec![with_limit(&d, n, DAY)], 0))
            .await
            .unwrap();
        assert_eq!(r.overall_code, OK, "override {n} per day");
    }
    let err = rls
        .call(request(
            "test-domain",
            vec![with_limit(&d, cap + 1, DAY)],
            0,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    assert!(
        err.message().contains(&format!(
            "more than {MAX_OVERRIDES} distinct limit overrides"
        )),
        "{}",
        err.message()
    );
    // The first override (1 per day) was made and is full: it still decides.
    let r = rls
        .call(request("test-domain", vec![with_limit(&d, 1, DAY)], 0))
        .await
        .unwrap();
    assert_eq!(r.overall_code, OVER);
}
