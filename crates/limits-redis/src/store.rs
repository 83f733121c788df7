//! [`RedisStore`]: a rule's decisions made by one Lua script call in Redis,
//! all rates at once, with the core's semantics.

use crate::connection::{Fallback, RedisConnection};
use crate::deny_cache::DenyCache;
use crate::module;
use crate::new_keys::NewKeyCap;
use crate::scripts::{penalized_script_for, script_for, settle_script_for, Lua};
use crate::shape::{fingerprint, Shape, EXACT};
use crate::slots::key_slot;
use limits::UnsupportedRule;
use limits::{
    Algorithm, Asked, Ban, Decision, KeyedLimiter, Mode, Options, Penalty, Receipt, RetryAfter,
    Rule, Settlement, Store, StoreError, SystemClock, Until, Verdict, MAX_BAN,
};
use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, ErrorKind, FromRedisValue, ServerErrorKind};
use smallvec::SmallVec;
use std::cmp::Ordering as Compared;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Keys written by [`decide_at`](Store::decide_at) live this long (ms) at
/// least: a trace's times are not Redis's, so its resets say nothing of when
/// Redis may forget the key.
pub(crate) const EXPLICIT_TTL_MS: u64 = 24 * 3600 * 1000;

/// Numbers per rate in the script's answer.
const ROW: usize = 11;

/// The most units one settle script call is told of: every rate's charge
/// stops at 2 x its limit (the buckets) or at its limit (the counts), far
/// below, and every argument stays an exact Lua number.
const MOST_SETTLED: u64 = 1 << 51;

/// One rule's decisions, in Redis: every instance that shares the Redis (and
/// the rule's name) shares the limit, exactly.
///
/// Time is Redis's own `TIME`, in microseconds, read inside the script, so
/// instances with skewed clocks agree; [`decide_at`](Store::decide_at) takes
/// an explicit time instead (nanoseconds, floored to the microsecond). The
/// decisions are the in-memory store's at microsecond times: every wait,
/// reset and delay is still exact to the nanosecond (the buckets' waits are
/// rarely whole microseconds), but two requests less than a microsecond
/// apart are at the same instant for Redis. Windows must be whole
/// microseconds.
///
/// Keys are `PREFIX{NAME.FINGERPRINT:KEY}` (and `:N` for the sliding log's
/// rate N): the hash tag puts every key of one decision in one Cluster slot,
/// and each key expires when its state is back to full (so Redis memory
/// follows active clients). The fingerprint changes with the rule, so a
/// changed rule starts afresh.
///
/// A denial is remembered (see [`RedisOptions::deny_cache`](crate::RedisOptions)):
/// the same key is denied again locally, exactly, until it could pass.
///
/// When Redis cannot answer, the store returns the error, or with
/// [`Fallback::Local`] decides in this process with an in-memory limiter
/// of the same rule ([`RedisOptions::on_error`](crate::RedisOptions),
/// [`on_full`](crate::RedisOptions)). A caller that names the client
/// ([`Store::decide_from`]) has its new keys capped per client address
/// ([`RedisOptions::new_keys_per_client`](crate::RedisOptions)).
pub struct RedisStore {
    rule: Rule,
    connection: RedisConnection,
    script: Option<&'static Lua>,
    shape: Shape,
    stem: String,
    denials: DenyCache,
    /// The rule in memory, for [`Fallback::Local`]; `None` when neither
    /// fallback is local.
    // Boxed, both: most stores use neither, and a store is often held in an
    // enum beside the in-memory one.
    local: Option<Box<KeyedLimiter<String, SystemClock>>>,
    /// The cap on new keys per client address, if any.
    new_keys: Option<Box<NewKeyCap>>,
    /// The penalty that bans repeat offenders, kept beside each key's
    /// state, if any.
    penalty: Option<Penalty>,
    /// Bans this instance's decisions started.
    bans: AtomicU64,
}

