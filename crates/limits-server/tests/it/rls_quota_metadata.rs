//! `quota_mode` and `metadata`, as the reference's service tests have them
//! (`TestServicePerDescriptorQuotaMode`, `TestServiceQuotaModeOnly*`, the
//! quota groups of `TestServiceQuotaModeSameGroup*` and `MultiModel*`, the
//! dynamic metadata of `TestQuotaMetadata*`), against real limits over gRPC,
//! and the reference's example configs loading as they are.

use crate::rls_common;

use limits_server::rls::proto::rate_limit_response::RateLimit;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitResponse};
use limits_server::rls::{RlsOptions, RlsServerConfig};
use prost_types::value::Kind;
use prost_types::{Struct, Value};
use rls_common::*;

/// The reference's `examples/ratelimit/config/example.yaml`, newest stored.
const EXAMPLE: &str = "---
domain: rl
descriptors:
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: mock
        rate_limit:
          unit: minute
          requests_per_unit: 1
  - key: foo
    rate_limit:
      unit: minute
      requests_per_unit: 2
    descriptors:
      - key: bar
        rate_limit:
          unit: minute
          requests_per_unit: 3
      - key: bar
        value: banned
        rate_limit:
          unit: minute
          requests_per_unit: 0
      - key: baz
        rate_limit:
          unit: second
          requests_per_unit: 1
      - key: bay
        rate_limit:
          unlimited: true
      - key: baz
        value: shady
        rate_limit:
          unit: minute
          requests_per_unit: 1
        shadow_mode: true
  - key: qux
    rate_limit:
      unlimited: true
";

/// The reference's `examples/ratelimit/config/quota.yaml`.
const QUOTA_EXAMPLE: &str = "---
domain: quota
descriptors:
  - key: service
    value: service_1
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: service
    value: service_2
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 2
";

/// The reference's `test/config/metadata.yaml`.
const METADATA: &str = "domain: test-domain
descriptors:
  # Top level key/value with no default rate limit.
  - key: key1
    value: value1
    descriptors:
      # 2nd level key only with default rate limit.
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5
        metadata:
          name: service_1

      # 2nd level key/value with limit. Specific override at 2nd level.
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10

  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
    metadata:
      service_with_quota:
        name: service_2
";

fn with_metadata(c: &mut RlsServerConfig) {
    c.options = RlsOptions::default().response_dynamic_metadata(true);
}

#[tokio::test]
async fn the_reference_example_configs_load_and_answer() {
    let rls = Rls::start_with(EXAMPLE, |c| {
        std::fs::write(c.config.join("quota.yaml"), QUOTA_EXAMPLE).unwrap();
        std::fs::write(c.config.join("metadata.yaml"), METADATA).unwrap();
    })
    .await;
    let codes = rls.codes("rl", &[("foo", "x"), ("bar", "banned")], 1).await;
    assert_eq!(codes, [OVER]);
    let codes = rls.codes("rl", &[("foo", "x"), ("bay", "y")], 3).await;
    assert_eq!(codes, [OK, OK, OK]);
    // A request whose only descriptor is in quota mode is over when that
    // descriptor is: every quota group of it is over.
    let codes = rls.codes("quota", &[("service", "service_1")], 2).await;
    assert_eq!(codes, [OK, OVER]);
    let r = rls.one("test-domain", &[("key2", "any")], 0).await;
    assert_eq!(r.overall_code, OK);
}

const QUOTA: &str = "
domain: quota-domain
descriptors:
  - key: regular
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: quota1
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: quota2
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: backend_name
    descriptors:
      - key: model_name_override
        descriptors:
          - key: tenant
            quota_mode: true
            rate_limit: {unit: hour, requests_per_unit: 1}
            metadata: {name: tenant_bucket}
          - key: default
            quota_mode: true
            rate_limit: {unit: hour, requests_per_unit: 5}
            metadata: {name: default_bucket}
";

fn codes_of(r: &RateLimitResponse) -> (i32, Vec<i32>) {
    (r.overall_code, r.statuses.iter().map(|s| s.code).collect())
}

async fn both(rls: &Rls, a: &[(&str, &str)], b: &[(&str, &str)]) -> RateLimitResponse {
    rls.call(request(
        "quota-domain",
        vec![descriptor(a), descriptor(b)],
        0,
    ))
    .await
    .unwrap()
}

