//! Command-line arguments shared by the subcommands: which limiter, and at
//! what rate. Rates go through the core's one parser.

use clap::Args;
use limits::{parse_duration, Algorithm, Rate, Rates, Rule, DEFAULT_WINDOW};
use limits_redis::{RedisModule, TlsFiles};
use std::net::{SocketAddr, ToSocketAddrs};
use std::num::NonZeroUsize;
use std::path::PathBuf;

/// What `--store` takes besides `memory`, for its errors.
pub const STORE_URLS: &str = "expected memory, redis://[USER:PASSWORD@]HOST:PORT[/DB], rediss://... (TLS), redis+unix:///PATH, redis+cluster://HOST:PORT,..., redis+sentinel://HOST:PORT,.../MASTER (rediss+cluster://, rediss+sentinel:// over TLS) or memcached://HOST:PORT[,HOST:PORT...]";

/// `--redis-ca FILE`, `--redis-cert FILE` and `--redis-key FILE`, beside
/// every `--store` that takes a Redis URL.
#[derive(Args, Clone, Debug, Default)]
pub struct RedisTlsArgs {
    /// The CA certificates (a PEM file) that a TLS --store's certificates
    /// (rediss://, rediss+cluster://, rediss+sentinel://) must chain to,
    /// instead of the system's trusted roots.
    #[arg(long, value_name = "FILE")]
    pub redis_ca: Option<PathBuf>,

    /// This client's certificate (a PEM file, with its chain), for a TLS
    /// --store that asks clients for one (tls-auth-clients); with
    /// --redis-key.
    #[arg(long, value_name = "FILE")]
    pub redis_cert: Option<PathBuf>,

    /// The private key (a PEM file) of --redis-cert.
    #[arg(long, value_name = "FILE")]
    pub redis_key: Option<PathBuf>,
}

impl RedisTlsArgs {
    /// The TLS files for a store at `url` (none for memory); refused with
    /// any store but a TLS one. The files themselves are read and checked
    /// when connecting.
    pub fn for_store(&self, url: &str) -> Result<TlsFiles, String> {
        let files = TlsFiles {
            ca_file: self.redis_ca.clone(),
            cert_file: self.redis_cert.clone(),
            key_file: self.redis_key.clone(),
        };
        if files.any() && !limits_redis::is_tls_url(url) {
            return Err(
                "--redis-ca, --redis-cert, --redis-key: for a TLS --store only \
                        (rediss://, rediss+cluster://, rediss+sentinel://)"
                    .to_owned(),
            );
        }
        Ok(files)
    }
}

/// `--redis-module WHEN`, beside every `--store` that takes a Redis URL.
#[derive(Args, Clone, Copy, Debug)]
pub struct RedisModuleArgs {
    /// With a Redis store: decide with the limits Redis module
    /// (`LIMITS.DECIDE`) where Redis has it loaded (`auto`, found with
    /// MODULE LIST), always (`on`), or never, with the Lua scripts only
    /// (`off`). Both keep the same state: switching loses no count.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ModuleFlag::Auto)]
    redis_module: ModuleFlag,
}

impl RedisModuleArgs {
    /// The store's setting.
    pub fn setting(self) -> RedisModule {
        match self.redis_module {
            ModuleFlag::Auto => RedisModule::Auto,
            ModuleFlag::On => RedisModule::On,
            ModuleFlag::Off => RedisModule::Off,
        }
    }
}

/// `--redis-module`: when the Redis store decides with the limits module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ModuleFlag {
    /// Where Redis has it loaded.
    Auto,
    /// Always (a Redis without it answers every decision with an error).
    On,
    /// Never: the Lua scripts only.
    Off,
}

/// `--limiter NAME --limit N [--window D] [--burst B]`, or `--limit 100/min`.
#[derive(Args, Clone, Debug)]
pub struct RuleArgs {
    /// The limiter: none, fixed-window, sliding-log, sliding-window,
    /// token-bucket, leaky-bucket or smoothed-rate.
    #[arg(long, value_parser = parse_algorithm, default_value = "sliding-log")]
    pub limiter: Algorithm,

    #[command(flatten)]
    pub rate: RateArgs,
}

