//! [`MemcachedClient`]: the servers of a `memcached://` URL, a pool of
//! connections to each, the settings every store on them shares, and the
//! counts they keep.

use crate::clock_offset::ClockOffset;
use crate::meta::MetaError;
use crate::pool::Pool;
use crate::ring::Ring;
use crate::url::parse_url;
use limits::StoreError;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How the stores on a [`MemcachedClient`] talk to memcached.
#[derive(Clone, Debug)]
pub struct MemcachedOptions {
    /// Prepended to every item's key: printable ASCII without spaces, at
    /// most [`MAX_PREFIX`] bytes.
    pub prefix: String,
    /// The longest one decision may take, waiting for a connection and
    /// every retry included; past it the decision is a [`StoreError`].
    pub timeout: Duration,
    /// Most connections open to each server at once.
    pub max_connections: usize,
    /// Most reads and writes of one decision when other writers keep
    /// changing the key between them (at least 1); past it the decision is
    /// a [`StoreError`] and nothing was recorded.
    pub max_attempts: u32,
    /// The servers' largest item in bytes (memcached's `-I`, 1 MiB by
    /// default): rules whose state could outgrow it are refused.
    pub item_size_max: usize,
    /// While memcached cannot answer (unreachable, timed out), decide in
    /// this process with an in-memory limiter of the same rule keeping at
    /// most this many keys: each instance then admits at most the limit,
    /// so N instances at most N times it. `None`: return the error, and
    /// the caller's failure policy answers.
    pub local_fallback: Option<usize>,
    /// How often a server on these memcached servers (`limits serve`,
    /// `limits rls`) measures its clock's offset from the other instances'
    /// ([`MemcachedClient::measure_clock_offset`]); give every instance
    /// the same. `None`: never.
    pub clock_check_every: Option<Duration>,
}

/// What memcached servers hold ([`MemcachedClient::usage`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Items stored (`curr_items`).
    pub items: u64,
    /// Bytes the items take, each with its key and memcached's header
    /// (`bytes`).
    pub bytes: u64,
}

/// The longest key prefix.
pub const MAX_PREFIX: usize = 64;

impl Default for MemcachedOptions {
    /// `limits:`, 50 ms, 32 connections per server, 64 attempts, 1 MiB
    /// items, no local fallback, clocks compared every minute.
    fn default() -> MemcachedOptions {
        MemcachedOptions {
            prefix: "limits:".to_owned(),
            timeout: Duration::from_millis(50),
            max_connections: 32,
            max_attempts: 64,
            item_size_max: 1 << 20,
            local_fallback: None,
            clock_check_every: Some(Duration::from_secs(60)),
        }
    }
}

/// What the stores on one client have counted since it was made.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    retries: AtomicU64,
    gave_up: AtomicU64,
    local_decisions: AtomicU64,
}

/// Connections to the memcached servers of one URL, shared (cheaply
/// cloned) by every store deciding on them. Connections are opened when a
/// decision needs one, so a client can be made before its servers are up.
#[derive(Clone)]
pub struct MemcachedClient {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Vec<Pool>,
    /// Which of `servers` holds a key.
    ring: Ring,
    options: MemcachedOptions,
    counts: Counts,
    /// This instance among those on the same servers, for the clock
    /// offsets they publish: random, made with the client.
    instance: u64,
    /// The last clock offset measured.
    clock_offset: Mutex<Option<ClockOffset>>,
}

impl std::fmt::Debug for MemcachedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemcachedClient")
            .field("servers", &self.servers())
            .field("options", &self.inner.options)
            .finish()
    }
}

impl MemcachedClient {
    /// A client of the servers `url` names
    /// (`memcached://HOST:PORT[,HOST:PORT...]`), connecting on demand; an
    /// error says what is wrong with the URL or the options. Keys are
    /// spread over several servers by consistent hashing (ketama, as
    /// libmemcached and spymemcached spread them), so a server that goes
    /// away fails the decisions of its keys only.
    ///
    /// ```
    /// use limits_memcached::{MemcachedClient, MemcachedOptions};
    /// let client = MemcachedClient::new("memcached://127.0.0.1:11211", MemcachedOptions::default()).unwrap();
    /// assert_eq!(client.servers(), ["127.0.0.1:11211"]);
    /// let two = MemcachedClient::new("memcached://10.0.0.1,10.0.0.2:11212", MemcachedOptions::default()).unwrap();
    /// assert_eq!(two.servers(), ["10.0.0.1:11211", "10.0.0.2:11212"]);
    /// let bad = MemcachedOptions { prefix: "a b".into(), ..MemcachedOptions::default() };
    /// assert!(MemcachedClient::new("memcached://h:1", bad).err().unwrap().contains("prefix"));
    /// ```
    pub fn new(url: &str, options: MemcachedOptions) -> Result<MemcachedClient, String> {
        let servers = parse_url(url)?;
        let prefix_ok = options.prefix.len() <= MAX_PREFIX
            && options.prefix.bytes().all(|b| b.is_ascii_graphic());
        if !prefix_ok {
            return Err(format!(
                "the key prefix {:?} is not at most {MAX_PREFIX} bytes of printable ASCII without spaces",
                options.prefix
            ));
        }
        let ring = Ring::new(&servers);
        let servers = servers
            .into_iter()
            .map(|addr| Pool::new(addr, options.max_connections))
            .collect();
        Ok(MemcachedClient {
            inner: Arc::new(Inner {
                servers,
                ring,
                options,
                counts: Counts::default(),
                instance: RandomState::new().hash_one(std::process::id()),
                clock_offset: Mutex::new(None),
            }),
        })
    }

