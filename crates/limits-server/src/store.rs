//! The store of each rule, chosen per rule: one type that can hold any kind
//! the server knows, so that rules over different stores share one policy.
//!
//! The HTTP layer takes one store type for all its rules; [`RuleStore`] is
//! that type, an enum that decides by delegating to the store it holds (a
//! `match`, no boxing, no virtual call): in memory, in Redis or in
//! memcached (shared by every instance on the same servers). What only an in-process store can do
//! (sweep, state files, key counts) is asked through
//! [`Store::local`], never assumed.

use limits::{
    Asked, Distinct, DistinctLimiter, KeyedLimiter, LocalStore, Mode, Penalty, Receipt, Rule,
    Sketch, SketchOptions, Store, StoreError, SystemClock, Until, Verdict,
};
use limits_memcached::{MemcachedClient, MemcachedDistinct, MemcachedStore};
use limits_redis::{RedisConnection, RedisDistinct, RedisStore};
use std::net::IpAddr;

/// The stores a rule can use, behind one type.
///
/// ```
/// use limits::{Algorithm, Rule, Store};
/// use limits_server::StoreOptions;
///
/// let rule = Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap());
/// let options = StoreOptions { max_keys: 100, ..StoreOptions::default() };
/// let store = options.store("api", rule.clone()).unwrap();
/// assert_eq!(store.kind(), "memory");
/// assert_eq!(store.rule(), &rule);
/// assert!(store.local().is_some(), "an in-memory store sweeps and saves its state");
/// ```
pub enum RuleStore {
    /// Keys and their state in this process, at most `max_keys` of them.
    Memory(KeyedLimiter<String, SystemClock>),
    /// Keys and their state in Redis, shared with every instance using it.
    Redis(RedisStore),
    /// Keys and their state in memcached, shared with every instance using
    /// it; decided here, at this process's clock.
    Memcached(MemcachedStore),
    /// Sliding-window counters in a fixed amount of this process's memory,
    /// however many keys (`memory = "16MB"`): false denials only.
    Sketch(Sketch),
    /// Each key's distinct values in this process (`distinct = {...}`),
    /// asked with each request's value ([`Store::decide_value`]).
    Distinct(DistinctLimiter<String>),
    /// Each key's distinct values in Redis, shared with every instance
    /// using it.
    RedisDistinct(RedisDistinct),
    /// Each key's distinct values in memcached, shared with every instance
    /// using it; decided here, at this process's clock.
    MemcachedDistinct(MemcachedDistinct),
}

impl RuleStore {
    /// An in-memory store of `rule`, tracking at most `max_keys` keys
    /// (beyond it, the keys cheapest to forget are evicted).
    pub fn memory(rule: Rule, max_keys: usize) -> RuleStore {
        let options = limits::Options {
            max_keys: Some(max_keys),
            ..limits::Options::default()
        };
        RuleStore::Memory(KeyedLimiter::with_options(
            rule,
            SystemClock::new(),
            options,
        ))
    }

    /// Each key's distinct values under `rule`, in this process.
    ///
    /// ```
    /// use limits::Distinct;
    /// use limits_server::RuleStore;
    /// use std::time::Duration;
    ///
    /// let store = RuleStore::distinct(Distinct::new(20, Duration::from_secs(3600)).unwrap());
    /// assert_eq!(store.kind(), "memory");
    /// assert_eq!(store.place(), "memory (distinct values)");
    /// ```
    pub fn distinct(rule: Distinct) -> RuleStore {
        RuleStore::Distinct(DistinctLimiter::new(rule))
    }

    /// A sketch of `memory` bytes deciding `rule` (a sliding-window
    /// counter), or why it cannot.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// use limits_server::RuleStore;
    ///
    /// let rule = Rule::new(Algorithm::SlidingWindow, "10/s".parse().unwrap());
    /// let store = RuleStore::sketch(rule, 1 << 20).unwrap();
    /// assert_eq!((store.kind(), store.place()), ("sketch", "a sketch of 1 MiB".to_string()));
    /// let log = Rule::new(Algorithm::SlidingLog, "10/s".parse().unwrap());
    /// assert!(RuleStore::sketch(log, 1 << 20).is_err());
    /// ```
    pub fn sketch(rule: Rule, memory: usize) -> Result<RuleStore, String> {
        Sketch::new(rule, SketchOptions::new(memory))
            .map(RuleStore::Sketch)
            .map_err(|e| e.to_string())
    }

