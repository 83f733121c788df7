//! Wildcards anywhere in a descriptor value, several per value, and
//! `share_threshold`, case by case as the reference's `wildcard.yaml` and
//! `share_threshold.yaml` fixtures exercise them (configs of the same
//! shape, written here).

use limits_server::rls::config::RlsConfig;

const WILDCARD: &str = "
domain: test-domain
descriptors:
  - key: wild
    value: foo*
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: noWild
    value: foo
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: noVal
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: midWild
    value: bar*b
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: multiWild
    value: a*b*c
    rate_limit: {unit: minute, requests_per_unit: 20}
";

fn id(c: &RlsConfig, entries: &[(&str, &str)]) -> Option<String> {
    c.lookup("test-domain", entries).map(|m| m.limit.id.clone())
}

/// The store key of `entries` (which counter they take from).
fn key(c: &RlsConfig, entries: &[(&str, &str)]) -> String {
    c.lookup("test-domain", entries)
        .unwrap_or_else(|| panic!("no limit for {entries:?}"))
        .key
}

fn limit(c: &RlsConfig, entries: &[(&str, &str)]) -> u32 {
    c.lookup("test-domain", entries)
        .unwrap_or_else(|| panic!("no limit for {entries:?}"))
        .limit
        .reported
        .requests_per_unit
}

#[test]
fn wildcards_match_anywhere_in_the_value_as_the_reference_wildcard_fixture() {
    let c = RlsConfig::parse(WILDCARD, "wildcard.yaml").unwrap();
    // A key-only node and a wildcard both take any matching value.
    assert_eq!(id(&c, &[("noVal", "foo1")]), id(&c, &[("noVal", "foo2")]));
    assert!(id(&c, &[("noVal", "foo1")]).is_some());
    assert_eq!(
        id(&c, &[("wild", "foo1")]).as_deref(),
        Some("test-domain.wild_foo*")
    );
    assert_eq!(id(&c, &[("wild", "foo2")]), id(&c, &[("wild", "foo1")]));
    // Each value still counts apart without share_threshold.
    assert_ne!(key(&c, &[("wild", "foo1")]), key(&c, &[("wild", "foo2")]));
    assert_eq!(id(&c, &[("wild", "bar")]), None);
    // An exact value is no prefix.
    assert_eq!(id(&c, &[("noWild", "foo1")]), None);
    // In the middle (PR #1085): matched, and only where the pattern allows.
    assert_eq!(
        id(&c, &[("midWild", "barab")]).as_deref(),
        Some("test-domain.midWild_bar*b")
    );
    assert!(id(&c, &[("midWild", "barb")]).is_some());
    assert_eq!(id(&c, &[("midWild", "bara")]), None);
    // Several in one value.
    assert!(id(&c, &[("multiWild", "a-b-c")]).is_some());
    assert!(id(&c, &[("multiWild", "abc")]).is_some());
    assert_eq!(id(&c, &[("multiWild", "a-c-b")]), None);
}

const SHARED: &str = "
domain: test-domain
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: nested
    value: parent
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 200}
  - key: files
    value: top/*
    share_threshold: true
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 300}
  - key: route
    value: api/*
    share_threshold: true
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit: {unit: minute, requests_per_unit: 60}
  - key: path
    value: path/*
    share_threshold: true
    descriptors:
      - key: file
        value: file/*
        share_threshold: false
        descriptors:
          - key: type
            rate_limit: {unit: minute, requests_per_unit: 120}
  - key: user
    value: user/*
    share_threshold: true
    descriptors:
      - key: resource
        value: res/*
        share_threshold: true
        descriptors:
          - key: action
            rate_limit: {unit: minute, requests_per_unit: 150}
  - key: file
    value: test1
    rate_limit: {unit: minute, requests_per_unit: 50}
  - key: file
    value: test*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: midpath
    value: /api*v1
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: multiroute
    value: svc*ep*rpc
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 50}
  - key: tenant
    value: t*prod
    share_threshold: true
    descriptors:
      - key: resource
        value: res*v2
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 60}
";

#[test]
fn share_threshold_gives_every_matched_value_one_counter_as_the_reference_fixture() {
    let c = RlsConfig::parse(SHARED, "share_threshold.yaml").unwrap();
    let same = |a: &[(&str, &str)], b: &[(&str, &str)], limit_of_both: u32| {
        assert_eq!(key(&c, a), key(&c, b), "{a:?} and {b:?} share a counter");
        assert_eq!((limit(&c, a), limit(&c, b)), (limit_of_both, limit_of_both));
    };
    same(
        &[("files", "files/a.pdf")],
        &[("files", "files/b.csv")],
        100,
    );
    assert_eq!(key(&c, &[("files", "files/a.pdf")]), "files=files/*");
    same(
        &[("nested", "parent"), ("files", "nested/a")],
        &[("nested", "parent"), ("files", "nested/b")],
        200,
    );
    // One key name on two levels, both shared.
    same(
        &[("files", "top/x"), ("files", "nested/a")],
        &[("files", "top/y"), ("files", "nested/b")],
        300,
    );
    // With value_to_metric: still one counter per method.
    same(
        &[("route", "api/v1"), ("method", "GET")],
        &[("route", "api/v2"), ("method", "GET")],
        60,
    );
    assert_ne!(
        key(&c, &[("route", "api/v1"), ("method", "GET")]),
        key(&c, &[("route", "api/v1"), ("method", "POST")])
    );
    // Mixed: the shared level is one, the other counts per value.
    same(
        &[("path", "path/a"), ("file", "file/1"), ("type", "pdf")],
        &[("path", "path/b"), ("file", "file/1"), ("type", "pdf")],
        120,
    );
    assert_ne!(
        key(
            &c,
            &[("path", "path/a"), ("file", "file/1"), ("type", "pdf")]
        ),
        key(
            &c,
            &[("path", "path/a"), ("file", "file/2"), ("type", "pdf")]
        )
    );
    same(
        &[
            ("user", "user/1"),
            ("resource", "res/a"),
            ("action", "read"),
        ],
        &[
            ("user", "user/2"),
            ("resource", "res/b"),
            ("action", "read"),
        ],
        150,
    );
    // An exact value wins over a shared wildcard, and counts alone.
    assert_eq!(limit(&c, &[("file", "test1")]), 50);
    same(&[("file", "test2")], &[("file", "testing")], 100);
    assert_ne!(key(&c, &[("file", "test1")]), key(&c, &[("file", "test2")]));
    // Wildcards in the middle and several per value, shared.
    same(
        &[("midpath", "/api/users/v1")],
        &[("midpath", "/api/v1")],
        100,
    );
    assert!(c.lookup("test-domain", &[("midpath", "/api/v2")]).is_none());
    same(
        &[("multiroute", "svc-a.ep-1.rpc")],
        &[("multiroute", "svc-b.ep-9.rpc")],
        50,
    );
    assert!(c
        .lookup("test-domain", &[("multiroute", "svc-a.rpc")])
        .is_none());
    same(
        &[("tenant", "t1-prod"), ("resource", "res-a-v2")],
        &[("tenant", "t2-prod"), ("resource", "res-b-v2")],
        60,
    );
    assert!(c
        .lookup(
            "test-domain",
            &[("tenant", "t1-dev"), ("resource", "res-a-v2")]
        )
        .is_none());
}
