//! Whether Redis may evict the limiter's keys, read from its configuration
//! when the connection is made and each time Redis answers again after an
//! outage (a failover or a restart may bring another configuration).
//!
//! An evicted key is a client's state forgotten: a limited client gets a
//! fresh limit. Every key the store writes has a TTL, so not only the
//! `allkeys-*` policies but also the `volatile-*` ones (ElastiCache's
//! default among them) may pick them. Only `noeviction` keeps them: Redis
//! then answers `OOM` when full, which the store reports as its own kind of
//! failure. A Redis that refuses `CONFIG` (renamed or denied by its ACL, as
//! managed services do) is said once, and the store goes on.

use crate::link::{Conn, Health};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Whether the `maxmemory-policy` `policy` lets Redis evict a key that has
/// a TTL.
pub(crate) fn evicts(policy: &str) -> bool {
    policy.starts_with("allkeys-") || policy.starts_with("volatile-")
}

/// One `CONFIG GET name`: its value, or why it could not be read.
async fn config_get(conn: &Conn, name: &str, timeout: Duration) -> Result<String, String> {
    let mut conn = conn.clone();
    let mut cmd = redis::cmd("CONFIG");
    cmd.arg("GET").arg(name);
    let reply = tokio::time::timeout(timeout, cmd.query_async::<Vec<String>>(&mut conn));
    match reply.await {
        Err(_) => Err(format!("no answer within {timeout:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        // [name, value]; nothing when the server does not know the name.
        Ok(Ok(pair)) => pair
            .into_iter()
            .nth(1)
            .ok_or_else(|| format!("{name} is not in its answer")),
    }
}

/// Reads `maxmemory` and `maxmemory-policy`, records whether keys can be
/// evicted, and warns (counted) when they can.
pub(crate) async fn check(conn: &Conn, health: &Health, timeout: Duration) {
    let policy = match config_get(conn, "maxmemory-policy", timeout).await {
        Ok(policy) => policy,
        Err(why) => {
            if !health.config_unreadable.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "cannot read the Redis store's maxmemory-policy (CONFIG GET: {why}); make sure it is noeviction, or limited clients may get fresh limits when Redis evicts their keys"
                );
            }
            return;
        }
    };
    let maxmemory = config_get(conn, "maxmemory", timeout)
        .await
        .unwrap_or_else(|why| format!("unknown: {why}"));
    let evictable = evicts(&policy);
    health.evictable.store(evictable, Ordering::Relaxed);
    if evictable {
        health.eviction_warnings.fetch_add(1, Ordering::Relaxed);
        let when = if maxmemory == "0" {
            " once a maxmemory is set"
        } else {
            ""
        };
        tracing::warn!(
            "WARNING: the Redis store may EVICT the limiter's keys{when} (maxmemory-policy {policy}, maxmemory {maxmemory}): an evicted key hands a limited client a fresh limit. Run the store on a dedicated instance or database with maxmemory-policy noeviction, memory sized by `limits bench --store` (SECURITY.md, Redis deployment)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allkeys_and_volatile_policy_evicts_and_noeviction_does_not() {
        for policy in [
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
        ] {
            assert!(evicts(policy), "{policy}");
        }
        assert!(!evicts("noeviction"));
        assert!(!evicts(""));
    }
}
