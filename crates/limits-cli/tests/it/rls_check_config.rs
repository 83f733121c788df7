//! `limits rls --check-config FILE|DIR`: a CI check of a rate limit config,
//! as envoyproxy/ratelimit's config_check_cmd: exit 0 when it loads, else 1
//! with every problem as FILE:LINE.

use crate::common;

#[test]
fn check_config_exits_0_on_a_good_config_and_names_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = common::write(
        dir.path(),
        "a.yaml",
        "domain: a\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 5}\n",
    );
    common::write(
        dir.path(),
        "b.yaml",
        "domain: b\ndescriptors:\n  - key: ip\n    rate_limit: {window: 5m, requests_per_window: 20}\n",
    );
    let (stdout, stderr, code) =
        common::limits(&["rls", "--check-config", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(&format!("{}: ok", a.display())), "{stdout}");
    assert!(
        stdout.contains("all rate limit configs ok (2 files, 2 limits)"),
        "{stdout}"
    );
    // A single file too.
    let (_, stderr, code) = common::limits(&["rls", "--check-config", a.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn check_config_exits_1_with_every_problem_as_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad_unit = common::write(
        dir.path(),
        "1.yaml",
        "domain: one\ndescriptors:\n  - key: ip\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 5\n",
    );
    let unknown_key = common::write(
        dir.path(),
        "2.yaml",
        "domain: two\ndescriptors:\n  - key: ip\n    ratelimit: {unit: second, requests_per_unit: 5}\n",
    );
    let (stdout, stderr, code) =
        common::limits(&["rls", "--check-config", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("error: {}:5: ", bad_unit.display())),
        "{stderr}"
    );
    assert!(stderr.contains("fortnight"), "{stderr}");
    assert!(
        stderr.contains(&format!("error: {}:4: ", unknown_key.display())),
        "{stderr}"
    );
    assert!(stderr.contains("ratelimit"), "{stderr}");
    assert!(
        stderr.contains("2 problems in the rate limit config"),
        "{stderr}"
    );
    assert!(!stdout.contains("all rate limit configs ok"), "{stdout}");
}

#[test]
fn check_config_names_a_missing_path_and_refuses_config_beside_it() {
    let (_, stderr, code) = common::limits(&["rls", "--check-config", "/nonexistent/rl"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("/nonexistent/rl: "), "{stderr}");
    let (_, stderr, code) = common::limits(&["rls", "--check-config", "/tmp", "--config", "/tmp"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--check-config"), "{stderr}");
    let (_, stderr, code) = common::limits(&["rls"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--config"), "{stderr}");
}
