//! `concurrency = N` and `lease`: a cap on requests under way, as a rule of
//! its own named `NAME.in_flight`, and every mistake as FILE:LINE.

use crate::config::parse;
use crate::store::StoreOptions;
use crate::ServerRule;
use limits::Store;

fn rules(text: &str) -> Vec<ServerRule> {
    match parse(text, "rules.toml", &StoreOptions::default()) {
        Ok(rules) => rules,
        Err(e) => panic!("{e}"),
    }
}

fn problems(text: &str) -> String {
    match parse(text, "rules.toml", &StoreOptions::default()) {
        Ok(_) => panic!("no problem found in {text}"),
        Err(e) => e,
    }
}

#[test]
fn a_rule_with_a_rate_and_a_cap_is_two_rules() {
    let text = "[[rule]]\nname = \"export\"\npath = \"/export\"\nmethods = [\"POST\"]\n\
                key = \"header:x-api-key\"\nrates = \"10/m\"\ncost = 2\nconcurrency = 3\nlease = \"2m\"\n";
    let rules = rules(text);
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["export", "export.in_flight"]);
    let (rate, cap) = (&rules[0], &rules[1]);
    assert!(!rate.in_flight && cap.in_flight);
    assert_eq!(cap.store.rule().algorithm(), limits::Algorithm::SlidingLog);
    assert_eq!(cap.store.rule().rates().to_string(), "3/2m");
    assert_eq!(
        (cap.path_prefix.as_str(), cap.methods.clone()),
        ("/export", vec![http::Method::POST])
    );
    assert_eq!(cap.key, rate.key);
    // A slot is one request, whatever the rule's cost.
    assert_eq!((rate.cost, cap.cost), (2, 1));
}

#[test]
fn a_cap_alone_needs_no_rates_and_leases_a_minute() {
    let rules = rules("[[rule]]\nname = \"reports\"\nconcurrency = 2\n");
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].name, "reports.in_flight");
    assert_eq!(rules[0].store.rule().rates().to_string(), "2/m");
}

#[test]
fn a_tiered_rule_has_one_cap_for_every_tier() {
    let text = "[[rule]]\nname = \"api\"\ntiers = { free = \"1/s\", pro = \"9/s\" }\n\
                tier_from = \"header:x-plan\"\ndefault_tier = \"free\"\nconcurrency = 4\n";
    let rules = rules(text);
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["api.free", "api.pro", "api.in_flight"]);
    assert!(rules[2].tier.is_none());
}

#[test]
fn every_mistake_names_its_line() {
    let cases: &[(&str, &str)] = &[
        (
            "concurrency = 0\n",
            "rules.toml:3: concurrency 0: must be 1 to 2^62",
        ),
        (
            "concurrency = 2\nlease = \"soon\"\n",
            "rules.toml:4: lease: ",
        ),
        ("concurrency = 2\nlease = \"0s\"\n", "rules.toml:4: lease: "),
        (
            "rates = \"1/s\"\nlease = \"1m\"\n",
            "rules.toml:4: lease goes with concurrency = N: add the cap, or leave lease out",
        ),
        (
            "concurrency = 2\n[[rule]]\nname = \"r.in_flight\"\nrates = \"1/s\"\n",
            "rules.toml:5: rule name \"r.in_flight\" is already used on line 1",
        ),
    ];
    for (fields, expected) in cases {
        let text = format!("[[rule]]\nname = \"r\"\n{fields}");
        let err = problems(&text);
        assert!(
            err.starts_with(expected),
            "{fields}\n{err}\nexpected: {expected}"
        );
    }
}
