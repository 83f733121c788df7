//! The reference service's README examples, as one config directory: which
//! limit applies to which descriptor, the depth rule, store keys, and what the
//! directory loader takes and skips.

use limits::Algorithm;
use limits_server::rls::config::{RlsConfig, Unit};
use std::path::Path;

fn config() -> RlsConfig {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rls/reference");
    RlsConfig::load(&dir).unwrap_or_else(|e| panic!("{e}"))
}

/// The id of the limit for `entries`, or None.
fn id(c: &RlsConfig, domain: &str, entries: &[(&str, &str)]) -> Option<String> {
    c.lookup(domain, entries).map(|m| m.limit.id.clone())
}

/// (requests_per_unit, unit) reported for `entries`.
fn reported(c: &RlsConfig, domain: &str, entries: &[(&str, &str)]) -> (u32, Unit) {
    let m = c.lookup(domain, entries).expect("a limit");
    (m.limit.reported.requests_per_unit, m.limit.reported.unit)
}

#[test]
fn the_directory_loads_every_yaml_and_yml_file_below_it_and_skips_the_rest() {
    let c = config();
    let mut domains: Vec<&str> = c.domains().collect();
    domains.sort();
    // ..data/mongo_cps.yaml (a ConfigMap's hidden copy) would be a duplicate
    // domain; README.txt is no YAML; nested/example4.yaml is below.
    assert_eq!(
        domains,
        [
            "edge_proxy_per_ip",
            "example4",
            "example6",
            "example7",
            "example8",
            "example9",
            "internal",
            "messaging",
            "mongo_cps"
        ]
    );
    assert_eq!(c.limits().count(), 21);
    for limit in c.limits() {
        assert!(
            limit.id.starts_with(&format!("{}.", limit.domain)),
            "{}",
            limit.id
        );
        // An existing config decides with fixed windows, as before.
        if let Some(rule) = &limit.rule {
            assert_eq!(rule.algorithm(), Algorithm::FixedWindow, "{}", limit.id);
        }
    }
}

#[test]
fn exact_values_match_and_other_values_do_not() {
    let c = config();
    assert_eq!(
        id(&c, "mongo_cps", &[("database", "users")]).as_deref(),
        Some("mongo_cps.database_users")
    );
    assert_eq!(
        reported(&c, "mongo_cps", &[("database", "default")]),
        (500, Unit::Second)
    );
    assert_eq!(id(&c, "mongo_cps", &[("database", "other")]), None);
    assert_eq!(
        id(&c, "mongo_cps", &[("Database", "users")]),
        None,
        "case matters"
    );
    assert_eq!(id(&c, "no_such_domain", &[("database", "users")]), None);
    assert_eq!(id(&c, "mongo_cps", &[]), None);
}

#[test]
fn a_key_only_node_matches_any_value_and_counts_each_value_apart() {
    let c = config();
    let a = c.lookup(
        "messaging",
        &[("message_type", "marketing"), ("to_number", "2061111111")],
    );
    let b = c.lookup(
        "messaging",
        &[("message_type", "marketing"), ("to_number", "2062222222")],
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.limit.id, "messaging.message_type_marketing.to_number");
    assert!(std::ptr::eq(a.limit, b.limit));
    assert_eq!(a.key, "message_type=marketing|to_number=2061111111");
    assert_ne!(a.key, b.key);
    assert_eq!(a.limit.reported, b.limit.reported);
    assert_eq!(
        reported(&c, "messaging", &[("to_number", "1")]),
        (100, Unit::Day)
    );
    // message_type has no key-only node: another type matches nothing.
    assert_eq!(
        id(
            &c,
            "messaging",
            &[("message_type", "transactional"), ("to_number", "1")]
        ),
        None
    );
}

