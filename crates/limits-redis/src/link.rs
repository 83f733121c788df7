//! What a connection to Redis is below the store's calls: one node, a
//! cluster or a master found through Sentinel behind the same calls
//! ([`Conn`]), and the counts kept about it
//! ([`Health`]), which the clock and memory-policy checks read and write.

use crate::sentinel::SentinelLink;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Arc;

/// [`Health::clock_offset_us`] before the first measurement.
pub(crate) const OFFSET_UNKNOWN: i64 = i64::MIN;

/// One Redis, one Redis Cluster or a Sentinel's master, behind the same
/// calls.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(Arc<SentinelLink>),
}

impl Conn {
    /// A call or a probe failed as it does when Redis is gone: a Sentinel
    /// connection asks the sentinels whether the master moved (the others
    /// reconnect to the same address by themselves).
    pub(crate) fn failed(&self) {
        if let Conn::Sentinel(link) = self {
            link.lost();
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Sentinel(link) => {
                let mut c = link.connection();
                Box::pin(async move { c.req_packed_command(cmd).await })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Sentinel(link) => {
                let mut c = link.connection();
                Box::pin(async move { c.req_packed_commands(cmd, offset, count).await })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Sentinel(link) => link.connection().get_db(),
        }
    }
}

/// Counts a connection keeps, for metrics.
#[derive(Debug)]
pub(crate) struct Health {
    /// Whether the circuit is open (Redis unreachable).
    pub down: AtomicBool,
    /// Calls sent to Redis.
    pub calls: AtomicU64,
    /// Calls that failed (timed out, refused, dropped), and calls refused at
    /// once while the circuit was open.
    pub errors: AtomicU64,
    /// Outages seen (times the circuit opened).
    pub outages: AtomicU64,
    /// Denials answered by a deny cache, without Redis.
    pub deny_cache_hits: AtomicU64,
    /// This host's clock minus Redis's `TIME`, in microseconds, at the last
    /// measurement ([`OFFSET_UNKNOWN`] before the first).
    pub clock_offset_us: AtomicI64,
    /// Whether Redis's last answer was `OOM` (no successful call since).
    pub full: AtomicBool,
    /// `OOM` answers: calls Redis refused for lack of memory.
    pub full_answers: AtomicU64,
    /// Whether the last reading of Redis's `maxmemory-policy` lets it evict
    /// the limiter's keys.
    pub evictable: AtomicBool,
    /// Warnings logged that Redis may evict the limiter's keys (one at
    /// connection and one after each outage, while the policy allows it).
    pub eviction_warnings: AtomicU64,
    /// Whether it was said that `CONFIG GET` is refused (said once).
    pub config_unreadable: AtomicBool,
    /// Decisions made in this process because Redis could not answer
    /// ([`Fallback::Local`]).
    pub local_decisions: AtomicU64,
    /// Requests denied because their client created too many new keys
    /// ([`RedisOptions::new_keys_per_client`]).
    pub new_keys_refused: AtomicU64,
    /// Whether decisions go to the limits module ([`crate::RedisModule`]):
    /// set on each new connection, cleared when Redis does not know it.
    pub module: AtomicBool,
}

impl Default for Health {
    fn default() -> Health {
        Health {
            down: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            outages: AtomicU64::new(0),
            deny_cache_hits: AtomicU64::new(0),
            clock_offset_us: AtomicI64::new(OFFSET_UNKNOWN),
            full: AtomicBool::new(false),
            full_answers: AtomicU64::new(0),
            evictable: AtomicBool::new(false),
            eviction_warnings: AtomicU64::new(0),
            config_unreadable: AtomicBool::new(false),
            local_decisions: AtomicU64::new(0),
            new_keys_refused: AtomicU64::new(0),
            module: AtomicBool::new(false),
        }
    }
}
