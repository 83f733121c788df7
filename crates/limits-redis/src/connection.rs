//! The connection every Redis store of a process shares: one multiplexed
//! connection (reconnecting in the background), a timeout on every call, and
//! a circuit that makes calls fail at once while Redis is unreachable.
//!
//! Without the circuit, every request would wait the full timeout on a dead
//! Redis (what the Envoy rate limit service's users report). After a failure
//! the circuit opens: calls fail fast, the failure is logged once, and one
//! background probe PINGs Redis every `probe_interval` until it answers; then
//! the circuit closes and calls go to Redis again.
//!
//! Redis need not be up when the connection is made: in a cluster of
//! services it often starts after its clients. [`RedisConnection::start`]
//! returns at once with the circuit open (an outage, logged once), and
//! connects in the background; [`RedisConnection::connect`] insists.

use crate::clock;
use crate::dial::{redact, Dial, Target};
use crate::link::{Conn, Health};
use crate::memory_policy;
use crate::module::{self, RedisModule};
use crate::slots::SlotCache;
use crate::tls::TlsFiles;
use limits::{Rate, StoreError};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How the store talks to Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// Prepended to every key (default `limits:`), so that several
    /// deployments can share one Redis.
    pub prefix: String,
    /// The most a call may take before it counts as a failure (default 50 ms).
    pub timeout: Duration,
    /// How often a probe asks an unreachable Redis whether it is back, and
    /// how often a sentinel is asked whether its master moved
    /// (`redis+sentinel://`; default 250 ms).
    pub probe_interval: Duration,
    /// Most keys each store remembers a denial of, to deny them again
    /// locally until they could pass (the exact deny cache; 0: off;
    /// default 100,000).
    pub deny_cache: usize,
    /// How often this host's clock is compared with Redis's `TIME` (besides
    /// at connection and when Redis answers again; default 10 s).
    pub clock_check: Duration,
    /// A clock difference beyond this is logged (default 100 ms).
    pub clock_warning: Duration,
    /// What a store does when Redis cannot answer (unreachable, timed
    /// out): return the error, for the caller's policy to answer (the
    /// default), or decide in this process ([`Fallback::Local`]).
    pub on_error: Fallback,
    /// What a store does when Redis answers that it is full (`OOM` under
    /// `maxmemory`): return the error (of kind
    /// [`Full`](limits::StoreErrorKind::Full), the default), or decide in
    /// this process.
    pub on_full: Fallback,
    /// The most keys one client address may create per window through a
    /// store (IPv6 by /64), when the caller names the client
    /// ([`Store::decide_from`](limits::Store::decide_from)); beyond it its
    /// requests on keys new to the store are denied, so that a flood of
    /// distinct keys from a few addresses cannot fill Redis. `None`: no cap.
    /// Default: 1000 per minute.
    pub new_keys_per_client: Option<Rate>,
    /// Most keys each store holds in this process for its local fallback,
    /// and most client addresses and recent keys it tracks for the cap on
    /// new keys (default 1,000,000).
    pub local_max_keys: usize,
    /// The PEM files of a TLS Redis (`rediss://`, `rediss+cluster://`,
    /// `rediss+sentinel://`): the CA its certificates must chain to
    /// (default: none, the system's trusted roots), and a client
    /// certificate and key for a Redis that asks for one. Refused with any
    /// other URL.
    pub tls: TlsFiles,
    /// Whether decisions go to the limits Redis module where it can decide
    /// them (default [`RedisModule::Auto`]: when Redis has it loaded).
    pub module: RedisModule,
}

/// What a store does when Redis cannot decide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fallback {
    /// Return the error: the caller's failure policy answers.
    #[default]
    Error,
    /// Decide in this process with an in-memory limiter of the same rule:
    /// each instance then admits at most the limit, so N instances at most
    /// N times the limit, not everything.
    Local,
}