impl RedisStore {
    /// A store deciding `rule` on `connection`, its keys named after `name`
    /// (the rule's name in the server); refuses a rule the script could not
    /// decide exactly (see [`UnsupportedRule`]).
    pub fn new(
        connection: &RedisConnection,
        rule: Rule,
        name: &str,
    ) -> Result<RedisStore, UnsupportedRule> {
        let shape = Shape::new(&rule)?;
        let stem = format!(
            "{}{{{name}.{}:",
            connection.options().prefix,
            fingerprint(&rule)
        );
        let options = connection.options();
        let script = script_for(rule.algorithm(), rule.rates().len());
        let max_keys = options.local_max_keys.max(1);
        let local = (options.on_error == Fallback::Local || options.on_full == Fallback::Local)
            .then(|| {
                let options = Options {
                    max_keys: Some(max_keys),
                    ..Options::default()
                };
                Box::new(KeyedLimiter::with_options(
                    rule.clone(),
                    SystemClock::new(),
                    options,
                ))
            });
        // `none` keeps no state in Redis: nothing to cap.
        let new_keys = options
            .new_keys_per_client
            .filter(|_| script.is_some())
            .map(|rate| Box::new(NewKeyCap::new(rate, max_keys)));
        Ok(RedisStore {
            script,
            rule,
            connection: connection.clone(),
            shape,
            stem,
            denials: DenyCache::new(options.deny_cache),
            local,
            new_keys,
            penalty: None,
            bans: AtomicU64::new(0),
        })
    }

    /// The store banning repeat offenders by `penalty`, as the core's
    /// [`Penalty::decide`] does, in the same script call as the rule's
    /// decision: each key's standing lives beside its state (in its Cluster
    /// slot), so every instance bans alike. Every decision asks Redis (no
    /// deny cache: each denial must be counted there), and is decided on
    /// its own rather than batched with others. Refused when `within` or
    /// `ban` is not a whole number of microseconds, the scripts' unit.
    pub fn with_penalty(mut self, penalty: Penalty) -> Result<RedisStore, UnsupportedRule> {
        for (field, span) in [("within", penalty.within()), ("ban", penalty.ban())] {
            if span.as_nanos() % 1000 != 0 {
                return Err(UnsupportedRule(format!(
                    "penalty's {field}: the Redis store keeps time in microseconds, and {span:?} is not a whole number of them"
                )));
            }
        }
        self.penalty = Some(penalty);
        self.denials = DenyCache::new(0);
        self.local = self
            .local
            .map(|local| Box::new(local.with_penalty(penalty)));
        Ok(self)
    }

    /// Bans started by this instance's decisions, in Redis or (while
    /// Redis is out) in the local fallback. Each ban is started by one
    /// decision, so the instances' counts add up to the bans.
    pub fn bans(&self) -> u64 {
        let local = self.local.as_ref().map_or(0, |local| local.bans());
        self.bans.load(Ordering::Relaxed) + local
    }

    /// The store without a deny cache: every decision asks Redis. For a
    /// rule whose slots come back long before a denial's retry time (a cap
    /// on requests in flight, given back when each request is done), where
    /// a remembered denial would refuse a client that another instance
    /// made room for.
    pub fn without_deny_cache(mut self) -> RedisStore {
        self.denials = DenyCache::new(0);
        self
    }

    /// The connection it decides on (health and counts).
    pub fn connection(&self) -> &RedisConnection {
        &self.connection
    }

    /// The Redis keys of `key`'s state: one, or one per rate for the sliding
    /// log. For inspection (`MEMORY USAGE`, `TTL`).
    pub fn redis_keys(&self, key: &str) -> Vec<String> {
        if self.shape.key_per_rate {
            (0..self.shape.key_count())
                .map(|i| format!("{}{key}}}:{i}", self.stem))
                .collect()
        } else {
            vec![format!("{}{key}}}", self.stem)]
        }
    }

    /// The cluster slot of `key`'s state (all its Redis keys share one);
    /// `None` for `none`, which keeps none.
    pub(crate) fn slot(&self, key: &str) -> Option<u16> {
        self.script?;
        Some(key_slot(format!("{}{key}}}", self.stem).as_bytes()))
    }

