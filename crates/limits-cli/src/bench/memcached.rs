//! `limits bench --store memcached://...`: the limiters deciding on
//! memcached, each decision a read and a CAS write by the core's own code at
//! this host's clock (memcached has none), through a pool of one connection
//! per caller on each server; bytes per key from the servers' own count of
//! the bytes their items take (`stats`), before and after the keys are
//! written.

use super::report::Measured;
use super::shared::{self, Backend, TIMEOUT};
use super::Plan;
use crate::replay::store::fresh_prefix;
use limits::{Algorithm, Rule};
use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
use std::future::Future;

/// Measures each of `algorithms` on the memcached servers of `url`.
pub fn run(url: &str, algorithms: &[Algorithm], plan: &Plan) -> Result<Vec<Measured>, String> {
    super::runtime()?.block_on(async {
        let prefix = fresh_prefix("bench");
        let options = MemcachedOptions {
            prefix: prefix.clone(),
            timeout: TIMEOUT,
            max_connections: plan.threads as usize,
            ..MemcachedOptions::default()
        };
        let client = MemcachedClient::connect(url, options)
            .await
            .map_err(|e| format!("--store: {e}"))?;
        eprintln!("limits bench: memcached items under {prefix:?}, deleted at the end");
        let results = shared::run(&Memcached(client.clone()), algorithms, plan).await;
        // Contention is on one key at a time, and the bench's callers each
        // have keys of their own: retries say the servers were shared.
        if client.retries() > 0 {
            eprintln!(
                "limits bench: {} CAS retries (another writer on the same items)",
                client.retries()
            );
        }
        results
    })
}

/// Memcached, through one client.
struct Memcached(MemcachedClient);

impl Backend for Memcached {
    type Store = MemcachedStore;

    fn store(&self, rule: Rule, name: &str) -> Result<MemcachedStore, String> {
        MemcachedStore::new(&self.0, rule, name).map_err(|e| e.to_string())
    }

    /// The servers' item and byte counts before and after the warm-up:
    /// what the keys added, per key (each item's key, value and header).
    async fn memory_per_key(
        &self,
        _store: &MemcachedStore,
        _keys: &[String],
        warm: impl Future<Output = Result<(), String>>,
    ) -> Result<(u64, u64), String> {
        let usage = async || self.0.usage().await.map_err(|e| format!("--store: {e}"));
        let before = usage().await?;
        warm.await?;
        let after = usage().await?;
        let items = after.items.saturating_sub(before.items);
        let bytes = after.bytes.saturating_sub(before.bytes);
        Ok((items, bytes.checked_div(items).unwrap_or(0)))
    }

    async fn delete(store: &MemcachedStore, key: &str) -> Result<(), String> {
        store
            .remove(key)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