impl Default for RedisOptions {
    fn default() -> RedisOptions {
        RedisOptions {
            prefix: "limits:".to_owned(),
            timeout: Duration::from_millis(50),
            probe_interval: Duration::from_millis(250),
            deny_cache: 100_000,
            clock_check: Duration::from_secs(10),
            clock_warning: Duration::from_millis(100),
            on_error: Fallback::Error,
            on_full: Fallback::Error,
            new_keys_per_client: Some(
                Rate::new(1000, Duration::from_secs(60)).expect("a valid rate"),
            ),
            local_max_keys: 1_000_000,
            tls: TlsFiles::default(),
            module: RedisModule::Auto,
        }
    }
}

/// The store could not connect or was given a bad address.
#[derive(Debug)]
pub struct ConnectError(pub String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

/// A shared connection to Redis (or a Redis Cluster): clone it freely, every
/// clone uses the same connection and the same circuit.
#[derive(Clone)]
pub struct RedisConnection {
    /// Set once connected: at once, or in the background by
    /// [`start`](Self::start).
    pub(crate) conn: Arc<OnceLock<Conn>>,
    pub(crate) options: Arc<RedisOptions>,
    pub(crate) health: Arc<Health>,
    /// Which cluster node holds which slot, as last read: how a batch is
    /// split per node (see `batch`).
    pub(crate) slots: Arc<SlotCache>,
}

impl std::fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConnection")
            .field("options", &self.options)
            .field("healthy", &self.is_healthy())
            .finish_non_exhaustive()
    }
}

impl RedisConnection {
    /// Connects to `url`, one of:
    ///
    /// - `redis://HOST:PORT[/DB]`: one Redis;
    /// - `redis://:PASSWORD@HOST:PORT[/DB]`: with a password
    ///   (`--requirepass`), `redis://USER:PASSWORD@HOST:PORT[/DB]`: as an
    ///   ACL user (percent-encode `@`, `:` and `/` in either);
    /// - `rediss://[USER:PASSWORD@]HOST:PORT[/DB]`: over TLS (rustls), the
    ///   server's certificate checked against the system's roots or
    ///   [`RedisOptions::tls`]'s CA file, and its name against `HOST`; with
    ///   a client certificate when the TLS files name one;
    /// - `redis+unix:///PATH/TO/SOCKET[?db=N&user=USER&pass=PASSWORD]` or
    ///   `unix:///PATH/TO/SOCKET[?...]`: a unix socket;
    /// - `redis+cluster://[USER:PASSWORD@]HOST1:PORT1,HOST2:PORT2,...`: a
    ///   Redis Cluster (any reachable node will do; the rest are
    ///   discovered; the credentials are used on every node);
    /// - `redis+sentinel://[USER:PASSWORD@]HOST1:PORT1,HOST2:PORT2,.../MASTER[/DB]`:
    ///   the master named `MASTER` that these sentinels watch (the
    ///   credentials and database are the master's). Sentinels with a
    ///   password of their own (`requirepass` in their config) take it in
    ///   the query: `...?sentinel_password=P[&sentinel_user=U]`. After a
    ///   failover the sentinels are asked again, and the store follows the
    ///   master they name;
    /// - `rediss+cluster://...` and `rediss+sentinel://...`: the same over
    ///   TLS, every node (and every sentinel) with the same TLS files.
    ///
    /// Fails if Redis does not answer now (or refuses the credentials, or
    /// its certificate is refused), with the URL, its password hidden; see
    /// [`start`](Self::start) for a connection that waits for it.
    pub async fn connect(
        url: &str,
        options: RedisOptions,
    ) -> Result<RedisConnection, ConnectError> {
        let target = Self::target(url, &options)?;
        let conn = target
            .open()
            .await
            .map_err(|e| ConnectError(failure(url, &e)))?;
        Ok(RedisConnection::connected(conn, options).await)
    }

