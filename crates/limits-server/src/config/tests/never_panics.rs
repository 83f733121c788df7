//! Whatever the text, `parse` answers: a configuration that keeps its
//! promises, or problems that each name a line of the text.

use super::parse;
use proptest::prelude::*;

/// The fields a table may have or not, whatever else it has.
const OPTIONAL: [&str; 5] = ["path", "methods", "key", "limiter", "cost"];

/// `field = VALUE`: mostly a good value for that field, sometimes a bad one.
fn field_line(field: &'static str) -> BoxedStrategy<String> {
    let (good, bad): (&[&str], &[&str]) = match field {
        "name" => (
            &["\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"e.f\"", "\"g_h-i\""],
            &["\"a b\"", "\"\"", "5"],
        ),
        "path" => (&["\"/\"", "\"/api/\""], &["\"api\"", "\"\"", "[]"]),
        "methods" => (
            &["[\"GET\"]", "[\"GET\", \"POST\", \"GET\"]"],
            &["[\"post\"]", "[]", "\"GET\"", "[\"FETCH\"]"],
        ),
        "key" => (
            &[
                "\"ip\"",
                "\"header:X-Key\"",
                "[\"ip\", \"form:u\"]",
                "[\"ip+json:a.b\"]",
            ],
            &["\"header:\"", "[]", "1", "[\"ip\", 2]"],
        ),
        "limiter" => (
            &[
                "\"none\"",
                "\"fixed-window\"",
                "\"sliding-log\"",
                "\"sliding-window\"",
                "\"token-bucket\"",
                "\"leaky-bucket\"",
            ],
            &["\"gcra\"", "1"],
        ),
        "rates" => (
            &["\"10/s\"", "\"1/h; 2/d\"", "\"5/2s, 3/m\""],
            &["\"0/s\"", "\"10\"", "''", "10"],
        ),
        "tiers" => (
            &[
                "{ free = \"1/s\", pro = \"10/s\" }",
                "{ a = \"5/m; 20/h\" }",
                "{ pro = \"4611686018427387904/s\" }",
            ],
            &["{}", "{ \"a b\" = \"1/s\" }", "{ free = \"x\" }", "\"1/s\""],
        ),
        "tier_from" => (&["\"header:x-plan\""], &["\"query:p\"", "\"header:\"", "1"]),
        "default_tier" => (&["\"free\"", "\"a\""], &["\"gold\"", "2"]),
        "window" => (
            &["\"1s\"", "\"1m\"", "\"1.5ns\""],
            &["\"0s\"", "\"200000d\"", "\"x\"", "1"],
        ),
        _ => (
            &["1", "3", "10", "4611686018427387904"],
            &[
                "0",
                "-1",
                "4611686018427387905",
                "9223372036854775807",
                "1.5",
                "\"1\"",
            ],
        ),
    };
    prop_oneof![
        10 => prop::sample::select(good.to_vec()),
        1 => prop::sample::select(bad.to_vec()),
    ]
    .prop_map(move |v| format!("{field} = {v}"))
    .boxed()
}

/// A `[[rule]]` table: mostly a name and one form of rates, and some of the
/// other fields, in any order.
fn rule_table() -> impl Strategy<Value = String> {
    let rates = prop_oneof![
        3 => field_line("rates").prop_map(|line| vec![line]),
        3 => (field_line("limit"), prop::option::of(field_line("window")))
            .prop_map(|(limit, window)| std::iter::once(limit).chain(window).collect()),
        2 => (
            field_line("tiers"),
            prop::option::weighted(0.9, field_line("tier_from")),
            prop::option::weighted(0.9, field_line("default_tier")),
        )
            .prop_map(|(tiers, from, default)| [Some(tiers), from, default].into_iter().flatten().collect()),
        1 => prop::sample::subsequence(vec!["rates", "limit", "window"], 0..=3)
            .prop_flat_map(|fields| fields.into_iter().map(field_line).collect::<Vec<_>>()),
    ];
    let optional = prop::sample::subsequence(OPTIONAL.to_vec(), 0..=OPTIONAL.len())
        .prop_flat_map(|fields| fields.into_iter().map(field_line).collect::<Vec<_>>());
    (
        prop::option::weighted(0.95, field_line("name")),
        rates,
        optional,
        prop::option::weighted(0.15, field_line("burst")),
    )
        .prop_map(|(name, rates, optional, burst)| {
            name.into_iter()
                .chain(rates)
                .chain(optional)
                .chain(burst)
                .collect::<Vec<_>>()
        })
        .prop_shuffle()
        .prop_map(|lines| format!("[[rule]]\n{}\n", lines.join("\n")))
}

/// A line that is no part of a good table.
fn noise_line() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "[rule]",
            "[[rule.x]]",
            "rule = []",
            "rule = 1",
            "# c",
            "",
            "=",
            "name",
            "\"",
            "'''",
            "name = \"\\u00e9\"",
            "[[rule]]",
            "x = 1",
        ])
        .prop_map(str::to_string),
        "[ -~\\t]{0,20}",
    ]
}

/// Rule tables with a little noise between them.
fn tomlish() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(rule_table(), 0..4),
        prop_oneof![
            2 => Just(Vec::new()),
            1 => prop::collection::vec((noise_line(), any::<prop::sample::Index>()), 1..3),
        ],
    )
        .prop_map(|(tables, noise)| {
            let text = tables.concat();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            for (line, at) in noise {
                lines.insert(at.index(lines.len() + 1), line);
            }
            lines.join("\n")
        })
}

/// Checks what `parse` answered for `text`.
fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text, "p.toml") {
        Ok(config) => {
            prop_assert!(!config.is_empty());
            for r in &config {
                prop_assert!(r.1.starts_with('/'));
                prop_assert!(r.5 >= 1 && r.5 <= r.4.max_cost());
            }
            let mut names: Vec<&str> = config.iter().map(|r| r.0.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            prop_assert_eq!(names.len(), config.len());
        }
        Err(err) => {
            let last = text.split('\n').count();
            for line in err.lines() {
                let number = line
                    .strip_prefix("p.toml:")
                    .and_then(|rest| rest.split_once(": "))
                    .and_then(|(n, _)| n.parse::<usize>().ok());
                prop_assert!(number.is_some_and(|n| (1..=last).contains(&n)), "{line}");
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_text_is_an_answer_not_a_panic(text in any::<String>()) {
        check(&text)?;
    }

    #[test]
    fn tomlish_text_is_an_answer_not_a_panic(text in tomlish()) {
        check(&text)?;
    }
}
