//! Prometheus metrics and the admin endpoint (`--admin ADDR`): decisions per
//! rule, decision latency, keys tracked, evictions (and those of limited
//! keys, which each let a limited client start afresh: a sign that
//! `--max-keys` is too small), store and upstream errors; `/healthz` for
//! load balancers.

use super::rules::RuleSet;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use limits_http::{Observer, Outcome};
use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabel {
    rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    rule: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

/// Every metric of the server.
pub struct Metrics {
    registry: Registry,
    decisions: Family<DecisionLabels, Counter>,
    latency: Histogram,
    keys: Family<RuleLabel, Gauge>,
    evictions: Family<RuleLabel, Gauge>,
    limited_evictions: Family<RuleLabel, Gauge>,
    store_errors: Family<RuleLabel, Counter>,
    upstream_errors: Family<KindLabel, Gauge>,
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("limits");
        let decisions = Family::<DecisionLabels, Counter>::default();
        let latency = Histogram::new(exponential_buckets(1e-6, 4.0, 10));
        let keys = Family::<RuleLabel, Gauge>::default();
        let evictions = Family::<RuleLabel, Gauge>::default();
        let limited_evictions = Family::<RuleLabel, Gauge>::default();
        let store_errors = Family::<RuleLabel, Counter>::default();
        let upstream_errors = Family::<KindLabel, Gauge>::default();
        registry.register(
            "decisions",
            "Requests decided per rule: allowed, limited, would_limit (dry run), store_failed",
            decisions.clone(),
        );
        registry.register(
            "decision_seconds",
            "Time to decide one rule for one request",
            latency.clone(),
        );
        registry.register("keys", "Keys tracked per rule", keys.clone());
        registry.register(
            "evictions",
            "Keys evicted by --max-keys per rule (each forgot its state)",
            evictions.clone(),
        );
        registry.register(
            "evictions_of_limited_keys",
            "Of the evictions, keys at their limit or denied: each let a limited client start afresh (zero unless --max-keys is too small)",
            limited_evictions.clone(),
        );
        registry.register(
            "store_errors",
            "Decisions the store could not make",
            store_errors.clone(),
        );
        registry.register(
            "upstream_errors",
            "Proxied requests that failed: bad_gateway (502), gateway_timeout (504)",
            upstream_errors.clone(),
        );
        Metrics {
            registry,
            decisions,
            latency,
            keys,
            evictions,
            limited_evictions,
            store_errors,
            upstream_errors,
        }
    }

    /// Reads the gauges from the rules and the proxy, then encodes all.
    pub fn render(&self, rules: &RuleSet, upstream: Option<(u64, u64)>) -> String {
        for (name, keys, evictions, limited) in rules.sizes() {
            let label = RuleLabel { rule: name };
            self.keys.get_or_create(&label).set(keys as i64);
            self.evictions.get_or_create(&label).set(evictions as i64);
            self.limited_evictions
                .get_or_create(&label)
                .set(limited as i64);
        }
        if let Some((bad_gateway, timeout)) = upstream {
            let set = |kind: &str, v: u64| {
                self.upstream_errors
                    .get_or_create(&KindLabel { kind: kind.into() })
                    .set(v as i64)
            };
            set("bad_gateway", bad_gateway);
            set("gateway_timeout", timeout);
        }
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out = "# encoding failed\n".into();
        }
        out
    }
}

impl Observer for Metrics {
    fn decided(&self, rule: &str, outcome: Outcome, latency: Duration) {
        let outcome_name = match outcome {
            Outcome::Allowed => "allowed",
            Outcome::Limited => "limited",
            Outcome::WouldLimit => "would_limit",
            Outcome::StoreFailed => "store_failed",
        };
        self.decisions
            .get_or_create(&DecisionLabels {
                rule: rule.to_string(),
                outcome: outcome_name.to_string(),
            })
            .inc();
        if outcome == Outcome::StoreFailed {
            self.store_errors
                .get_or_create(&RuleLabel { rule: rule.into() })
                .inc();
        }
        self.latency.observe(latency.as_secs_f64());
    }
}

/// `/metrics` and `/healthz`.
pub fn admin_router(render: Arc<dyn Fn() -> String + Send + Sync>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let text = render();
                async move {
                    (
                        [(
                            CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    )
                        .into_response()
                }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
}
