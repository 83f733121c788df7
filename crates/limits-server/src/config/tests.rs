//! Valid files, defaults and the example file; the error cases are in
//! `tests/errors.rs`, arbitrary input in `tests/never_panics.rs`.

use super::*;
use limits::Rates;

mod distinct;
mod errors;
mod in_flight;
mod lists;
mod never_panics;
mod penalty;
mod sketch;
mod tiers;

fn rule(algorithm: Algorithm, rates: &str) -> Rule {
    Rule::new(algorithm, rates.parse::<Rates>().expect(rates))
}

fn key(spec: &str) -> KeySpec {
    spec.parse().expect(spec)
}

/// A rule's fields, with its limiter (from its store) for the store.
type Shape = (String, String, Vec<Method>, KeySpec, Rule, u64);

fn shape(r: &ServerRule) -> Shape {
    use limits::Store;
    let rule = r.store.rule().clone();
    (
        r.name.clone(),
        r.path_prefix.clone(),
        r.methods.clone(),
        r.key.clone(),
        rule,
        r.cost,
    )
}

fn parse(text: &str, origin: &str) -> Result<Vec<Shape>, String> {
    super::parse(text, origin, &StoreOptions::default())
        .map(|rules| rules.iter().map(shape).collect())
}

fn load(path: &Path) -> Result<Vec<Shape>, String> {
    super::load(path, &StoreOptions::default()).map(|rules| rules.iter().map(shape).collect())
}

const FULL: &str = r#"
# Every field, both rate forms, both key forms.
[[rule]]
name = "login-per-account"
path = "/login"
methods = ["POST"]
key = "form:username"
limiter = "sliding-log"
rates = "5/minute; 20/hour"
cost = 1

[[rule]]
name = "api_v2.keys"
path = "/api/"
methods = ["GET", "HEAD", "GET"]
key = ["ip", "header:X-Api-Key"]
limiter = "token-bucket"
limit = 100
window = "1m"
cost = 5

[[rule]]
name = "queue"
limiter = "leaky-bucket"
limit = 2
burst = 4
cost = 5
"#;

#[test]
fn a_full_file_parses_to_the_rules_it_names() {
    let config = parse(FULL, "full.toml").expect("valid");
    let expected = vec![
        (
            "login-per-account".into(),
            "/login".into(),
            vec![Method::POST],
            key("form:username"),
            rule(Algorithm::SlidingLog, "5/m; 20/h"),
            1,
        ),
        (
            "api_v2.keys".into(),
            "/api/".into(),
            vec![Method::GET, Method::HEAD],
            key("ip+header:x-api-key"),
            rule(Algorithm::TokenBucket, "100/m"),
            5,
        ),
        (
            "queue".into(),
            "/".into(),
            vec![],
            KeySpec::ip(),
            rule(Algorithm::LeakyBucket, "2/s").with_burst(4),
            5,
        ),
    ];
    assert_eq!(config, expected);
}

#[test]
fn defaults_fill_every_optional_field() {
    let config = parse("[[rule]]\nname = \"d\"\nlimit = 10\n", "d.toml").expect("valid");
    assert_eq!(
        config,
        vec![(
            "d".into(),
            "/".into(),
            vec![],
            KeySpec::ip(),
            rule(Algorithm::SlidingLog, "10/s"),
            1,
        )]
    );
    let inline = parse("rule = [{ name = \"x\", rates = \"1/h\" }]", "i.toml").expect("valid");
    assert_eq!(inline[0].4, rule(Algorithm::SlidingLog, "1/h"));
}

#[test]
fn the_largest_passable_cost_is_accepted() {
    let text = "[[rule]]\nname = \"a\"\nrates = \"10/s; 3/m\"\ncost = 3\n\n\
                [[rule]]\nname = \"b\"\nlimiter = \"leaky-bucket\"\nlimit = 2\ncost = 3\n";
    let config = parse(text, "c.toml").expect("valid");
    let costs: Vec<u64> = config.iter().map(|r| r.5).collect();
    assert_eq!(costs, vec![3, 3]);
}

fn example_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/limits.example.toml")
}

#[test]
fn the_example_file_loads() {
    let config = load(&example_path()).expect("docs/limits.example.toml");
    let names: Vec<&str> = config.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "per-ip",
            "catalogue",
            "api-per-key.free",
            "api-per-key.pro",
            "api-export",
            "api-export.in_flight",
            "login-per-account",
            "login-usernames",
            "login-per-address"
        ]
    );
    assert!(config.iter().all(|r| r.5 <= r.4.max_cost()));
}

