//! Looking at what the store keeps, and removing it: `MEMORY USAGE` of a
//! key, and `DEL` of a key's state. For tools that measure the store or clean
//! up after themselves (`limits bench --store` does both), through the same
//! connection, timeout and circuit as the decisions.

use crate::RedisConnection;

impl RedisConnection {
    /// The bytes Redis holds for `key` as `MEMORY USAGE` reports them (the
    /// key, its value and Redis's bookkeeping for it), or `None` if the key
    /// does not exist.
    pub async fn memory_usage(&self, key: &str) -> Result<Option<u64>, String> {
        let mut cmd = redis::cmd("MEMORY");
        cmd.arg("USAGE").arg(key).arg("SAMPLES").arg(0);
        self.run(|mut conn| async move { cmd.query_async(&mut conn).await })
            .await
            .map_err(|e| e.message)
    }

    /// Deletes `keys` in one `DEL` (so in a Redis Cluster they must share a
    /// slot, as the keys of one [`RedisStore::redis_keys`](crate::RedisStore::redis_keys)
    /// call do); returns how many existed.
    pub async fn delete(&self, keys: &[String]) -> Result<u64, String> {
        if keys.is_empty() {
            return Ok(0);
        }
        let mut cmd = redis::cmd("DEL");
        cmd.arg(keys);
        self.run(|mut conn| async move { cmd.query_async(&mut conn).await })
            .await
            .map_err(|e| e.message)
    }
}