    /// Where the rule's state lives, in words: the [`kind`](RuleStore::kind),
    /// with a sketch's size.
    pub fn place(&self) -> String {
        match self {
            RuleStore::Sketch(s) => format!("a sketch of {}", format_memory(s.memory())),
            RuleStore::Distinct(s) => distinct_place("memory", s.rule(), None),
            RuleStore::RedisDistinct(s) => {
                distinct_place("redis", s.distinct(), Some(RedisDistinct::SKETCH_REGISTERS))
            }
            RuleStore::MemcachedDistinct(s) => distinct_place("memcached", s.distinct(), None),
            other => other.kind().to_string(),
        }
    }

    /// The store without a memory of denials, where it keeps one (Redis):
    /// for a cap on requests in flight, whose slots come back before a
    /// denial's retry time.
    pub fn without_deny_cache(self) -> RuleStore {
        match self {
            RuleStore::Redis(store) => RuleStore::Redis(store.without_deny_cache()),
            other => other,
        }
    }

    /// Bans started by this instance's decisions (in a shared store, its
    /// part of the bans every instance shares); `None` without a penalty.
    pub fn bans(&self) -> Option<u64> {
        self.penalty()?;
        Some(match self {
            RuleStore::Memory(s) => s.bans(),
            RuleStore::Redis(s) => s.bans(),
            RuleStore::Memcached(s) => s.bans(),
            RuleStore::Sketch(_)
            | RuleStore::Distinct(_)
            | RuleStore::RedisDistinct(_)
            | RuleStore::MemcachedDistinct(_) => 0,
        })
    }

    /// The kind of store, as the configuration names it: `"memory"`,
    /// `"redis"` or `"memcached"`; `"sketch"` for a rule with `memory`.
    pub fn kind(&self) -> &'static str {
        match self {
            RuleStore::Memory(_) => "memory",
            RuleStore::Redis(_) => "redis",
            RuleStore::Memcached(_) => "memcached",
            RuleStore::Sketch(_) => "sketch",
            RuleStore::Distinct(_) => "memory",
            RuleStore::RedisDistinct(_) => "redis",
            RuleStore::MemcachedDistinct(_) => "memcached",
        }
    }

    /// Whether a key's state in `self` means the same in `other`: the same
    /// kind of store (a sketch of the same size, distinct values kept
    /// alike) deciding the same rule, with the same penalty. A reloaded
    /// rule keeps its store only then.
    pub fn same_kind(&self, other: &RuleStore) -> bool {
        self.place() == other.place()
            && self.rule() == other.rule()
            && self.penalty() == other.penalty()
    }
}

impl Store for RuleStore {
    fn rule(&self) -> &Rule {
        match self {
            RuleStore::Memory(s) => Store::rule(s),
            RuleStore::Redis(s) => Store::rule(s),
            RuleStore::Memcached(s) => Store::rule(s),
            RuleStore::Sketch(s) => Store::rule(s),
            RuleStore::Distinct(s) => Store::rule(s),
            RuleStore::RedisDistinct(s) => Store::rule(s),
            RuleStore::MemcachedDistinct(s) => Store::rule(s),
        }
    }

