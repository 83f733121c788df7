//! `tiers`, `tier_from`, `default_tier`, `tier_file`: one rule per tier,
//! named `NAME.TIER`, and every mistake as FILE:LINE (a tier file's own
//! path and line, never its values).

use crate::config::{load, parse};
use crate::store::StoreOptions;
use http::request::Parts;
use limits::Store;
use std::path::Path;

const TIERED: &str = r#"[[rule]]
name = "api"
path = "/api"
key = "header:x-api-key"
limiter = "token-bucket"
tiers = { free = "100/hour", pro = "10000/hour; 500/minute" }
tier_from = "header:x-plan"
default_tier = "free"
cost = 2
"#;

fn head(headers: &[(&str, &str)]) -> Parts {
    let mut request = http::Request::get("/api");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(()).unwrap().into_parts().0
}

fn problems(text: &str) -> String {
    match parse(text, "rules.toml", &StoreOptions::default()) {
        Ok(_) => panic!("no problem found in {text}"),
        Err(e) => e,
    }
}

#[test]
fn a_tiered_rule_is_one_rule_per_tier_named_after_it() {
    let rules = parse(TIERED, "rules.toml", &StoreOptions::default()).unwrap();
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["api.free", "api.pro"]);
    for rule in &rules {
        assert_eq!(rule.path_prefix, "/api");
        assert_eq!(rule.cost, 2);
        assert_eq!(rule.key.to_string(), "header:x-api-key");
        assert_eq!(
            rule.store.rule().algorithm(),
            limits::Algorithm::TokenBucket
        );
    }
    assert_eq!(rules[0].store.rule().rates().to_string(), "100/h");
    assert_eq!(rules[1].store.rule().rates().to_string(), "10000/h; 500/m");
    let (free, pro) = (
        rules[0].tier.as_ref().unwrap(),
        rules[1].tier.as_ref().unwrap(),
    );
    assert_eq!((free.name(), pro.name()), ("free", "pro"));
    assert!(std::sync::Arc::ptr_eq(free.tiers(), pro.tiers()));
    let tiers = free.tiers();
    assert!(tiers.needs_trusted_proxy());
    assert_eq!(tiers.choose(&head(&[("x-plan", "pro")]), true), "pro");
    assert_eq!(tiers.choose(&head(&[("x-plan", "gold")]), true), "free");
}

#[test]
fn a_tier_file_maps_values_to_tiers_relative_to_the_rules_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plans.txt"),
        "# API keys and their plans\nk-alice pro\nk-bob   free  # trial over\n\n",
    )
    .unwrap();
    let text = TIERED.replace(
        "tier_from = \"header:x-plan\"",
        "tier_from = \"header:x-api-key\"\ntier_file = \"plans.txt\"",
    );
    std::fs::write(dir.path().join("rules.toml"), text).unwrap();
    let rules = load(&dir.path().join("rules.toml"), &StoreOptions::default()).unwrap();
    let tiers = rules[0].tier.as_ref().unwrap().tiers();
    assert!(!tiers.needs_trusted_proxy());
    assert_eq!(
        tiers.choose(&head(&[("x-api-key", "k-alice")]), false),
        "pro"
    );
    assert_eq!(
        tiers.choose(&head(&[("x-api-key", "k-bob")]), false),
        "free"
    );
    assert_eq!(
        tiers.choose(&head(&[("x-api-key", "k-eve")]), false),
        "free"
    );
}

#[test]
fn a_bad_tier_file_names_its_own_lines_and_hides_its_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plans.txt"),
        "k-secret1 pro\nk-secret2 gold\nk-secret1 free\nk-secret3\n",
    )
    .unwrap();
    let text = TIERED.replace(
        "tier_from = \"header:x-plan\"",
        "tier_from = \"header:x-api-key\"\ntier_file = \"plans.txt\"",
    );
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, text).unwrap();
    let err = load(&rules, &StoreOptions::default()).err().unwrap();
    let plans = dir.path().join("plans.txt").display().to_string();
    let expected = [
        format!("{plans}:2: tier \"gold\" is not one of the rule's tiers (free, pro)"),
        format!("{plans}:3: this value is given a tier on line 1 already"),
        format!("{plans}:4: tier_file lines are VALUE TIER, two words"),
    ];
    assert_eq!(err.lines().collect::<Vec<_>>(), expected, "{err}");
    assert!(!err.contains("secret"), "{err}");
    // A file that cannot be read: a problem on the line naming it.
    std::fs::remove_file(dir.path().join("plans.txt")).unwrap();
    let err = load(&rules, &StoreOptions::default()).err().unwrap();
    assert!(
        err.starts_with(&format!("{}:8: tier_file ", rules.display())),
        "{err}"
    );
    assert!(err.contains("cannot read it"), "{err}");
}

