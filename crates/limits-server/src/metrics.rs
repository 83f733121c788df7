//! Prometheus metrics and the admin endpoint (`--admin ADDR`): decisions per
//! rule, decision latency (of a store over the network), keys tracked, evictions (and those of limited
//! keys, which each let a limited client start afresh: a sign that
//! `--max-keys` is too small), store, upstream and client errors,
//! unreadable client addresses, the Redis store's calls, errors and outages,
//! connections open and refused per listener. The admin endpoint that
//! serves them is `admin.rs`.

use crate::admin::{PageRecords, Second};
use crate::counts::set_count;
use crate::label_value::LabelValue;
use crate::listener::connection_caps::ConnectionMetrics;
use crate::memcached_metrics::MemcachedCounts;
use crate::proxy::ProxyErrors;
use crate::redis_metrics::{KindLabel, RedisGauges};
use crate::rules::{self, ServerRule};
use crate::store::StoreOptions;
use limits_http::{ListKind, Observer, Outcome, RuleObserver};
use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

// A rule's name is the operator's, but any text a rules file allows: it
// is escaped like every label value.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabel {
    rule: LabelValue,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    rule: LabelValue,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListedLabels {
    list: &'static str,
    rule: LabelValue,
}

/// Every metric of the server.
pub struct Metrics {
    registry: Registry,
    decisions: Family<DecisionLabels, Counter>,
    /// The `decisions` series by rule name and outcome, each created in the
    /// family on its first decision: counting one costs no label strings.
    decided: RwLock<Vec<(String, [OnceLock<Counter>; OUTCOMES])>>,
    latency: Histogram,
    keys: Family<RuleLabel, Gauge>,
    evictions: Family<RuleLabel, Counter>,
    limited_evictions: Family<RuleLabel, Counter>,
    bans: Family<RuleLabel, Counter>,
    store_errors: Family<RuleLabel, Counter>,
    upstream_errors: Family<KindLabel, Counter>,
    client_errors: Family<KindLabel, Counter>,
    unreadable_clients: Counter,
    listed: Family<ListedLabels, Counter>,
    redis: RedisGauges,
    memcached: MemcachedCounts,
    /// Connections open and refused, per listener.
    pub(crate) connections: ConnectionMetrics,
    /// What the admin listener's live page keeps of the decisions.
    pub(crate) dashboard: Arc<PageRecords>,
}

impl Metrics {
    /// Every metric at zero, registered under the `limits_` prefix.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("limits");
        let decisions = Family::<DecisionLabels, Counter>::default();
        let latency = Histogram::new(exponential_buckets(1e-6, 4.0, 10));
        let keys = Family::<RuleLabel, Gauge>::default();
        let evictions = Family::<RuleLabel, Counter>::default();
        let limited_evictions = Family::<RuleLabel, Counter>::default();
        let bans = Family::<RuleLabel, Counter>::default();
        let store_errors = Family::<RuleLabel, Counter>::default();
        let upstream_errors = Family::<KindLabel, Counter>::default();
        let client_errors = Family::<KindLabel, Counter>::default();
        let unreadable_clients = Counter::default();
        let listed = Family::<ListedLabels, Counter>::default();
        registry.register(
            "decisions",
            "Requests decided per rule: allowed, limited, banned (refused for a ban of the rule's penalty), would_limit (dry run), store_failed",
            decisions.clone(),
        );
        registry.register(
            "decision_seconds",
            "Time to decide one rule for one request, for the decisions awaited from a network store (Redis); decisions made at once (in memory, or a denial from Redis's deny cache) are counted in limits_decisions, not timed",
            latency.clone(),
        );
        registry.register("keys", "Keys tracked per rule", keys.clone());
        registry.register(
            "evictions",
            "Keys evicted by --max-keys per rule (each forgot its state); a reload that changes a rule starts its count again",
            evictions.clone(),
        );
        registry.register(
            "evictions_of_limited_keys",
            "Of the evictions, keys at their limit or denied: each let a limited client start afresh (zero unless --max-keys is too small)",
            limited_evictions.clone(),
        );
        registry.register(
            "bans",
            "Bans started per rule by its penalty (a key denied too often), by this instance's decisions (on a shared store, the instances' counts add up); a reload that changes a rule starts its count again",
            bans.clone(),
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
        registry.register(
            "client_errors",
            "Proxied requests that failed by the client's fault: bad_request_body (400)",
            client_errors.clone(),
        );
        registry.register(
            "unreadable_client_addresses",
            "Requests whose trusted forwarding header held an entry that is not an address (unknown, _hidden, garbage): keyed by the nearest trusted proxy",
            unreadable_clients.clone(),
        );
        registry.register(
            "listed",
            "Requests on an allow or deny list: list=allow, per rule a request passed unlimited (exempt); list=deny, per refusal (403), by the rule whose deny list it was, rule=\"\" for the file's own list",
            listed.clone(),
        );
        let redis = RedisGauges::register(&mut registry);
        let memcached = MemcachedCounts::register(&mut registry);
        let connections = ConnectionMetrics::register(&mut registry);
        Metrics {
            registry,
            decisions,
            decided: RwLock::new(Vec::new()),
            latency,
            keys,
            evictions,
            limited_evictions,
            bans,
            store_errors,
            upstream_errors,
            client_errors,
            unreadable_clients,
            listed,
            redis,
            memcached,
            connections,
            dashboard: Arc::new(PageRecords::new()),
        }
    }

