//! A limit on distinct values per key in Redis: every instance that shares
//! the Redis (and the rule's name) holds one set of values per key, so a
//! client cannot spread its usernames over the instances.
//!
//! Each key is a sorted set of the values it holds, scored by their last
//! use in microseconds, decided by one script call on Redis's own `TIME`
//! (`lua/distinct.lua`), exactly as the core's exact
//! [`Distinct`](limits::Distinct) decides at microsecond times. Values are
//! kept as the text the rule read (a key's text is bounded: a longer one is
//! hashed), so that instances agree without sharing a seed, and nobody can
//! make two values collide.
//!
//! Past a threshold ([`Distinct::with_sketch`](limits::Distinct::with_sketch))
//! a key's values turn into Redis's own HyperLogLogs, one per sub-window
//! (`PFADD`, merged when read by `PFCOUNT`, in the key's cluster slot),
//! beside the last `from` values in the sorted set
//! (`lua/distinct_sketched.lua`), as the core does in memory. Redis's
//! sketches have 16,384 registers whatever the rule's `registers` says: a
//! standard error of 0.81%.

use crate::connection::RedisConnection;
use crate::scripts::{Lua, DISTINCT, DISTINCT_SKETCHED};
use crate::shape::fingerprint;
use crate::store::{micros, query_loaded, EXPLICIT_TTL_MS};
use limits::{Algorithm, Distinct, Mode, Rule, Store, StoreError, UnsupportedRule, Verdict};
use std::net::IpAddr;
use std::time::Duration;

/// One rule of distinct values, decided in Redis.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use limits::{Distinct, Mode, Store};
/// use limits_redis::{RedisConnection, RedisDistinct, RedisOptions};
/// use std::time::Duration;
///
/// let connection = RedisConnection::connect("redis://127.0.0.1:6379", RedisOptions::default()).await?;
/// let usernames = Distinct::new(20, Duration::from_secs(3600))?;
/// let store = RedisDistinct::new(&connection, usernames, "logins")?;
/// let verdict = store.decide_value(None, "203.0.113.7", "alice", Mode::Record).await?;
/// assert!(verdict.decision.allowed);
/// # Ok(())
/// # }
/// ```
pub struct RedisDistinct {
    rule: Distinct,
    /// The limit as a sliding log of its rate: what the headers announce.
    limit: Rule,
    connection: RedisConnection,
    /// Every key's name up to the key: `PREFIX{NAME.dFINGERPRINT:`.
    stem: String,
}

impl RedisDistinct {
    /// A store deciding `rule` on `connection`, its keys named after
    /// `name`; refused for a window (or, with a sketch, a sub-window) that
    /// is no whole number of microseconds, Redis's unit.
    pub fn new(
        connection: &RedisConnection,
        rule: Distinct,
        name: &str,
    ) -> Result<RedisDistinct, UnsupportedRule> {
        let window = rule.window_nanos();
        let sub_windows = rule.sketch().map_or(1, |s| s.sub_windows as u64);
        if window % (1000 * sub_windows) != 0 {
            return Err(UnsupportedRule(format!(
                "the Redis store keeps time in microseconds, and a window of {window} ns in {sub_windows} is not a whole number of them"
            )));
        }
        let limit = Rule::new(Algorithm::SlidingLog, rule.rate().into());
        let sketched = rule
            .sketch()
            .map_or(String::new(), |s| format!("s{}-{}", s.from, s.sub_windows));
        let stem = format!(
            "{}{{{name}.d{}{sketched}:",
            connection.options().prefix,
            fingerprint(&limit)
        );
        Ok(RedisDistinct {
            rule,
            limit,
            connection: connection.clone(),
            stem,
        })
    }

    /// The registers of Redis's own HyperLogLogs, which sketch a key's
    /// values past a threshold whatever the rule's `registers` says.
    pub const SKETCH_REGISTERS: usize = 16_384;

    /// The limit.
    pub fn distinct(&self) -> Distinct {
        self.rule
    }

    /// The connection it decides on (health and counts).
    pub fn connection(&self) -> &RedisConnection {
        &self.connection
    }

    /// The Redis key of `key`'s values (its last values, with a sketch),
    /// for inspection.
    pub fn redis_key(&self, key: &str) -> String {
        format!("{}{key}}}", self.stem)
    }

    /// The script deciding this rule, and the Redis keys of `key`: its
    /// values, and with a sketch its sub-windows' numbers and sketches.
    fn call(&self, key: &str) -> (&'static Lua, Vec<String>) {
        let values = self.redis_key(key);
        let Some(sketch) = self.rule.sketch() else {
            return (&DISTINCT, vec![values]);
        };
        let slots = format!("{values}:s");
        let sketches: Vec<String> = (0..sketch.sub_windows)
            .map(|i| format!("{values}:h{i}"))
            .collect();
        let keys = [values, slots].into_iter().chain(sketches).collect();
        (&DISTINCT_SKETCHED, keys)
    }

    /// Decides `value` for `key` at `now` (nanoseconds, floored to the
    /// microsecond) or on Redis's `TIME`.
    pub async fn decide_value_at(
        &self,
        key: &str,
        value: &str,
        now: Option<u64>,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let now = now.map(micros).transpose()?;
        let (script, keys) = self.call(key);
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(script.script.get_hash())
            .arg(keys.len())
            .arg(keys);
        match now {
            Some(now) => command.arg(now),
            None => command.arg(""),
        };
        command
            .arg(value)
            .arg(self.rule.at_most())
            .arg(self.rule.window_nanos() / 1000)
            .arg(u8::from(mode.records()))
            .arg(if now.is_some() { EXPLICIT_TTL_MS } else { 0 });
        if let Some(sketch) = self.rule.sketch() {
            command.arg(sketch.from).arg(sketch.sub_windows);
        }
        let answer: Vec<i64> = self
            .connection
            .run(|conn| query_loaded(conn, script, command))
            .await?;
        verdict(&self.rule, &answer)
    }
}

/// The verdict on `rule` from the script's answer: allowed, remaining,
/// and the microseconds until the oldest and the newest value leave the
/// window.
fn verdict(rule: &Distinct, answer: &[i64]) -> Result<Verdict, StoreError> {
    let &[allowed, remaining, oldest, newest] = answer else {
        return Err(StoreError::new(format!(
            "the Redis distinct script answered {} numbers, not 4",
            answer.len()
        )));
    };
    let until = |us: i64| Duration::from_micros(u64::try_from(us).unwrap_or(0));
    let counted = rule
        .at_most()
        .saturating_sub(u64::try_from(remaining).unwrap_or(0));
    let decision = rule.decision(allowed == 1, counted, until(oldest), until(newest));
    Ok(Verdict::of(decision))
}

impl Store for RedisDistinct {
    /// The limit as a sliding log of `at_most` per window.
    fn rule(&self) -> &Rule {
        &self.limit
    }

    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        let _ = (key, cost, mode);
        Err(StoreError::no_value())
    }

    async fn decide_value(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let _ = client;
        self.decide_value_at(key, value, None, mode).await
    }
}
