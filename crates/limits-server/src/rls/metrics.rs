//! The metrics of `limits rls`, named as the reference service names its
//! stats where they mean the same (`total_hits`, `over_limit`,
//! `near_limit`, `within_limit`, `shadow_mode`), counted in hits (a request
//! of hits_addend 5 counts 5), per limit (label `descriptor`: the limit's
//! id, "DOMAIN.key_value.key2"), or per descriptor value for a limit with
//! `detailed_metric: true` (the request's own entries). Plus: decision
//! latency, store errors, keys held, connections, and the Redis store's
//! health.
//!
//! Series named after a client's values are capped per family (see
//! `metric_series`), and every label value is escaped as the exposition
//! format requires (`label_value`), so a client's value can neither grow
//! the scrape without bound nor break it.
//!
//! One difference in meaning, from the exactness of our limiters: a denied
//! request takes nothing (all or nothing), so `over_limit` counts every hit
//! of a denied request, and `near_limit` the admitted hits that landed past
//! 80% of the limit (the reference's default `NEAR_LIMIT_RATIO`).

use super::config::Matched;
use super::limits::RlsLimits;
use super::metric_series::{DescriptorLabel, SeriesCap};
use super::DEFAULT_MAX_METRIC_SERIES;
use crate::admin::{PageRecords, Second};
use crate::label_value::LabelValue;
use crate::listener::connection_caps::ConnectionMetrics;
use crate::memcached_metrics::MemcachedCounts;
use crate::redis_metrics::RedisGauges;
use crate::store::StoreOptions;
use limits::Store;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// What one decided descriptor adds to the counters, in hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hits {
    /// Every hit asked for.
    pub total: u64,
    /// Hits of a denied request past the limit (counted also when shadow
    /// mode let it pass).
    pub over: u64,
    /// Hits past 80% of the limit, up to it: admitted ones, and those of a
    /// denied request below the limit.
    pub near: u64,
    /// Admitted hits.
    pub within: u64,
    /// Hits over the limit that shadow mode let through.
    pub shadow: u64,
}

/// Every metric of `limits rls`, under the `limits_rls_` prefix.
pub struct RlsMetrics {
    registry: Registry,
    total: Family<DescriptorLabel, Counter>,
    over: Family<DescriptorLabel, Counter>,
    near: Family<DescriptorLabel, Counter>,
    within: Family<DescriptorLabel, Counter>,
    shadow: Family<DescriptorLabel, Counter>,
    store_errors: Family<DescriptorLabel, Counter>,
    latency: Histogram,
    global_shadow: Counter,
    keys: Family<DescriptorLabel, Gauge>,
    redis: RedisGauges,
    memcached: MemcachedCounts,
    series: SeriesCap,
    /// Connections open and refused, per listener.
    pub(crate) connections: ConnectionMetrics,
    /// What the admin listener's live page keeps of the decisions.
    pub(crate) page: std::sync::Arc<PageRecords>,
}

impl Default for RlsMetrics {
    fn default() -> RlsMetrics {
        RlsMetrics::with_series_cap(DEFAULT_MAX_METRIC_SERIES)
    }
}