    /// The decisions of the rule named `rule` so far: allowed, and refused
    /// (limited or banned); the page's seconds are their changes.
    pub(crate) fn totals(&self, rule: &str) -> Second {
        let count = |outcome| {
            let labels = DecisionLabels {
                rule: LabelValue::new(rule),
                outcome: outcome_slot(outcome).1.to_string(),
            };
            self.decisions.get(&labels).map_or(0, |c| c.get())
        };
        Second {
            allowed: count(Outcome::Allowed),
            limited: count(Outcome::Limited) + count(Outcome::Banned),
        }
    }

    /// Reads the counts the rules (those whose store is in this process)
    /// and the proxy keep, then encodes all.
    ///
    /// Those counts are kept where they happen (a rule's table, the proxy),
    /// not here: the series are set to them. They only grow, so they are
    /// exposed as counters; a rule replaced by a reload starts from zero,
    /// which Prometheus reads as a counter reset, as after a restart.
    pub fn render(
        &self,
        rules: &[ServerRule],
        upstream: Option<ProxyErrors>,
        stores: &StoreOptions,
    ) -> String {
        if let Some(redis) = &stores.redis {
            self.redis.update(redis);
        }
        if let Some(memcached) = &stores.memcached {
            self.memcached.update(memcached);
        }
        for (name, keys, evictions, limited) in rules::sizes(rules) {
            let label = RuleLabel {
                rule: LabelValue::new(name),
            };
            self.keys.get_or_create(&label).set(keys as i64);
            set_count(&self.evictions.get_or_create(&label), evictions);
            set_count(&self.limited_evictions.get_or_create(&label), limited);
        }
        for (name, bans) in rules::bans(rules) {
            let label = RuleLabel {
                rule: LabelValue::new(name),
            };
            set_count(&self.bans.get_or_create(&label), bans);
        }
        if let Some(errors) = upstream {
            let set = |family: &Family<KindLabel, Counter>, kind: &str, v: u64| {
                set_count(&family.get_or_create(&KindLabel { kind: kind.into() }), v);
            };
            set(&self.upstream_errors, "bad_gateway", errors.bad_gateway);
            set(
                &self.upstream_errors,
                "gateway_timeout",
                errors.gateway_timeout,
            );
            set(
                &self.client_errors,
                "bad_request_body",
                errors.bad_request_body,
            );
        }
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out = "# encoding failed\n".into();
        }
        out
    }
}

/// The `decisions` series of one outcome (its slot in a rule's series) and
/// its label.
fn outcome_slot(outcome: Outcome) -> (usize, &'static str) {
    match outcome {
        Outcome::Allowed => (0, "allowed"),
        Outcome::Limited => (1, "limited"),
        Outcome::WouldLimit => (2, "would_limit"),
        Outcome::StoreFailed => (3, "store_failed"),
        Outcome::Banned => (4, "banned"),
    }
}

/// How many outcomes `outcome_slot` has slots for.
const OUTCOMES: usize = 5;

