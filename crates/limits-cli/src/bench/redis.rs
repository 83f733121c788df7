//! `limits bench --store redis://...`: the limiters deciding in Redis,
//! through one multiplexed connection shared by the callers, each decision
//! one script call at Redis's own `TIME` (the deny cache off, so that every
//! decision is a call); bytes per key from `MEMORY USAGE`.

use super::report::Measured;
use super::shared::{self, Backend, TIMEOUT};
use super::Plan;
use crate::replay::store::fresh_prefix;
use limits::{Algorithm, Rule};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use std::future::Future;

/// Keys whose `MEMORY USAGE` is asked.
const SAMPLE: usize = 100;

/// Measures each of `algorithms` in the Redis at `url` (with the `tls`
/// files of a TLS one, deciding with the limits module as `module` says).
pub fn run(
    url: &str,
    (tls, module): (limits_redis::TlsFiles, limits_redis::RedisModule),
    algorithms: &[Algorithm],
    plan: &Plan,
) -> Result<Vec<Measured>, String> {
    super::runtime()?.block_on(async {
        let prefix = fresh_prefix("bench");
        let options = RedisOptions {
            prefix: prefix.clone(),
            timeout: TIMEOUT,
            deny_cache: 0,
            tls,
            module,
            ..RedisOptions::default()
        };
        let connection = RedisConnection::connect(url, options)
            .await
            .map_err(|e| format!("--store: {e}"))?;
        eprintln!("limits bench: Redis keys under {prefix:?}, deleted at the end");
        shared::run(&Redis(connection), algorithms, plan).await
    })
}

/// Redis, through one connection.
struct Redis(RedisConnection);

impl Backend for Redis {
    type Store = RedisStore;

    fn store(&self, rule: Rule, name: &str) -> Result<RedisStore, String> {
        RedisStore::new(&self.0, rule, name).map_err(|e| e.to_string())
    }

    /// Over a sample of keys spread over all of them: how many have state
    /// in Redis, and the mean `MEMORY USAGE` of those (all of a key's Redis
    /// keys).
    async fn memory_per_key(
        &self,
        store: &RedisStore,
        keys: &[String],
        warm: impl Future<Output = Result<(), String>>,
    ) -> Result<(u64, u64), String> {
        warm.await?;
        let step = (keys.len() / SAMPLE).max(1);
        let (mut sampled, mut present, mut bytes) = (0u64, 0u64, 0u64);
        for key in keys.iter().step_by(step) {
            sampled += 1;
            let mut held = 0;
            for k in store.redis_keys(key) {
                held += store.connection().memory_usage(&k).await?.unwrap_or(0);
            }
            if held > 0 {
                present += 1;
                bytes += held;
            }
        }
        let resident = (present as f64 / sampled.max(1) as f64 * keys.len() as f64).round() as u64;
        Ok((resident, bytes.checked_div(present).unwrap_or(0)))
    }

    async fn delete(store: &RedisStore, key: &str) -> Result<(), String> {
        store
            .connection()
            .delete(&store.redis_keys(key))
            .await
            .map(|_| ())
    }
}