impl RuleArgs {
    /// The rule these arguments describe.
    pub fn rule(&self) -> Result<Rule, String> {
        self.rate.burst_applies(&[self.limiter])?;
        self.rate.rule(self.limiter)
    }
}

/// `--limit N [--window D]` or `--limit RATES` ("100/min", "10/s; 1000/h"),
/// and `--burst B`: a rule's numbers, whichever limiter(s) they go to. Every
/// command takes them from here, so each flag is declared once.
#[derive(Args, Clone, Debug)]
pub struct RateArgs {
    /// Requests allowed per window: a number (with --window), or rates such
    /// as 100/min or "10/s; 1000/hour".
    #[arg(long, default_value = "10")]
    pub limit: String,

    /// The window for a plain --limit N, e.g. 1s, 500ms, 1.5s, 5m [default: 1s].
    #[arg(long)]
    pub window: Option<String>,

    /// Queue capacity of the leaky bucket (nginx's burst); defaults to the
    /// limit.
    #[arg(long)]
    pub burst: Option<u64>,
}

impl RateArgs {
    /// Refuses a `--burst` that none of `limiters` would use: only the
    /// leaky bucket has a queue, and a flag silently ignored misleads.
    pub fn burst_applies(&self, limiters: &[Algorithm]) -> Result<(), String> {
        match self.burst {
            Some(_) if !limiters.contains(&Algorithm::LeakyBucket) => Err(format!(
                "--burst is the leaky bucket's queue, and --limiter {} has none \
                 (drop --burst, or use --limiter leaky-bucket)",
                limiters
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => Ok(()),
        }
    }

    /// A rule of `limiter` with these rates and burst.
    pub fn rule(&self, limiter: Algorithm) -> Result<Rule, String> {
        Ok(Rule::build(limiter, self.rates()?, self.burst))
    }

    /// The rates, or an error naming the flag and what was wrong with it.
    pub fn rates(&self) -> Result<Rates, String> {
        let limit = self.limit.trim();
        if limit.bytes().all(|b| b.is_ascii_digit()) && !limit.is_empty() {
            let n: u64 = limit
                .parse()
                .map_err(|_| format!("--limit {limit}: the limit is too large"))?;
            let window = match &self.window {
                Some(w) => parse_duration(w).map_err(|e| format!("--window: {e}"))?,
                None => DEFAULT_WINDOW,
            };
            let rate = Rate::new(n, window).map_err(|e| format!("--limit {limit}: {e}"))?;
            return Ok(rate.into());
        }
        if self.window.is_some() {
            return Err(format!(
                "--window goes with a plain --limit N; --limit {limit:?} already names its window"
            ));
        }
        limit.parse().map_err(|e| format!("--limit: {e}"))
    }
}

/// Parses a limiter name for clap, listing the valid ones on error.
pub fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.parse()
        .map_err(|e: limits::UnknownAlgorithm| e.to_string())
}

/// `--limiter NAME`, or `--limiter all` for every limiter in table order.
#[derive(Clone, Debug)]
pub struct Limiters(pub Vec<Algorithm>);

/// Parses `--limiter NAME|all` for clap, `all` being every limiter.
pub fn parse_limiters(s: &str) -> Result<Limiters, String> {
    parse_limiters_from(s, &Algorithm::ALL)
}

/// Parses `--limiter NAME|all`, `all` being `all`, in its order.
pub fn parse_limiters_from(s: &str, all: &[Algorithm]) -> Result<Limiters, String> {
    if s == "all" {
        return Ok(Limiters(all.to_vec()));
    }
    parse_algorithm(s)
        .map(|a| Limiters(vec![a]))
        .map_err(|e| format!("{e}, or all"))
}

/// Parses a listening address: `HOST:PORT` (a name such as `localhost` is
/// resolved), or a bare `PORT` on 127.0.0.1. `:PORT` is refused: some
/// servers read it as every interface, others as loopback, so it is spelled
/// out instead.
pub fn parse_listen_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = s.strip_prefix(':') {
        return Err(format!(
            "{s:?}: write 0.0.0.0:{port} to listen on every interface, or 127.0.0.1:{port} (or just {port}) for this machine only"
        ));
    }
    if let Ok(addr) = s.parse() {
        return Ok(addr);
    }
    let mut addrs = s
        .to_socket_addrs()
        .map_err(|e| format!("{s:?}: not HOST:PORT or PORT ({e})"))?;
    addrs
        .next()
        .ok_or_else(|| format!("{s:?}: the name resolves to no address"))
}

