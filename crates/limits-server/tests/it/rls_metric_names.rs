//! Metric names as the reference gives them since its PR #528: each case of
//! its `TestDetailedMetric` table (the nested configs and its "realistic
//! example"), and `value_to_metric` naming the levels that have it.

use crate::rls_common;

use limits_server::rls::config::RlsConfig;
use rls_common::*;

fn name(yaml: &str, domain: &str, entries: &[(&str, &str)]) -> String {
    let config = RlsConfig::parse(yaml, "names.yaml").unwrap();
    config
        .lookup(domain, entries)
        .unwrap_or_else(|| panic!("{entries:?} matches"))
        .metric_name()
}

/// The table's first configs: `key-1` with a limit and `key-2` under it,
/// `detailed_metric` as given.
fn nested(top: bool, child: bool) -> String {
    format!(
        "domain: nested
descriptors:
  - key: key-1
    rate_limit: {{unit: minute, requests_per_unit: 100}}
    detailed_metric: {top}
    descriptors:
      - key: key-2
        rate_limit: {{unit: minute, requests_per_unit: 5}}
        detailed_metric: {child}
"
    )
}

#[test]
fn detailed_metric_names_every_entry_with_its_value_children_or_not() {
    let one = [("key-1", "value-1")];
    let two = [("key-1", "value-1"), ("key-2", "value-2")];
    // The limit with children names the request's value too (the older
    // naming left it out when the node had children).
    assert_eq!(
        name(&nested(true, false), "nested", &one),
        "nested.key-1_value-1"
    );
    assert_eq!(name(&nested(false, false), "nested", &one), "nested.key-1");
    assert_eq!(
        name(&nested(true, true), "nested", &two),
        "nested.key-1_value-1.key-2_value-2"
    );
    assert_eq!(
        name(&nested(false, false), "nested", &two),
        "nested.key-1.key-2"
    );
}

/// The table's "realistic example".
const REALISTIC: &str = "
domain: nested
descriptors:
  - key: key_1
    rate_limit: {unit: minute, requests_per_unit: 500}
    detailed_metric: true
  - key: key_1
    value: some-value-for-key-1
    rate_limit: {unit: minute, requests_per_unit: 500}
  - key: key_2
    rate_limit: {unit: minute, requests_per_unit: 5000}
    detailed_metric: true
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        rate_limit: {unit: minute, requests_per_unit: 5}
        detailed_metric: true
  - key: key_2
    value: specific-id
    rate_limit: {unit: minute, requests_per_unit: 50000}
    detailed_metric: true
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        rate_limit: {unit: minute, requests_per_unit: 100}
        detailed_metric: true
";

#[test]
fn detailed_metric_of_the_realistic_example() {
    for (entries, expected) in [
        (
            vec![("key_1", "value-for-key-1")],
            "nested.key_1_value-for-key-1",
        ),
        (vec![("key_2", "key-2-value")], "nested.key_2_key-2-value"),
        (
            vec![("key_2", "key-2-value"), ("key_3", "requested-key3-value")],
            "nested.key_2_key-2-value.key_3_requested-key3-value",
        ),
    ] {
        assert_eq!(name(REALISTIC, "nested", &entries), expected, "{entries:?}");
    }
}

const VALUE_TO_METRIC: &str = "
domain: domain
descriptors:
  - key: route
    value: draw
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 10}
  - key: path
    value: api/*
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: file
    value: doc/*
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: shared
    value: s/*
    share_threshold: true
    detailed_metric: true
    descriptors:
      - key: user
        rate_limit: {unit: minute, requests_per_unit: 10}
        detailed_metric: true
";

#[test]
fn value_to_metric_shows_the_value_at_the_levels_that_ask_for_it() {
    let draw = [
        ("route", "draw"),
        ("http_method", "GET"),
        ("subject_id", "123"),
    ];
    assert_eq!(
        name(VALUE_TO_METRIC, "domain", &draw),
        "domain.route_draw.http_method_GET.subject_id"
    );
    // A wildcard shows the request's value with value_to_metric...
    assert_eq!(
        name(VALUE_TO_METRIC, "domain", &[("path", "api/v1")]),
        "domain.path_api/v1"
    );
    // ...and its pattern without: the limit's id.
    assert_eq!(
        name(VALUE_TO_METRIC, "domain", &[("file", "doc/a")]),
        "domain.file_doc/*"
    );
    // detailed_metric through a share_threshold level names its pattern.
    assert_eq!(
        name(
            VALUE_TO_METRIC,
            "domain",
            &[("shared", "s/x"), ("user", "u1")]
        ),
        "domain.shared_s/*.user_u1"
    );
}

#[tokio::test]
async fn the_metrics_carry_the_new_names() {
    let rls = Rls::start_with(&nested(true, true), |c| {
        c.admin = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let r = rls.one("nested", &[("key-1", "value-1")], 0).await;
    assert_eq!(r.overall_code, OK);
    let r = rls
        .one("nested", &[("key-1", "value-1"), ("key-2", "value-2")], 0)
        .await;
    assert_eq!(r.overall_code, OK);
    let text = rls.metrics().await;
    for series in ["nested.key-1_value-1", "nested.key-1_value-1.key-2_value-2"] {
        assert_eq!(
            metric(
                &text,
                &format!("limits_rls_total_hits_total{{descriptor=\"{series}\"}}")
            ),
            Some(1.0),
            "{series}: {text}"
        );
    }
}
