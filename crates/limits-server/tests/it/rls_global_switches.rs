//! The reference's global switches as `RlsOptions`: merged domains
//! (`MERGE_DOMAIN_CONFIG`, its `TestDomainMerge` and
//! `TestDuplicateKeyDomainMerge` with `merge_domain_key1.yaml` and
//! `merge_domain_key2.yaml`), the global shadow mode (`SHADOW_MODE`, its
//! `TestServiceQuotaModeWithShadowMode` and `TestServiceMixedModeWithShadowMode`)
//! and health only once a config is loaded
//! (`HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED`).

use crate::rls_common;

use limits_server::rls::config::{check_with, RlsConfig};
use limits_server::rls::RlsOptions;
use rls_common::*;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

/// The reference's `merge_domain_key1.yaml`.
const KEY1: &str = "# Basic configuration which will be merged with `merge_domain2.yaml`
domain: test-domain
descriptors:
  # Top level key/value which is not specified in `merge_domain2.yaml`
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 10
";

/// The reference's `merge_domain_key2.yaml`.
const KEY2: &str = "domain: test-domain
descriptors:
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 20
";

#[tokio::test]
async fn merge_domains_joins_the_files_of_one_domain() {
    let rls = Rls::start_with(KEY1, |c| {
        std::fs::write(c.config.join("merge_domain_key2.yaml"), KEY2).unwrap();
        c.options = RlsOptions::default().merge_domains(true);
    })
    .await;
    for (entry, limit) in [(("key1", "value1"), 10), (("key2", "value2"), 20)] {
        let r = rls.one("test-domain", &[entry], 0).await;
        assert_eq!(r.overall_code, OK);
        let reported = r.statuses[0].current_limit.clone().unwrap();
        assert_eq!(reported.requests_per_unit, limit, "{entry:?}");
    }
    // A descriptor neither file has stays without a limit.
    let r = rls.one("test-domain", &[("key3", "x")], 0).await;
    assert!(r.statuses[0].current_limit.is_none());
}

#[test]
fn merged_or_not_a_descriptor_given_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), KEY1).unwrap();
    std::fs::write(dir.path().join("b.yaml"), KEY1).unwrap();
    let merge = RlsOptions::default().merge_domains(true);
    let e = RlsConfig::load_with(dir.path(), &merge).unwrap_err();
    let b = dir.path().join("b.yaml").display().to_string();
    assert!(
        e.starts_with(&format!(
            "{b}:5: duplicate descriptor composite key 'test-domain.key1_value1'"
        )),
        "{e}"
    );
    // The config check reads the files the same way.
    let problems = check_with(dir.path(), &merge).unwrap_err();
    assert_eq!(problems, [e]);
    // Without the switch, the second file of a domain is refused.
    let e = RlsConfig::load_with(dir.path(), &RlsOptions::default()).unwrap_err();
    assert!(e.contains("duplicate domain 'test-domain'"), "{e}");
    std::fs::write(dir.path().join("b.yaml"), KEY2).unwrap();
    assert!(RlsConfig::load_with(dir.path(), &RlsOptions::default()).is_err());
    let merged = RlsConfig::load_with(dir.path(), &merge).unwrap();
    assert_eq!(merged.limits().count(), 2);
}

const ONE_AN_HOUR: &str = "
domain: d
descriptors:
  - key: regular
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: quota
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
";

#[tokio::test]
async fn global_shadow_mode_answers_ok_and_counts_what_it_let_through() {
    let rls = Rls::start_with(ONE_AN_HOUR, |c| {
        c.admin = Some("127.0.0.1:0".parse().unwrap());
        c.options = RlsOptions::default().global_shadow(true);
    })
    .await;
    let two = || {
        request(
            "d",
            vec![
                descriptor(&[("regular", "a")]),
                descriptor(&[("quota", "a")]),
            ],
            0,
        )
    };
    let r = rls.call(two()).await.unwrap();
    assert_eq!(r.overall_code, OK);
    // Both over: the request passes, the statuses still say so.
    let r = rls.call(two()).await.unwrap();
    assert_eq!(r.overall_code, OK);
    let codes: Vec<i32> = r.statuses.iter().map(|s| s.code).collect();
    assert_eq!(codes, [OVER, OVER]);
    let text = rls.metrics().await;
    assert_eq!(
        metric(&text, "limits_rls_global_shadow_mode_total"),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &text,
            "limits_rls_over_limit_total{descriptor=\"d.regular\"}"
        ),
        Some(1.0)
    );
}

async fn health_of(rls: &Rls) -> Vec<ServingStatus> {
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", rls.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let mut statuses = Vec::new();
    for service in [
        "",
        "ratelimit",
        "envoy.service.ratelimit.v3.RateLimitService",
    ] {
        let r = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap();
        statuses.push(r.into_inner().status());
    }
    statuses
}

/// Health, asked until it says `want` (it follows a reload at once, but
/// through a task of the server).
async fn health_becomes(rls: &Rls, want: ServingStatus) -> Vec<ServingStatus> {
    let mut last = Vec::new();
    for _ in 0..100 {
        last = health_of(rls).await;
        if last.iter().all(|s| *s == want) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    last
}

#[tokio::test]
async fn healthy_with_at_least_one_config_waits_for_a_domain() {
    let yaml = "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n";
    let rls = Rls::start_with(yaml, |c| {
        // A ConfigMap not mounted yet: no file at all.
        std::fs::remove_file(c.config.join("config.yaml")).unwrap();
        c.options = RlsOptions::default().healthy_with_at_least_one_config(true);
    })
    .await;
    let not = ServingStatus::NotServing;
    assert_eq!(health_of(&rls).await, [not, not, not]);
    // Calls are answered meanwhile: no domain, no limit.
    assert_eq!(rls.one("edge", &[("k", "v")], 0).await.overall_code, OK);

    std::fs::write(config_file(&rls.dir), yaml).unwrap();
    rls.reloader.reload().unwrap();
    let serving = ServingStatus::Serving;
    assert_eq!(health_becomes(&rls, serving).await, [serving; 3]);
    assert_eq!(rls.codes("edge", &[("k", "v")], 2).await, [OK, OVER]);
}

#[test]
fn without_the_switch_an_empty_directory_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = RlsConfig::load_with(dir.path(), &RlsOptions::default()).unwrap_err();
    assert!(e.contains("no *.yaml or *.yml file"), "{e}");
    let waiting = RlsOptions::default().healthy_with_at_least_one_config(true);
    let config = RlsConfig::load_with(dir.path(), &waiting).unwrap();
    assert!(config.is_empty());
}
