//! Every kind of mistake: the line it is reported on, and what it says.

use super::parse;

/// The one problem `text` has, as `(line, message)`.
fn problem(text: &str) -> (usize, String) {
    let err = parse(text, "rules.toml").expect_err(text);
    assert_eq!(err.lines().count(), 1, "one problem expected: {err}");
    let rest = err.strip_prefix("rules.toml:").expect(&err);
    let (line, message) = rest.split_once(": ").expect(&err);
    (line.parse().expect(&err), message.to_string())
}

/// Asserts that `text` has one problem, on `line`, saying `phrase`.
#[track_caller]
fn assert_problem(text: &str, line: usize, phrase: &str) {
    let (at, message) = problem(text);
    assert_eq!(at, line, "{message}");
    assert!(message.contains(phrase), "{phrase:?} not in {message:?}");
}

/// A valid rule's header, name and rates, then `more` (its lines start at 4).
fn rule_with(more: &str) -> String {
    format!("[[rule]]\nname = \"r\"\nrates = \"10/s\"\n{more}")
}

#[test]
fn the_example_message_is_exact() {
    let text = "# Logins\n\n[[rule]]\nname = \"login\"\nlimiter = \"fixed-window\"\nlimit = 10\ncost = 20\n";
    let err = parse(text, "rules.toml").unwrap_err();
    assert_eq!(
        err,
        "rules.toml:7: cost 20 is above what the rule can ever pass (limit 10): lower cost or raise the limit"
    );
}

#[test]
fn toml_syntax_errors_carry_their_line() {
    assert_problem("[[rule]]\nname = \"r\"\nrates = \"10/s\n", 3, "string");
    assert_problem("[[rule]]\nname \"r\"\n", 2, "expected");
    assert_problem("[[rule]]\nname = \"a\"\nname = \"b\"\n", 3, "duplicate key");
}

#[test]
fn unknown_keys_are_errors() {
    assert_problem(
        &rule_with("colour = \"red\"\n"),
        4,
        "unknown field `colour`",
    );
    assert_problem(
        "rules = []\n",
        1,
        "unknown field `rules`, expected one of `rule`, `allow`",
    );
    // A top-level key after the tables belongs to the last table.
    assert_problem(&rule_with("\nversion = 2\n"), 5, "unknown field `version`");
}

#[test]
fn wrong_types_are_errors() {
    assert_problem(&rule_with("cost = \"2\"\n"), 4, "expected a whole number");
    assert_problem(&rule_with("cost = 1.5\n"), 4, "expected a whole number");
    assert_problem(&rule_with("burst = -1\n"), 4, "invalid value: integer `-1`");
    assert_problem("[[rule]]\nname = 5\n", 2, "invalid type: integer `5`");
    assert_problem(&rule_with("methods = \"POST\"\n"), 4, "invalid type");
    assert_problem(&rule_with("key = 1\n"), 4, "expected a key such as \"ip\"");
    assert_problem(
        &rule_with("key = [\"ip\",\n  2]\n"),
        5,
        "invalid type: integer `2`",
    );
    assert_problem("\n[rule]\nname = \"r\"\n", 2, "write [[rule]], not [rule]");
}

#[test]
fn no_rules_is_an_error() {
    assert_problem("", 1, "no rules: add a [[rule]] table");
    assert_problem("# nothing yet\n\n", 1, "no rules");
    assert_problem("\nrule = []\n", 2, "no rules");
}

