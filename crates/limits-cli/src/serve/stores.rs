//! `--store URL --store-timeout D --max-keys N --on-store-full P
//! --max-new-keys-per-client RATE`: where the limiters' state lives and
//! how a shared store is kept from being filled, as `limits serve` and
//! `limits rls` both take it.

use super::flags;
use crate::args::{RedisTlsArgs, STORE_URLS};
use clap::{Args, ValueEnum};
use limits::Rate;
use limits_server::{
    Fallback, MemcachedClient, MemcachedOptions, RedisConnection, RedisOptions, StoreOptions,
};
use std::time::Duration;

/// `--on-store-full`: the answer when Redis is full (`OOM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnStoreFull {
    /// Let the request through, unlimited.
    Allow,
    /// Refuse it (`limits serve`: 503; `limits rls`: OVER_LIMIT).
    Deny,
    /// Decide in this process with the same rule, as `--on-store-error local`.
    Local,
}

#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Most keys tracked per rule; beyond it, the keys whose forgetting costs least (most quota left) are evicted, never a limited one while another can go.
    #[arg(long, default_value_t = 1_000_000, value_parser = flags::parse_max_keys)]
    max_keys: usize,

    /// Where the limiters' state lives: `memory` (this process), or a Redis
    /// shared by every instance: redis://[USER:PASSWORD@]HOST:PORT[/DB],
    /// rediss://... over TLS, redis+unix:///PATH (or unix:///PATH) for a
    /// unix socket, redis+cluster://HOST1:PORT1,HOST2:PORT2 for a Redis
    /// Cluster, or redis+sentinel://HOST1:PORT1,.../MASTER for the master
    /// its sentinels name (followed through a failover;
    /// ?sentinel_password=P for sentinels with a password of their own);
    /// rediss+cluster:// and rediss+sentinel:// over TLS; or a memcached,
    /// memcached://HOST:PORT (decided here at this host's clock, written
    /// back with CAS).
    #[arg(long, value_name = "URL", default_value = "memory")]
    store: String,

    #[command(flatten)]
    redis_tls: RedisTlsArgs,

    /// The longest a Redis store may take to decide; past it the request is
    /// answered per --on-store-error, and Redis is not asked again until it
    /// answers a probe.
    #[arg(long, default_value = "50ms", value_parser = super::parse_timeout)]
    store_timeout: Duration,

    /// When Redis answers that it is full (OOM under maxmemory, e.g. after
    /// a flood of keys): deny (the default), allow, or decide locally.
    #[arg(long, value_enum, default_value_t = OnStoreFull::Deny)]
    on_store_full: OnStoreFull,

    /// Most keys one client address (IPv6: its /64) may create in Redis per
    /// window, per rule and instance (e.g. 1000/min; `off`: no cap); beyond
    /// it, its requests on new keys get 429, its existing keys still pass.
    #[arg(long, value_name = "RATE", default_value = "1000/min", value_parser = parse_new_keys)]
    max_new_keys_per_client: NewKeys,

    /// With a memcached store: how often the instances compare their
    /// clocks through it (in metrics, and in /healthz when they are over
    /// 10 ms apart); give every instance the same, or `off`.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_clock_check)]
    clock_check_every: ClockCheck,

    #[command(flatten)]
    redis_module: crate::args::RedisModuleArgs,

    /// Exit at start if the Redis of --store does not answer. Without it,
    /// the command starts anyway, answers per --on-store-error while Redis
    /// is unreachable, and connects when it answers (Redis often starts
    /// after its clients under Kubernetes or compose).
    #[arg(long)]
    require_store: bool,

    /// Prepended to every Redis key instead of the library's default (no
    /// flag: `limits rls` sets it from the reference's CACHE_KEY_PREFIX).
    #[arg(skip)]
    prefix: Option<String>,
}

/// `--clock-check-every`: a period of whole seconds, or never.
#[derive(Clone, Copy, Debug)]
pub struct ClockCheck(Option<Duration>);

