//! A master found through Redis Sentinel, and found again when it moves.
//!
//! The sentinels are asked for the master's address (and the address is
//! checked to answer `ROLE` as a master); the store then talks to that
//! master over one reconnecting connection. A failover moves the master
//! elsewhere: the old one goes away or becomes a replica (its clients
//! disconnected, its writes refused as `READONLY`). Either way the store's
//! calls fail, and every failure the circuit sees asks the sentinels again
//! (one lookup at a time, in the background); once they name another
//! address, the connection is replaced and the circuit's probe finds Redis
//! answering.

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{ErrorKind, RedisConnectionInfo, RedisError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The sentinels of one master, checked once.
pub(crate) struct Sentinels {
    client: tokio::sync::Mutex<SentinelClient>,
    master: String,
    config: ConnectionManagerConfig,
    /// Bounds one lookup: the sentinels, then the master's `ROLE`.
    lookup_timeout: Duration,
}

impl Sentinels {
    /// The sentinels at `hosts` (`HOST:PORT` each) that know `master`,
    /// whose data nodes take `node` (credentials and database).
    pub(crate) fn new(
        hosts: &[String],
        master: &str,
        node: RedisConnectionInfo,
        config: ConnectionManagerConfig,
        connect_timeout: Duration,
    ) -> Result<Sentinels, RedisError> {
        let sentinels: Vec<String> = hosts.iter().map(|h| format!("redis://{h}")).collect();
        let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(node);
        let client = SentinelClient::build(
            sentinels,
            master.to_owned(),
            Some(node),
            SentinelServerType::Master,
        )?;
        Ok(Sentinels {
            client: tokio::sync::Mutex::new(client),
            master: master.to_owned(),
            config,
            // Sentinels tried one after another, then the master: a few
            // connection handshakes.
            lookup_timeout: connect_timeout * 4,
        })
    }

    /// Asks the sentinels where the master is, and connects to it.
    async fn find(&self) -> Result<(String, ConnectionManager), RedisError> {
        let lookup = async { self.client.lock().await.async_get_client().await };
        let client = match tokio::time::timeout(self.lookup_timeout, lookup).await {
            Ok(client) => client?,
            Err(_) => {
                return Err(RedisError::from((
                    ErrorKind::Io,
                    "no sentinel answered where the master is",
                    format!("{} within {:?}", self.master, self.lookup_timeout),
                )))
            }
        };
        let address = client.get_connection_info().addr().to_string();
        let conn = ConnectionManager::new_with_config(client, self.config.clone()).await?;
        Ok((address, conn))
    }
}

/// The connection to the master the sentinels named last.
pub(crate) struct SentinelLink {
    sentinels: Arc<Sentinels>,
    current: RwLock<(String, ConnectionManager)>,
    /// Whether a lookup is under way (one at a time).
    asking: AtomicBool,
}

impl SentinelLink {
    /// Connects to the master the sentinels name now.
    pub(crate) async fn open(sentinels: Arc<Sentinels>) -> Result<SentinelLink, RedisError> {
        let current = sentinels.find().await?;
        tracing::info!(
            master = %sentinels.master,
            address = %current.0,
            "the sentinels name the Redis master"
        );
        Ok(SentinelLink {
            sentinels,
            current: RwLock::new(current),
            asking: AtomicBool::new(false),
        })
    }

    /// The connection to the master named last.
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .1
            .clone()
    }

    /// A call failed as it would if the master had moved: asks the
    /// sentinels again in the background, unless a lookup is under way.
    pub(crate) fn lost(self: &Arc<Self>) {
        if self.asking.swap(true, Ordering::AcqRel) {
            return;
        }
        let link = self.clone();
        tokio::spawn(async move {
            match link.sentinels.find().await {
                Ok((address, conn)) => {
                    let mut current = link
                        .current
                        .write()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    if current.0 != address {
                        tracing::warn!(
                            master = %link.sentinels.master,
                            from = %current.0,
                            to = %address,
                            "the Redis master moved (the sentinels name another): using the new one"
                        );
                        *current = (address, conn);
                    }
                }
                Err(e) => tracing::debug!(error = %e, "asking the sentinels for the master failed"),
            }
            link.asking.store(false, Ordering::Release);
        });
    }
}
