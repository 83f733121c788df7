//! `limits replay --store URL`: the trace decided in Redis instead of in
//! memory, so that the Lua scripts that decide for `serve --store` can be
//! checked against a real trace (and against the memory replay).
//!
//! The trace's times are passed as explicit times (`Store::decide_at`), not
//! Redis's `TIME`: the replay is deterministic and as fast as Redis answers.
//! Redis keeps time in whole microseconds, so every trace time is floored to
//! the microsecond before anything sees it (the Redis store, the sliding log
//! alongside, the tally and the `--decisions` rows alike), and the summary
//! says how many were. On a microsecond-aligned trace nothing changes, and
//! the decisions are the memory replay's, one for one.
//!
//! Every run writes under a fresh key prefix, printed on stderr, so two runs
//! (or a replay beside a live `serve` on the same Redis) never see each
//! other's state. The keys are left for inspection and expire within a day.

use super::keys::{KeyId, Keys};
use limits::{Decision, KeyedLimiter, ManualClock, Mode, Rule, Store};
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
    Redis(RedisStore, Rc<Redis>),
}

impl Limiter {
    /// The request of key `id` (named in `keys`, read only for Redis: in
    /// memory, the name is never touched) at `now` (ns; microsecond-aligned
    /// for Redis), recorded if allowed.
    pub fn decide(&self, id: KeyId, keys: &Keys, now: u64, cost: u64) -> Result<Decision, String> {
        match self {
            Limiter::Memory(keyed) => Ok(keyed.check_at(&id, now, cost)),
            Limiter::Redis(store, redis) => redis
                .runtime
                .block_on(store.decide_at(keys.name(id), now, cost, Mode::Record))
                .map(|v| v.decision)
                .map_err(|e| format!("--store: {e}")),
        }
    }
}

/// The Redis a replay decides in: its connection, the runtime that drives
/// it, and the run's key prefix.
pub struct Redis {
    runtime: Runtime,
    connection: RedisConnection,
    prefix: String,
}

impl Redis {
    /// Connects to `url` (any Redis URL `serve --store` takes), with the
    /// `tls` files of a TLS one, under a key prefix no other run has used.
    pub fn connect(url: &str, tls: limits_redis::TlsFiles) -> Result<Redis, String> {
        if !limits_redis::is_redis_url(url) {
            return Err(format!(
                "--store {:?}: {}",
                limits_redis::redact(url),
                crate::args::REDIS_URLS
            ));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        let prefix = fresh_prefix("replay");
        let options = RedisOptions {
            prefix: prefix.clone(),
            timeout: TIMEOUT,
            // The deny cache only serves decisions at Redis's own time.
            deny_cache: 0,
            tls,
            ..RedisOptions::default()
        };
        let connection = runtime
            .block_on(RedisConnection::connect(url, options))
            .map_err(|e| format!("--store: {e}"))?;
        Ok(Redis {
            runtime,
            connection,
            prefix,
        })
    }

    /// The run's key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A limiter deciding `rule` in this Redis, or the reason Redis cannot.
    pub fn limiter(self: &Rc<Self>, rule: Rule) -> Result<Limiter, String> {
        let name = rule.algorithm().name();
        RedisStore::new(&self.connection, rule, name)
            .map(|store| Limiter::Redis(store, self.clone()))
            .map_err(|e| format!("--store: {name}: {e}"))
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