#[test]
fn names_are_required_plain_and_unique() {
    assert_problem("# first\n[[rule]]\nrates = \"1/s\"\n", 2, "has no name");
    assert_problem(
        "[[rule]]\nname = \"\"\nrates = \"1/s\"\n",
        2,
        "the rule name is empty",
    );
    assert_problem(
        "[[rule]]\nname = \"a b\"\nrates = \"1/s\"\n",
        2,
        "has ' ': use only letters",
    );
    assert_problem(
        "[[rule]]\nname = \"é\"\nrates = \"1/s\"\n",
        2,
        "use only letters",
    );
    let long = format!("[[rule]]\nname = \"{}\"\nrates = \"1/s\"\n", "n".repeat(65));
    assert_problem(&long, 2, "65 bytes long; at most 64");
    let ok = format!("[[rule]]\nname = \"{}\"\nrates = \"1/s\"\n", "n".repeat(64));
    assert!(parse(&ok, "rules.toml").is_ok());
    let twice =
        "[[rule]]\nname = \"a\"\nrates = \"1/s\"\n\n[[rule]]\nname = \"a\"\nrates = \"2/s\"\n";
    assert_problem(twice, 6, "rule name \"a\" is already used on line 2");
}

#[test]
fn paths_start_with_a_slash() {
    assert_problem(
        &rule_with("path = \"api\"\n"),
        4,
        "path \"api\" must start with '/'",
    );
    assert_problem(&rule_with("path = \"\"\n"), 4, "must start with '/'");
}

#[test]
fn methods_are_the_standard_ones() {
    assert_problem(
        &rule_with("methods = [\"GET\",\n  \"FETCH\"]\n"),
        5,
        "unknown method \"FETCH\"",
    );
    assert_problem(
        &rule_with("methods = [\"post\"]\n"),
        4,
        "methods are upper case (POST)",
    );
    assert_problem(
        &rule_with("methods = []\n"),
        4,
        "leave it out to match any method",
    );
}

#[test]
fn keys_are_checked_part_by_part() {
    assert_problem(&rule_with("key = \"ipv6\"\n"), 4, "invalid key \"ipv6\"");
    assert_problem(&rule_with("key = \"ip+header:\"\n"), 4, "the name is empty");
    assert_problem(
        &rule_with("key = [\n  \"ip\",\n  \"smell:x\",\n]\n"),
        6,
        "unknown kind",
    );
    assert_problem(&rule_with("key = []\n"), 4, "key is an empty list");
}

#[test]
fn limiters_are_named_as_on_the_command_line() {
    assert_problem(
        &rule_with("limiter = \"gcra\"\n"),
        4,
        "unknown limiter \"gcra\" (expected one of: none,",
    );
}

#[test]
fn rates_go_through_the_core_parser() {
    let bad = |rates: &str| format!("[[rule]]\nname = \"r\"\nrates = \"{rates}\"\n");
    assert_problem(&bad("10/fortnight"), 3, "unknown unit");
    assert_problem(&bad("0/s"), 3, "the limit must be at least 1");
    assert_problem(&bad("10"), 3, "expected '/' or 'per'");
    assert_problem(&bad("10/s;"), 3, "invalid rate");
    let limit = |more: &str| format!("[[rule]]\nname = \"r\"\n{more}");
    assert_problem(
        &limit("limit = 0\n"),
        3,
        "limit: the limit must be at least 1",
    );
    assert_problem(
        &limit("limit = 4611686018427387905\n"),
        3,
        "limit: the limit is too large",
    );
    assert_problem(
        &limit("limit = 5\nwindow = \"fast\"\n"),
        4,
        "window: invalid duration \"fast\"",
    );
    assert_problem(&limit("limit = 5\nwindow = \"5\"\n"), 4, "expected a unit");
    assert_problem(
        &limit("limit = 5\nwindow = \"60000d\"\n"),
        4,
        "window: the window is too long",
    );
    assert_problem(
        &rule_with("window = \"1m\"\n"),
        4,
        "window goes with limit = N",
    );
}

#[test]
fn rates_and_limit_are_one_or_the_other() {
    let both = "[[rule]]\nname = \"r\"\nrates = \"10/s\"\nlimit = 10\n";
    assert_problem(both, 4, "rule \"r\" has both rates (line 3) and limit");
    assert_problem("[[rule]]\nname = \"r\"\n", 1, "rule \"r\" has no rates");
    assert_problem(
        "[[rule]]\nname = \"r\"\nwindow = \"1s\"\n",
        1,
        "has no rates",
    );
}

