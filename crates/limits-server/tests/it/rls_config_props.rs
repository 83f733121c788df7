//! Properties: no text panics the config parser, no descriptor panics the
//! lookup, and two different descriptors never share a store key under one
//! limit (unless `share_threshold` says they should).

use limits_server::rls::config::RlsConfig;
use proptest::prelude::*;
use std::collections::HashMap;

/// Key-only nodes at every level and wildcards, so that most descriptors
/// match something; no share_threshold.
const CONFIG: &str = r#"
domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 1}
    descriptors:
      - key: b
        rate_limit: {unit: minute, requests_per_unit: 2}
        descriptors:
          - key: a
            rate_limit: {unit: hour, requests_per_unit: 3}
      - key: b
        value: "x*"
        rate_limit: {window: 5m, requests_per_window: 4}
        descriptors:
          - key: "="
            rate_limit: {unit: day, requests_per_unit: 5}
  - key: "a|b"
    rate_limit: {unit: week, requests_per_unit: 6}
  - key: a
    value: "x"
    descriptors:
      - key: b
        rate_limit: {unit: second, requests_per_unit: 7}
"#;

/// Text made of the characters that make keys and values interesting.
fn word() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r"[ab=|\\x*]{0,4}").unwrap()
}

/// Mostly the config's keys, so that most descriptors match a limit.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["a", "b", "=", "a|b"]).prop_map(str::to_string),
        1 => word(),
    ]
}

fn descriptor() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((key(), word()), 0..4)
}

fn as_refs(d: &[(String, String)]) -> Vec<(&str, &str)> {
    d.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// YAML-shaped noise: the config's own characters, in any order.
fn yamlish() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r"(domain|descriptors|key|value|rate_limit|unit|second|requests_per_unit|window|5m|rates|unlimited|true|algorithm|replaces|name|&a|\*a|[-:{}\[\],'\x22 \n*|=#!?%@0-9]){0,60}").unwrap()
}

proptest! {
    #[test]
    fn no_text_panics_the_parser(text in any::<String>()) {
        let _ = RlsConfig::parse(&text, "p.yaml");
    }

    #[test]
    fn no_yaml_shaped_text_panics_the_parser(text in yamlish()) {
        if let Err(e) = RlsConfig::parse(&text, "p.yaml") {
            prop_assert!(e.starts_with("p.yaml:"), "{e}");
        }
    }

    #[test]
    fn no_edit_of_a_real_config_panics_the_parser(
        at in 0..CONFIG.len(),
        cut in 0..8usize,
        insert in yamlish(),
    ) {
        let mut text = CONFIG.as_bytes().to_vec();
        let end = (at + cut).min(text.len());
        text.splice(at..end, insert.bytes());
        let text = String::from_utf8_lossy(&text);
        if let Err(e) = RlsConfig::parse(&text, "p.yaml") {
            prop_assert!(e.starts_with("p.yaml:"), "{e}");
        }
    }

    #[test]
    fn no_descriptor_panics_the_lookup(d in descriptor(), domain in word()) {
        let c = RlsConfig::parse(CONFIG, "p.yaml").unwrap();
        let _ = c.lookup(&domain, &as_refs(&d));
        if let Some(m) = c.lookup("d", &as_refs(&d)) {
            prop_assert!(!d.is_empty());
            prop_assert!(m.limit.rule.is_some());
        }
    }

    #[test]
    fn a_store_key_reads_back_as_its_descriptor(d in descriptor()) {
        let c = RlsConfig::parse(CONFIG, "p.yaml").unwrap();
        if let Some(m) = c.lookup("d", &as_refs(&d)) {
            prop_assert_eq!(decode(&m.key), d);
        }
    }

    #[test]
    fn different_descriptors_never_share_a_key_under_one_limit(
        ds in prop::collection::vec(descriptor(), 1..40),
    ) {
        let c = RlsConfig::parse(CONFIG, "p.yaml").unwrap();
        let mut seen: HashMap<(String, String), Vec<(String, String)>> = HashMap::new();
        for d in ds {
            let Some(m) = c.lookup("d", &as_refs(&d)) else { continue };
            let slot = (m.limit.id.clone(), m.key.clone());
            if let Some(other) = seen.get(&slot) {
                prop_assert_eq!(other, &d, "one key {:?} for two descriptors", slot);
            }
            seen.insert(slot, d);
        }
    }
}

/// The entries a store key was made of: `k=v` joined by `|`, with `\`
/// escaping the next character. Decodable keys are unambiguous keys.
fn decode(key: &str) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    let (mut k, mut v, mut in_value, mut escaped) = (String::new(), String::new(), false, false);
    for c in key.chars() {
        let part = if in_value { &mut v } else { &mut k };
        match c {
            _ if escaped => {
                part.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            '=' if !in_value => in_value = true,
            '|' => {
                entries.push((std::mem::take(&mut k), std::mem::take(&mut v)));
                in_value = false;
            }
            _ => part.push(c),
        }
    }
    entries.push((k, v));
    entries
}

#[test]
fn keys_that_would_collide_without_escaping_do_not() {
    let c = RlsConfig::parse(CONFIG, "p.yaml").unwrap();
    let one = c.lookup("d", &[("a", "q|b=r"), ("b", "s")]).unwrap();
    let two = c.lookup("d", &[("a", "q"), ("b", "r|b=s")]).unwrap();
    assert_eq!(one.limit.id, two.limit.id);
    assert_ne!(one.key, two.key);
}

#[test]
fn the_property_config_matches_at_every_level() {
    let c = RlsConfig::parse(CONFIG, "p.yaml").unwrap();
    let id = |d: &[(&str, &str)]| c.lookup("d", d).map(|m| m.limit.id.clone());
    assert_eq!(id(&[("a", "")]).as_deref(), Some("d.a"));
    assert_eq!(id(&[("a", "q"), ("b", "q")]).as_deref(), Some("d.a.b"));
    assert_eq!(id(&[("a", "q"), ("b", "xy")]).as_deref(), Some("d.a.b_x*"));
    assert_eq!(
        id(&[("a", "q"), ("b", "q"), ("a", "")]).as_deref(),
        Some("d.a.b.a")
    );
    assert_eq!(
        id(&[("a", "q"), ("b", "x"), ("=", "|")]).as_deref(),
        Some("d.a.b_x*.=")
    );
    assert_eq!(id(&[("a|b", "")]).as_deref(), Some("d.a|b"));
    assert_eq!(id(&[("a", "x"), ("b", "")]).as_deref(), Some("d.a_x.b"));
    // (a, x) takes the exact node, which has no limit of its own.
    assert_eq!(id(&[("a", "x")]), None);
}