    fn penalty(&self) -> Option<&Penalty> {
        match self {
            RuleStore::Memory(s) => Store::penalty(s),
            RuleStore::Redis(s) => Store::penalty(s),
            RuleStore::Memcached(s) => Store::penalty(s),
            RuleStore::Sketch(s) => Store::penalty(s),
            RuleStore::Distinct(s) => Store::penalty(s),
            RuleStore::RedisDistinct(s) => Store::penalty(s),
            RuleStore::MemcachedDistinct(s) => Store::penalty(s),
        }
    }

    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        match self {
            RuleStore::Memory(s) => Store::decide(s, key, cost, mode).await,
            // Boxed: a call to Redis is a future of kilobytes, which would
            // otherwise make every request's future (in memory too) as large.
            RuleStore::Redis(s) => Box::pin(Store::decide(s, key, cost, mode)).await,
            RuleStore::Memcached(s) => Box::pin(Store::decide(s, key, cost, mode)).await,
            RuleStore::Sketch(s) => Store::decide(s, key, cost, mode).await,
            RuleStore::Distinct(s) => Store::decide(s, key, cost, mode).await,
            RuleStore::RedisDistinct(s) => Store::decide(s, key, cost, mode).await,
            RuleStore::MemcachedDistinct(s) => Store::decide(s, key, cost, mode).await,
        }
    }

    /// What the store held answers: at once in memory (the limiter's own
    /// answer); from Redis only a denial its deny cache holds, else `None`:
    /// Redis is asked over the network with [`decide`](Store::decide).
    ///
    /// ```
    /// use limits::{Algorithm, Mode, Rule, Store};
    /// use limits_server::RuleStore;
    ///
    /// let rule = Rule::new(Algorithm::TokenBucket, "1/h".parse().unwrap());
    /// let store = RuleStore::memory(rule, 100);
    /// let first = store.decide_now("alice", 1, Mode::Record).expect("in memory: at once");
    /// assert!(first.unwrap().decision.allowed);
    /// let again = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// assert!(!again.decision.allowed);
    /// ```
    fn decide_now(&self, key: &str, cost: u64, mode: Mode) -> Option<Result<Verdict, StoreError>> {
        match self {
            RuleStore::Memory(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::Redis(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::Memcached(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::Sketch(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::Distinct(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::RedisDistinct(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::MemcachedDistinct(s) => Store::decide_now(s, key, cost, mode),
        }
    }

    /// [`decide`](Store::decide) for a request from `client`: Redis caps
    /// the new keys one client address may create; memory needs no cap
    /// (`--max-keys` bounds it).
    async fn decide_from(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        match self {
            RuleStore::Memory(s) => Store::decide(s, key, cost, mode).await,
            // Boxed, as in `decide`.
            RuleStore::Redis(s) => Box::pin(Store::decide_from(s, client, key, cost, mode)).await,
            RuleStore::Memcached(s) => Box::pin(Store::decide(s, key, cost, mode)).await,
            RuleStore::Sketch(s) => Store::decide(s, key, cost, mode).await,
            RuleStore::Distinct(s) => Store::decide(s, key, cost, mode).await,
            RuleStore::RedisDistinct(s) => Store::decide(s, key, cost, mode).await,
            RuleStore::MemcachedDistinct(s) => Store::decide(s, key, cost, mode).await,
        }
    }

    fn decide_now_from(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Option<Result<Verdict, StoreError>> {
        match self {
            RuleStore::Memory(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::Redis(s) => Store::decide_now_from(s, client, key, cost, mode),
            RuleStore::Memcached(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::Sketch(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::Distinct(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::RedisDistinct(s) => Store::decide_now(s, key, cost, mode),
            RuleStore::MemcachedDistinct(s) => Store::decide_now(s, key, cost, mode),
        }
    }

    /// A store of distinct values decides (in memory at once, in Redis or
    /// memcached boxed, as in `decide`); any other answers that it counts
    /// none.
    async fn decide_value(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        match self {
            RuleStore::Distinct(s) => Store::decide_value(s, client, key, value, mode).await,
            RuleStore::RedisDistinct(s) => {
                Box::pin(Store::decide_value(s, client, key, value, mode)).await
            }
            RuleStore::MemcachedDistinct(s) => {
                Box::pin(Store::decide_value(s, client, key, value, mode)).await
            }
            RuleStore::Memory(s) => Store::decide_value(s, client, key, value, mode).await,
            RuleStore::Redis(s) => Store::decide_value(s, client, key, value, mode).await,
            RuleStore::Memcached(s) => Store::decide_value(s, client, key, value, mode).await,
            RuleStore::Sketch(s) => Store::decide_value(s, client, key, value, mode).await,
        }
    }

    fn decide_value_now(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> Option<Result<Verdict, StoreError>> {
        match self {
            RuleStore::Distinct(s) => Store::decide_value_now(s, client, key, value, mode),
            RuleStore::RedisDistinct(s) => Store::decide_value_now(s, client, key, value, mode),
            RuleStore::MemcachedDistinct(s) => Store::decide_value_now(s, client, key, value, mode),
            RuleStore::Memory(s) => Store::decide_value_now(s, client, key, value, mode),
            RuleStore::Redis(s) => Store::decide_value_now(s, client, key, value, mode),
            RuleStore::Memcached(s) => Store::decide_value_now(s, client, key, value, mode),
            RuleStore::Sketch(s) => Store::decide_value_now(s, client, key, value, mode),
        }
    }

    async fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        match self {
            RuleStore::Memory(s) => Store::decide_at(s, key, now, cost, mode).await,
            RuleStore::Redis(s) => Store::decide_at(s, key, now, cost, mode).await,
            RuleStore::Memcached(s) => Box::pin(Store::decide_at(s, key, now, cost, mode)).await,
            RuleStore::Sketch(s) => Store::decide_at(s, key, now, cost, mode).await,
            RuleStore::Distinct(s) => Store::decide_at(s, key, now, cost, mode).await,
            RuleStore::RedisDistinct(s) => Store::decide_at(s, key, now, cost, mode).await,
            RuleStore::MemcachedDistinct(s) => Store::decide_at(s, key, now, cost, mode).await,
        }
    }

    async fn settle(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        cost: u64,
    ) -> Result<(), StoreError> {
        match self {
            RuleStore::Memory(s) => Store::settle(s, key, now, receipt, cost).await,
            RuleStore::Redis(s) => Store::settle(s, key, now, receipt, cost).await,
            RuleStore::Memcached(s) => Store::settle(s, key, now, receipt, cost).await,
            RuleStore::Sketch(s) => Store::settle(s, key, now, receipt, cost).await,
            RuleStore::Distinct(s) => Store::settle(s, key, now, receipt, cost).await,
            RuleStore::RedisDistinct(s) => Store::settle(s, key, now, receipt, cost).await,
            RuleStore::MemcachedDistinct(s) => Store::settle(s, key, now, receipt, cost).await,
        }
    }

    async fn renew(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
    ) -> Result<Receipt, StoreError> {
        match self {
            RuleStore::Memory(s) => Store::renew(s, key, now, receipt).await,
            RuleStore::Redis(s) => Store::renew(s, key, now, receipt).await,
            RuleStore::Memcached(s) => Store::renew(s, key, now, receipt).await,
            RuleStore::Sketch(s) => Store::renew(s, key, now, receipt).await,
            RuleStore::Distinct(s) => Store::renew(s, key, now, receipt).await,
            RuleStore::RedisDistinct(s) => Store::renew(s, key, now, receipt).await,
            RuleStore::MemcachedDistinct(s) => Store::renew(s, key, now, receipt).await,
        }
    }

    fn local(&self) -> Option<&dyn LocalStore> {
        match self {
            RuleStore::Memory(s) => Store::local(s),
            RuleStore::Redis(s) => Store::local(s),
            RuleStore::Memcached(s) => Store::local(s),
            RuleStore::Sketch(s) => Store::local(s),
            RuleStore::Distinct(s) => Store::local(s),
            RuleStore::RedisDistinct(s) => Store::local(s),
            RuleStore::MemcachedDistinct(s) => Store::local(s),
        }
    }

    /// Two Redis stores on one connection share a round trip.
    fn shares_round_trip(&self, other: &RuleStore) -> bool {
        match (self, other) {
            (RuleStore::Redis(a), RuleStore::Redis(b)) => a.shares_round_trip(b),
            _ => false,
        }
    }

    /// The Redis stores at the front of `asked` decide together (one round
    /// trip on one Redis); a store in memory decides alone, at once.
    async fn decide_in_order(
        asked: &[Asked<'_, RuleStore>],
        until: Until,
    ) -> Vec<Result<Verdict, StoreError>> {
        let Some(first) = asked.first() else {
            return Vec::new();
        };
        let in_redis: Vec<Asked<'_, RedisStore>> = asked
            .iter()
            .map_while(|a| match a.store {
                RuleStore::Redis(store) => Some(Asked {
                    store,
                    client: a.client,
                    key: a.key,
                    cost: a.cost,
                    value: a.value,
                    mode: a.mode,
                }),
                _ => None,
            })
            .collect();
        if in_redis.is_empty() {
            return vec![first.decide().await];
        }
        // Boxed, as in `decide`.
        Box::pin(RedisStore::decide_in_order(&in_redis, until)).await
    }
}

/// Where a rule of distinct values keeps them, in words: the store, and
/// past how many values it sketches them (in sketches of the store's own
/// `registers`, if it has its own: Redis's).
fn distinct_place(kind: &str, rule: Distinct, registers: Option<usize>) -> String {
    match rule.sketch() {
        None => format!("{kind} (distinct values)"),
        Some(s) => format!(
            "{kind} (distinct values, sketched past {}: {} registers, {} sub-windows)",
            s.from,
            registers.unwrap_or(s.registers),
            s.sub_windows
        ),
    }
}

/// How the server builds each rule's store: the settings every store of a
/// kind shares.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Most keys tracked per rule by an in-memory store (at least 1).
    pub max_keys: usize,
    /// Decide in this Redis instead of in memory (`limits serve --store`).
    pub redis: Option<RedisConnection>,
    /// Decide on these memcached servers instead of in memory (`limits
    /// serve --store memcached://...`).
    pub memcached: Option<MemcachedClient>,
}

impl Default for StoreOptions {
    /// In memory, a million keys per rule.
    fn default() -> StoreOptions {
        StoreOptions {
            max_keys: 1_000_000,
            redis: None,
            memcached: None,
        }
    }
}

impl StoreOptions {
    /// The store of the rule named `name`: in Redis or memcached if one is
    /// given (its keys carry the name), otherwise in memory. Fails for a
    /// rule that store cannot decide exactly or keep, saying why.
    pub fn store(&self, name: &str, rule: Rule) -> Result<RuleStore, String> {
        self.store_in(self.default_kind(), name, rule)
    }

    /// Where a rule that names no store is kept: the shared store the
    /// server was started with, else memory.
    fn default_kind(&self) -> StoreKind {
        match (&self.redis, &self.memcached) {
            (Some(_), _) => StoreKind::Redis,
            (None, Some(_)) => StoreKind::Memcached,
            (None, None) => StoreKind::Memory,
        }
    }

    /// The store of the rule named `name` in the store `kind` a rule asked
    /// for (`store = "memory"` keeps a rule in this process even with a
    /// Redis). Fails, saying why, for a shared store not given or a rule
    /// it cannot decide exactly or keep.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// use limits_server::{StoreKind, StoreOptions};
    ///
    /// let rule = Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap());
    /// let options = StoreOptions::default();
    /// assert_eq!(options.store_in(StoreKind::Memory, "api", rule.clone()).unwrap().kind(), "memory");
    /// let err = options.store_in(StoreKind::Redis, "api", rule).err().unwrap();
    /// assert!(err.contains("--store"), "{err}");
    /// ```
    pub fn store_in(&self, kind: StoreKind, name: &str, rule: Rule) -> Result<RuleStore, String> {
        match kind {
            StoreKind::Memory => Ok(RuleStore::memory(rule, self.max_keys)),
            StoreKind::Redis => match &self.redis {
                Some(connection) => RedisStore::new(connection, rule, name)
                    .map(RuleStore::Redis)
                    .map_err(|e| e.to_string()),
                None => Err(NO_REDIS.into()),
            },
            StoreKind::Memcached => match &self.memcached {
                Some(client) => MemcachedStore::new(client, rule, name)
                    .map(RuleStore::Memcached)
                    .map_err(|e| e.to_string()),
                None => Err(NO_MEMCACHED.into()),
            },
        }
    }

    /// The store of the rule of distinct values named `name`: in `kind`,
    /// or where the server keeps rules by default (Redis when it has one).
    /// Memory, Redis and memcached keep distinct values; their sketches,
    /// memory and Redis (its own HyperLogLogs).
    ///
    /// ```
    /// use limits::Distinct;
    /// use limits_server::{StoreKind, StoreOptions};
    /// use std::time::Duration;
    ///
    /// let usernames = Distinct::new(20, Duration::from_secs(3600)).unwrap();
    /// let options = StoreOptions::default();
    /// let store = options.distinct_store(None, "logins", usernames).unwrap();
    /// assert_eq!(store.place(), "memory (distinct values)");
    /// let err = options.distinct_store(Some(StoreKind::Memcached), "logins", usernames).err().unwrap();
    /// assert!(err.contains("--store memcached://"), "{err}");
    /// ```
    pub fn distinct_store(
        &self,
        kind: Option<StoreKind>,
        name: &str,
        rule: Distinct,
    ) -> Result<RuleStore, String> {
        let in_memory = |e: limits::UnsupportedRule| {
            format!("{e}: write store = \"memory\" to keep it in this instance")
        };
        match kind.unwrap_or(self.default_kind()) {
            StoreKind::Memory => Ok(RuleStore::distinct(rule)),
            StoreKind::Redis => match &self.redis {
                Some(connection) => RedisDistinct::new(connection, rule, name)
                    .map(RuleStore::RedisDistinct)
                    .map_err(in_memory),
                None => Err(NO_REDIS.into()),
            },
            StoreKind::Memcached => match &self.memcached {
                Some(client) => MemcachedDistinct::new(client, rule, name)
                    .map(RuleStore::MemcachedDistinct)
                    .map_err(in_memory),
                None => Err(NO_MEMCACHED.into()),
            },
        }
    }
}

/// Why `store = "redis"` cannot be: the server has no Redis.
const NO_REDIS: &str = "store = \"redis\" needs a Redis: start with --store redis://HOST:PORT";

/// Why `store = "memcached"` cannot be: the server has no memcached.
const NO_MEMCACHED: &str =
    "store = \"memcached\" needs memcached: start with --store memcached://HOST:PORT";

/// A size as people write it (`16MB`, `16 MiB`, `1048576`), in bytes.
///
/// ```
/// use limits_server::parse_memory;
///
/// assert_eq!(parse_memory("16MB"), Ok(16_000_000));
/// assert_eq!(parse_memory("16 MiB"), Ok(16 << 20));
/// assert!(parse_memory("lots").unwrap_err().contains("16MB"));
/// ```
pub fn parse_memory(text: &str) -> Result<usize, String> {
    let size: bytesize::ByteSize = text.trim().parse().map_err(|e| {
        format!("memory {text:?} is not a size such as \"16MB\" or \"64 MiB\" ({e})")
    })?;
    usize::try_from(size.as_u64())
        .map_err(|_| format!("memory {text:?} is larger than this machine can address"))
}

/// `bytes` in the largest unit that writes it whole: `16 MiB`, `16 MB`,
/// or bytes.
///
/// ```
/// use limits_server::format_memory;
///
/// assert_eq!(format_memory(16 << 20), "16 MiB");
/// assert_eq!(format_memory(16_000_000), "16 MB");
/// assert_eq!(format_memory(1000 * 1024 + 1), "1024001 bytes");
/// ```
pub fn format_memory(bytes: usize) -> String {
    let units = [
        (1 << 30, "GiB"),
        (1_000_000_000, "GB"),
        (1 << 20, "MiB"),
        (1_000_000, "MB"),
        (1 << 10, "KiB"),
        (1_000, "kB"),
    ];
    match units
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes % unit == 0)
    {
        Some((unit, name)) => format!("{} {name}", bytes / unit),
        None => format!("{bytes} bytes"),
    }
}

/// Which store a rule asks for in the rules file (`store = "memory"`,
/// `"redis"` or `"memcached"`); without it, the one `--store` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// In this process: fast, and per instance.
    Memory,
    /// In Redis: shared by every instance on the same Redis.
    Redis,
    /// In memcached: shared by every instance on the same servers.
    Memcached,
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<StoreKind, String> {
        match s {
            "memory" => Ok(StoreKind::Memory),
            "redis" => Ok(StoreKind::Redis),
            "memcached" => Ok(StoreKind::Memcached),
            other => Err(format!(
                "unknown store {other:?} (expected \"memory\", \"redis\" or \"memcached\")"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use limits::Algorithm;

    fn rule(rates: &str) -> Rule {
        Rule::new(Algorithm::SlidingLog, rates.parse().unwrap())
    }

    #[tokio::test]
    async fn decisions_and_local_features_reach_the_store_held() {
        let options = StoreOptions {
            max_keys: 10,
            ..StoreOptions::default()
        };
        let store = options.store("r", rule("2/h")).unwrap();
        for expected in [true, true, false] {
            let verdict = store.decide("alice", 1, Mode::Record).await.unwrap();
            assert_eq!(verdict.decision.allowed, expected);
        }
        let peek = store.decide("bob", 1, Mode::Peek).await.unwrap();
        assert!(peek.decision.allowed);
        assert_eq!(peek.decision.remaining, 2, "a peek takes nothing");
        let local = store.local().expect("in memory");
        assert_eq!(local.len(), 1, "only alice was recorded");
        assert_eq!(local.export()[0].0, "alice");
    }

    #[test]
    fn the_same_kind_means_the_same_store_kind_and_rule() {
        let options = StoreOptions::default();
        let a = options.store("r", rule("2/h")).unwrap();
        assert!(a.same_kind(&options.store("r", rule("2/h")).unwrap()));
        assert!(!a.same_kind(&options.store("r", rule("3/h")).unwrap()));
        let leaky = |burst| Rule::build(Algorithm::LeakyBucket, "2/h".parse().unwrap(), burst);
        let a = options.store("r", leaky(None)).unwrap();
        assert!(!a.same_kind(&options.store("r", leaky(Some(1))).unwrap()));
    }
}
