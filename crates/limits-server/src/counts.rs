//! Counts kept where they happen (a rule's table, the proxy, the Redis
//! connection) exposed as Prometheus counters: the series is set to the
//! count at each scrape rather than counted twice.

use prometheus_client::metrics::counter::Counter;
use std::sync::atomic::Ordering;

/// Sets `counter` to `count`. A count that starts again from zero (a rule
/// replaced by a reload) reads as a counter reset, as after a restart.
pub(crate) fn set_count(counter: &Counter, count: u64) {
    counter.inner().store(count, Ordering::Relaxed);
}