fn parse_clock_check(s: &str) -> Result<ClockCheck, String> {
    if s.trim() == "off" {
        return Ok(ClockCheck(None));
    }
    match limits::parse_duration(s) {
        Ok(d) if d.as_secs() >= 1 && d.subsec_nanos() == 0 => Ok(ClockCheck(Some(d))),
        Ok(_) => {
            Err("a whole number of seconds, at least one (memcached's clock counts seconds)".into())
        }
        Err(e) => Err(format!("{e} (a duration such as 1m, or off)")),
    }
}

/// `--max-new-keys-per-client`: a rate, or no cap.
#[derive(Clone, Copy, Debug)]
pub struct NewKeys(Option<Rate>);

fn parse_new_keys(s: &str) -> Result<NewKeys, String> {
    if s.trim() == "off" {
        return Ok(NewKeys(None));
    }
    s.parse::<Rate>()
        .map(|rate| NewKeys(Some(rate)))
        .map_err(|e| format!("{e} (a rate such as 1000/min, or off)"))
}

impl StoreArgs {
    /// Whether the store is this process's memory (`--store memory`).
    pub fn in_memory(&self) -> bool {
        self.store == "memory"
    }

    /// `--store URL`, for a value that comes from elsewhere than the flag
    /// (`limits rls`: the reference's REDIS_* variables).
    pub fn set_store(&mut self, url: String) {
        self.store = url;
    }

    /// The TLS files of a TLS store, for values that come from elsewhere
    /// than the flags (`limits rls`: REDIS_TLS_CACERT and
    /// REDIS_TLS_CLIENT_*).
    pub fn redis_tls_mut(&mut self) -> &mut RedisTlsArgs {
        &mut self.redis_tls
    }

    /// Every Redis key's prefix (`limits rls`: CACHE_KEY_PREFIX).
    pub fn set_prefix(&mut self, prefix: String) {
        self.prefix = Some(prefix);
    }

    /// The answer when Redis is full.
    pub fn on_store_full(&self) -> OnStoreFull {
        self.on_store_full
    }

    /// How each rule's store is built: connects to the Redis of `--store`
    /// if it names one (now, with `--require-store`; else as soon as it
    /// answers), deciding in this process while Redis is unreachable when
    /// `local_on_error` (`--on-store-error local`).
    pub async fn options(&self, local_on_error: bool) -> Result<StoreOptions, String> {
        let local = |yes| match yes {
            true => Fallback::Local,
            false => Fallback::Error,
        };
        let mut memcached = None;
        let redis = match self.store.as_str() {
            "memory" => None,
            url if limits_memcached::is_memcached_url(url) => {
                let default = MemcachedOptions::default();
                let options = MemcachedOptions {
                    prefix: self.prefix.clone().unwrap_or(default.prefix),
                    timeout: self.store_timeout,
                    local_fallback: local_on_error.then_some(self.max_keys),
                    clock_check_every: self.clock_check_every.0,
                    ..default
                };
                let client = match self.require_store {
                    true => MemcachedClient::connect(url, options).await,
                    false => MemcachedClient::new(url, options),
                };
                memcached = Some(client.map_err(|e| format!("--store: {e}"))?);
                None
            }
            url if limits_redis::is_redis_url(url) => {
                let default = RedisOptions::default();
                let options = RedisOptions {
                    prefix: self.prefix.clone().unwrap_or(default.prefix),
                    timeout: self.store_timeout,
                    on_error: local(local_on_error),
                    on_full: local(self.on_store_full == OnStoreFull::Local),
                    new_keys_per_client: self.max_new_keys_per_client.0,
                    local_max_keys: self.max_keys,
                    tls: self.redis_tls.for_store(url)?,
                    module: self.redis_module.setting(),
                    ..default
                };
                let connection = if self.require_store {
                    RedisConnection::connect(url, options).await
                } else {
                    RedisConnection::start(url, options).await
                };
                let connection = connection.map_err(|e| format!("--store: {e}"))?;
                Some(connection)
            }
            other => {
                return Err(format!(
                    "--store {:?}: {STORE_URLS}",
                    limits_redis::redact(other),
                ))
            }
        };
        self.redis_tls.for_store(&self.store)?;
        Ok(StoreOptions {
            max_keys: self.max_keys,
            redis,
            memcached,
        })
    }
}