    /// One script call: `now` in microseconds, or Redis's `TIME` if `None`.
    async fn call(
        &self,
        key: &str,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let Some(command) = self.command(key, now, cost, mode) else {
            return Ok(self.stateless(cost, mode));
        };
        let connection = &self.connection;
        let packed: Vec<u8> = connection
            .run(|conn| module_or_script(conn, connection, command))
            .await?;
        self.answer(&packed, mode)
    }

    /// Whether the limits module decides this store's requests: loaded (as
    /// last found) and deciding its limiter.
    pub(crate) fn in_module(&self) -> bool {
        module::decides(&self.rule) && self.connection.decides_in_module()
    }

    /// The command of one decision: the module's where it decides it, the
    /// script's `EVALSHA` otherwise; `None` for `none`, which needs no
    /// state (and so no Redis): [`stateless`](Self::stateless) answers it.
    pub(crate) fn command(
        &self,
        key: &str,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
    ) -> Option<DecisionCommand> {
        let call = self.script_call(key, now, cost, mode)?;
        let name = match self.penalty {
            Some(_) => module::PENALIZED,
            None => module::DECIDE,
        };
        Some(self.either(call, name))
    }

    /// The module's command `name` of `call`'s arguments where the module
    /// decides this store's requests, and the script's call.
    fn either(&self, call: ScriptCall, name: &str) -> DecisionCommand {
        let module_command = self.in_module().then(|| call.in_module(self).command(name));
        let (script, script_command) = call.command();
        DecisionCommand {
            script,
            script_command,
            module_command,
        }
    }

    /// The script, keys and arguments of one decision; `None` for `none`.
    pub(crate) fn script_call(
        &self,
        key: &str,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
    ) -> Option<ScriptCall> {
        let script = self.script?;
        // Every cost above every rate's capacity is "never" for all of them.
        let cost = cost.min(self.shape.max_capacity + 1);
        let mode = match mode {
            Mode::Peek => 0u8,
            Mode::Record => 1,
            Mode::RecordAlways => 2,
        };
        let Some(penalty) = &self.penalty else {
            return Some(self.call_of(script, key, now, (cost, mode)));
        };
        let script = penalized_script_for(self.rule.algorithm(), self.rule.rates().len())?;
        let mut call = self.call_of(script, key, now, (cost, mode));
        call.keys.push(format!("{}{key}}}:p", self.stem));
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        call.args
            .arg(penalty.after())
            .arg(micros(penalty.within()))
            .arg(micros(penalty.ban()))
            .arg(penalty.escalate().unwrap_or(0))
            .arg(micros(MAX_BAN));
        Some(call)
    }

    /// A script call on `key`'s keys with the arguments every script takes:
    /// the time (`now` in microseconds, or `""` for Redis's `TIME`), what
    /// is asked (a cost and a mode, or units and how they settle), the
    /// keys' least time to live, and the rule's rates.
    fn call_of(
        &self,
        script: &'static Lua,
        key: &str,
        now: Option<u64>,
        asked: (u64, impl redis::ToRedisArgs),
    ) -> ScriptCall {
        let mut args = Cmd::new();
        match now {
            Some(now) => args.arg(now),
            None => args.arg(""),
        };
        args.arg(asked.0)
            .arg(asked.1)
            .arg(if now.is_some() { EXPLICIT_TTL_MS } else { 0 })
            .arg(&self.shape.args);
        ScriptCall {
            script,
            keys: self.redis_keys(key),
            args,
        }
    }

