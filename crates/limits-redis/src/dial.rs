//! Where a connection goes: a `redis://` or `redis+cluster://` URL checked
//! once into a client ([`Target`]), which can then be asked to open a
//! connection as often as it takes, at start or in the background while
//! Redis is not up yet.

use crate::link::Conn;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use std::time::Duration;

/// A checked address: one Redis, or the seed nodes of a cluster.
pub(crate) enum Target {
    Single {
        client: redis::Client,
        config: ConnectionManagerConfig,
    },
    Cluster(ClusterClient),
}

impl Target {
    /// Checks `url` (a bad scheme, host or port is refused here, before
    /// any connection is tried, with what is wrong); `timeout` bounds each
    /// call on the connections it opens.
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Target, String> {
        let err = |e: redis::RedisError| format!("Redis at {url}: {e}");
        // Connecting may take longer than a call: a new TCP (and maybe
        // AUTH) handshake.
        let connect_timeout = timeout.max(Duration::from_millis(500));
        if let Some(nodes) = url.strip_prefix("redis+cluster://") {
            let nodes: Vec<String> = nodes
                .split(',')
                .filter(|n| !n.is_empty())
                .map(|n| format!("redis://{n}"))
                .collect();
            if nodes.is_empty() {
                return Err(format!("{url}: no cluster node given"));
            }
            let client = ClusterClient::builder(nodes)
                .connection_timeout(connect_timeout)
                .response_timeout(timeout)
                .build()
                .map_err(err)?;
            return Ok(Target::Cluster(client));
        }
        let client = redis::Client::open(url).map_err(err)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        Ok(Target::Single { client, config })
    }

    /// Opens a connection (the first one: once open, it reconnects by
    /// itself).
    pub(crate) async fn open(&self) -> Result<Conn, redis::RedisError> {
        Ok(match self {
            Target::Single { client, config } => Conn::Single(
                ConnectionManager::new_with_config(client.clone(), config.clone()).await?,
            ),
            Target::Cluster(client) => Conn::Cluster(client.get_async_connection().await?),
        })
    }
}
