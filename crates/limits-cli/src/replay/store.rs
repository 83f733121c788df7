//! `limits replay --store URL`: the trace decided in Redis or memcached
//! instead of in memory, so that what decides for `serve --store` (Redis's
//! Lua scripts; the core's code on memcached's items, written with CAS)
//! can be checked against a real trace (and against the memory replay).
//!
//! The trace's times are passed as explicit times (`Store::decide_at`), not
//! Redis's `TIME`: the replay is deterministic and as fast as Redis answers.
//! Redis keeps time in whole microseconds, so every trace time is floored to
//! the microsecond before anything sees it (the Redis store, the sliding log
//! alongside, the tally and the `--decisions` rows alike), and the summary
//! says how many were. On a microsecond-aligned trace nothing changes, and
//! the decisions are the memory replay's, one for one. Memcached keeps the
//! core's nanoseconds: nothing is floored.
//!
//! Every run writes under a fresh key prefix, printed on stderr, so two runs
//! (or a replay beside a live `serve` on the same Redis) never see each
//! other's state. The keys are left for inspection and expire within a day
//! (memcached's: a day after their last write).

use super::keys::{KeyId, Keys};
use super::trace::Event;
use limits::{Decision, DistinctLimiter, KeyedLimiter, ManualClock, Mode, Rule, Sketch, Store};
use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::runtime::Runtime;

/// How long one Redis call may take before the replay stops: generous, as
/// nothing waits on a replay but its user.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Where a replayed limiter keeps its state.
pub enum Limiter {
    /// Keyed by the trace's interned key numbers.
    Memory(KeyedLimiter<KeyId, ManualClock>),
    Redis(RedisStore, Rc<Shared>),
    Memcached(MemcachedStore<ManualClock>, Rc<Shared>),
    /// A sliding-window counter in a sketch's fixed memory, keyed by the
    /// interned numbers too.
    Sketch(Sketch<ManualClock>),
    /// A limit on distinct values (`--distinct`), in memory: each event's
    /// value decided for its key.
    Distinct(DistinctLimiter<KeyId, ManualClock>),
}

impl Limiter {
    /// The request `e` (its key named in `keys`, read only for a shared
    /// store: in memory, the name is never touched; its time
    /// microsecond-aligned for Redis), recorded if allowed.
    pub fn decide(&self, e: &Event, keys: &Keys) -> Result<Decision, String> {
        let Event {
            key: id,
            t: now,
            cost,
            ..
        } = *e;
        let decided = match self {
            Limiter::Distinct(values) => {
                let Some(value) = e.value else {
                    return Err(format!(
                        "line {}: --distinct needs each request's value: a path in an access log, a fourth field in a CSV trace (time,key,cost,value)",
                        e.line
                    ));
                };
                return Ok(values.check_at(&id, &value, now));
            }
            Limiter::Memory(keyed) => return Ok(keyed.check_at(&id, now, cost)),
            Limiter::Sketch(sketch) => return Ok(sketch.check_at(&id, now, cost)),
            Limiter::Redis(store, shared) => {
                shared
                    .runtime
                    .block_on(store.decide_at(keys.name(id), now, cost, Mode::Record))
            }
            Limiter::Memcached(store, shared) => {
                shared
                    .runtime
                    .block_on(store.decide_at(keys.name(id), now, cost, Mode::Record))
            }
        };
        decided
            .map(|v| v.decision)
            .map_err(|e| format!("--store: {e}"))
    }
}

/// The shared store a replay decides in: its connection, the runtime that
/// drives it, and the run's key prefix.
pub struct Shared {
    runtime: Runtime,
    connection: Connection,
    prefix: String,
}

/// A Redis or memcached, connected.
enum Connection {
    Redis(RedisConnection),
    Memcached(MemcachedClient),
}

impl Shared {
    /// Connects to `url` (any URL `serve --store` takes but `memory`), with
    /// the `tls` files of a TLS Redis, under a key prefix no other run has
    /// used.
    /// With a Redis, `module` says whether the limits module decides.
    pub fn connect(
        url: &str,
        tls: limits_redis::TlsFiles,
        module: limits_redis::RedisModule,
    ) -> Result<Shared, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        let prefix = fresh_prefix("replay");
        let connection = if limits_redis::is_redis_url(url) {
            let options = RedisOptions {
                prefix: prefix.clone(),
                timeout: TIMEOUT,
                // The deny cache only serves decisions at Redis's own time.
                deny_cache: 0,
                tls,
                module,
                ..RedisOptions::default()
            };
            let connect = RedisConnection::connect(url, options);
            Connection::Redis(
                runtime
                    .block_on(connect)
                    .map_err(|e| format!("--store: {e}"))?,
            )
        } else if limits_memcached::is_memcached_url(url) {
            let options = MemcachedOptions {
                prefix: prefix.clone(),
                timeout: TIMEOUT,
                ..MemcachedOptions::default()
            };
            let connect = MemcachedClient::connect(url, options);
            Connection::Memcached(
                runtime
                    .block_on(connect)
                    .map_err(|e| format!("--store: {e}"))?,
            )
        } else {
            return Err(format!(
                "--store {:?}: {}",
                limits_redis::redact(url),
                crate::args::STORE_URLS
            ));
        };
        Ok(Shared {
            runtime,
            connection,
            prefix,
        })
    }

    /// The run's key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether the store keeps whole microseconds (Redis), so that the
    /// trace's times are floored to them.
    pub fn in_microseconds(&self) -> bool {
        matches!(self.connection, Connection::Redis(_))
    }

    /// A limiter deciding `rule` in this store, or the reason it cannot.
    pub fn limiter(self: &Rc<Self>, rule: Rule) -> Result<Limiter, String> {
        let name = rule.algorithm().name();
        let made = match &self.connection {
            Connection::Redis(connection) => RedisStore::new(connection, rule, name)
                .map(|store| Limiter::Redis(store, self.clone()))
                .map_err(|e| e.to_string()),
            // The trace gives every time: the clock is never read.
            Connection::Memcached(client) => {
                MemcachedStore::with_clock(client, rule, name, ManualClock::new(0))
                    .map(|store| Limiter::Memcached(store, self.clone()))
                    .map_err(|e| e.to_string())
            }
        };
        made.map_err(|e| format!("--store: {name}: {e}"))
    }
}

/// `limits:COMMAND:SECONDS.NANOS-PID:`: unique per run on one host (and
/// across hosts but for a clash to the nanosecond).
pub(crate) fn fresh_prefix(command: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "limits:{command}:{}.{:09}-{}:",
        now.as_secs(),
        now.subsec_nanos(),
        std::process::id()
    )
}