    /// As [`new`](Self::new), then asks every server to answer (`mn`):
    /// an error names the one that did not.
    pub async fn connect(url: &str, options: MemcachedOptions) -> Result<MemcachedClient, String> {
        let client = MemcachedClient::new(url, options)?;
        client.ping().await.map_err(|e| e.message)?;
        Ok(client)
    }

    /// Whether every server answers now, within the timeout (readiness).
    pub async fn ping(&self) -> Result<(), StoreError> {
        for pool in &self.inner.servers {
            self.exchange(pool, async |lease| lease.connection().noop().await)
                .await?;
        }
        Ok(())
    }

    /// What the servers hold, summed over them (memcached's `stats`):
    /// for sizing memcached, and for `limits bench`.
    pub async fn usage(&self) -> Result<Usage, StoreError> {
        let mut usage = Usage::default();
        for pool in &self.inner.servers {
            let stats = self
                .exchange(pool, async |lease| lease.connection().stats().await)
                .await?;
            let stat = |name: &str| {
                stats
                    .iter()
                    .find(|(n, _)| n == name)
                    .and_then(|(_, v)| v.parse::<u64>().ok())
                    .ok_or_else(|| {
                        StoreError::new(format!("memcached {}: no {name} in stats", pool.addr()))
                    })
            };
            usage.items += stat("curr_items")?;
            usage.bytes += stat("bytes")?;
        }
        Ok(usage)
    }

    /// The servers' `HOST:PORT`s.
    pub fn servers(&self) -> Vec<&str> {
        self.inner.servers.iter().map(Pool::addr).collect()
    }

    /// The settings it was made with.
    pub fn options(&self) -> &MemcachedOptions {
        &self.inner.options
    }

    /// Writes that found the key changed by another writer since it was
    /// read, and so read it again: contention on hot keys.
    pub fn retries(&self) -> u64 {
        self.inner.counts.retries.load(Ordering::Relaxed)
    }

    /// Decisions that gave up after [`MemcachedOptions::max_attempts`]
    /// attempts, each answered with a [`StoreError`].
    pub fn gave_up(&self) -> u64 {
        self.inner.counts.gave_up.load(Ordering::Relaxed)
    }

    /// Decisions (and settlements) made in this process because memcached
    /// could not answer ([`MemcachedOptions::local_fallback`]).
    pub fn local_decisions(&self) -> u64 {
        self.inner.counts.local_decisions.load(Ordering::Relaxed)
    }

    /// The clock offset [`measure_clock_offset`](Self::measure_clock_offset)
    /// found last, if it has found one.
    ///
    /// ```
    /// use limits_memcached::{MemcachedClient, MemcachedOptions};
    /// let client = MemcachedClient::new("memcached://127.0.0.1:1", MemcachedOptions::default()).unwrap();
    /// assert_eq!(client.clock_offset(), None, "never measured");
    /// ```
    pub fn clock_offset(&self) -> Option<ClockOffset> {
        *self
            .inner
            .clock_offset
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn keep_clock_offset(&self, offset: ClockOffset) {
        *self
            .inner
            .clock_offset
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(offset);
    }

    /// This instance's random number among those on the same servers.
    pub(crate) fn instance(&self) -> u64 {
        self.inner.instance
    }

    pub(crate) fn count_local_decision(&self) {
        self.inner
            .counts
            .local_decisions
            .fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_retry(&self) {
        self.inner.counts.retries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_gave_up(&self) {
        self.inner.counts.gave_up.fetch_add(1, Ordering::Relaxed);
    }

    /// The server that holds `item_key`: ketama's, as the common clients
    /// place it.
    pub(crate) fn server_of(&self, item_key: &str) -> &Pool {
        &self.inner.servers[self.inner.ring.server_of(item_key.as_bytes())]
    }

    /// The servers whose last exchange failed (unreachable, or no answer in
    /// time), as `HOST:PORT`: their keys are answered by the outage policy
    /// until one answers again.
    ///
    /// ```
    /// use limits_memcached::{MemcachedClient, MemcachedOptions};
    /// let client = MemcachedClient::new("memcached://127.0.0.1:1", MemcachedOptions::default()).unwrap();
    /// assert!(client.unreachable().is_empty(), "none has failed yet");
    /// ```
    pub fn unreachable(&self) -> Vec<&str> {
        let servers = self.inner.servers.iter();
        servers.filter(|s| !s.answering()).map(Pool::addr).collect()
    }

    /// Runs `work` on a connection of `pool` within the timeout: the
    /// connection goes back to the pool if `work` succeeded, and is closed
    /// otherwise. Every failure is a [`StoreError`] naming the server.
    pub(crate) async fn exchange<T>(
        &self,
        pool: &Pool,
        work: impl AsyncFnOnce(&mut crate::pool::Lease<'_>) -> Result<T, MetaError>,
    ) -> Result<T, StoreError> {
        let timeout = self.inner.options.timeout;
        let attempt = async {
            let mut lease = pool.take().await?;
            let result = work(&mut lease).await?;
            lease.release();
            Ok(result)
        };
        let failed = |e: MetaError| {
            let message = format!("memcached {}: {e}", pool.addr());
            match e.is_out_of_memory() {
                true => StoreError::full(message),
                false => StoreError::new(message),
            }
        };
        let result = match tokio::time::timeout(timeout, attempt).await {
            Ok(result) => result.map_err(failed),
            Err(_) => Err(StoreError::new(format!(
                "memcached {}: no answer within {timeout:?}",
                pool.addr()
            ))),
        };
        // A full server answers: it is there, and says so.
        pool.answered(result.as_ref().map_or_else(StoreError::is_full, |_| true));
        result
    }
}