#[tokio::test]
async fn quota_descriptors_over_report_it_and_the_request_is_over_when_all_are() {
    let rls = Rls::start(QUOTA).await;
    let (q1, q2) = ([("quota1", "limit")], [("quota2", "limit")]);
    // Both under.
    assert_eq!(codes_of(&both(&rls, &q1, &q2).await), (OK, vec![OK, OK]));
    // TestServiceQuotaModeOnlySomeOverTheLimit: one over, the request passes.
    assert_eq!(codes_of(&both(&rls, &q1, &q2).await), (OK, vec![OVER, OK]));
    // TestServiceQuotaModeOnlyAllOverTheLimit.
    assert_eq!(
        codes_of(&both(&rls, &q1, &q2).await),
        (OVER, vec![OVER, OVER])
    );
}

#[tokio::test]
async fn a_descriptor_not_in_quota_mode_over_makes_the_request_over() {
    let rls = Rls::start(QUOTA).await;
    let (regular, quota) = ([("regular", "limit")], [("quota2", "limit")]);
    assert_eq!(
        codes_of(&both(&rls, &regular, &quota).await),
        (OK, vec![OK, OK])
    );
    // TestServicePerDescriptorQuotaMode: the regular one over, the quota
    // one under: over.
    assert_eq!(
        codes_of(&both(&rls, &regular, &quota).await),
        (OVER, vec![OVER, OK])
    );
}

fn bucket<'a>(backend: &'a str, model: &'a str, bucket: &'a str) -> [(&'a str, &'a str); 3] {
    [
        ("backend_name", backend),
        ("model_name_override", model),
        (bucket, bucket),
    ]
}

fn metadata_field<'a>(r: &'a RateLimitResponse, name: &str) -> Option<&'a Kind> {
    r.dynamic_metadata.as_ref()?.fields.get(name)?.kind.as_ref()
}

fn string(v: &Value) -> &str {
    match &v.kind {
        Some(Kind::StringValue(s)) => s,
        other => panic!("not a string: {other:?}"),
    }
}

fn strct(kind: Option<&Kind>) -> &Struct {
    match kind {
        Some(Kind::StructValue(s)) => s,
        other => panic!("not a struct: {other:?}"),
    }
}