#[test]
fn count_keeps_the_statuses_a_rule_counts_by() {
    let text = "[[rule]]\nname = \"login\"\nrates = \"3/m\"\ncount = { status = [401, 403], unless_status = [429] }\n";
    let rules = super::parse(text, "c.toml", &StoreOptions::default()).expect("valid");
    let want = limits_http::Counts {
        status: vec![401, 403],
        unless_status: vec![429],
    };
    assert_eq!(rules[0].count, want);
    let plain = "[[rule]]\nname = \"api\"\nrates = \"3/m\"\n";
    let rules = super::parse(plain, "c.toml", &StoreOptions::default()).expect("valid");
    assert!(rules[0].count.is_every_response());
}

#[test]
fn cost_from_keeps_the_header_and_its_maximum() {
    let text = "[[rule]]\nname = \"llm\"\nrates = \"100000/m\"\ncost = 500\ncost_from = \"header:X-Tokens-Used\"\nmax_cost = 10000\n";
    let rules = super::parse(text, "c.toml", &StoreOptions::default()).expect("valid");
    let want = limits_http::CostFrom::header("x-tokens-used", 10_000).unwrap();
    assert_eq!(rules[0].cost_from, Some(want));
    assert_eq!(rules[0].cost, 500);
    let plain = "[[rule]]\nname = \"api\"\nrates = \"3/m\"\n";
    let rules = super::parse(plain, "c.toml", &StoreOptions::default()).expect("valid");
    assert_eq!(rules[0].cost_from, None);
}

#[test]
fn load_names_the_file_it_could_not_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nope.toml");
    let err = load(&missing).unwrap_err();
    assert!(
        err.starts_with(&format!("{}: cannot read", missing.display())),
        "{err}"
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, b"[[rule]]\nname = \"\xff\"\n").expect("write");
    let err = load(&bad).unwrap_err();
    assert_eq!(
        err,
        format!("{}:2: the file is not UTF-8 text", bad.display())
    );
}

#[test]
fn case_insensitive_and_format_suffixes_widen_a_rules_path() {
    // Regression: Express and ASP.NET Core route /LOGIN to /login, Rails
    // /login.json: a /login rule had no way to cover them.
    let text = "[[rule]]\nname = \"login\"\npath = \"/login\"\nrates = \"3/m\"\n\
                case_insensitive = true\nformat_suffixes = true\n\n\
                [[rule]]\nname = \"plain\"\npath = \"/login\"\nrates = \"3/m\"\n";
    let rules = super::parse(text, "p.toml", &StoreOptions::default()).expect("valid");
    let post = Method::POST;
    for path in ["/login", "/LOGIN", "/Login.json", "/login.xml"] {
        assert!(rules[0].matches(&post, path), "{path}");
    }
    assert!(!rules[0].matches(&post, "/logins"));
    assert_eq!(rules[1].path_match, limits_http::PathMatch::default());
    assert!(!rules[1].matches(&post, "/LOGIN"));
    assert!(!rules[1].matches(&post, "/login.json"));
    // The example's login rules cover both.
    let example = super::load(&example_path(), &StoreOptions::default()).expect("example");
    for rule in example.iter().filter(|r| r.path_prefix == "/login") {
        assert!(rule.matches(&post, "/Login.json"), "{}", rule.name);
    }
    // A reload that changes either is a new shape.
    let (_, kept) = crate::rules::keep_state(
        super::parse(
            &text.replace("format_suffixes = true", ""),
            "p.toml",
            &StoreOptions::default(),
        )
        .expect("valid"),
        &rules,
    );
    assert_eq!(kept, 1);
    let err = parse(
        "[[rule]]\nname = \"a\"\nlimit = 1\ncase_insensitive = \"yes\"\n",
        "b.toml",
    )
    .unwrap_err();
    assert!(err.starts_with("b.toml:4:"), "{err}");
}

#[test]
fn missing_and_normalize_set_the_keys_policies() {
    let text = "[[rule]]\nname = \"login\"\nrates = \"3/m\"\nkey = \"ip+json:user.email\"\n\
                missing = \"shared\"\nnormalize = [\"lowercase\", \"trim\"]\n\n\
                [[rule]]\nname = \"api\"\nrates = \"3/m\"\nkey = \"header:X-Api-Key\"\nnormalize = []\n";
    let config = parse(text, "k.toml").expect("valid");
    use limits_http::{Missing, Normalize, NormalizeStep};
    assert_eq!(
        config[0].3,
        key("ip+json:user.email")
            .with_missing(Missing::Shared)
            .with_normalize(Normalize::from_steps([
                NormalizeStep::Lowercase,
                NormalizeStep::Trim
            ]))
    );
    assert_eq!(
        config[1].3,
        key("header:x-api-key").with_normalize(Normalize::NONE)
    );
    // Left out: the defaults by kind of part.
    let login = load(&example_path()).expect("example");
    let account = &login.iter().find(|r| r.0 == "login-per-account").unwrap().3;
    assert_eq!(account.missing(), Some(Missing::Reject));
    assert_eq!(account.normalize(), Some(Normalize::ACCOUNT));
}
