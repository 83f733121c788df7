//! `limits serve --check-config FILE`: a CI check of a rules file: exit 0
//! with each rule described (a tiered rule as one rule per tier), else 1
//! with every problem as FILE:LINE, list and tier files included.

use crate::common;

#[test]
fn check_config_describes_each_rule_of_the_example_file() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/limits.example.toml"
    );
    let (stdout, stderr, code) = common::limits(&["serve", "--check-config", example]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 10, "{stdout}");
    assert!(
        lines.contains(
            &"catalogue: sliding-window 600/m, any method /products/, by ip, in a sketch of 16 MB"
        ),
        "{stdout}"
    );
    assert!(
        lines.contains(
            &"api-per-key.pro: token-bucket 100/s; 1000000/d, any method /api/, by header:x-api-key, in memory, tier pro of free|pro"
        ),
        "{stdout}"
    );
    assert!(
        lines.contains(
            &"login-usernames: at most 20 distinct form:username in 1h, POST /login, by ip, in memory (distinct values)"
        ),
        "{stdout}"
    );
    assert!(
        lines[9]
            .ends_with("limits.example.toml: ok (9 rules; 0 allowed and 0 denied before any rule)"),
        "{stdout}"
    );
}

#[test]
fn check_config_exits_1_with_every_problem_as_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "plans.txt", "k1 pro\nk2 gold\n");
    let rules = common::write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"api\"\ntiers = { free = \"10/s\", pro = \"ten/s\" }\n\
         tier_from = \"header:x-api-key\"\ntier_file = \"plans.txt\"\ndefault_tier = \"free\"\n",
    );
    let (stdout, stderr, code) =
        common::limits(&["serve", "--check-config", rules.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    let shown = rules.display();
    assert!(
        stderr.contains(&format!(
            "error: {shown}:3: tier \"pro\": invalid rate \"ten/s\""
        )),
        "{stderr}"
    );
    let plans = dir.path().join("plans.txt");
    assert!(
        stderr.contains(&format!(
            "error: {}:2: tier \"gold\" is not one of the rule's tiers (free, pro)",
            plans.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("2 problems in the rules"), "{stderr}");
}