/// The (backend, model) pairs of `passedBackends`.
fn passed_backends(r: &RateLimitResponse) -> Vec<(String, String)> {
    let Some(Kind::ListValue(list)) = metadata_field(r, "passedBackends") else {
        return Vec::new();
    };
    list.values
        .iter()
        .map(|v| {
            let s = strct(v.kind.as_ref());
            (
                string(&s.fields["backend_name"]).to_string(),
                string(&s.fields["model_name_override"]).to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn quota_groups_are_per_model_and_a_request_fails_over_to_a_model_with_quota() {
    let rls = Rls::start_with(QUOTA, with_metadata).await;
    let group = |model: &'static str| {
        vec![
            descriptor(&bucket("ns/be", model, "tenant")),
            descriptor(&bucket("ns/be", model, "default")),
        ]
    };
    let call =
        |descriptors: Vec<RateLimitDescriptor>| rls.call(request("quota-domain", descriptors, 0));
    // Model a: its tenant bucket (1 an hour) passes once.
    let r = call(group("model-a")).await.unwrap();
    assert_eq!(codes_of(&r), (OK, vec![OK, OK]));
    // TestServiceQuotaModeSameGroupTenantOverDefaultOk: the tenant bucket
    // over puts the whole model over, though its default bucket passes.
    let r = call(group("model-a")).await.unwrap();
    assert_eq!(codes_of(&r), (OVER, vec![OVER, OK]));
    // TestServiceQuotaModeMultiModelFailover and
    // TestQuotaMetadataExcludesExhaustedGroup: model b still has quota, so
    // the request passes and only model b is advertised.
    let both = [group("model-a"), group("model-b")].concat();
    let r = call(both.clone()).await.unwrap();
    assert_eq!(codes_of(&r), (OK, vec![OVER, OK, OK, OK]));
    assert_eq!(
        passed_backends(&r),
        [("ns/be".to_string(), "model-b".to_string())]
    );
    let merged = strct(metadata_field(&r, "metadata"));
    // Only model b's buckets passed; the first to give a field keeps it.
    assert_eq!(string(&merged.fields["name"]), "tenant_bucket");
    // TestServiceQuotaModeMultiModelAllOver: model b's tenant bucket over
    // too: every group over.
    let r = call(both).await.unwrap();
    assert_eq!(r.overall_code, OVER);
    assert!(passed_backends(&r).is_empty());
}

#[tokio::test]
async fn global_quota_mode_puts_every_descriptor_in_quota_mode() {
    let rls = Rls::start_with(QUOTA, |c| {
        c.options = RlsOptions::default().global_quota(true);
    })
    .await;
    let (regular, quota) = ([("regular", "limit")], [("quota2", "limit")]);
    assert_eq!(
        codes_of(&both(&rls, &regular, &quota).await),
        (OK, vec![OK, OK])
    );
    // The regular limit over is now a quota group over, the other has quota.
    assert_eq!(
        codes_of(&both(&rls, &regular, &quota).await),
        (OK, vec![OVER, OK])
    );
}

#[tokio::test]
async fn dynamic_metadata_carries_the_request_and_the_metadata_of_those_that_passed() {
    let rls = Rls::start_with(METADATA, with_metadata).await;
    let first = [("key1", "value1"), ("subkey1", "x")];
    let second = [("key2", "y")];
    let r = rls
        .call(request(
            "test-domain",
            vec![descriptor(&first), descriptor(&second)],
            0,
        ))
        .await
        .unwrap();
    assert_eq!(r.overall_code, OK);
    let Some(Kind::StringValue(domain)) = metadata_field(&r, "domain") else {
        panic!("no domain: {r:?}")
    };
    assert_eq!(domain, "test-domain");
    let Some(Kind::ListValue(descriptors)) = metadata_field(&r, "descriptors") else {
        panic!("no descriptors")
    };
    let entries = strct(descriptors.values[0].kind.as_ref());
    let Some(Kind::ListValue(entries)) = &entries.fields["entries"].kind else {
        panic!("no entries")
    };
    let entries: Vec<&str> = entries.values.iter().map(string).collect();
    assert_eq!(entries, ["key1=value1", "subkey1=x"]);
    // hits_addend 0 (unset) is left out, as the reference leaves it.
    assert!(metadata_field(&r, "hitsAddend").is_none());
    let merged = strct(metadata_field(&r, "metadata"));
    assert_eq!(string(&merged.fields["name"]), "service_1");
    let inner = strct(merged.fields["service_with_quota"].kind.as_ref());
    assert_eq!(string(&inner.fields["name"]), "service_2");

    // The first descriptor over (6 hits of 5 a second): its metadata goes,
    // the other's stays; the descriptor's own hits_addend is shown.
    let mut heavy = descriptor(&first);
    heavy.hits_addend = Some(6);
    let r = rls
        .call(request("test-domain", vec![heavy, descriptor(&second)], 0))
        .await
        .unwrap();
    assert_eq!(codes_of(&r), (OVER, vec![OVER, OK]));
    let merged = strct(metadata_field(&r, "metadata"));
    assert!(!merged.fields.contains_key("name"), "{merged:?}");
    assert!(merged.fields.contains_key("service_with_quota"));
    let Some(Kind::ListValue(descriptors)) = metadata_field(&r, "descriptors") else {
        panic!("no descriptors")
    };
    let first = strct(descriptors.values[0].kind.as_ref());
    assert_eq!(
        first.fields["hitsAddend"].kind,
        Some(Kind::NumberValue(6.0))
    );
}

#[tokio::test]
async fn without_the_switch_answers_carry_no_dynamic_metadata() {
    let rls = Rls::start(METADATA).await;
    let r = rls.one("test-domain", &[("key2", "y")], 0).await;
    assert_eq!(r.overall_code, OK);
    assert!(r.dynamic_metadata.is_none());
    // The limit reported is the one configured, metadata or not.
    let reported: Option<RateLimit> = r.statuses[0].current_limit.clone();
    assert_eq!(reported.map(|l| l.requests_per_unit), Some(20));
}
