//! `penalty = { after, within, ban, escalate }`: kept on the rule's store,
//! every mistake on its line, and a store that cannot ban refused by name.

use super::super::parse as parse_rules;
use crate::store::StoreOptions;
use limits::{Penalty, Store};
use limits_memcached::{MemcachedClient, MemcachedOptions};
use std::time::Duration;

fn rule_with(more: &str) -> String {
    format!("[[rule]]\nname = \"r\"\nrates = \"10/s\"\n{more}")
}

fn problem(text: &str, stores: &StoreOptions) -> String {
    match parse_rules(text, "rules.toml", stores) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e,
    }
}

#[track_caller]
fn assert_problem(more: &str, line: usize, phrase: &str) {
    let err = problem(&rule_with(more), &StoreOptions::default());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("rules.toml:{line}: ")), "{err}");
    assert!(err.contains(phrase), "{phrase:?} not in {err:?}");
}

#[test]
fn a_penalty_is_kept_on_the_rules_store() {
    let text = rule_with("penalty = { after = 5, within = \"1m\", ban = \"15m\", escalate = 2 }\n");
    let rules = parse_rules(&text, "rules.toml", &StoreOptions::default()).unwrap();
    let want = Penalty::new(
        5,
        Duration::from_secs(60),
        Duration::from_secs(900),
        Some(2),
    );
    assert_eq!(rules[0].store.penalty(), want.ok().as_ref());
    let plain = parse_rules(&rule_with(""), "rules.toml", &StoreOptions::default()).unwrap();
    assert_eq!(plain[0].store.penalty(), None);
}

#[test]
fn every_mistake_in_a_penalty_names_its_line() {
    assert_problem(
        "penalty = { within = \"1m\", ban = \"15m\" }\n",
        4,
        "penalty needs after",
    );
    assert_problem(
        "penalty = { after = 5, ban = \"15m\" }\n",
        4,
        "penalty needs within",
    );
    assert_problem(
        "penalty = { after = 5, within = \"1m\" }\n",
        4,
        "penalty needs ban",
    );
    assert_problem(
        "penalty = { after = 0, within = \"1m\", ban = \"15m\" }\n",
        4,
        "after 0 is not 1 to 10000",
    );
    assert_problem(
        "\npenalty = { after = 5, within = \"soon\", ban = \"15m\" }\n",
        5,
        "penalty's within \"soon\"",
    );
    assert_problem(
        "penalty = { after = 5, within = \"1m\", ban = \"0s\" }\n",
        4,
        "penalty's ban \"0s\": invalid duration",
    );
    assert_problem(
        "penalty = { after = 5, within = \"1m\", ban = \"15m\", escalate = 1 }\n",
        4,
        "escalate 1 is not a factor of 2 or more",
    );
    assert_problem(
        "penalty = { after = 5, within = \"1m\", ban = \"15m\", jail = true }\n",
        4,
        "unknown field `jail`",
    );
    assert_problem("penalty = 5\n", 4, "expected struct RawPenalty");
}

#[test]
fn a_standing_a_store_cannot_keep_is_refused_with_the_reason() {
    let client =
        MemcachedClient::new("memcached://127.0.0.1:1", MemcachedOptions::default()).unwrap();
    let stores = StoreOptions {
        memcached: Some(client),
        ..StoreOptions::default()
    };
    let text = rule_with("\npenalty = { after = 5, within = \"1m\", ban = \"15m\" }\n");
    assert!(parse_rules(&text, "rules.toml", &stores).is_ok());
    let log = "[[rule]]\nname = \"r\"\nrates = \"200000/m\"\n\
               penalty = { after = 10000, within = \"1m\", ban = \"15m\" }\n";
    let err = problem(log, &stores);
    assert!(err.starts_with("rules.toml:4: "), "{err}");
    assert!(err.contains("more than a memcached item holds"), "{err}");
    let in_memory = log.replace("[[rule]]\n", "[[rule]]\nstore = \"memory\"\n");
    assert!(parse_rules(&in_memory, "rules.toml", &stores).is_ok());
}