#[test]
fn every_mistake_names_its_line() {
    let cases: &[(&str, &str)] = &[
        (
            "rates = \"1/s\"\ntier_from = \"header:x-plan\"\n",
            "rules.toml:8: tier_from goes with tiers = { NAME = \"RATES\", ... }: add the tiers, or leave tier_from out",
        ),
        (
            "tiers = { free = \"1/s\" }\ndefault_tier = \"free\"\n",
            "rules.toml:7: rule \"api\" has tiers but no tier_from: add tier_from = \"header:NAME\" (a header your auth proxy sets)",
        ),
        (
            "tiers = { free = \"1/s\" }\ntier_from = \"header:x-plan\"\n",
            "rules.toml:7: rule \"api\" has tiers but no default_tier: add default_tier = \"NAME\", the tier of a request whose tier is missing or unknown",
        ),
        (
            "tiers = { free = \"1/s\" }\ntier_from = \"header:x-plan\"\ndefault_tier = \"gold\"\n",
            "rules.toml:9: default_tier \"gold\" is not one of the tiers (free)",
        ),
        (
            "tiers = { free = \"1/s\" }\ntier_from = \"query:plan\"\ndefault_tier = \"free\"\n",
            "rules.toml:8: tier_from \"query:plan\" is not \"header:NAME\" (a header your auth proxy sets, or one looked up in tier_file)",
        ),
        (
            "tiers = { free = \"1/s\", pro = \"ten/s\" }\ntier_from = \"header:x-plan\"\ndefault_tier = \"free\"\n",
            "rules.toml:7: tier \"pro\": ",
        ),
        (
            "tiers = { \"free plan\" = \"1/s\" }\ntier_from = \"header:x-plan\"\ndefault_tier = \"free plan\"\n",
            "rules.toml:7: tier name \"free plan\" has ' ': use only letters, digits, '_' and '-'",
        ),
        (
            "tiers = {}\ntier_from = \"header:x-plan\"\ndefault_tier = \"free\"\n",
            "rules.toml:7: tiers is empty: name each tier and its rates",
        ),
        (
            "rates = \"1/s\"\ntiers = { free = \"1/s\" }\ntier_from = \"header:x-plan\"\ndefault_tier = \"free\"\n",
            "rules.toml:7: rates does not go with tiers: each tier has its rates (line 8)",
        ),
        (
            "tiers = { free = \"1/s\" }\ntier_from = \"header:x-plan\"\ndefault_tier = \"free\"\ncost = 5\n",
            "rules.toml:10: cost 5 is above what the rule can ever pass (limit 1): lower cost or raise the limit (tier \"free\")",
        ),
    ];
    for (fields, expected) in cases {
        let text = format!("[[rule]]\nname = \"api\"\npath = \"/api\"\n\n\n\n{fields}");
        let err = problems(&text);
        assert!(
            err.starts_with(expected),
            "{fields}\n{err}\nexpected: {expected}"
        );
    }
}

#[test]
fn a_tiers_rule_name_may_not_repeat_another_rules() {
    let text = format!("{TIERED}\n[[rule]]\nname = \"api.pro\"\nrates = \"1/s\"\n");
    assert_eq!(
        problems(&text),
        "rules.toml:12: rule name \"api.pro\" is already used on line 1"
    );
    let long = TIERED.replace("name = \"api\"", &format!("name = \"{}\"", "a".repeat(62)));
    let err = problems(&long);
    assert!(err.starts_with("rules.toml:1: rule \"aaaa"), "{err}");
    assert!(err.contains("its tier's rule name"), "{err}");
    assert!(err.contains("at most 64"), "{err}");
}

#[test]
fn the_example_file_has_a_tiered_rule() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/limits.example.toml");
    let rules = load(&path, &StoreOptions::default()).unwrap();
    assert!(rules.iter().any(|r| r.tier.is_some()));
}
