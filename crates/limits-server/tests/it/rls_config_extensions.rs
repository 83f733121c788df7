//! Our extensions in the reference's YAML: `algorithm` (per file and per
//! rate_limit), any window, and several rates decided all-or-nothing; and the
//! errors that keep the forms apart.

use limits::{Algorithm, Rule};
use limits_server::rls::config::{RlsConfig, Unit};
use std::path::Path;

fn config() -> RlsConfig {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rls/extensions.yaml");
    RlsConfig::load(&file).unwrap_or_else(|e| panic!("{e}"))
}

fn rule<'a>(c: &'a RlsConfig, entries: &[(&str, &str)]) -> &'a Rule {
    c.lookup("api", entries)
        .unwrap()
        .limit
        .rule
        .as_ref()
        .unwrap()
}

#[test]
fn the_file_algorithm_is_the_default_and_a_rate_limit_may_choose_its_own() {
    let c = config();
    let per_ip = rule(&c, &[("remote_address", "198.51.100.1")]);
    assert_eq!(per_ip.algorithm(), Algorithm::SlidingLog);
    assert_eq!(per_ip.rates().to_string(), "10/s");
    assert_eq!(
        rule(&c, &[("path", "/search")]).algorithm(),
        Algorithm::TokenBucket
    );
    assert_eq!(
        rule(&c, &[("path", "/export")]).algorithm(),
        Algorithm::FixedWindow
    );
    for name in [
        "none",
        "fixed-window",
        "sliding-log",
        "token-bucket",
        "sliding-window",
        "leaky-bucket",
    ] {
        let yaml = format!("domain: d\nalgorithm: {name}\ndescriptors:\n  - key: a\n    rate_limit: {{unit: second, requests_per_unit: 1}}\n");
        let c = RlsConfig::parse(&yaml, "t.yaml").unwrap();
        let got = c
            .lookup("d", &[("a", "x")])
            .unwrap()
            .limit
            .rule
            .as_ref()
            .unwrap()
            .algorithm();
        assert_eq!(got, name.parse::<Algorithm>().unwrap());
    }
}

#[test]
fn the_one_line_change_to_sliding_log_changes_only_the_algorithm() {
    let before = "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: minute\n      requests_per_unit: 60\n";
    let after = before.replace("domain: edge\n", "domain: edge\nalgorithm: sliding-log\n");
    let a = RlsConfig::parse(before, "a.yaml").unwrap();
    let b = RlsConfig::parse(&after, "b.yaml").unwrap();
    let (a, b) = (a.limits().next().unwrap(), b.limits().next().unwrap());
    let (ra, rb) = (a.rule.as_ref().unwrap(), b.rule.as_ref().unwrap());
    assert_eq!(
        (ra.algorithm(), rb.algorithm()),
        (Algorithm::FixedWindow, Algorithm::SlidingLog)
    );
    assert_eq!(ra.rates(), rb.rates());
    assert_eq!((&a.id, a.reported), (&b.id, b.reported));
}

#[test]
fn any_window_is_reported_as_a_unit_only_when_it_is_one() {
    let c = config();
    let login = c.lookup("api", &[("path", "/login")]).unwrap().limit;
    assert_eq!(login.rule.as_ref().unwrap().rates().to_string(), "20/5m");
    assert_eq!(
        (login.reported.requests_per_unit, login.reported.unit),
        (20, Unit::Unknown)
    );
    let export = c.lookup("api", &[("path", "/export")]).unwrap().limit;
    assert_eq!(
        (export.reported.requests_per_unit, export.reported.unit),
        (3, Unit::Day)
    );
    assert_eq!(
        Unit::of_window(std::time::Duration::from_secs(7 * 86_400)),
        Unit::Week
    );
    assert_eq!(
        Unit::of_window(std::time::Duration::from_millis(1500)),
        Unit::Unknown
    );
}

