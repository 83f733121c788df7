//! The example config the README shows (docs/ratelimit/edge.yaml): it loads,
//! decides as the README says, and the README shows it as it is.

use limits::Algorithm;
use limits_server::rls::config::{RlsConfig, Unit};
use std::path::Path;

fn docs() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/ratelimit"))
}

#[test]
fn the_readme_shows_the_example_config_as_it_is() {
    let yaml = std::fs::read_to_string(docs().join("edge.yaml")).unwrap();
    let readme = std::fs::read_to_string(docs().join("../../README.md")).unwrap();
    assert!(
        readme.contains(&format!("```yaml\n{yaml}```")),
        "README.md's Envoy section must show docs/ratelimit/edge.yaml verbatim"
    );
}

#[test]
fn the_example_config_decides_as_the_readme_says() {
    let config = RlsConfig::load(docs()).unwrap();
    let per_ip = config
        .lookup("edge", &[("remote_address", "203.0.113.7")])
        .unwrap();
    let rule = per_ip.limit.rule.as_ref().unwrap();
    assert_eq!(
        rule.algorithm(),
        Algorithm::SlidingLog,
        "the file's algorithm"
    );
    assert_eq!(per_ip.limit.reported.requests_per_unit, 60);
    assert_eq!(per_ip.limit.reported.unit, Unit::Minute);

    let blocked = config
        .lookup("edge", &[("remote_address", "50.0.0.5")])
        .unwrap();
    assert!(blocked.limit.blocked && blocked.limit.rule.is_none());

    let login = config.lookup("edge", &[("path", "/login")]).unwrap();
    let rates = login.limit.rule.as_ref().unwrap().rates().as_slice();
    assert_eq!(rates.len(), 1);
    assert_eq!((rates[0].limit(), rates[0].window().as_secs()), (20, 300));

    let search = config.lookup("edge", &[("path", "/search")]).unwrap();
    let rule = search.limit.rule.as_ref().unwrap();
    assert_eq!(rule.algorithm(), Algorithm::TokenBucket, "per limit");
    let rates: Vec<(u64, u64)> = rule
        .rates()
        .iter()
        .map(|r| (r.limit(), r.window().as_secs()))
        .collect();
    assert_eq!(rates, [(5, 1), (1000, 3600)]);

    assert!(
        config.lookup("edge", &[("path", "/other")]).is_none(),
        "no limit"
    );
}
