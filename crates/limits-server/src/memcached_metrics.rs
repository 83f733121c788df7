//! The Memcached store's metrics, the same on every server that has one
//! (`limits serve` and `limits rls`): counters of the writes retried because
//! another writer changed the item first, the decisions that gave up after
//! their attempts, and those decided in this process while memcached could
//! not answer (`limits_memcached_KIND_total`); and how far this
//! instance's clock is from the others' on the same memcached
//! (`limits_memcached_clock_offset_seconds`, with its uncertainty and the
//! instances it was compared with).

use crate::counts::set_count;
use limits_memcached::MemcachedClient;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// A count the client keeps: its name (`limits_memcached_NAME_total`), its
/// help, and how it is read.
struct Count {
    name: &'static str,
    help: &'static str,
    read: fn(&MemcachedClient) -> u64,
}

const COUNTS: [Count; 3] = [
    Count {
        name: "cas_retries",
        help: "Writes to the Memcached store that found the item changed by another writer since it was read, and so read and decided again",
        read: MemcachedClient::retries,
    },
    Count {
        name: "gave_up",
        help: "Decisions that met another writer on every attempt and were answered as a store error, recording nothing",
        read: MemcachedClient::gave_up,
    },
    Count {
        name: "local_decisions",
        help: "Decisions and settlements made in this process while the Memcached store could not answer",
        read: MemcachedClient::local_decisions,
    },
];

/// The Memcached store's metrics, registered in one server's registry.
pub(crate) struct MemcachedCounts {
    counts: Vec<Counter>,
    clock_offset: Gauge<f64, AtomicU64>,
    clock_uncertainty: Gauge<f64, AtomicU64>,
    clock_instances: Gauge,
}

impl MemcachedCounts {
    /// Registers `memcached_*_total` under the registry's prefix.
    pub fn register(registry: &mut Registry) -> MemcachedCounts {
        let counts: Vec<Counter> = COUNTS.iter().map(|_| Counter::default()).collect();
        for (count, counter) in COUNTS.iter().zip(&counts) {
            registry.register(
                format!("memcached_{}", count.name),
                count.help,
                counter.clone(),
            );
        }
        let clock_offset = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "memcached_clock_offset_seconds",
            "This instance's clock less the median of the other instances' on the Memcached store (positive: ahead), all measured at one tick of memcached's clock each minute; 0 until measured or with no other instance",
            clock_offset.clone(),
        );
        let clock_uncertainty = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "memcached_clock_offset_uncertainty_seconds",
            "How far this instance's own measurement of its clock offset may be off",
            clock_uncertainty.clone(),
        );
        let clock_instances = Gauge::default();
        registry.register(
            "memcached_clock_instances",
            "The instances that measured the last tick this one measured, this one included",
            clock_instances.clone(),
        );
        MemcachedCounts {
            counts,
            clock_offset,
            clock_uncertainty,
            clock_instances,
        }
    }

    /// Reads the client's counts and its last clock offset into the
    /// metrics.
    pub fn update(&self, client: &MemcachedClient) {
        for (count, counter) in COUNTS.iter().zip(&self.counts) {
            set_count(counter, (count.read)(client));
        }
        if let Some(offset) = client.clock_offset() {
            self.clock_offset.set(offset.from_others as f64 / 1e9);
            self.clock_uncertainty.set(offset.uncertainty as f64 / 1e9);
            self.clock_instances
                .set(i64::try_from(offset.instances).unwrap_or(i64::MAX));
        }
    }
}
