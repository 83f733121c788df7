//! `--store URL --store-timeout D --max-keys N`: where the limiters' state
//! lives, as `limits serve` and `limits rls` both take it.

use super::flags;
use clap::Args;
use limits_server::{RedisConnection, RedisOptions, StoreOptions};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Most keys tracked per rule; beyond it, the keys whose forgetting costs least (most quota left) are evicted, never a limited one while another can go.
    #[arg(long, default_value_t = 1_000_000, value_parser = flags::parse_max_keys)]
    max_keys: usize,

    /// Where the limiters' state lives: `memory` (this process), or a Redis
    /// shared by every instance: redis://HOST:PORT[/DB], or
    /// redis+cluster://HOST1:PORT1,HOST2:PORT2 for a Redis Cluster.
    #[arg(long, value_name = "URL", default_value = "memory")]
    store: String,

    /// The longest a Redis store may take to decide; past it the request is
    /// answered per --on-store-error, and Redis is not asked again until it
    /// answers a probe.
    #[arg(long, default_value = "50ms", value_parser = super::parse_timeout)]
    store_timeout: Duration,
}

impl StoreArgs {
    /// How each rule's store is built: connects to the Redis of `--store`
    /// if it names one.
    pub async fn options(&self) -> Result<StoreOptions, String> {
        let redis = match self.store.as_str() {
            "memory" => None,
            url if url.starts_with("redis://") || url.starts_with("redis+cluster://") => {
                let options = RedisOptions {
                    timeout: self.store_timeout,
                    ..RedisOptions::default()
                };
                let connection = RedisConnection::connect(url, options)
                    .await
                    .map_err(|e| format!("--store: {e}"))?;
                Some(connection)
            }
            other => {
                return Err(format!(
                    "--store {other:?}: expected memory, redis://HOST:PORT[/DB] or redis+cluster://HOST:PORT,..."
                ))
            }
        };
        Ok(StoreOptions {
            max_keys: self.max_keys,
            redis,
        })
    }
}
