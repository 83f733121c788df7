//! The reference's newest configuration keys, each case ported from its
//! tests (`test/config/unit_multiplier.yaml` and `zero_unit_multiplier.yaml`
//! with `TestUnitMultiplier`, `soft_requests_per_unit_test.go` with the
//! service's `soft_breach_test.go`, `descriptor_key_config_test.go` with
//! `multiple_*.yaml`), as black-box gRPC calls.

use crate::rls_common;

use limits_server::rls::config::RlsConfig;
use limits_server::rls::proto::rate_limit_descriptor::RateLimitOverride;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitResponse};
use limits_server::rls::RlsOptions;
use rls_common::*;
use std::time::{SystemTime, UNIX_EPOCH};

/// The protocol's MINUTE and DAY.
const MINUTE: i32 = 2;
const DAY: i32 = 4;

/// The reference's `test/config/unit_multiplier.yaml`.
const UNIT_MULTIPLIER: &str = "
domain: test-domain
descriptors:
  # some unit_multiplier
  - key: key1
    rate_limit:
      unit: minute
      requests_per_unit: 20
      unit_multiplier: 5

  # no unit_multiplier
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 25
";

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Waits out the last seconds of a `window`-second epoch window, so that a
/// burst of calls lands in one window.
async fn away_from_a_window_end(window: u64) {
    let left = window - unix_secs() % window;
    if left <= 3 {
        tokio::time::sleep(std::time::Duration::from_secs(left + 1)).await;
    }
}

#[tokio::test]
async fn unit_multiplier_makes_a_window_of_n_units_aligned_to_the_epoch() {
    let rls = Rls::start(UNIT_MULTIPLIER).await;
    away_from_a_window_end(300).await;
    let mut codes = Vec::new();
    let mut last = None;
    for _ in 0..21 {
        let r = rls.one("test-domain", &[("key1", "anything")], 0).await;
        codes.push(r.overall_code);
        last = Some(r);
    }
    assert_eq!(codes, [[OK; 20].as_slice(), &[OVER]].concat());
    let status = &last.unwrap().statuses[0];
    // Reported as the reference reports it: the unit and its count.
    let limit = status.current_limit.clone().unwrap();
    assert_eq!((limit.requests_per_unit, limit.unit), (20, MINUTE));
    // The denied request may pass when the 5-minute window that began at a
    // multiple of 300 s since the epoch ends, as the reference computes it.
    let reset = status.duration_until_reset.unwrap().seconds as u64;
    let end = (unix_secs() + reset) % 300;
    assert!(
        end <= 1 || end == 299,
        "reset {reset}s ends at {end} past a 5-minute mark"
    );

    // Without a multiplier, one unit: 25 a minute.
    away_from_a_window_end(60).await;
    let codes = rls.codes("test-domain", &[("key2", "x")], 26).await;
    assert_eq!(codes, [[OK; 25].as_slice(), &[OVER]].concat());
}

#[test]
fn a_zero_unit_multiplier_is_refused_at_its_line() {
    // The reference's zero_unit_multiplier.yaml.
    let yaml = "domain: test-domain\ndescriptors:\n  # 0 unit_multiplier\n  - key: key1\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n      unit_multiplier: 0\n";
    let e = RlsConfig::parse(yaml, "zero_unit_multiplier.yaml").unwrap_err();
    assert_eq!(
        e,
        "zero_unit_multiplier.yaml:8: invalid unit multiplier of 0"
    );
}

#[test]
fn unit_multiplier_goes_with_a_unit_not_with_a_window() {
    let yaml = "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {window: 5m, requests_per_window: 3, unit_multiplier: 2}\n";
    let e = RlsConfig::parse(yaml, "w.yaml").unwrap_err();
    assert!(
        e.starts_with("w.yaml:4: unit_multiplier goes with unit"),
        "{e}"
    );
}

/// The reference's `soft.yaml`, in hours so that a burst never straddles
/// a window.
const SOFT: &str = "
domain: soft_test
descriptors:
  - key: subject
    rate_limit:
      unit: hour
      requests_per_unit: 20
      soft_requests_per_unit: 14
  - key: plain
    rate_limit:
      unit: hour
      requests_per_unit: 30
";

fn soft_breached(r: &RateLimitResponse) -> bool {
    r.request_headers_to_add
        .iter()
        .any(|h| h.key == "x-ratelimit-soft-breached" && h.value == "1")
}

#[tokio::test]
async fn past_soft_requests_per_unit_an_admitted_request_is_marked_for_the_upstream_only() {
    let rls = Rls::start(SOFT).await;
    let mut marked = Vec::new();
    for _ in 0..21 {
        let r = rls.one("soft_test", &[("subject", "a")], 0).await;
        // Never told to the client.
        assert!(r
            .response_headers_to_add
            .iter()
            .all(|h| h.key != "x-ratelimit-soft-breached"));
        marked.push((r.overall_code, soft_breached(&r)));
    }
    // 14 used is at the threshold, not past it; the 20th (the last one
    // admitted) is still marked; a denied one is not.
    let expected: Vec<(i32, bool)> = (1..=21)
        .map(|n| match n {
            1..=14 => (OK, false),
            15..=20 => (OK, true),
            _ => (OVER, false),
        })
        .collect();
    assert_eq!(marked, expected);
    // A limit without a threshold never marks anything.
    for _ in 0..29 {
        let r = rls.one("soft_test", &[("plain", "b")], 0).await;
        assert!(!soft_breached(&r));
    }
}

