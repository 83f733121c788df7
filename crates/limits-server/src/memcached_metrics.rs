//! The Memcached store's metrics, the same on every server that has one
//! (`limits serve` and `limits rls`): counters of the writes retried because
//! another writer changed the item first, the decisions that gave up after
//! their attempts, and those decided in this process while memcached could
//! not answer (`limits_memcached_KIND_total`).

use crate::counts::set_count;
use limits_memcached::MemcachedClient;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

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
        MemcachedCounts { counts }
    }

    /// Reads the client's counts into the metrics.
    pub fn update(&self, client: &MemcachedClient) {
        for (count, counter) in COUNTS.iter().zip(&self.counts) {
            set_count(counter, (count.read)(client));
        }
    }
}