/// The `decisions` series of `rule` and the outcome `name`, created in the
/// family if it is not there yet.
fn series(decisions: &Family<DecisionLabels, Counter>, rule: &str, name: &str) -> Counter {
    decisions
        .get_or_create(&DecisionLabels {
            rule: LabelValue::new(rule),
            outcome: name.to_string(),
        })
        .clone()
}

/// One rule's metrics, for the layer to count its decisions with
/// ([`Observer::rule_observer`]).
struct RuleSeries {
    rule: String,
    decisions: Family<DecisionLabels, Counter>,
    /// The rule's `decisions` series by outcome, each taken from the
    /// family on its first decision.
    series: [OnceLock<Counter>; OUTCOMES],
    store_errors: Family<RuleLabel, Counter>,
    latency: Histogram,
    dashboard: Arc<PageRecords>,
}

impl RuleObserver for RuleSeries {
    fn decided(&self, outcome: Outcome, latency: Duration) {
        self.decided_at_once(outcome);
        self.latency.observe(latency.as_secs_f64());
        self.dashboard.latency.record(latency);
    }

    /// Counted, not timed (see `decision_seconds`).
    fn decided_at_once(&self, outcome: Outcome) {
        let (slot, name) = outcome_slot(outcome);
        let create = || series(&self.decisions, &self.rule, name);
        self.series[slot].get_or_init(create).inc();
        if outcome == Outcome::StoreFailed {
            let rule = LabelValue::new(self.rule.clone());
            self.store_errors.get_or_create(&RuleLabel { rule }).inc();
        }
    }
}

impl Metrics {
    /// Counts one decision in the `decisions` series of `rule` and
    /// `outcome` (counted where it is held: no clone of the series).
    fn count_decision(&self, rule: &str, outcome: Outcome) {
        let (slot, name) = outcome_slot(outcome);
        let create = || series(&self.decisions, rule, name);
        let known = self.decided.read().unwrap_or_else(|e| e.into_inner());
        if let Some((_, series)) = known.iter().find(|(r, _)| r == rule) {
            series[slot].get_or_init(create).inc();
            return;
        }
        drop(known);
        let mut known = self.decided.write().unwrap_or_else(|e| e.into_inner());
        let index = match known.iter().position(|(r, _)| r == rule) {
            Some(i) => i,
            None => {
                known.push((rule.to_string(), Default::default()));
                known.len() - 1
            }
        };
        known[index].1[slot].get_or_init(create).inc();
    }
}

impl Observer for Metrics {
    /// The rule's series, each resolved on its first decision (as by name:
    /// a series appears with its first count), then counted with one
    /// relaxed add, with no lookup by name per request. A rule of the same name, before or after a reload, counts
    /// into the same series: the family holds them by labels.
    fn rule_observer(&self, rule: &str) -> Option<Box<dyn RuleObserver>> {
        Some(Box::new(RuleSeries {
            rule: rule.to_string(),
            decisions: self.decisions.clone(),
            series: Default::default(),
            store_errors: self.store_errors.clone(),
            latency: self.latency.clone(),
            dashboard: self.dashboard.clone(),
        }))
    }

    fn decided(&self, rule: &str, outcome: Outcome, latency: Duration) {
        self.decided_at_once(rule, outcome);
        self.latency.observe(latency.as_secs_f64());
        self.dashboard.latency.record(latency);
    }

    /// Kept for the live page's most-limited keys.
    fn refused(&self, rule: &str, key: &str, _: Outcome, retry_after: limits::RetryAfter) {
        (self.dashboard.top).refused(rule, key, retry_after, std::time::Instant::now());
    }

    /// Counted, not timed (see `decision_seconds`).
    fn decided_at_once(&self, rule: &str, outcome: Outcome) {
        self.count_decision(rule, outcome);
        if outcome == Outcome::StoreFailed {
            self.store_errors
                .get_or_create(&RuleLabel {
                    rule: LabelValue::new(rule),
                })
                .inc();
        }
    }

    fn unreadable_client_address(&self) {
        self.unreadable_clients.inc();
    }

    fn listed(&self, list: ListKind, rule: Option<&str>) {
        let labels = ListedLabels {
            list: list.as_str(),
            rule: LabelValue::new(rule.unwrap_or_default()),
        };
        self.listed.get_or_create(&labels).inc();
    }
}