#[test]
fn costs_are_between_one_and_what_the_rule_can_pass() {
    assert_problem(&rule_with("cost = 0\n"), 4, "cost must be at least 1");
    let several = "[[rule]]\nname = \"r\"\nrates = \"10/s; 3/m\"\ncost = 4\n";
    assert_problem(
        several,
        4,
        "cost 4 is above what the rule can ever pass (limit 3)",
    );
    let leaky = "[[rule]]\nname = \"r\"\nlimiter = \"leaky-bucket\"\nrates = \"10/s\"\nburst = 2\ncost = 4\n";
    assert_problem(leaky, 6, "(burst 2 + 1): lower cost or raise the burst");
    let default = "[[rule]]\nname = \"r\"\nlimiter = \"leaky-bucket\"\nlimit = 2\ncost = 4\n";
    assert_problem(default, 5, "(burst 2 + 1; the burst defaults to the limit)");
}

#[test]
fn burst_is_for_the_leaky_bucket_only() {
    assert_problem(
        &rule_with("burst = 5\n"),
        4,
        "burst applies only to limiter = \"leaky-bucket\"",
    );
    let big = "[[rule]]\nname = \"r\"\nlimiter = \"leaky-bucket\"\nrates = \"1/s\"\nburst = 4611686018427387905\n";
    assert_problem(big, 5, "burst 4611686018427387905 is too large");
}

