//! `/dashboard.json`: what the live page shows, read from what the server
//! already keeps (the rules in force, their counts and sizes, the store's
//! health) and from the page's own bounded records (the most-limited keys,
//! the seconds of each rule, the latencies). Nothing in it changes state,
//! and it is bounded: at most [`MAX_RULES`] rules of five minutes of seconds
//! each, and [`MAX_KEYS`] keys.

use super::history::{Second, SECONDS};
use super::top_limited::LimitedKey;
use super::PageRecords;
use crate::metrics::Metrics;
use crate::rules::{self, ServerRule};
use crate::store::StoreOptions;
use limits_http::{FailurePolicy, LayerOptions};
use limits_redis::Fallback;
use serde::Serialize;
use std::time::Instant;

/// The most rules the page gets (a file of many tiers can have hundreds).
pub(crate) const MAX_RULES: usize = 100;
/// The most-limited keys the page gets.
pub(crate) const MAX_KEYS: usize = 10;

/// The whole page's data at one moment.
#[derive(Serialize)]
pub(crate) struct Snapshot {
    /// How many seconds a rule's `per_second` holds at most (the chart's
    /// width), the last one the last whole second.
    pub seconds: usize,
    pub rules: Vec<RuleView>,
    /// Rules in force beyond [`MAX_RULES`], not shown.
    pub more_rules: usize,
    pub limited_keys: Vec<LimitedKey>,
    pub store: StoreView,
    /// The decisions awaited from a network store; `None` before any (in
    /// memory, decisions are made at once and not timed).
    pub latency: Option<LatencyView>,
    pub dry_run: bool,
}

/// One rule: as written, its totals, its size and its last seconds.
#[derive(Serialize)]
pub(crate) struct RuleView {
    pub name: String,
    /// The rule in words, as `--check-config` prints it.
    pub description: String,
    pub allowed_total: u64,
    /// Limited and banned.
    pub limited_total: u64,
    /// Keys held and evictions, for a store in this process.
    pub keys: Option<usize>,
    pub evictions: Option<u64>,
    pub per_second: Vec<Second>,
}

/// The shared store's health and what answers while it is out.
#[derive(Serialize)]
pub(crate) struct StoreView {
    /// `memory`, `redis` or `memcached`: where rules go unless they say.
    pub kind: &'static str,
    /// Whether the shared store answers (always, in memory).
    pub healthy: bool,
    /// Memcached servers that do not answer.
    pub unreachable: Vec<String>,
    /// This host's clock against the store's (Redis's `TIME`, or the other
    /// instances' on memcached), in milliseconds, if measured.
    pub clock_offset_ms: Option<f64>,
    /// What answers a request while the shared store is out: `local`,
    /// `allow` or `deny`; `None` in memory, which is never out.
    pub on_store_error: Option<&'static str>,
    /// Whether Redis may evict keys (its `maxmemory-policy`).
    pub evictable: bool,
}

/// Decision latency quantiles, in milliseconds.
#[derive(Serialize)]
pub(crate) struct LatencyView {
    pub timed: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// One rule (a limit, for `rls`) as the page shows it, before its seconds.
pub(crate) struct RuleRow {
    pub name: String,
    pub description: String,
    /// Its running totals (the seconds are their changes).
    pub totals: Second,
    /// Keys held and evictions, for a store in this process.
    pub size: Option<(usize, u64)>,
}

/// The page's data now: `rows` (the first [`MAX_RULES`] of `count`), the
/// page's own records, and the store.
pub(crate) fn snapshot(
    rows: impl Iterator<Item = RuleRow>,
    count: usize,
    records: &PageRecords,
    store: StoreView,
    dry_run: bool,
    now: Instant,
) -> Snapshot {
    let views = (rows.take(MAX_RULES))
        .map(|row| RuleView {
            per_second: records.history.of(&row.name),
            name: row.name,
            description: row.description,
            allowed_total: row.totals.allowed,
            limited_total: row.totals.limited,
            keys: row.size.map(|s| s.0),
            evictions: row.size.map(|s| s.1),
        })
        .collect();
    let latency = |q| records.latency.quantile(q);
    let latency = latency(0.5)
        .zip(latency(0.99))
        .map(|((timed, p50), (_, p99))| LatencyView {
            timed,
            p50_ms: p50.as_secs_f64() * 1e3,
            p99_ms: p99.as_secs_f64() * 1e3,
        });
    Snapshot {
        seconds: SECONDS,
        rules: views,
        more_rules: count.saturating_sub(MAX_RULES),
        limited_keys: records.top.most(MAX_KEYS, now),
        store,
        latency,
        dry_run,
    }
}

/// `serve`'s rules as the page shows them.
pub(crate) fn serve_rows<'a>(
    rules: &'a [ServerRule],
    metrics: &'a Metrics,
) -> impl Iterator<Item = RuleRow> + 'a {
    let sizes = rules::sizes(rules);
    rules.iter().map(move |rule| RuleRow {
        name: rule.name.clone(),
        description: rules::describe(rule),
        totals: metrics.totals(&rule.name),
        size: (sizes.iter())
            .find(|s| s.0 == rule.name)
            .map(|s| (s.1, s.2)),
    })
}

/// The shared store's health, and what answers while it is out: `local`
/// when its stores fall back to this process, else `otherwise` (the
/// caller's policy: `allow`, `deny`, `unavailable`).
pub(crate) fn store_view(stores: &StoreOptions, otherwise: &'static str) -> StoreView {
    let answer = |local: bool| Some(if local { "local" } else { otherwise });
    if let Some(redis) = &stores.redis {
        return StoreView {
            kind: "redis",
            healthy: redis.is_healthy(),
            unreachable: Vec::new(),
            clock_offset_ms: redis.clock_offset_micros().map(|us| us as f64 / 1e3),
            on_store_error: answer(redis.options().on_error == Fallback::Local),
            evictable: redis.evictable(),
        };
    }
    if let Some(memcached) = &stores.memcached {
        let unreachable: Vec<String> = memcached
            .unreachable()
            .into_iter()
            .map(String::from)
            .collect();
        return StoreView {
            kind: "memcached",
            healthy: unreachable.len() < memcached.servers().len(),
            unreachable,
            clock_offset_ms: memcached.clock_offset().map(|o| o.from_others as f64 / 1e6),
            on_store_error: answer(memcached.options().local_fallback.is_some()),
            evictable: false,
        };
    }
    StoreView {
        kind: "memory",
        healthy: true,
        unreachable: Vec::new(),
        clock_offset_ms: None,
        on_store_error: None,
        evictable: false,
    }
}

/// `serve`'s answer while its store is out, from the layer's policy.
pub(crate) fn layer_answer(layer: &LayerOptions) -> &'static str {
    match layer.on_store_error {
        FailurePolicy::Allow => "allow",
        FailurePolicy::Deny => "deny",
    }
}