    /// The script call settling `key`'s request of `receipt` as
    /// `settlement` says, at `now` (microseconds, or Redis's `TIME`):
    /// the units refunded, charged or renewed, and the request's time
    /// after the rates. `None` when there is nothing to settle (the cost it
    /// was counted for, or `none`, which counts nothing).
    fn settle_call(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        settlement: Settlement,
    ) -> Result<Option<ScriptCall>, StoreError> {
        let Some(script) = settle_script_for(self.rule.algorithm()) else {
            return Ok(None);
        };
        let (how, units) = match settlement {
            Settlement::To(cost) => match cost.cmp(&receipt.cost) {
                Compared::Equal => return Ok(None),
                Compared::Less => ("refund", receipt.cost - cost),
                Compared::Greater => ("charge", cost - receipt.cost),
            },
            Settlement::Renew => ("renew", receipt.cost),
        };
        if let (Some(why), "charge" | "renew") = (&self.shape.uncharged, how) {
            return Err(StoreError::new(why.clone()));
        }
        let mut call = self.call_of(script, key, now, (units.min(MOST_SETTLED), how));
        call.args.arg(receipt.at / 1000);
        Ok(Some(call))
    }

    /// Settles `key`'s request of `receipt` as `settlement` says, in one
    /// script call: the receipt that settles it from now
    /// on. A refund (a renewal's too) then forgets the key's denial in this
    /// instance's deny cache, which it may have made stale (another
    /// instance's cache holds its denial until the retry time Redis
    /// answered it, at most).
    async fn settle_by_script(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        settlement: Settlement,
    ) -> Result<Receipt, StoreError> {
        let now = now.map(micros).transpose()?;
        let Some(call) = self.settle_call(key, now, receipt, settlement)? else {
            return Ok(receipt);
        };
        let command = self.either(call, module::SETTLE);
        let connection = &self.connection;
        let settled_at = connection
            .run(|conn| module_or_script::<u64>(conn, connection, command))
            .await;
        let gives_back = match settlement {
            Settlement::To(cost) => cost < receipt.cost,
            Settlement::Renew => true,
        };
        if gives_back {
            self.denials.forget(key);
        }
        Ok(Receipt {
            at: settled_at? * 1000,
            ..receipt
        })
    }

    /// The verdict of a rule of `none`: the core's, without Redis.
    pub(crate) fn stateless(&self, cost: u64, mode: Mode) -> Verdict {
        let mut per_rate = SmallVec::new();
        let decision = self
            .rule
            .decide(&mut self.rule.new_state(), 0, cost, mode, |d| {
                per_rate.push(d)
            });
        Verdict {
            decision,
            per_rate,
            decided_at: None,
            ban: None,
        }
    }