#[test]
fn every_problem_is_reported_in_line_order() {
    let text = "[[rule]]\nname = \"a\"\npath = \"x\"\nrates = \"1/s\"\ncost = 0\n\n\
                [[rule]]\nname = \"a\"\nmethods = [\"GOT\"]\nlimiter = \"gcra\"\n";
    let err = parse(text, "rules.toml").unwrap_err();
    let lines: Vec<&str> = err
        .lines()
        .map(|l| l.split(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        lines,
        [
            "rules.toml:3",
            "rules.toml:5",
            "rules.toml:7",
            "rules.toml:8",
            "rules.toml:9",
            "rules.toml:10"
        ],
        "{err}"
    );
}

#[test]
fn a_number_too_large_for_a_field_says_so_in_words() {
    let (line, message) = problem(&rule_with("cost = 99999999999999999999\n"));
    assert_eq!(line, 4, "{message}");
    assert!(message.contains("too large"), "{message}");
    assert!(!message.contains("i128"), "{message}");
    let limit = "[[rule]]\nname = \"r\"\nlimit = 99999999999999999999\n";
    let (line, message) = problem(limit);
    assert_eq!(line, 3, "{message}");
    assert!(message.contains("is too large (at most"), "{message}");
    assert!(!message.contains("i128"), "{message}");
}

#[test]
fn bad_missing_and_normalize_values_are_named_on_their_line() {
    let key = "key = \"form:username\"\n";
    assert_problem(
        &rule_with(&format!("{key}missing = \"drop\"\n")),
        5,
        "missing: unknown missing policy \"drop\" (expected ip, reject or shared)",
    );
    assert_problem(
        &rule_with(&format!(
            "{key}normalize = [\n  \"trim\",\n  \"upper\",\n]\n"
        )),
        7,
        "normalize: unknown normalization \"upper\" (expected trim, lowercase or nfkc)",
    );
    assert_problem(
        &rule_with(&format!("{key}normalize = \"trim\"\n")),
        5,
        "expected a sequence",
    );
    assert_problem(&rule_with("missing = 1\n"), 4, "expected a string");
}

#[test]
fn missing_and_normalize_on_an_address_key_are_errors() {
    assert_problem(
        &rule_with("missing = \"shared\"\n"),
        4,
        "missing applies to keys with a header, cookie, query, form or json part; this rule's key is \"ip\"",
    );
    assert_problem(
        &rule_with("key = \"ip\"\nnormalize = []\n"),
        5,
        "normalize applies to keys with a header",
    );
}

#[test]
fn a_rules_store_is_memory_or_redis_and_redis_needs_a_connection() {
    assert_problem(
        &rule_with("store = \"etcd\"\n"),
        4,
        "unknown store \"etcd\" (expected \"memory\", \"redis\" or \"memcached\")",
    );
    assert_problem(
        &rule_with("store = \"redis\"\n"),
        4,
        "rule \"r\": store = \"redis\" needs a Redis: start with --store redis://HOST:PORT",
    );
    let text = rule_with("store = \"memory\"\n");
    let options = crate::store::StoreOptions::default();
    let rules = crate::config::parse(&text, "rules.toml", &options).unwrap();
    assert_eq!(rules[0].store.kind(), "memory");
}

#[test]
fn a_memcached_rule_can_count_by_status() {
    let text = rule_with("count = { status = [401] }\n");
    let client = limits_memcached::MemcachedClient::new(
        "memcached://127.0.0.1:1",
        limits_memcached::MemcachedOptions::default(),
    )
    .unwrap();
    let options = crate::store::StoreOptions {
        memcached: Some(client),
        ..crate::store::StoreOptions::default()
    };
    let rules = crate::config::parse(&text, "rules.toml", &options).unwrap();
    assert_eq!(rules[0].store.kind(), "memcached");
}

#[test]
fn count_names_real_statuses_and_at_least_one_list() {
    let bad = [
        (
            "count = { status = [99] }\n",
            4,
            "count's status 99 is not an HTTP status (100 to 599)",
        ),
        (
            "count = { unless_status = [600] }\n",
            4,
            "count's unless_status 600 is not an HTTP status",
        ),
        ("count = { status = [] }\n", 4, "count's status is empty"),
        (
            "count = {}\n",
            4,
            "count needs status = [...] or unless_status = [...]",
        ),
        (
            "count = { statuses = [401] }\n",
            4,
            "unknown field `statuses`",
        ),
        (
            "count = { status = [\"401\"] }\n",
            4,
            "expected a whole number",
        ),
        ("count = [401]\n", 4, "invalid type"),
        // A table of its own: the bad status's own line.
        (
            "\n[rule.count]\nstatus = [401,\n  70000]\n",
            7,
            "count's status 70000",
        ),
    ];
    for (more, line, phrase) in bad {
        assert_problem(&rule_with(more), line, phrase);
    }
}

#[test]
fn cost_from_names_a_response_header_and_a_maximum_at_least_the_estimate() {
    let bad = [
        (
            "cost_from = \"x-tokens-used\"\nmax_cost = 10\n",
            4,
            "cost_from \"x-tokens-used\" is not \"header:NAME\"",
        ),
        (
            "cost_from = \"header:\"\nmax_cost = 10\n",
            4,
            "is not \"header:NAME\"",
        ),
        (
            "cost_from = \"header:x tokens\"\nmax_cost = 10\n",
            4,
            "cost_from: \"x tokens\" is not a header name",
        ),
        (
            "cost_from = \"header:x-tokens-used\"\n",
            4,
            "cost_from needs max_cost = N",
        ),
        (
            "max_cost = 10\n",
            4,
            "max_cost caps the cost read by cost_from",
        ),
        (
            "cost = 5\ncost_from = \"header:x-tokens-used\"\nmax_cost = 4\n",
            6,
            "max_cost 4 is below the estimate cost = 5",
        ),
        (
            "cost_from = \"header:x-tokens-used\"\nmax_cost = 0\n",
            5,
            "max_cost is 0",
        ),
        (
            "cost = 0\ncost_from = \"header:x-tokens-used\"\nmax_cost = 9\n",
            4,
            "cost must be at least 1",
        ),
        ("cost_from = 5\nmax_cost = 9\n", 4, "invalid type"),
        (
            "max_cost = -1\ncost_from = \"header:a\"\n",
            4,
            "whole number",
        ),
    ];
    for (more, line, phrase) in bad {
        assert_problem(&rule_with(more), line, phrase);
    }
}
