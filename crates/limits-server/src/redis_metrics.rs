//! The Redis store's gauges, the same on every server that has one (`limits
//! serve` and `limits rls`): calls, errors, outages, deny-cache hits, health,
//! OOM answers, whether Redis may evict the limiter's keys, local decisions,
//! new keys refused, and this host's clock minus Redis's.

use limits_redis::RedisConnection;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

/// A `kind="..."` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct KindLabel {
    pub kind: String,
}

/// The Redis store's gauges, registered in one server's registry.
pub(crate) struct RedisGauges {
    kinds: Family<KindLabel, Gauge>,
    /// One member (no labels) once measured: absent, not 0, before.
    clock: Family<Vec<(String, String)>, Gauge<f64, AtomicU64>>,
}

impl RedisGauges {
    /// Registers `redis` and `redis_clock_offset_seconds` under the
    /// registry's prefix.
    pub fn register(registry: &mut Registry) -> RedisGauges {
        let gauges = RedisGauges {
            kinds: Family::default(),
            clock: Family::default(),
        };
        registry.register(
            "redis",
            "The Redis store: calls (script calls sent), errors (failed, or refused at once while Redis was unreachable), outages (times it became unreachable), deny_cache_hits (denials answered locally, exactly, without Redis), healthy (1 or 0), full (calls Redis refused with OOM), evictable (1 when its maxmemory-policy may evict the limiter's keys), eviction_warnings (times that was logged), local_decisions (decided in this process while Redis could not answer), new_keys_refused (requests denied because their client address made too many new keys)",
            gauges.kinds.clone(),
        );
        registry.register_with_unit(
            "redis_clock_offset",
            "This host's clock minus the Redis store's TIME (measured at connection, after an outage and every 10 s; absent until the first); decisions use Redis's time",
            Unit::Seconds,
            gauges.clock.clone(),
        );
        gauges
    }

    /// Reads the connection's counters into the gauges.
    pub fn update(&self, redis: &RedisConnection) {
        let set = |kind: &str, v: u64| {
            self.kinds
                .get_or_create(&KindLabel { kind: kind.into() })
                .set(i64::try_from(v).unwrap_or(i64::MAX))
        };
        set("calls", redis.calls());
        set("errors", redis.errors());
        set("outages", redis.outages());
        set("deny_cache_hits", redis.deny_cache_hits());
        set("healthy", u64::from(redis.is_healthy()));
        set("full", redis.full_answers());
        set("evictable", u64::from(redis.evictable()));
        set("eviction_warnings", redis.eviction_warnings());
        set("local_decisions", redis.local_decisions());
        set("new_keys_refused", redis.new_keys_refused());
        if let Some(us) = redis.clock_offset_micros() {
            self.clock.get_or_create(&Vec::new()).set(us as f64 / 1e6);
        }
    }
}