#[test]
fn key_and_value_come_before_the_key_alone() {
    let c = config();
    let blocked = c
        .lookup("edge_proxy_per_ip", &[("remote_address", "50.0.0.5")])
        .unwrap();
    assert_eq!(
        blocked.limit.id,
        "edge_proxy_per_ip.remote_address_50.0.0.5"
    );
    assert!(blocked.limit.blocked && blocked.limit.rule.is_none());
    assert!(!blocked.limit.is_unlimited());
    assert_eq!(
        blocked.limit.reported,
        limits_server::rls::config::Reported {
            requests_per_unit: 0,
            unit: Unit::Second
        }
    );
    let other = c
        .lookup("edge_proxy_per_ip", &[("remote_address", "50.0.0.1")])
        .unwrap();
    assert_eq!(other.limit.id, "edge_proxy_per_ip.remote_address");
    assert!(!other.limit.blocked);
    let rule = other.limit.rule.as_ref().unwrap();
    assert_eq!(rule.rates().to_string(), "10/s");
}

#[test]
fn a_limit_applies_only_at_the_depth_of_the_last_entry() {
    let c = config();
    assert_eq!(
        id(&c, "example4", &[("key", "value")]).as_deref(),
        Some("example4.key_value")
    );
    // One entry more than the config's depth: no limit, not the parent's.
    assert_eq!(
        id(&c, "example4", &[("key", "value"), ("subkey", "subvalue")]),
        None
    );
    assert_eq!(
        id(
            &c,
            "example4",
            &[("other", "value"), ("subkey", "subvalue")]
        )
        .as_deref(),
        Some("example4.other_value.subkey")
    );
    // One entry fewer: the placeholder has no limit of its own.
    assert_eq!(id(&c, "example4", &[("other", "value")]), None);
    // Three entries where the config has two levels.
    assert_eq!(
        id(
            &c,
            "example4",
            &[("other", "value"), ("subkey", "x"), ("subkey", "x")]
        ),
        None
    );
    // Order matters: the first entry picks the top level.
    assert_eq!(
        id(
            &c,
            "example4",
            &[("subkey", "subvalue"), ("other", "value")]
        ),
        None
    );
}

#[test]
fn unlimited_is_a_limit_without_a_rule() {
    let c = config();
    let ldap = c.lookup("internal", &[("ldap", "anything")]).unwrap();
    assert!(ldap.limit.is_unlimited() && ldap.limit.rule.is_none());
    assert_eq!(ldap.limit.reported.unit, Unit::Unknown);
    assert_eq!(
        reported(&c, "internal", &[("azure", "x")]),
        (100, Unit::Minute)
    );
}

#[test]
fn shadow_mode_and_replaces_are_carried_per_limit() {
    let c = config();
    let a = c
        .lookup("example6", &[("service", "auth"), ("user", "user-a")])
        .unwrap();
    let b = c
        .lookup("example6", &[("service", "auth"), ("user", "user-b")])
        .unwrap();
    assert!(a.limit.shadow_mode && !b.limit.shadow_mode);
    assert_eq!(a.limit.id, "example6.service.user_user-a");
    assert_eq!(
        id(&c, "example6", &[("service", "auth"), ("user", "user-c")]),
        None
    );

    let first = c
        .lookup("example7", &[("key_1", "value_1"), ("user", "bkthomps")])
        .unwrap();
    let second = c
        .lookup("example7", &[("key_2", "value_2"), ("user", "bkthomps")])
        .unwrap();
    assert_eq!(first.limit.name.as_deref(), Some("specific_limit"));
    assert!(first.limit.replaces.is_empty());
    assert_eq!(second.limit.name, None);
    assert_eq!(second.limit.replaces, ["specific_limit"]);
    assert_eq!(second.limit.reported.requests_per_unit, 10);
}

