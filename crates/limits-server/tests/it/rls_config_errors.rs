//! Every config error of the reference service's `config_impl.go`, and ours,
//! reported as "FILE:LINE: what is wrong" at the line of the YAML node.

use limits_server::rls::config::RlsConfig;
use std::path::Path;

/// The error of `yaml` read as `t.yaml`; asserts its line and wording.
fn check(yaml: &str, line: usize, words: &str) {
    let err = match RlsConfig::parse(yaml, "t.yaml") {
        Ok(_) => panic!("accepted:\n{yaml}"),
        Err(e) => e,
    };
    let at = format!("t.yaml:{line}: ");
    assert!(err.starts_with(&at), "{err:?} should start with {at:?}");
    assert!(err.contains(words), "{err:?} should say {words:?}");
}

const LIMIT: &str = "    rate_limit: {unit: second, requests_per_unit: 1}\n";

#[test]
fn duplicate_descriptors_are_refused_where_the_second_one_is() {
    let yaml = format!(
        "domain: d\ndescriptors:\n  - key: a\n    value: b\n{LIMIT}  - key: a\n    value: b\n"
    );
    check(
        &yaml,
        6,
        "duplicate descriptor composite key 'd.a_b' (first at line 3)",
    );
    // Nested, and key-only twice.
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: x\n      - key: y\n      - key: x\n";
    check(yaml, 7, "duplicate descriptor composite key 'd.a.x'");
    // The reference's composite key is key_value: `a_b` alone and `a` = `b`
    // are the same key to it, so we refuse them too.
    let yaml = "domain: d\ndescriptors:\n  - key: a_b\n  - key: a\n    value: b\n";
    check(yaml, 4, "duplicate descriptor composite key 'd.a_b'");
    // The same key with another value, or at another level, is fine.
    let ok = "domain: d\ndescriptors:\n  - key: a\n    value: b\n    descriptors:\n      - key: a\n        value: b\n  - key: a\n    value: c\n";
    RlsConfig::parse(ok, "t.yaml").unwrap();
}

#[test]
fn units_must_be_known() {
    let rl = |body: &str| format!("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n{body}");
    check(
        &rl("      unit: fortnight\n      requests_per_unit: 1\n"),
        5,
        "invalid rate limit unit 'fortnight'",
    );
    check(
        &rl("      unit: unknown\n      requests_per_unit: 1\n"),
        5,
        "invalid rate limit unit 'unknown'",
    );
    // No unit at all: the reference says the same, about ''.
    check(
        &rl("      requests_per_unit: 1\n"),
        4,
        "invalid rate limit unit ''",
    );
    check(&rl("      name: x\n"), 4, "invalid rate limit unit ''");
    check(
        &rl("      unit: [second]\n      requests_per_unit: 1\n"),
        5,
        "unit must be text",
    );
}

#[test]
fn unlimited_takes_no_unit() {
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: second\n";
    check(yaml, 6, "should not specify rate limit unit when unlimited");
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: maybe\n";
    check(yaml, 5, "unlimited must be true or false, not 'maybe'");
    // As the reference: a requests_per_unit beside unlimited is accepted.
    let ok = "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: yes\n      requests_per_unit: 3\n";
    let c = RlsConfig::parse(ok, "t.yaml").unwrap();
    assert!(c.lookup("d", &[("a", "1")]).unwrap().limit.is_unlimited());
}

#[test]
fn share_threshold_needs_a_wildcard_value() {
    let yaml = format!(
        "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n{LIMIT}"
    );
    check(
        &yaml,
        5,
        "share_threshold needs a wildcard value (one with a '*')",
    );
    // A '*' anywhere makes a wildcard (see rls_config_wildcards).
    for value in ["a*b", "*a", "a**", "a*", "*"] {
        let yaml = format!(
            "domain: d\ndescriptors:\n  - key: a\n    value: \"{value}\"\n    share_threshold: true\n{LIMIT}"
        );
        RlsConfig::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{value}: {e}"));
    }
}

#[test]
fn the_domain_is_required() {
    check(
        "descriptors: []\n",
        1,
        "config file cannot have empty domain",
    );
    check("domain: \"\"\n", 1, "config file cannot have empty domain");
    check("", 1, "config file cannot have empty domain");
    check(
        "# only a comment\n",
        1,
        "config file cannot have empty domain",
    );
    check("domain: [a]\n", 1, "domain must be text, not a list");
    check("- domain: d\n", 1, "the file must be a mapping, not a list");
}

#[test]
fn every_descriptor_needs_a_key() {
    check(
        "domain: d\ndescriptors:\n  - value: v\n",
        3,
        "descriptor has empty key",
    );
    check(
        "domain: d\ndescriptors:\n  - key: \"\"\n",
        3,
        "descriptor has empty key",
    );
    check(
        "domain: d\ndescriptors:\n  - key: a\n  - just text\n",
        4,
        "a descriptor must be a mapping, not a scalar",
    );
    check(
        "domain: d\ndescriptors: {key: a}\n",
        2,
        "descriptors must be a list, not a mapping",
    );
}

#[test]
fn unknown_keys_are_errors_at_their_line() {
    check(
        "domain: d\nfoo: 1\n",
        2,
        "config error, unknown key 'foo' in the file",
    );
    check(
        "domain: d\ndescriptors:\n  - key: a\n    valu: b\n",
        4,
        "unknown key 'valu' in a descriptor",
    );
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      shadow_mode: true\n";
    check(yaml, 7, "unknown key 'shadow_mode' in rate_limit");
    // A key that belongs to another level is no less a mistake here.
    check(
        "domain: d\ndescriptors:\n  - key: a\n    unit: second\n",
        4,
        "unknown key 'unit' in a descriptor",
    );
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      replaces:\n        - nam: x\n";
    check(yaml, 7, "unknown key 'nam' in a replaces entry");
    check(
        "domain: d\n? [a]\n: 1\n",
        2,
        "a key of the file is a list, not a string",
    );
    check(
        "domain: d\ndomain: e\n",
        2,
        "key 'domain' given twice in the file (first at line 1)",
    );
}

