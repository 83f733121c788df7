//! A master found through Redis Sentinel, and found again when it moves.
//!
//! The sentinels are asked for the master's address (and the address is
//! checked to answer `ROLE` as a master); the store then talks to that
//! master over one reconnecting connection. A failover moves the master
//! elsewhere, and the old one may go on answering as a master for a while
//! (a forced failover leaves it up until the sentinels demote it): waiting
//! for its calls to fail would keep writing where no one else reads. So
//! the sentinels are watched: every probe interval one of them is asked
//! where the master is (`SENTINEL GET-MASTER-ADDR-BY-NAME`, over one kept
//! connection), and every failure the circuit sees asks too; once they name
//! another address, the connection is replaced.
//!
//! Over TLS (`rediss+sentinel://`), the sentinels and the data nodes they
//! name are all reached over TLS with the same certificates; the sentinels
//! may ask for credentials of their own (`requirepass` in their config),
//! distinct from the data nodes'.

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ErrorKind, IntoConnectionInfo, RedisConnectionInfo, RedisError, TlsCertificates};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// Where a master is asked for: its sentinels, its name, and how each is
/// spoken to.
pub(crate) struct SentinelAddress {
    /// `HOST:PORT` of each sentinel.
    pub hosts: Vec<String>,
    /// The master's name, as the sentinels know it.
    pub master: String,
    /// The data nodes' credentials and database.
    pub node: RedisConnectionInfo,
    /// The sentinels' own credentials (none: they ask for none).
    pub sentinel: RedisConnectionInfo,
    /// Whether the sentinels and the data nodes are reached over TLS.
    pub tls: bool,
    /// The CA and client certificate of that TLS (none: the system's roots).
    pub certs: Option<TlsCertificates>,
}

/// The sentinels of one master, checked once.
pub(crate) struct Sentinels {
    client: tokio::sync::Mutex<SentinelClient>,
    /// A client for each sentinel (its TLS and credentials), for the watch.
    hosts: Vec<redis::Client>,
    master: String,
    config: ConnectionManagerConfig,
    /// Bounds one lookup: the sentinels, then the master's `ROLE`.
    lookup_timeout: Duration,
    /// How often a sentinel is asked whether the master moved: the most a
    /// store keeps writing to a demoted master that still answers, past
    /// the sentinels' own switch.
    watch_every: Duration,
}