/// Parses `--workers N`, at least 1.
pub fn parse_workers(s: &str) -> Result<NonZeroUsize, String> {
    let n: usize = s
        .parse()
        .map_err(|e| format!("{e} (a whole number, at least 1)"))?;
    NonZeroUsize::new(n)
        .ok_or_else(|| "must be at least 1 (1 serves everything on one thread)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(limit: &str, window: Option<&str>) -> Result<String, String> {
        RateArgs {
            limit: limit.into(),
            window: window.map(Into::into),
            burst: None,
        }
        .rates()
        .map(|r| r.to_string())
    }

    #[test]
    fn a_listen_address_is_host_port_or_a_port_on_loopback() {
        assert_eq!(
            parse_listen_addr("8080").unwrap().to_string(),
            "127.0.0.1:8080"
        );
        assert_eq!(
            parse_listen_addr("0.0.0.0:80").unwrap().to_string(),
            "0.0.0.0:80"
        );
        assert_eq!(parse_listen_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(parse_listen_addr("localhost:8080")
            .unwrap()
            .ip()
            .is_loopback());
        let colon = parse_listen_addr(":8080").unwrap_err();
        assert!(
            colon.contains("0.0.0.0:8080") && colon.contains("127.0.0.1:8080"),
            "{colon}"
        );
        assert!(parse_listen_addr("nowhere.invalid:1").is_err());
        assert!(parse_listen_addr("8080x").is_err());
    }

    #[test]
    fn zero_workers_is_refused_with_the_reason() {
        assert_eq!(parse_workers("4").unwrap().get(), 4);
        assert!(parse_workers("0").unwrap_err().contains("at least 1"));
        assert!(parse_workers("many").unwrap_err().contains("whole number"));
    }

    #[test]
    fn a_burst_no_limiter_uses_is_refused() {
        let args = |burst| RateArgs {
            limit: "10".into(),
            window: None,
            burst,
        };
        assert!(args(Some(5))
            .burst_applies(&[Algorithm::LeakyBucket])
            .is_ok());
        assert!(args(Some(5)).burst_applies(&Algorithm::ALL).is_ok());
        let refused = args(Some(5))
            .burst_applies(&[Algorithm::TokenBucket])
            .unwrap_err();
        assert!(
            refused.contains("token-bucket") && refused.contains("--burst"),
            "{refused}"
        );
        assert!(args(None).burst_applies(&[Algorithm::TokenBucket]).is_ok());
    }

    #[test]
    fn plain_limit_takes_the_window_flag_or_one_second() {
        assert_eq!(rates("10", None).unwrap(), "10/s");
        assert_eq!(rates("10", Some("1.5s")).unwrap(), "10/1500ms");
        assert_eq!(rates("100/min", None).unwrap(), "100/m");
        assert_eq!(rates("10/s; 1000/h", None).unwrap(), "10/s; 1000/h");
    }

    #[test]
    fn bad_limits_name_the_flag() {
        assert!(rates("0", None).unwrap_err().contains("--limit 0"));
        assert!(rates("10", Some("fast"))
            .unwrap_err()
            .starts_with("--window"));
        assert!(rates("10/s", Some("1s"))
            .unwrap_err()
            .contains("plain --limit N"));
        assert!(rates("ten", None).unwrap_err().starts_with("--limit"));
        assert!(rates("99999999999999999999999", None)
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn limiter_names_are_exactly_the_seven() {
        for name in [
            "none",
            "fixed-window",
            "sliding-log",
            "sliding-window",
            "token-bucket",
            "leaky-bucket",
            "smoothed-rate",
        ] {
            assert_eq!(parse_algorithm(name).unwrap().name(), name);
        }
        let err = parse_algorithm("gcra").unwrap_err();
        assert!(err.contains("sliding-log"), "{err}");
    }
}