#[test]
fn soft_requests_per_unit_at_or_above_the_limit_is_refused() {
    // The reference's bad.yaml: equal to the limit.
    let yaml = "domain: soft_bad\ndescriptors:\n  - key: subject\n    rate_limit:\n      unit: minute\n      requests_per_unit: 20\n      soft_requests_per_unit: 20\n";
    let e = RlsConfig::parse(yaml, "bad.yaml").unwrap_err();
    assert!(
        e.starts_with("bad.yaml:7: soft_requests_per_unit must be below requests_per_unit"),
        "{e}"
    );
    let above = yaml.replace("soft_requests_per_unit: 20", "soft_requests_per_unit: 21");
    assert!(RlsConfig::parse(&above, "bad.yaml").is_err());
    // 0 is no threshold, as in the reference.
    let off = yaml.replace("soft_requests_per_unit: 20", "soft_requests_per_unit: 0");
    let config = RlsConfig::parse(&off, "off.yaml").unwrap();
    let matched = config.lookup("soft_bad", &[("subject", "a")]).unwrap();
    assert_eq!(matched.limit.soft_requests_per_unit, 0);
}

/// The reference's `basic_config.yaml`, as much of it as the descriptor key
/// cases reach.
const BASIC: &str = "
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit: {unit: second, requests_per_unit: 5}
";

fn with_day_limit(entries: &[(&str, &str)]) -> RateLimitDescriptor {
    RateLimitDescriptor {
        limit: Some(RateLimitOverride {
            requests_per_unit: 10,
            unit: DAY,
        }),
        ..descriptor(entries)
    }
}

/// Starts a server of `files` (name, text) with the descriptor key file
/// `keys` and an admin port.
async fn start_with_keys(files: &[(&str, &str)], keys: &str) -> Rls {
    let keys_dir = tempfile::tempdir().unwrap();
    let keys_file = keys_dir.path().join("descriptor_keys.yaml");
    std::fs::write(&keys_file, keys).unwrap();
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    let rls = Rls::start_with(&files[0].1, |c| {
        for (name, text) in &files[1..] {
            std::fs::write(c.config.join(name), text).unwrap();
        }
        c.admin = Some("127.0.0.1:0".parse().unwrap());
        c.options = RlsOptions::default().descriptor_key_config(Some(keys_file.clone()));
    })
    .await;
    // The key file is read on every load: kept while the server lives.
    std::mem::forget(keys_dir);
    rls
}

async fn stat_names(rls: &Rls, domain: &str, entries: &[(&str, &str)]) -> String {
    let r = rls
        .call(request(domain, vec![with_day_limit(entries)], 0))
        .await
        .unwrap();
    assert_eq!(r.overall_code, OK);
    rls.metrics().await
}

fn counted(text: &str, name: &str) -> bool {
    metric(
        text,
        &format!("limits_rls_total_hits_total{{descriptor=\"{name}\"}}"),
    ) == Some(1.0)
}

#[tokio::test]
async fn descriptor_key_config_names_an_override_with_the_values_it_lists() {
    // TestDescriptorKeyConfigSelectiveValues.
    let keys = "default:\n  include_entry_value_for_keys: []\ndomains:\n  test-domain:\n    include_entry_value_for_keys:\n      - subkey1\n";
    let rls = start_with_keys(&[("basic_config.yaml", BASIC)], keys).await;
    let text = stat_names(
        &rls,
        "test-domain",
        &[("key1", "value1"), ("subkey1", "something")],
    )
    .await;
    assert!(
        counted(&text, "test-domain.key1.subkey1_something"),
        "{text}"
    );

    // TestDescriptorKeyConfigMultipleEntries: an entry the file does not
    // list keeps its key alone, in place.
    let text = stat_names(
        &rls,
        "test-domain",
        &[
            ("subkey1", "value1"),
            ("subkey4", "value4"),
            ("subkey2", "value2"),
        ],
    )
    .await;
    assert!(
        counted(&text, "test-domain.subkey1_value1.subkey4.subkey2"),
        "{text}"
    );
}

#[tokio::test]
async fn descriptor_key_config_applies_per_domain_over_several_files() {
    // TestDescriptorKeyConfigMultipleDomains, with the reference's
    // multiple_default.yaml and multiple_1..3.yaml: domains without
    // descriptors, one file each.
    let keys = "default:\n  include_entry_value_for_keys: [default_key]\ndomains:\n  test-domain-1:\n    include_entry_value_for_keys:\n      - subkey1\n  test-domain-2:\n    include_entry_value_for_keys:\n      - subkey2\n  test-domain-3:\n    include_entry_value_for_keys:\n      - subkey3\n";
    let files = [
        ("multiple_default.yaml", "domain: default\ndescriptors:\n"),
        ("multiple_1.yaml", "domain: test-domain-1\ndescriptors:\n"),
        ("multiple_2.yaml", "domain: test-domain-2\ndescriptors:\n"),
        ("multiple_3.yaml", "domain: test-domain-3\ndescriptors:\n"),
    ];
    let rls = start_with_keys(&files, keys).await;
    let entries = [
        ("default_key", "default_value"),
        ("subkey1", "value1"),
        ("subkey2", "value2"),
        ("subkey3", "value3"),
    ];
    for (domain, name) in [
        (
            "default",
            "default.default_key_default_value.subkey1.subkey2.subkey3",
        ),
        (
            "test-domain-1",
            "test-domain-1.default_key.subkey1_value1.subkey2.subkey3",
        ),
        (
            "test-domain-2",
            "test-domain-2.default_key.subkey1.subkey2_value2.subkey3",
        ),
        (
            "test-domain-3",
            "test-domain-3.default_key.subkey1.subkey2.subkey3_value3",
        ),
    ] {
        let text = stat_names(&rls, domain, &entries).await;
        assert!(counted(&text, name), "{domain}: {text}");
    }
}
