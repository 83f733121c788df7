//! While a store is down (the failure policy answers) no rule decided, and
//! the layer sent `ratelimit-policy:` and `ratelimit:` with empty values. A
//! field is sent only when it has a value.

use crate::common;

use common::*;
use http::StatusCode;
use limits::{Algorithm, ManualClock, Mode, Rule, Store, StoreError, Verdict};
use limits_http::{FailurePolicy, LayerOptions, Policy};
use std::sync::Arc;

fn down() -> Arc<Down> {
    Arc::new(Down(Rule::new(
        Algorithm::SlidingLog,
        "5/s".parse().unwrap(),
    )))
}

/// The RateLimit fields of a response: each present, with its values.
fn ratelimit_fields(r: &http::Response<axum::body::Body>) -> Vec<(String, String)> {
    ["ratelimit-policy", "ratelimit", "x-ratelimit-limit"]
        .iter()
        .flat_map(|name| {
            r.headers()
                .get_all(*name)
                .iter()
                .map(move |v| (name.to_string(), v.to_str().unwrap().to_string()))
        })
        .collect()
}

fn with_policy(on_store_error: FailurePolicy, legacy_headers: bool) -> LayerOptions {
    LayerOptions {
        on_store_error,
        legacy_headers,
        ..LayerOptions::default()
    }
}

#[tokio::test]
async fn a_store_outage_let_through_sent_empty_ratelimit_fields() {
    for legacy in [false, true] {
        let mut policy = Policy::new(vec![rule("default", "/", "ip", down())]);
        policy.options = with_policy(FailurePolicy::Allow, legacy);
        let r = send(&app(policy), request("/", "192.0.2.1:1")).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(ratelimit_fields(&r), [], "legacy {legacy}");
    }
}

#[tokio::test]
async fn a_store_outage_denied_sends_retry_after_and_no_empty_ratelimit_fields() {
    let mut policy = Policy::new(vec![rule("default", "/", "ip", down())]);
    policy.options = with_policy(FailurePolicy::Deny, false);
    let r = send(&app(policy), request("/", "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&r, "retry-after"), "1");
    assert_eq!(ratelimit_fields(&r), []);
}

#[tokio::test]
async fn a_rule_whose_store_is_down_leaves_only_the_rules_that_decided() {
    let clock = ManualClock::new(0);
    let memory = |down| {
        let inner = store(Algorithm::SlidingLog, "5/s", &clock);
        Arc::new(Switch { inner, down })
    };
    let policy = Policy::new(vec![
        rule("down", "/", "ip", memory(true)),
        rule("up", "/", "ip", memory(false)),
    ]);
    let r = send(&app(policy), request("/", "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        ratelimit_fields(&r),
        [
            ("ratelimit-policy".into(), r#""up";q=5;w=1"#.into()),
            ("ratelimit".into(), r#""up";r=4;t=1"#.into()),
        ]
    );
}

/// A store in memory, or down.
struct Switch {
    inner: Arc<Memory>,
    down: bool,
}

impl Store for Switch {
    fn rule(&self) -> &Rule {
        self.inner.rule()
    }
    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        if self.down {
            return Err(StoreError::new("connection refused"));
        }
        Store::decide(&*self.inner, key, cost, mode).await
    }
}
