//! `distinct = { of, at_most, window }`: a rule counting the distinct
//! values of a field per key, and each problem at its own line: a missing
//! or bad field of the table, a sketch that cannot be, and what counts
//! requests beside it.

use super::super::parse as parse_rules;
use crate::store::StoreOptions;
use limits::{Mode, Store};

fn rules(table: &str, more: &str) -> Result<Vec<crate::rules::ServerRule>, String> {
    let text =
        format!("[[rule]]\nname = \"logins\"\npath = \"/login\"\ndistinct = {table}\n{more}");
    parse_rules(&text, "rules.toml", &StoreOptions::default())
}

const USERNAMES: &str = "{ of = \"form:username\", at_most = 2, window = \"1h\" }";

#[track_caller]
fn assert_problem(table: &str, more: &str, line: usize, phrase: &str) {
    let err = rules(table, more).err().expect("refused");
    assert!(err.starts_with(&format!("rules.toml:{line}: ")), "{err}");
    assert!(err.contains(phrase), "{phrase:?} not in {err:?}");
}

#[test]
fn a_rule_of_distinct_values_decides_with_each_requests_value() {
    let rules = rules(USERNAMES, "").unwrap();
    let rule = &rules[0];
    assert_eq!(rule.distinct.as_ref().unwrap().to_string(), "form:username");
    assert!(rule.reads_body());
    assert_eq!(
        crate::describe(rule),
        "logins: at most 2 distinct form:username in 1h, any method /login, by ip, in memory (distinct values)"
    );
    let decide = |value| {
        let verdict = rule
            .store
            .decide_value_now(None, "ip=203.0.113.7", value, Mode::Record);
        verdict.unwrap().unwrap().decision.allowed
    };
    assert!(decide("alice") && decide("bob") && decide("alice"));
    assert!(!decide("carol"), "a third name in the hour");
}

#[test]
fn a_sketch_past_a_threshold_is_placed_and_checked() {
    let table = "{ of = \"path\", at_most = 1000, window = \"1h\", sketch = { from = 64, registers = 256 } }";
    let rules = rules(table, "").unwrap();
    assert_eq!(
        rules[0].store.place(),
        "memory (distinct values, sketched past 64: 256 registers, 8 sub-windows)"
    );
    let odd = "{ of = \"path\", at_most = 1000, window = \"1h\",\n  sketch = { from = 64, registers = 100 } }";
    assert_problem(
        odd,
        "",
        5,
        "distinct.sketch: registers must be a power of two",
    );
    let high = "{ of = \"path\", at_most = 10, window = \"1h\", sketch = { from = 10 } }";
    assert_problem(high, "", 4, "from 10 is not below at_most 10");
    let fromless = "{ of = \"path\", at_most = 10, window = \"1h\", sketch = { registers = 64 } }";
    assert_problem(fromless, "", 4, "distinct.sketch has no from");
}

#[test]
fn the_value_is_normalized_and_missing_as_the_table_says() {
    let table = "{ of = \"header:x-user\", normalize = [\"lowercase\"], missing = \"reject\", at_most = 1, window = \"1h\" }";
    let rules = rules(table, "").unwrap();
    let of = rules[0].distinct.as_ref().unwrap();
    assert_eq!(of.missing(), Some(limits_http::Missing::Reject));
    assert_eq!(
        of.normalize().map(|n| n.to_string()).as_deref(),
        Some("[lowercase]")
    );
    let bad = "{ of = \"path\", normalize = [\"shout\"], at_most = 1, window = \"1h\" }";
    assert_problem(bad, "", 4, "normalize: ");
    // Beside the table, on a rule keyed by the address: meant for the value.
    let outside = "normalize = [\"lowercase\"]\n";
    assert_problem(
        USERNAMES,
        outside,
        5,
        "normalize applies to the rule's key, here \"ip\", which has none; for the value distinct counts, write it inside distinct = { of = ..., normalize = ... }",
    );
}

#[test]
fn each_field_of_the_table_is_needed_and_checked() {
    let no_of = "{ at_most = 2, window = \"1h\" }";
    assert_problem(
        no_of,
        "",
        4,
        "distinct has no of: add of = \"form:username\"",
    );
    let bad_of = "{ of = \"form:\", at_most = 2, window = \"1h\" }";
    assert_problem(bad_of, "", 4, "distinct.of: invalid key \"form:\"");
    let no_window = "{ of = \"path\", at_most = 2 }";
    assert_problem(
        no_window,
        "",
        4,
        "distinct needs at_most = N and window = \"DURATION\"",
    );
    let zero = "{ of = \"path\", at_most = 0, window = \"1h\" }";
    assert_problem(zero, "", 4, "distinct: the limit must be at least 1");
    let bad_window = "{ of = \"path\", at_most = 2, window = \"soon\" }";
    assert_problem(bad_window, "", 4, "distinct.window:");
    let unknown = "{ of = \"path\", at_most = 2, window = \"1h\", limit = 3 }";
    let err = rules(unknown, "").err().unwrap();
    assert!(err.contains("unknown field `limit`"), "{err}");
}

#[test]
fn what_counts_requests_does_not_go_with_distinct() {
    let beside = [
        (
            "rates = \"5/s\"",
            "rates (line 5) does not go with distinct: distinct counts values",
        ),
        (
            "limiter = \"token-bucket\"",
            "limiter (line 5) does not go with distinct",
        ),
        (
            "count = { status = [401] }",
            "count (line 5) does not go with distinct: a value held is not given back",
        ),
        (
            "concurrency = 2",
            "concurrency (line 5) does not go with distinct",
        ),
        (
            "penalty = { after = 3, within = \"1m\", ban = \"1h\" }",
            "penalty (line 5) does not go with distinct",
        ),
        (
            "memory = \"1MB\"",
            "memory (line 5) does not go with distinct",
        ),
        ("cost = 2", "cost (line 5) does not go with distinct"),
    ];
    for (field, phrase) in beside {
        assert_problem(USERNAMES, &format!("{field}\n"), 4, phrase);
    }
}

#[test]
fn distinct_values_are_kept_where_store_says() {
    let memory = rules(USERNAMES, "store = \"memory\"\n").unwrap();
    assert_eq!(memory[0].store.place(), "memory (distinct values)");
    assert_problem(
        USERNAMES,
        "store = \"redis\"\n",
        5,
        "store = \"redis\" needs a Redis",
    );
    assert_problem(
        USERNAMES,
        "store = \"memcached\"\n",
        5,
        "store = \"memcached\" needs memcached",
    );
    assert_problem(USERNAMES, "store = \"disk\"\n", 5, "unknown store \"disk\"");
}