impl RlsMetrics {
    /// Every metric at zero; at most `max_series` series per family named
    /// after descriptor values.
    pub fn with_series_cap(max_series: usize) -> RlsMetrics {
        let mut registry = Registry::with_prefix("limits_rls");
        let counters = [
            (
                "total_hits",
                "Hits asked for, per limit (or per descriptor with detailed_metric)",
            ),
            (
                "over_limit",
                "Hits of denied requests (with shadow mode: hits that would have been denied)",
            ),
            ("near_limit", "Admitted hits past 80% of the limit"),
            ("within_limit", "Admitted hits"),
            (
                "shadow_mode",
                "Hits over the limit let through by shadow_mode",
            ),
            (
                "store_errors",
                "Decisions the store could not make (answered per --on-store-error)",
            ),
        ];
        let families: Vec<Family<DescriptorLabel, Counter>> =
            counters.iter().map(|_| Family::default()).collect();
        for ((name, help), family) in counters.iter().zip(&families) {
            registry.register(*name, *help, family.clone());
        }
        let latency = Histogram::new(exponential_buckets(1e-6, 4.0, 10));
        registry.register(
            "decision_seconds",
            "Time to decide one descriptor (store included)",
            latency.clone(),
        );
        let global_shadow = Counter::default();
        registry.register(
            "global_shadow_mode",
            "Requests over a limit answered OK by the global shadow mode (the reference's global_shadow_mode)",
            global_shadow.clone(),
        );
        let keys = Family::<DescriptorLabel, Gauge>::default();
        registry.register(
            "keys",
            "Keys tracked per limit (in-memory stores)",
            keys.clone(),
        );
        let redis = RedisGauges::register(&mut registry);
        let memcached = MemcachedCounts::register(&mut registry);
        let folded = Counter::default();
        registry.register(
            "metric_values_folded",
            "Descriptor decisions counted under the descriptor label other: their detailed_metric value would have made a series beyond --max-metric-series",
            folded.clone(),
        );
        let series = SeriesCap::new(max_series, folded);
        let connections = ConnectionMetrics::register(&mut registry);
        let mut it = families.into_iter();
        let mut next = || it.next().unwrap_or_default();
        RlsMetrics {
            total: next(),
            over: next(),
            near: next(),
            within: next(),
            shadow: next(),
            store_errors: next(),
            registry,
            latency,
            global_shadow,
            keys,
            redis,
            memcached,
            series,
            connections,
            page: std::sync::Arc::new(PageRecords::new()),
        }
    }

    /// The hits of the limit `id` so far: admitted, and over its limit.
    pub(crate) fn totals(&self, id: &str) -> Second {
        let label = DescriptorLabel {
            descriptor: LabelValue::new(id),
        };
        let count =
            |family: &Family<DescriptorLabel, Counter>| family.get(&label).map_or(0, |c| c.get());
        Second {
            allowed: count(&self.within),
            limited: count(&self.over),
        }
    }

    /// Keeps a refusal of `key` by the limit `id` for the live page.
    pub(crate) fn refused(&self, id: &str, key: &str, retry_after: limits::RetryAfter) {
        (self.page.top).refused(id, key, retry_after, std::time::Instant::now());
    }

    /// The label the decisions of `matched` are counted under (its limit's
    /// id, its detailed name, or `other` beyond the cap).
    pub(crate) fn label(&self, matched: &Matched<'_>) -> DescriptorLabel {
        self.series.label(matched)
    }

    /// Counts one decided descriptor's `hits` under `label`, and how long
    /// it took.
    pub(crate) fn decided(&self, label: &DescriptorLabel, hits: Hits, latency: Duration) {
        for (family, n) in [
            (&self.total, hits.total),
            (&self.over, hits.over),
            (&self.near, hits.near),
            (&self.within, hits.within),
            (&self.shadow, hits.shadow),
        ] {
            // Create every series at its first hit, even at 0, so that a
            // dashboard sees it before anything is over.
            family.get_or_create(label).inc_by(n);
        }
        self.latency.observe(latency.as_secs_f64());
        self.page.latency.record(latency);
    }

    /// Counts a request over a limit that the global shadow mode let pass.
    pub(crate) fn global_shadow(&self) {
        self.global_shadow.inc();
    }

    /// Counts a decision the store of `label` could not make.
    pub(crate) fn store_failed(&self, label: &DescriptorLabel, latency: Duration) {
        self.store_errors.get_or_create(label).inc();
        self.latency.observe(latency.as_secs_f64());
    }

    /// Reads the gauges (keys per in-memory store, the Redis connection's
    /// counters, the Memcached client's), then encodes everything in the
    /// OpenMetrics text format.
    pub fn render(&self, limits: &RlsLimits, stores: &StoreOptions) -> String {
        for (id, store) in limits.stores() {
            if let Some(local) = store.local() {
                let label = DescriptorLabel {
                    descriptor: LabelValue::new(id),
                };
                self.keys
                    .get_or_create(&label)
                    .set(i64::try_from(local.len()).unwrap_or(i64::MAX));
            }
        }
        if let Some(redis) = &stores.redis {
            self.redis.update(redis);
        }
        if let Some(memcached) = &stores.memcached {
            self.memcached.update(memcached);
        }
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out = "# encoding failed\n".into();
        }
        out
    }
}