impl Sentinels {
    /// The sentinels of `address`, their connections to the master made
    /// with `config`.
    pub(crate) fn new(
        address: SentinelAddress,
        config: ConnectionManagerConfig,
        connect_timeout: Duration,
        watch_every: Duration,
    ) -> Result<Sentinels, RedisError> {
        let scheme = if address.tls { "rediss" } else { "redis" };
        let hosts = address
            .hosts
            .iter()
            .map(|host| {
                let info = format!("{scheme}://{host}")
                    .into_connection_info()?
                    .set_redis_settings(address.sentinel.clone());
                match &address.certs {
                    Some(certs) => redis::Client::build_with_tls(info, certs.clone()),
                    None => redis::Client::open(info),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let addrs = hosts.iter().map(|c| c.get_connection_info().addr().clone());
        let mut builder =
            SentinelClientBuilder::new(addrs, &address.master, SentinelServerType::Master)?
                .set_client_to_redis_db(address.node.db());
        if let Some(user) = address.node.username() {
            builder = builder.set_client_to_redis_username(user);
        }
        if let Some(password) = address.node.password() {
            builder = builder.set_client_to_redis_password(password);
        }
        if let Some(user) = address.sentinel.username() {
            builder = builder.set_client_to_sentinel_username(user);
        }
        if let Some(password) = address.sentinel.password() {
            builder = builder.set_client_to_sentinel_password(password);
        }
        if address.tls {
            builder = builder.set_client_to_redis_tls_mode(redis::TlsMode::Secure);
            if let Some(certs) = address.certs {
                builder = builder.set_client_to_redis_certificates(certs);
            }
        }
        Ok(Sentinels {
            client: tokio::sync::Mutex::new(builder.build()?),
            hosts,
            master: address.master,
            config,
            // Sentinels tried one after another, then the master: a few
            // connection handshakes.
            lookup_timeout: connect_timeout * 4,
            watch_every,
        })
    }

    /// Asks the sentinels where the master is (checked to answer `ROLE`
    /// as one): its address and a client for it.
    async fn locate(&self) -> Result<(String, redis::Client), RedisError> {
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
        Ok((client.get_connection_info().addr().to_string(), client))
    }

    /// Connects to the master at `client`.
    async fn connect(&self, client: redis::Client) -> Result<ConnectionManager, RedisError> {
        ConnectionManager::new_with_config(client, self.config.clone()).await
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
    /// Connects to the master the sentinels name now, and watches them
    /// for as long as the link lives.
    pub(crate) async fn open(sentinels: Arc<Sentinels>) -> Result<Arc<SentinelLink>, RedisError> {
        let (address, client) = sentinels.locate().await?;
        let current = (address, sentinels.connect(client).await?);
        tracing::info!(
            master = %sentinels.master,
            address = %current.0,
            "the sentinels name the Redis master"
        );
        let link = Arc::new(SentinelLink {
            sentinels,
            current: RwLock::new(current),
            asking: AtomicBool::new(false),
        });
        tokio::spawn(watch(Arc::downgrade(&link)));
        Ok(link)
    }

    fn address(&self) -> String {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0
            .clone()
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
        tokio::spawn(async move { link.ask().await });
    }

    /// Asks the sentinels where the master is, and moves there if it moved
    /// (`asking` set by the caller, cleared here).
    async fn ask(&self) {
        if let Err(e) = self.follow().await {
            tracing::debug!(error = %e, "asking the sentinels for the master failed");
        }
        self.asking.store(false, Ordering::Release);
    }

    async fn follow(&self) -> Result<(), RedisError> {
        let (address, client) = self.sentinels.locate().await?;
        let from = self.address();
        if address == from {
            return Ok(());
        }
        let conn = self.sentinels.connect(client).await?;
        tracing::warn!(
            master = %self.sentinels.master,
            %from,
            to = %address,
            "the Redis master moved (the sentinels name another): using the new one"
        );
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = (address, conn);
        Ok(())
    }
}

/// Asks a sentinel every `watch_every` where the master is, and moves
/// the link when the answer is another address; ends with the link.
async fn watch(link: Weak<SentinelLink>) {
    let mut sentinel: Option<redis::aio::MultiplexedConnection> = None;
    let mut next = 0;
    loop {
        let Some(every) = link.upgrade().map(|l| l.sentinels.watch_every) else {
            return;
        };
        tokio::time::sleep(every).await;
        let Some(link) = link.upgrade() else {
            return;
        };
        let hosts = &link.sentinels.hosts;
        if sentinel.is_none() {
            let host = &hosts[next % hosts.len()];
            next += 1;
            let open = host.get_multiplexed_async_connection();
            if let Ok(Ok(conn)) = tokio::time::timeout(link.sentinels.lookup_timeout, open).await {
                sentinel = Some(conn);
            }
        }
        let Some(conn) = sentinel.as_mut() else {
            continue;
        };
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("GET-MASTER-ADDR-BY-NAME")
            .arg(&link.sentinels.master);
        let named = tokio::time::timeout(
            link.sentinels.lookup_timeout,
            cmd.query_async::<Option<(String, u16)>>(conn),
        )
        .await;
        let Ok(Ok(Some((host, port)))) = named else {
            // This sentinel cannot say: the next one is asked next time.
            sentinel = None;
            continue;
        };
        if format!("{host}:{port}") != link.address() && !link.asking.swap(true, Ordering::AcqRel) {
            link.ask().await;
        }
    }
}