#[test]
fn replaces_entries_need_a_name_other_than_their_own() {
    let rl = |body: &str| {
        format!("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n{body}")
    };
    check(
        &rl("      replaces:\n        - name: \"\"\n"),
        8,
        "should not have an empty replaces entry",
    );
    check(
        &rl("      replaces:\n        - {}\n"),
        8,
        "should not have an empty replaces entry",
    );
    check(
        &rl("      name: me\n      replaces:\n        - name: other\n        - name: me\n"),
        10,
        "replaces should not contain name of same descriptor",
    );
    check(
        &rl("      replaces: me\n"),
        7,
        "replaces must be a list, not a scalar",
    );
}

#[test]
fn numbers_and_flags_are_checked() {
    let rl = |n: &str| {
        format!("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: {n}\n")
    };
    check(
        &rl("-1"),
        6,
        "requests_per_unit must be a whole number from 0 to 4294967295, not '-1'",
    );
    check(&rl("ten"), 6, "not 'ten'");
    check(&rl("1.5"), 6, "not '1.5'");
    check(&rl("\"10\""), 6, "not '10'");
    check(
        &rl("4294967296"),
        6,
        "requests_per_unit is too large: 4294967296",
    );
    check(&rl("99999999999999999999999"), 6, "too large");
    RlsConfig::parse(&rl("4294967295"), "t.yaml").unwrap();
    let yaml = format!("domain: d\ndescriptors:\n  - key: a\n    shadow_mode: 1\n{LIMIT}");
    check(&yaml, 4, "shadow_mode must be true or false, not '1'");
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    detailed_metric: \"true\"\n";
    check(yaml, 4, "detailed_metric must be true or false");
}

#[test]
fn yaml_errors_name_their_line() {
    check(
        "domain: d\ndescriptors:\n  - key: a\n   bad indent: x\n",
        4,
        "invalid YAML",
    );
    check("domain: d\ndescriptors: [\n", 3, "invalid YAML");
    check("domain: d\n---\ndomain: e\n", 2, "a second YAML document");
    check("domain: *nothing\n", 1, "invalid YAML");
    // Flow nesting: the parser's own limit; block nesting: ours.
    let deep = format!("domain: d\ndescriptors: {}", "[".repeat(100_000));
    check(&deep, 2, "invalid YAML: recursion limit exceeded");
    let deep = format!("domain: d\ndescriptors:\n  {}x\n", "- ".repeat(100_000));
    check(&deep, 3, "nested more than 200 levels deep");
}

#[test]
fn aliases_share_a_node_without_multiplying_the_work() {
    let ok = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: &ten {unit: second, requests_per_unit: 10}\n  - key: b\n    rate_limit: *ten\n";
    let c = RlsConfig::parse(ok, "t.yaml").unwrap();
    assert_eq!(
        c.lookup("d", &[("b", "x")])
            .unwrap()
            .limit
            .reported
            .requests_per_unit,
        10
    );
    // Each level doubles the tree: 2^30 descriptors from a few lines.
    let mut yaml = String::from("domain: d\ndescriptors:\n  - &a0 {key: a0}\n  - &b0 {key: b0}\n");
    for i in 1..=30 {
        let j = i - 1;
        yaml.push_str(&format!(
            "  - &a{i} {{key: a{i}, descriptors: [*a{j}, *b{j}]}}\n"
        ));
        yaml.push_str(&format!(
            "  - &b{i} {{key: b{i}, descriptors: [*a{j}, *b{j}]}}\n"
        ));
    }
    let err = RlsConfig::parse(&yaml, "t.yaml").unwrap_err();
    assert!(err.contains("more than 100000 descriptors"), "{err}");
}

#[test]
fn two_files_with_one_domain_name_both() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rls/dup_domain");
    let err = RlsConfig::load(&dir).unwrap_err();
    let a = dir.join("a.yaml").display().to_string();
    let b = dir.join("b.yaml").display().to_string();
    assert_eq!(
        err,
        format!("{b}:3: duplicate domain 'shared' in config file (also in {a}:1)")
    );
}

#[test]
fn errors_in_a_directory_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), "domain: good\n").unwrap();
    std::fs::write(
        dir.path().join("z.yml"),
        "domain: z\ndescriptors:\n  - key: a\n    rate_limit: {unit: eon}\n",
    )
    .unwrap();
    let err = RlsConfig::load(dir.path()).unwrap_err();
    let z = dir.path().join("z.yml").display().to_string();
    assert!(
        err.starts_with(&format!("{z}:4: invalid rate limit unit 'eon'")),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("notes.txt"), "domain: x\n").unwrap();
    let err = RlsConfig::load(empty.path()).unwrap_err();
    assert!(err.contains("no *.yaml or *.yml file"), "{err}");
    let err = RlsConfig::load(&dir.path().join("missing")).unwrap_err();
    assert!(err.contains("missing"), "{err}");
    // A single file is a config too.
    let one = RlsConfig::load(&dir.path().join("good.yaml")).unwrap();
    assert_eq!(one.domains().collect::<Vec<_>>(), ["good"]);
}