#[test]
fn several_rates_make_one_rule_reported_by_its_first_rate() {
    let c = config();
    let search = c.lookup("api", &[("path", "/search")]).unwrap().limit;
    let rule = search.rule.as_ref().unwrap();
    assert_eq!(rule.rates().to_string(), "5/s; 1000/h");
    assert_eq!(
        (search.reported.requests_per_unit, search.reported.unit),
        (5, Unit::Second)
    );
    // All-or-nothing: once the hourly rate is spent, the per-second one
    // records nothing either.
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      algorithm: sliding-log\n      rates:\n        - {unit: second, requests_per_unit: 2}\n        - {window: 1m, requests_per_window: 3}\n";
    let c = RlsConfig::parse(yaml, "t.yaml").unwrap();
    let rule = c
        .lookup("d", &[("a", "x")])
        .unwrap()
        .limit
        .rule
        .clone()
        .unwrap();
    let mut state = rule.new_state();
    let s = 1_000_000_000;
    assert!(rule.check(&mut state, 0, 1).allowed);
    assert!(rule.check(&mut state, 1, 1).allowed);
    assert!(!rule.check(&mut state, 2, 1).allowed, "2 per second");
    assert!(rule.check(&mut state, 2 * s, 1).allowed);
    let denied = rule.check(&mut state, 4 * s, 1);
    assert!(!denied.allowed, "3 per minute");
    assert_eq!(
        denied.retry_after.duration().unwrap().as_nanos(),
        60 * s as u128 - 4 * s as u128
    );
}

/// The error of `rate_limit` body `body` (indented six spaces); asserts its
/// line and words.
fn check(body: &str, line: usize, words: &str) {
    let yaml = format!("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n{body}");
    let err = RlsConfig::parse(&yaml, "t.yaml").map(|_| ()).unwrap_err();
    let at = format!("t.yaml:{line}: ");
    assert!(
        err.starts_with(&at) && err.contains(words),
        "{err:?}: want {at}…{words}"
    );
}

#[test]
fn the_unit_and_window_forms_do_not_mix() {
    check(
        "      unit: second\n      window: 5m\n      requests_per_window: 1\n",
        5,
        "either unit with requests_per_unit or window with requests_per_window, not both",
    );
    check(
        "      requests_per_unit: 3\n      window: 5m\n",
        5,
        "not both",
    );
    check(
        "      requests_per_window: 3\n",
        5,
        "requests_per_window needs a window",
    );
    check("      window: 5m\n", 5, "window needs requests_per_window");
    check(
        "      rates:\n        - {unit: second, requests_per_unit: 1}\n      unit: minute\n",
        7,
        "unit beside rates",
    );
    check("      rates: []\n", 5, "rates is empty");
    check(
        "      rates:\n        - {unit: second, requests_per_unit: 1, window: 1s}\n",
        6,
        "not both",
    );
    check(
        "      rates:\n        - {unit: second, algorithm: sliding-log}\n",
        6,
        "unknown key 'algorithm' in a rate",
    );
}

#[test]
fn windows_and_limits_are_checked_by_the_core_parsers() {
    check(
        "      window: 5\n      requests_per_window: 1\n",
        5,
        "window:",
    );
    check(
        "      window: 0s\n      requests_per_window: 1\n",
        5,
        "a duration must be greater than zero",
    );
    check(
        "      window: five minutes\n      requests_per_window: 1\n",
        5,
        "window:",
    );
    check(
        "      window: 1m\n      requests_per_window: 0\n",
        6,
        "the limit must be at least 1",
    );
    check(
        "      window: 1m\n      requests_per_window: 4294967296\n",
        6,
        "too large",
    );
    check(
        "      rates:\n        - {unit: second, requests_per_unit: 0}\n",
        6,
        "requests_per_unit: 0 blocks everything; it cannot be one of rates",
    );
    check(
        "      unit: second\n      requests_per_unit: 1\n      algorithm: sliding_log\n",
        7,
        "sliding_log",
    );
    let err = RlsConfig::parse("domain: d\nalgorithm: gcra\n", "t.yaml").unwrap_err();
    assert!(
        err.starts_with("t.yaml:2: ") && err.contains("gcra"),
        "{err}"
    );
}

#[test]
fn unlimited_takes_no_window_rates_or_algorithm() {
    check(
        "      unlimited: true\n      window: 1m\n",
        6,
        "an unlimited rate_limit takes no window",
    );
    check(
        "      unlimited: true\n      rates: [{unit: second, requests_per_unit: 1}]\n",
        6,
        "takes no rates",
    );
    check(
        "      unlimited: true\n      algorithm: sliding-log\n",
        6,
        "takes no algorithm",
    );
}