    /// Connects to `url` as [`connect`](Self::connect) does if Redis
    /// answers now; if it does not, returns at once a connection whose
    /// circuit is open (calls fail fast, or are decided in this process
    /// with [`Fallback::Local`]; counted as an outage, logged once), and
    /// keeps connecting in the background every
    /// [`probe_interval`](RedisOptions::probe_interval) until Redis answers
    /// (logged once). Fails on a URL that can never connect, and when
    /// Redis answers but refuses the credentials or the TLS handshake
    /// (waiting would not change that).
    pub async fn start(url: &str, options: RedisOptions) -> Result<RedisConnection, ConnectError> {
        let target = Self::target(url, &options)?;
        let error = match target.open().await {
            Ok(conn) => return Ok(RedisConnection::connected(conn, options).await),
            Err(e) if refusal(&e).is_some() => return Err(ConnectError(failure(url, &e))),
            Err(e) => e,
        };
        let connection = RedisConnection {
            conn: Arc::new(OnceLock::new()),
            options: Arc::new(options),
            health: Arc::new(Health::default()),
            slots: Arc::default(),
        };
        connection.health.down.store(true, Ordering::Relaxed);
        connection.health.outages.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            "the Redis store is unreachable at start ({error}); answering per the outage policy and connecting in the background until it answers"
        );
        connection.connect_in_background(target);
        Ok(connection)
    }

    /// `url` checked with the options' timeout and TLS files.
    fn target(url: &str, options: &RedisOptions) -> Result<Target, ConnectError> {
        let dial = Dial {
            timeout: options.timeout,
            tls: &options.tls,
            probe_interval: options.probe_interval,
        };
        Target::new(url, &dial).map_err(ConnectError)
    }

    /// A connection over `conn`, with its memory policy read and its clock
    /// watched.
    async fn connected(conn: Conn, options: RedisOptions) -> RedisConnection {
        let health = Arc::new(Health::default());
        Self::watch(&conn, &health, &options).await;
        RedisConnection {
            conn: Arc::new(OnceLock::from(conn)),
            options: Arc::new(options),
            health,
            slots: Arc::default(),
        }
    }

    /// What is done on each new connection: its `maxmemory-policy` read (a
    /// warning if it may evict the limiter's keys), the limits module
    /// looked for, and its clock compared, now and from then on.
    async fn watch(conn: &Conn, health: &Arc<Health>, options: &RedisOptions) {
        memory_policy::check(conn, health, options.timeout).await;
        module::detect(conn, health, options.module, options.timeout).await;
        clock::spawn(
            conn.clone(),
            Arc::downgrade(health),
            options.clock_check,
            options.timeout,
            options.clock_warning,
        );
    }

    /// Tries `target` every probe interval until it answers, then closes
    /// the circuit; gives up when every clone of this connection is gone.
    fn connect_in_background(&self, target: Target) {
        let slot = Arc::downgrade(&self.conn);
        let health = Arc::downgrade(&self.health);
        let options = self.options.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(options.probe_interval).await;
                if slot.strong_count() == 0 {
                    return;
                }
                let conn = match target.open().await {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::debug!(error = %e, "the Redis store is still unreachable");
                        continue;
                    }
                };
                let (Some(slot), Some(health)) = (slot.upgrade(), health.upgrade()) else {
                    return;
                };
                Self::watch(&conn, &health, &options).await;
                let _ = slot.set(conn);
                health.down.store(false, Ordering::Release);
                tracing::warn!("the Redis store answers: connected, deciding in Redis from now on");
                return;
            }
        });
    }

    /// Whether Redis has the limits module loaded and the store decides
    /// with it ([`RedisOptions::module`]), as last found: on each new
    /// connection, and until Redis answers that it does not know it.
    pub fn decides_in_module(&self) -> bool {
        self.health.module.load(Ordering::Relaxed)
    }

    /// The options it was made with.
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// Whether Redis is answering: false from a failure until a probe gets
    /// an answer again.
    pub fn is_healthy(&self) -> bool {
        !self.health.down.load(Ordering::Relaxed)
    }

    /// Calls sent to Redis so far, failed ones included.
    pub fn calls(&self) -> u64 {
        self.health.calls.load(Ordering::Relaxed)
    }

    /// Calls that failed or were refused at once while Redis was unreachable.
    pub fn errors(&self) -> u64 {
        self.health.errors.load(Ordering::Relaxed)
    }

    /// Denials answered locally by the deny cache, without asking Redis.
    pub fn deny_cache_hits(&self) -> u64 {
        self.health.deny_cache_hits.load(Ordering::Relaxed)
    }

    /// This host's clock minus Redis's `TIME` at the last measurement, in
    /// microseconds (positive: this host is ahead); `None` before the first.
    /// Measured in the background: at connection, when Redis answers again
    /// after an outage, and every [`RedisOptions::clock_check`].
    pub fn clock_offset_micros(&self) -> Option<i64> {
        match self.health.clock_offset_us.load(Ordering::Relaxed) {
            clock::UNKNOWN => None,
            offset => Some(offset),
        }
    }

    /// How many times Redis became unreachable.
    pub fn outages(&self) -> u64 {
        self.health.outages.load(Ordering::Relaxed)
    }

    /// Calls Redis refused with `OOM` (full under `maxmemory`).
    pub fn full_answers(&self) -> u64 {
        self.health.full_answers.load(Ordering::Relaxed)
    }

    /// Whether the last reading of Redis's `maxmemory-policy` (at
    /// connection and after each outage) lets Redis evict the limiter's
    /// keys (any `allkeys-*` or `volatile-*` policy: the keys have TTLs).
    /// False when it could not be read.
    pub fn evictable(&self) -> bool {
        self.health.evictable.load(Ordering::Relaxed)
    }

    /// How many times it was logged that Redis may evict the limiter's keys.
    pub fn eviction_warnings(&self) -> u64 {
        self.health.eviction_warnings.load(Ordering::Relaxed)
    }

    /// Decisions made in this process because Redis could not answer
    /// (with [`Fallback::Local`]).
    pub fn local_decisions(&self) -> u64 {
        self.health.local_decisions.load(Ordering::Relaxed)
    }

    /// Requests denied because their client address created more new keys
    /// than [`RedisOptions::new_keys_per_client`] allows.
    pub fn new_keys_refused(&self) -> u64 {
        self.health.new_keys_refused.load(Ordering::Relaxed)
    }

    /// Runs `call` on the connection, with the timeout, through the circuit.
    pub(crate) async fn run<T, F, Fut>(&self, call: F) -> Result<T, StoreError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let conn = match self.conn.get() {
            Some(conn) if !self.health.down.load(Ordering::Acquire) => conn,
            _ => {
                self.health.errors.fetch_add(1, Ordering::Relaxed);
                return Err(StoreError::new(
                    "Redis is unreachable (failing fast until it answers again)",
                ));
            }
        };
        self.health.calls.fetch_add(1, Ordering::Relaxed);
        let failure = match tokio::time::timeout(self.options.timeout, call(conn.clone())).await {
            Ok(Ok(value)) => {
                self.writes_accepted();
                return Ok(value);
            }
            Ok(Err(e)) => match self.refused(&e) {
                Some(refusal) => return Err(refusal),
                None => format!("Redis: {e}"),
            },
            Err(_) => format!("Redis did not answer within {:?}", self.options.timeout),
        };
        self.health.errors.fetch_add(1, Ordering::Relaxed);
        conn.failed();
        self.open_circuit(&failure);
        Err(StoreError::new(failure))
    }

    /// A successful answer: a Redis that was full accepts writes again
    /// (said once).
    pub(crate) fn writes_accepted(&self) {
        if self.health.full.load(Ordering::Relaxed)
            && self.health.full.swap(false, Ordering::Relaxed)
        {
            tracing::warn!("the Redis store accepts writes again");
        }
    }

    /// Redis's refusal `e` of a command, counted (a full Redis logged once
    /// until it accepts writes again); `None` when `e` is no answer from
    /// Redis but a failure to reach it, which the caller answers as an
    /// outage.
    pub(crate) fn refused(&self, e: &redis::RedisError) -> Option<StoreError> {
        if is_out_of_memory(e) {
            self.health.errors.fetch_add(1, Ordering::Relaxed);
            self.health.full_answers.fetch_add(1, Ordering::Relaxed);
            if !self.health.full.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "the Redis store is FULL (it answers OOM: used memory > maxmemory); no limiter state can be written, and requests are answered per --on-store-full until it accepts writes again ({e})"
                );
            }
            return Some(StoreError::full(format!("Redis: {e}")));
        }
        if is_reply_error(e) {
            self.health.errors.fetch_add(1, Ordering::Relaxed);
            return Some(StoreError::new(format!("Redis: {e}")));
        }
        None
    }

    /// Opens the circuit (once per outage) and starts the probe that closes it.
    fn open_circuit(&self, failure: &str) {
        if self.health.down.swap(true, Ordering::Relaxed) {
            return;
        }
        self.health.outages.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("the Redis store is unreachable ({failure}); failing fast until it answers");
        let probe = self.clone();
        tokio::spawn(async move {
            // Opened only after a call, which needed a connection.
            let Some(conn) = probe.conn.get().cloned() else {
                return;
            };
            loop {
                tokio::time::sleep(probe.options.probe_interval).await;
                let mut conn = conn.clone();
                let cmd = redis::cmd("PING");
                let ping = cmd.query_async::<String>(&mut conn);
                let answered = matches!(
                    tokio::time::timeout(probe.options.timeout, ping).await,
                    Ok(Ok(_))
                );
                if !answered {
                    conn.failed();
                }
                if answered {
                    probe.health.down.store(false, Ordering::Relaxed);
                    tracing::warn!("the Redis store answers again");
                    let options = &probe.options;
                    memory_policy::check(&conn, &probe.health, options.timeout).await;
                    module::detect(&conn, &probe.health, options.module, options.timeout).await;
                    if let Some(offset) = clock::measure(&conn, options.timeout).await {
                        clock::record(&probe.health, offset, options.clock_warning);
                    }
                    return;
                }
            }
        });
    }
}