#[test]
fn detailed_metric_names_the_value_the_config_does_not_list() {
    let c = config();
    let any = c
        .lookup("example8", &[("key1", "unspecified_value")])
        .unwrap();
    assert_eq!(any.limit.id, "example8.key1");
    assert_eq!(any.metric_name(), "example8.key1_unspecified_value");
    let listed = c.lookup("example8", &[("key1", "value1")]).unwrap();
    assert_eq!(listed.metric_name(), "example8.key1_value1");
    assert_eq!(listed.metric_name(), listed.limit.id);
    let plain = c.lookup("mongo_cps", &[("database", "users")]).unwrap();
    assert_eq!(plain.metric_name(), plain.limit.id);
}

#[test]
fn wildcards_match_prefixes_in_file_order_and_share_threshold_shares_a_counter() {
    let c = config();
    let v1 = c.lookup("example9", &[("key1", "value_1")]).unwrap();
    let v2 = c.lookup("example9", &[("key1", "value_2")]).unwrap();
    assert_eq!(v1.limit.id, "example9.key1_value*");
    assert!(std::ptr::eq(v1.limit, v2.limit));
    assert_ne!(
        v1.key, v2.key,
        "without share_threshold each value counts apart"
    );
    // `value*` comes first in the file, so it wins over `val*` for "value…".
    assert_eq!(
        id(&c, "example9", &[("key1", "valid")]).as_deref(),
        Some("example9.key1_val*")
    );
    assert_eq!(
        id(&c, "example9", &[("key1", "value")]).as_deref(),
        Some("example9.key1_value*")
    );
    assert_eq!(id(&c, "example9", &[("key1", "va")]), None);

    let a = c.lookup("example9", &[("files", "/files/a.pdf")]).unwrap();
    let b = c.lookup("example9", &[("files", "/files/b.csv")]).unwrap();
    assert_eq!(
        a.key, b.key,
        "share_threshold: one counter for every matched value"
    );
    assert_eq!(a.key, "files=/files/*");
    assert_eq!(a.limit.reported, b.limit.reported);
    assert_eq!(
        reported(&c, "example9", &[("files", "/files/x")]),
        (7, Unit::Week)
    );
    assert_eq!(
        reported(&c, "example9", &[("unit", "month")]),
        (30, Unit::Month)
    );
    assert_eq!(
        reported(&c, "example9", &[("unit", "year")]),
        (365, Unit::Year)
    );
}

#[test]
fn units_have_the_reference_lengths() {
    let c = config();
    let window = |domain: &str, entries: &[(&str, &str)]| {
        let m = c.lookup(domain, entries).unwrap();
        m.limit.rule.as_ref().unwrap().rates().as_slice()[0]
            .window()
            .as_secs()
    };
    assert_eq!(window("mongo_cps", &[("database", "users")]), 1);
    assert_eq!(window("internal", &[("azure", "x")]), 60);
    assert_eq!(window("example9", &[("key1", "val")]), 3600);
    assert_eq!(window("messaging", &[("to_number", "1")]), 86_400);
    assert_eq!(window("example9", &[("files", "/files/")]), 7 * 86_400);
    assert_eq!(window("example9", &[("unit", "month")]), 30 * 86_400);
    assert_eq!(window("example9", &[("unit", "year")]), 365 * 86_400);
    for unit in Unit::ALL {
        assert_eq!(Unit::from_name(&unit.name().to_uppercase()), Some(unit));
    }
    assert_eq!(Unit::from_name("unknown"), None);
    assert_eq!(Unit::Week as i32, 7, "the protocol's numbers");
}

#[test]
fn store_keys_escape_their_separators() {
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit: {unit: second, requests_per_unit: 1}\n";
    let c = RlsConfig::parse(yaml, "d.yaml").unwrap();
    let key = |x: &str, y: &str| c.lookup("d", &[("a", x), ("b", y)]).unwrap().key;
    assert_eq!(key("1|b=2", "3"), r"a=1\|b\=2|b=3");
    assert_ne!(key("1|b=2", "3"), key("1", "2|b=3"));
    assert_ne!(key(r"x\", "y"), key("x", r"\y"));
}
