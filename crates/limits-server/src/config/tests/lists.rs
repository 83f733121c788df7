//! `allow`, `deny`, `allow_file`, `deny_file`, per rule and for the file:
//! entries read, list files relative to the rules file, and every bad
//! entry as FILE:LINE (a list file's own path and line).

use crate::config::{load_file, parse_file, RulesFile};
use crate::store::StoreOptions;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn load(path: &Path) -> Result<RulesFile, String> {
    load_file(path, &StoreOptions::default())
}

const RULE: &str = "[[rule]]\nname = \"login\"\nrates = \"5/minute\"\n";

#[test]
fn inline_lists_and_list_files_relative_to_the_rules_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("lists")).unwrap();
    write(
        &dir.path().join("lists"),
        "trusted.txt",
        "# the office\n10.0.0.0/8\n\n2001:db8::/32  # the office's IPv6\nheader:x-api-key=internal-123\n",
    );
    let text = format!(
        "allow_file = \"lists/trusted.txt\"\ndeny = [\"203.0.113.0/24\"]\n{RULE}allow = [\"192.0.2.7\"]\ndeny_file = \"lists/trusted.txt\"\n"
    );
    let config = write(dir.path(), "rules.toml", &text);
    let file = load(&config).unwrap();
    assert_eq!(file.lists.allow.len(), 3);
    assert_eq!(file.lists.deny.len(), 1);
    let rule = &file.rules[0];
    assert_eq!((rule.lists.allow.len(), rule.lists.deny.len()), (1, 3));
    assert!(file
        .lists
        .allow
        .contains_address("10.1.1.1".parse().unwrap()));
    assert!(rule
        .lists
        .deny
        .contains_address("2001:db8::9".parse().unwrap()));
    // No lists: nothing listed.
    let plain = parse_file(RULE, "rules.toml", &StoreOptions::default()).unwrap();
    assert!(plain.lists.is_empty() && plain.rules[0].lists.is_empty());
}

#[test]
fn every_bad_entry_is_named_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "trusted.txt",
        "10.0.0.0/8\n# a comment\n10.0.0.300\n\nheader:x-api-key=\n2001:db8::/129 # too long\n",
    );
    let text = format!(
        "allow_file = \"trusted.txt\"\ndeny = [\n  \"203.0.113.0/24\",\n  \"not-an-address\",\n]\n{RULE}allow = [\"header:bad name=x\"]\ndeny_file = \"missing.txt\"\n"
    );
    let config = write(dir.path(), "rules.toml", &text);
    let err = load(&config).err().expect("bad entries");
    let rules = config.display().to_string();
    let trusted = dir.path().join("trusted.txt").display().to_string();
    let missing = dir.path().join("missing.txt").display().to_string();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            format!("{rules}:4: deny: \"not-an-address\": not an address, a network such as 10.0.0.0/8, or header:NAME=VALUE"),
            format!("{rules}:9: allow: \"header:bad name=...\": not a header name"),
            format!("{rules}:10: deny_file {missing}: cannot read it: No such file or directory (os error 2)"),
            format!("{trusted}:3: allow_file entry \"10.0.0.300\": not an address, a network such as 10.0.0.0/8, or header:NAME=VALUE"),
            format!("{trusted}:5: allow_file entry \"header:x-api-key=...\": the header value is empty"),
            format!("{trusted}:6: allow_file entry \"2001:db8::/129\": not an address, a network such as 10.0.0.0/8, or header:NAME=VALUE"),
        ],
        "{err}"
    );
}

#[test]
fn a_list_of_the_wrong_type_or_name_is_a_toml_error_on_its_line() {
    let err = parse_file(
        &format!("{RULE}allow = \"10.0.0.0/8\"\n"),
        "rules.toml",
        &StoreOptions::default(),
    )
    .err()
    .unwrap();
    assert!(err.starts_with("rules.toml:4: "), "{err}");
    let err = parse_file(
        &format!("{RULE}allowed = [\"10.0.0.0/8\"]\n"),
        "rules.toml",
        &StoreOptions::default(),
    )
    .err()
    .unwrap();
    assert!(
        err.starts_with("rules.toml:4: unknown field `allowed`"),
        "{err}"
    );
}

#[test]
fn a_list_file_of_100k_addresses_loads_and_finds_each() {
    let dir = tempfile::tempdir().unwrap();
    let address = |i: u32| std::net::Ipv4Addr::from(0x0b00_0000 + i * 3);
    let mut text = String::from("# 100,000 addresses\n");
    for i in 0..100_000 {
        text.push_str(&format!("{}\n", address(i)));
    }
    write(dir.path(), "many.txt", &text);
    let config = write(
        dir.path(),
        "rules.toml",
        &format!("{RULE}deny_file = \"many.txt\"\n"),
    );
    let file = load(&config).unwrap();
    let deny = &file.rules[0].lists.deny;
    assert_eq!(deny.len(), 100_000);
    for i in (0..100_000).step_by(1009) {
        assert!(deny.contains_address(address(i).into()));
        let between = std::net::Ipv4Addr::from(u32::from(address(i)) + 1);
        assert!(!deny.contains_address(between.into()));
    }
    assert!(deny.contains_address(address(99_999).into()));
}