/// Why connecting to `url` failed, the URL's password hidden and a refusal
/// said plainly.
fn failure(url: &str, e: &redis::RedisError) -> String {
    let url = redact(url);
    match refusal(e) {
        Some(what) => format!("Redis at {url}: {what} ({e})"),
        None => format!("Redis at {url}: {e}"),
    }
}

/// What Redis refused, if it answered but refused us: the credentials, or
/// the TLS handshake (its certificate not trusted, or not for its name; our
/// client certificate missing or not trusted).
fn refusal(e: &redis::RedisError) -> Option<&'static str> {
    let text = e.to_string();
    if e.kind() == redis::ErrorKind::AuthenticationFailed
        || [
            "WRONGPASS",
            "NOAUTH",
            "invalid password",
            "invalid username-password",
        ]
        .iter()
        .any(|code| text.contains(code))
    {
        return Some("authentication failed: wrong user or password");
    }
    if text.contains("CertificateRequired") {
        return Some("it asks for a client certificate (tls-auth-clients), and none was given");
    }
    if [
        "BadCertificate",
        "UnknownCA",
        "CertificateUnknown",
        "DecryptError",
    ]
    .iter()
    .any(|alert| text.contains(&format!("received fatal alert: {alert}")))
    {
        return Some("it refused the client certificate (not signed by a CA it trusts)");
    }
    if text.contains("invalid peer certificate") || text.contains("certificate") {
        return Some("its TLS certificate was refused (not signed by a trusted CA, or not for this host name)");
    }
    None
}

/// Redis refused a write for lack of memory (`-OOM command not allowed when
/// used memory > 'maxmemory'`, also inside a script): Redis is up, and the
/// answer is the store's own kind of failure, not an outage.
fn is_out_of_memory(e: &redis::RedisError) -> bool {
    e.code() == Some("OOM") || e.to_string().contains("OOM command not allowed")
}

/// An error Redis answered (a script error, a wrong type): Redis is up, so
/// the circuit stays closed. Anything else (I/O, refused, dropped, timed
/// out, a cluster without a master) opens it.
fn is_reply_error(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    matches!(
        e.kind(),
        ErrorKind::Server(ServerErrorKind::ResponseError)
            | ErrorKind::Server(ServerErrorKind::NoPerm)
            | ErrorKind::UnexpectedReturnType
            | ErrorKind::Parse
    )
}