    /// The verdict in the script's answer to a decision in `mode`: one
    /// that records carries the time Redis decided at, its receipt's.
    pub(crate) fn answer(&self, packed: &[u8], mode: Mode) -> Result<Verdict, StoreError> {
        let numbers = unpack(packed)?;
        let (rule, ban) = match self.penalty {
            Some(_) if numbers.len() >= BAN_ANSWER => numbers.split_at(numbers.len() - BAN_ANSWER),
            Some(_) => {
                return Err(StoreError::new(
                    "the Redis script answered no ban for a rule with a penalty",
                ))
            }
            None => (&numbers[..], &[][..]),
        };
        let mut verdict = verdict(rule, self.shape.key_count_rates())?;
        if !mode.records() {
            verdict.decided_at = None;
        }
        if let &[now, until, length, offence] = ban {
            if until > 0 && banned(&mut verdict, now, until, length, offence) {
                self.bans.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(verdict)
    }

    /// Whether two stores' decisions can share a script call: on one
    /// connection, neither with a penalty (whose script decides alone).
    pub(crate) fn same_connection(&self, other: &RedisStore) -> bool {
        Arc::ptr_eq(&self.connection.conn, &other.connection.conn)
            && self.penalty.is_none()
            && other.penalty.is_none()
    }

    /// The deny cache's answer for `key` at `cost`, counted as a hit.
    fn denied_now(&self, key: &str, cost: u64) -> Option<Verdict> {
        let denied = self.denials.check(key, cost)?;
        let hits = &self.connection.health.deny_cache_hits;
        hits.fetch_add(1, Ordering::Relaxed);
        Some(denied)
    }

    /// Decides in this process (the fallback), counted.
    fn decide_locally(
        &self,
        local: &KeyedLimiter<String, SystemClock>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Verdict {
        let decided = &self.connection.health.local_decisions;
        decided.fetch_add(1, Ordering::Relaxed);
        Verdict {
            // What this process counted is not in Redis: nothing to settle there.
            decided_at: None,
            ..local.verdict(key, None, cost, mode)
        }
    }

    /// The local decision while the circuit is open, when an unreachable
    /// Redis falls back to this process: Redis would not be asked anyway.
    fn local_while_down(&self, key: &str, cost: u64, mode: Mode) -> Option<Verdict> {
        let local = self
            .local
            .as_ref()
            .filter(|_| self.down_with_local_fallback())?;
        Some(self.decide_locally(local, key, cost, mode))
    }

    /// Whether Redis is unreachable and this store then decides locally.
    fn down_with_local_fallback(&self) -> bool {
        self.local.is_some()
            && self.connection.options.on_error == Fallback::Local
            && !self.connection.is_healthy()
    }

    /// Redis's failure `e`, answered by the fallback of its kind.
    fn fall_back(
        &self,
        e: StoreError,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let options = &self.connection.options;
        let fallback = if e.is_full() {
            options.on_full
        } else {
            options.on_error
        };
        match (fallback, &self.local) {
            (Fallback::Local, Some(local)) => Ok(self.decide_locally(local, key, cost, mode)),
            _ => Err(e),
        }
    }

    /// What Redis's `answer` to a decision sent at `sent` becomes: a
    /// denial remembered by the deny cache, a failure answered by the
    /// fallback of its kind.
    pub(crate) fn answered(
        &self,
        answer: Result<Verdict, StoreError>,
        sent: Instant,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let verdict = match answer {
            Ok(verdict) => verdict,
            Err(e) => return self.fall_back(e, key, cost, mode),
        };
        if !verdict.decision.allowed {
            self.denials.remember(key, cost, sent, &verdict);
        }
        Ok(verdict)
    }

    /// The refusal of a request on a new key from a client at its cap:
    /// each rate says what the client's budget of new keys says.
    fn refused_new_key(&self, budget: Decision) -> Verdict {
        let refused = &self.connection.health.new_keys_refused;
        refused.fetch_add(1, Ordering::Relaxed);
        let wait = budget.retry_after.duration().unwrap_or_default();
        let decision = Decision {
            allowed: false,
            remaining: 0,
            retry_after: budget.retry_after,
            reset_after: wait,
            delay: Duration::ZERO,
            refill_after: wait,
        };
        let per_rate = (0..self.rule.rates().len()).map(|_| decision).collect();
        Verdict {
            decision,
            per_rate,
            decided_at: None,
            ban: None,
        }
    }

    /// What is answered at once for a request from `client`, without
    /// Redis: the deny cache's denial, the local decision while Redis is
    /// unreachable, or the refusal of a new key from a client at its cap.
    pub(crate) fn answered_at_once(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
        count_new_key: bool,
    ) -> Option<Verdict> {
        let counted = self.denial_reaches_redis(mode);
        if let Some(denied) = self.denied_now(key, cost).filter(|_| !counted) {
            return Some(denied);
        }
        if let Some(local) = self.local_while_down(key, cost, mode) {
            return Some(local);
        }
        let (Some(cap), Some(client), true) = (&self.new_keys, client, mode.records()) else {
            return None;
        };
        let denied = if count_new_key {
            cap.admit(client, key)
        } else {
            cap.would_deny(client, key)
        };
        denied.map(|budget| self.refused_new_key(budget))
    }

    /// Whether a denial in `mode` must still reach Redis, the deny cache
    /// aside: a denial that counts, but for the fixed window's (its first
    /// leaves the count at the limit until the window ends, which is what
    /// the cached denial says).
    fn denial_reaches_redis(&self, mode: Mode) -> bool {
        mode == Mode::RecordAlways && self.rule.algorithm() != Algorithm::FixedWindow
    }

    /// Whether Redis would decide this request with nothing answered at
    /// once ([`answered_at_once`](Self::answered_at_once): no denial in the
    /// deny cache, Redis not down with a local fallback) and nothing to
    /// count first (a key the cap on new keys has seen lately, or no cap
    /// for it). Counts nothing: a request sent after others in one call is
    /// decided only if they let it through, so it may count nothing before.
    pub(crate) fn asks_only_redis(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> bool {
        let cached = !self.denial_reaches_redis(mode) && self.denials.check(key, cost).is_some();
        let new_key = match (&self.new_keys, client, mode.records()) {
            (Some(cap), Some(_), true) => cap.is_new(key),
            _ => false,
        };
        !cached && !new_key && !self.down_with_local_fallback()
    }

    /// Redis's decision of one request, answered: remembered by the deny
    /// cache if denied, a failure answered by the fallback of its kind.
    pub(crate) async fn ask_redis(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let sent = Instant::now();
        let answer = self.call(key, None, cost, mode).await;
        self.answered(answer, sent, key, cost, mode)
    }
}

impl Shape {
    /// The number of rates (the first script argument).
    fn key_count_rates(&self) -> usize {
        self.args[0] as usize
    }
}

/// One call's commands: the module's where it decides, and the script's,
/// which decides otherwise and when Redis does not know the module.
pub(crate) struct DecisionCommand {
    /// The limiter's script, loaded again if Redis has forgotten it.
    pub script: &'static Lua,
    /// The script's call.
    pub script_command: Cmd,
    /// The module's, where it decides.
    pub module_command: Option<Cmd>,
}

impl DecisionCommand {
    /// The command sent first: the module's, or the script's.
    pub(crate) fn sent(&self) -> &Cmd {
        self.module_command.as_ref().unwrap_or(&self.script_command)
    }

    /// The script's command to send instead of the module's, when Redis
    /// answered the module's with `e`, that it does not know it (and the
    /// module is not required): the store then says so once and decides
    /// with the scripts from now on.
    pub(crate) fn instead_of_module(
        &self,
        e: &redis::RedisError,
        connection: &RedisConnection,
    ) -> Option<&Cmd> {
        self.module_command.as_ref()?;
        let setting = connection.options.module;
        module::forgotten(e, setting, &connection.health).then_some(&self.script_command)
    }
}

/// `command`'s answer on `conn`: the module's, or the script's where the
/// module does not decide or Redis does not know it (the script loaded
/// again if Redis has forgotten it).
pub(crate) async fn module_or_script<T: FromRedisValue>(
    mut conn: impl ConnectionLike + Send,
    connection: &RedisConnection,
    command: DecisionCommand,
) -> redis::RedisResult<T> {
    if let Some(module_command) = &command.module_command {
        match module_command.query_async(&mut conn).await {
            Err(e) if command.instead_of_module(&e, connection).is_some() => {}
            answered => return answered,
        }
    }
    query_loaded(conn, command.script, command.script_command).await
}

/// One decision's script call in pieces: a batch joins several into one
/// call.
pub(crate) struct ScriptCall {
    /// The limiter's script.
    pub script: &'static Lua,
    /// Its keys.
    pub keys: Vec<String>,
    /// Its arguments (a command of arguments only).
    pub args: Cmd,
}

impl ScriptCall {
    /// The `EVALSHA` of this call, and its script.
    fn command(self) -> (&'static Lua, Cmd) {
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(self.script.script.get_hash())
            .arg(self.keys.len())
            .arg(&self.keys);
        for arg in self.argv() {
            command.arg(arg);
        }
        (self.script, command)
    }

    /// The decision as the module takes it, for `store`'s limiter.
    pub fn in_module(&self, store: &RedisStore) -> module::Asked<'_> {
        module::Asked {
            keys: &self.keys,
            argv: self.argv().collect(),
            algorithm: store.rule.algorithm(),
        }
    }

    /// The arguments, each as Redis receives it.
    pub fn argv(&self) -> impl Iterator<Item = &[u8]> {
        self.args.args_iter().filter_map(|arg| match arg {
            Arg::Simple(arg) => Some(arg),
            _ => None,
        })
    }
}

/// `command` (a call of `script`) answered; when Redis has forgotten the
/// script (a restart, `SCRIPT FLUSH`), loaded again, once, and asked again.
pub(crate) async fn query_loaded<T: FromRedisValue>(
    mut conn: impl ConnectionLike + Send,
    script: &Lua,
    command: Cmd,
) -> redis::RedisResult<T> {
    match command.query_async(&mut conn).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            script.script.load_async(&mut conn).await?;
            command.query_async(&mut conn).await
        }
        answered => answered,
    }
}

/// `now` in nanoseconds as the scripts' microseconds, floored; an error past
/// their range.
pub(crate) fn micros(now: u64) -> Result<u64, StoreError> {
    let micros = now / 1000;
    if u128::from(micros) >= EXACT / 2 {
        return Err(StoreError::new(format!(
            "{now} ns is past the Redis store's time range (2^52 microseconds)"
        )));
    }
    Ok(micros)
}

/// Numbers after the rule's in a penalized script's answer: now, and the
/// ban's end, length and offence (zeros: no ban).
const BAN_ANSWER: usize = 4;

/// `verdict` refused at `now` for the ban the penalized script answered
/// (microseconds), as the core refuses it ([`Ban::refuse`]), each rate too.
/// The longest ban, which is no whole number of microseconds, comes back
/// as the core's own. Returns whether this decision started the ban.
fn banned(verdict: &mut Verdict, now: i64, until: i64, length: i64, offence: i64) -> bool {
    let ns = |us: i64| u64::try_from(us).unwrap_or(0).saturating_mul(1000);
    let longest = u64::try_from(MAX_BAN.as_nanos()).unwrap_or(u64::MAX);
    let (now, mut until, mut length) = (ns(now), ns(until), ns(length));
    if length == longest / 1000 * 1000 {
        until = until - length + longest;
        length = longest;
    }
    let ban = Ban {
        until,
        length: Duration::from_nanos(length),
        offence: u32::try_from(offence).unwrap_or(u32::MAX),
    };
    verdict.decision = ban.refuse(now, verdict.decision);
    for rate in &mut verdict.per_rate {
        *rate = ban.refuse(now, *rate);
    }
    verdict.ban = Some(ban);
    ban.started_at(now)
}

/// A duration the script gave as (microseconds, nanosecond adjustment).
fn duration(us: i64, adj: i64) -> Duration {
    let nanos = i128::from(us) * 1000 + i128::from(adj);
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

/// The script's answer, little-endian doubles packed in one string (cheaper
/// for Redis than an array of integers), as the integers they hold.
fn unpack(packed: &[u8]) -> Result<Vec<i64>, StoreError> {
    if packed.len() % 8 != 0 {
        return Err(StoreError::new(format!(
            "the Redis script answered {} bytes, not a whole number of doubles",
            packed.len()
        )));
    }
    packed
        .chunks_exact(8)
        .map(|bytes| {
            let mut eight = [0; 8];
            eight.copy_from_slice(bytes);
            let x = f64::from_le_bytes(eight);
            // Every number the scripts answer is an integer below 2^53.
            if x.fract() == 0.0 && x.abs() < (1u64 << 53) as f64 {
                Ok(x as i64)
            } else {
                Err(StoreError::new(format!(
                    "the Redis script answered {x}, not an exact integer"
                )))
            }
        })
        .collect()
}

/// The verdict from the script's answer: the time decided at (us), then a
/// row per rate.
fn verdict(answer: &[i64], rates: usize) -> Result<Verdict, StoreError> {
    if answer.len() != 1 + rates * ROW {
        return Err(StoreError::new(format!(
            "the Redis script answered {} numbers for {rates} rates",
            answer.len()
        )));
    }
    let mut per_rate: SmallVec<[Decision; 2]> = SmallVec::new();
    for row in answer[1..].chunks_exact(ROW) {
        let retry_after = if row[2] == 1 {
            RetryAfter::Never
        } else {
            RetryAfter::After(duration(row[3], row[4]))
        };
        per_rate.push(Decision {
            allowed: row[0] == 1,
            remaining: u64::try_from(row[1]).unwrap_or(0),
            retry_after,
            reset_after: duration(row[5], row[6]),
            refill_after: duration(row[7], row[8]),
            delay: duration(row[9], row[10]),
        });
    }
    let decision = per_rate
        .iter()
        .copied()
        .reduce(Decision::combine)
        .unwrap_or(Decision::allow(0));
    Ok(Verdict {
        decision,
        per_rate,
        decided_at: u64::try_from(answer[0]).ok().map(|us| us * 1000),
        ban: None,
    })
}

impl Store for RedisStore {
    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn penalty(&self) -> Option<&Penalty> {
        self.penalty.as_ref()
    }

    /// Decides at Redis's `TIME`, or locally if a recent denial of the key
    /// implies this one (or by the fallback, when Redis cannot answer).
    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        self.decide_from(None, key, cost, mode).await
    }

    /// [`decide`](Store::decide), with the key counted against `client`'s
    /// cap on new keys when it is new.
    async fn decide_from(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        if let Some(verdict) = self.answered_at_once(client, key, cost, mode, true) {
            return Ok(verdict);
        }
        self.ask_redis(key, cost, mode).await
    }

    /// Answers at once only from the deny cache: a key Redis denied lately,
    /// at this cost or less, is denied here exactly as [`Store::decide`]
    /// would deny it, without a round trip (so an HTTP layer need not
    /// suspend for a flooding client); and, while Redis is unreachable
    /// with [`Fallback::Local`], by the local limiter. Anything else is
    /// `None`: Redis decides it, and nothing was recorded.
    fn decide_now(&self, key: &str, cost: u64, mode: Mode) -> Option<Result<Verdict, StoreError>> {
        self.decide_now_from(None, key, cost, mode)
    }

    /// [`decide_now`](Store::decide_now), and the refusal of a new key from
    /// a client at its cap.
    fn decide_now_from(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Option<Result<Verdict, StoreError>> {
        self.answered_at_once(client, key, cost, mode, false)
            .map(Ok)
    }

    /// Decides at `now` (nanoseconds, floored to the microsecond). The
    /// deny cache is not used, and the keys written live a day at least:
    /// the given times are not Redis's, so its clock cannot tell when a
    /// state is back to full.
    async fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        self.call(key, Some(micros(now)?), cost, mode).await
    }

    /// Settles the request of `receipt` (which Redis admitted) to `cost`,
    /// at `now` (nanoseconds, floored to the microsecond) or Redis's
    /// `TIME`, in one script call doing the core's refund or charge on
    /// every rate ([`Rule::settle`]): the sliding log's entry of the
    /// receipt's time, a window's count while it still weighs, a bucket's
    /// level; a charge past the limit is the debt the core records.
    async fn settle(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        cost: u64,
    ) -> Result<(), StoreError> {
        self.settle_by_script(key, now, receipt, Settlement::To(cost))
            .await
            .map(drop)
    }

    /// Renews the request of `receipt` at `now` (floored to the
    /// microsecond) or Redis's `TIME`, in one script call doing the core's
    /// refund then charge on every rate ([`Rule::renew`]).
    async fn renew(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
    ) -> Result<Receipt, StoreError> {
        self.settle_by_script(key, now, receipt, Settlement::Renew)
            .await
    }

    /// Stores on one connection share a round trip.
    fn shares_round_trip(&self, other: &RedisStore) -> bool {
        self.same_connection(other)
    }

    /// Decides, after the first request (answered at once as
    /// [`decide_from`](Store::decide_from) answers it, or by Redis), every
    /// request after it that Redis alone decides in one script call: on
    /// one connection, in one slot of a cluster (a cluster refuses a
    /// script's keys in several); a request the deny cache or the local
    /// fallback answers, or whose key is new to the cap on new keys, is
    /// left to the caller's next call, which decides it as
    /// [`decide_from`](Store::decide_from) would, in its turn.
    async fn decide_in_order(
        asked: &[Asked<'_, RedisStore>],
        until: Until,
    ) -> Vec<Result<Verdict, StoreError>> {
        RedisStore::decide_together(asked, until).await
    }
}
