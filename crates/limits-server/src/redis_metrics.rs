//! The Redis store's metrics, the same on every server that has one
//! (`limits serve` and `limits rls`): counters of calls, errors, outages,
//! deny-cache hits, OOM answers, eviction warnings, local decisions and new
//! keys refused (`limits_redis_KIND_total`); gauges of health, whether Redis
//! may evict the limiter's keys, and this host's clock minus Redis's.

use crate::counts::set_count;
use limits_redis::RedisConnection;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

/// A `kind="..."` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct KindLabel {
    pub kind: String,
}

/// A count the connection keeps: its name (`limits_redis_NAME_total`), its
/// help, and how it is read.
struct Count {
    name: &'static str,
    help: &'static str,
    read: fn(&RedisConnection) -> u64,
}

const COUNTS: [Count; 8] = [
    Count {
        name: "calls",
        help: "Script calls sent to the Redis store",
        read: RedisConnection::calls,
    },
    Count {
        name: "errors",
        help:
            "Calls to the Redis store that failed, or were refused at once while it was unreachable",
        read: RedisConnection::errors,
    },
    Count {
        name: "outages",
        help: "Times the Redis store became unreachable (or was unreachable at start)",
        read: RedisConnection::outages,
    },
    Count {
        name: "deny_cache_hits",
        help: "Denials answered locally, exactly, without the Redis store",
        read: RedisConnection::deny_cache_hits,
    },
    Count {
        name: "full_answers",
        help: "Calls the Redis store refused with OOM (full under maxmemory)",
        read: RedisConnection::full_answers,
    },
    Count {
        name: "eviction_warnings",
        help: "Times it was logged that the Redis store may evict the limiter's keys",
        read: RedisConnection::eviction_warnings,
    },
    Count {
        name: "local_decisions",
        help: "Decisions made in this process while the Redis store could not answer",
        read: RedisConnection::local_decisions,
    },
    Count {
        name: "new_keys_refused",
        help: "Requests denied because their client address made too many new keys",
        read: RedisConnection::new_keys_refused,
    },
];

/// The Redis store's metrics, registered in one server's registry.
pub(crate) struct RedisGauges {
    counts: Vec<Counter>,
    healthy: Gauge,
    evictable: Gauge,
    /// One member (no labels) once measured: absent, not 0, before.
    clock: Family<Vec<(String, String)>, Gauge<f64, AtomicU64>>,
}

impl RedisGauges {
    /// Registers `redis_*_total`, `redis_healthy`, `redis_evictable` and
    /// `redis_clock_offset_seconds` under the registry's prefix.
    pub fn register(registry: &mut Registry) -> RedisGauges {
        let gauges = RedisGauges {
            counts: COUNTS.iter().map(|_| Counter::default()).collect(),
            healthy: Gauge::default(),
            evictable: Gauge::default(),
            clock: Family::default(),
        };
        for (count, counter) in COUNTS.iter().zip(&gauges.counts) {
            registry.register(format!("redis_{}", count.name), count.help, counter.clone());
        }
        registry.register(
            "redis_healthy",
            "1 while the Redis store answers, 0 while it is unreachable",
            gauges.healthy.clone(),
        );
        registry.register(
            "redis_evictable",
            "1 when the Redis store's maxmemory-policy may evict the limiter's keys",
            gauges.evictable.clone(),
        );
        registry.register_with_unit(
            "redis_clock_offset",
            "This host's clock minus the Redis store's TIME (measured at connection, after an outage and every 10 s; absent until the first); decisions use Redis's time",
            Unit::Seconds,
            gauges.clock.clone(),
        );
        gauges
    }

    /// Reads the connection's counts and state into the metrics.
    pub fn update(&self, redis: &RedisConnection) {
        for (count, counter) in COUNTS.iter().zip(&self.counts) {
            set_count(counter, (count.read)(redis));
        }
        self.healthy.set(i64::from(redis.is_healthy()));
        self.evictable.set(i64::from(redis.evictable()));
        if let Some(us) = redis.clock_offset_micros() {
            self.clock.get_or_create(&Vec::new()).set(us as f64 / 1e6);
        }
    }
}
