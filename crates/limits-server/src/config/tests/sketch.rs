//! `memory = "16MB"`: a sliding-window rule kept in a sketch, and what
//! cannot go with one, each refused at the `memory` line.

use super::super::parse as parse_rules;
use crate::store::StoreOptions;
use limits::{Mode, Store};

fn rules(more: &str) -> Result<Vec<crate::rules::ServerRule>, String> {
    let text =
        format!("[[rule]]\nname = \"r\"\nrates = \"2/s\"\nlimiter = \"sliding-window\"\n{more}");
    parse_rules(&text, "rules.toml", &StoreOptions::default())
}

#[track_caller]
fn assert_problem(more: &str, phrase: &str) {
    let err = rules(more).err().expect("refused");
    assert!(err.starts_with("rules.toml:5: "), "{err}");
    assert!(err.contains(phrase), "{phrase:?} not in {err:?}");
}

#[test]
fn a_rule_with_memory_decides_in_a_sketch_of_that_size() {
    let rules = rules("memory = \"1MiB\"\n").unwrap();
    assert_eq!(rules[0].store.place(), "a sketch of 1 MiB");
    assert_eq!(
        crate::describe(&rules[0]),
        "r: sliding-window 2/s, any method /, by ip, in a sketch of 1 MiB"
    );
    let decide = || {
        rules[0]
            .store
            .decide_now("203.0.113.7", 1, Mode::Record)
            .unwrap()
            .unwrap()
    };
    assert!(decide().decision.allowed && decide().decision.allowed);
    assert!(!decide().decision.allowed, "the third in a second");
}

#[test]
fn memory_is_a_size() {
    assert_problem(
        "memory = \"lots\"\n",
        "memory \"lots\" is not a size such as \"16MB\"",
    );
    assert_problem("memory = \"10B\"\n", "holds less than one cell per row");
}

#[test]
fn memory_needs_the_sliding_window() {
    let text =
        "[[rule]]\nname = \"r\"\nrates = \"2/s\"\nlimiter = \"token-bucket\"\nmemory = \"1MB\"\n";
    let err = parse_rules(text, "rules.toml", &StoreOptions::default())
        .err()
        .unwrap();
    assert!(err.starts_with("rules.toml:5: "), "{err}");
    assert!(
        err.contains("write limiter = \"sliding-window\" (not token-bucket)"),
        "{err}"
    );
}

#[test]
fn what_needs_keys_or_settling_does_not_go_with_memory() {
    assert_problem(
        "memory = \"1MB\"\nstore = \"memory\"\n",
        "store (line 6) does not go with memory",
    );
    assert_problem(
        "memory = \"1MB\"\ncount = { status = [401] }\n",
        "count (line 6) does not go with memory: a sketch cannot give back",
    );
    assert_problem(
        "memory = \"1MB\"\ncost_from = \"x-cost\"\n",
        "cost_from (line 6) does not go with memory",
    );
    assert_problem(
        "memory = \"1MB\"\nconcurrency = 3\n",
        "concurrency (line 6) does not go with memory",
    );
}

#[test]
fn a_penalty_does_not_go_with_memory() {
    let err = rules("memory = \"1MB\"\npenalty = { after = 3, within = \"1m\", ban = \"5m\" }\n")
        .err()
        .unwrap();
    assert!(err.starts_with("rules.toml:6: "), "{err}");
    assert!(err.contains("a sketch (memory) keeps no key"), "{err}");
}
