//! `limits bench`: the criterion benches' measurements (crates/limits/benches)
//! for a user, on their own machine: nanoseconds per decision, decisions per
//! second and bytes per key, for each limiter, at a number of resident keys
//! and threads, in memory or through a Redis or Memcached store.
//!
//! Unlike the benches, which read a virtual clock so that the comparison with
//! governor is of the limiters alone, this runs the real `SystemClock` (or
//! Redis's `TIME`): what a user's service pays per decision. So the rule for
//! an `--outcome` cannot be sized from a known interval between one key's
//! checks: it is sized from a short calibration run on the same keys, then
//! the limiter is built afresh with it (see [`memory`]).

mod memcached;
mod memory;
mod redis;
mod report;
mod rules;
#[path = "../../../limits/benches/common/scenario.rs"]
mod scenario;
mod shared;

use crate::args::{parse_limiters_from, Limiters, RateArgs};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, ValueEnum};
use limits::{parse_duration, Algorithm};
use report::{Machine, Measured, Report};
pub use rules::RuleSource;
use scenario::Outcome;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The limiter (fixed-window, sliding-log, sliding-window, token-bucket,
    /// leaky-bucket, smoothed-rate, or none for the cost of a call alone),
    /// or `all` for the five exact ones that keep state.
    #[arg(long, default_value = "all", value_parser = parse_limiters)]
    limiter: Limiters,

    /// Your own rule (--limit N --window D, or --limit 100/min); without
    /// it, the rule is derived from --outcome.
    #[command(flatten)]
    rate: RateArgs,

    /// Without --limit: a rule sized so that most checks pass (allowed) or
    /// about 90% are denied (denied), as the criterion benches do
    /// [default: allowed].
    #[arg(long, value_enum, conflicts_with_all = ["limit", "window", "burst"])]
    outcome: Option<OutcomeArg>,

    /// Resident keys: each is checked once before timing starts, then they
    /// are checked in random order from a seeded stream.
    #[arg(long, default_value_t = 10_000, value_parser = at_least_one)]
    keys: u64,

    /// Threads checking at once, each on its own share of the keys; with
    /// --store, callers sharing one multiplexed connection.
    #[arg(long, visible_alias = "concurrency", default_value_t = 1, value_parser = at_least_one)]
    threads: u64,

    /// How long to measure each limiter, e.g. 2s, 500ms [default: 2s].
    #[arg(long, value_parser = parse_positive_duration, conflicts_with = "decisions")]
    duration: Option<Duration>,

    /// Measure this many decisions per limiter instead of a duration.
    #[arg(long, value_parser = at_least_one)]
    decisions: Option<u64>,

    /// The seed of the key stream (the same seed, the same keys and order).
    #[arg(long, default_value_t = 0x9e37_79b9_7f4a_7c15)]
    seed: u64,

    /// Where the limiter decides: `memory`, a Redis (any URL `serve
    /// --store` takes: redis://, rediss://, redis+unix://,
    /// redis[s]+cluster://, redis[s]+sentinel://) or memcached servers
    /// (memcached://HOST:PORT[,HOST:PORT...]), under a fresh key prefix,
    /// removed afterwards.
    #[arg(long, default_value = "memory", value_name = "URL")]
    store: String,

    #[command(flatten)]
    redis_tls: crate::args::RedisTlsArgs,

    #[command(flatten)]
    redis_module: crate::args::RedisModuleArgs,

    /// Print JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OutcomeArg {
    Allowed,
    Denied,
}

/// The limiters `all` runs: the exact ones that keep state, as in the
/// benches, which every store decides.
const ALL: [Algorithm; 5] = [
    Algorithm::TokenBucket,
    Algorithm::SlidingLog,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::LeakyBucket,
];

fn parse_limiters(s: &str) -> Result<Limiters, String> {
    parse_limiters_from(s, &ALL)
}

fn at_least_one(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (a whole number, at least 1)")),
    }
}

/// The core's duration parser (which refuses zero).
fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// How long a limiter is measured: a duration, or a number of decisions.
#[derive(Clone, Copy, Debug)]
pub enum Length {
    For(Duration),
    Decisions(u64),
}

impl Length {
    /// Where the progress bar stands: milliseconds since `start` for a
    /// duration, decisions `done` for a count.
    pub fn position(self, start: Instant, done: &AtomicU64) -> u64 {
        match self {
            Length::For(_) => start.elapsed().as_millis() as u64,
            Length::Decisions(_) => done.load(Ordering::Relaxed),
        }
    }
}

/// What every limiter's run shares.
pub struct Plan<'a> {
    pub keys: u64,
    pub threads: u64,
    pub length: Length,
    pub seed: u64,
    pub source: RuleSource<'a>,
}

/// Runs `limits bench --limiter ALGORITHM --json` with `plan`'s flags in a
/// new process (its progress line on this one's stderr); its results.
fn in_child(algorithm: Algorithm, plan: &Plan) -> Result<Vec<Measured>, String> {
    let mut args: Vec<String> = ["bench", "--json", "--limiter", algorithm.name()]
        .map(String::from)
        .to_vec();
    for (flag, value) in [
        ("--keys", plan.keys),
        ("--threads", plan.threads),
        ("--seed", plan.seed),
    ] {
        args.extend([flag.to_owned(), value.to_string()]);
    }
    args.extend(match plan.length {
        Length::For(d) => ["--duration".to_owned(), format!("{}ns", d.as_nanos())],
        Length::Decisions(n) => ["--decisions".to_owned(), n.to_string()],
    });
    match plan.source {
        RuleSource::Derived(outcome) => {
            args.extend(["--outcome".to_owned(), outcome.name().to_owned()])
        }
        RuleSource::Given(rate) => {
            args.extend(["--limit".to_owned(), rate.limit.clone()]);
            if let Some(w) = &rate.window {
                args.extend(["--window".to_owned(), w.clone()]);
            }
            if let Some(b) = rate.burst {
                args.extend(["--burst".to_owned(), b.to_string()]);
            }
        }
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the limits binary: {e}"))?;
    let out = std::process::Command::new(exe)
        .args(&args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run limits bench for {algorithm}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "limits bench --limiter {algorithm} failed ({})",
            out.status
        ));
    }
    let report: Report = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("limits bench --limiter {algorithm}: unreadable output: {e}"))?;
    Ok(report.results)
}

/// The runtime a shared store's bench runs on.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// Runs `limits bench`; `matches` are the subcommand's, to tell a --limit
/// given from its default.
pub fn bench(args: BenchArgs, matches: Option<&ArgMatches>) -> Result<(), String> {
    let given =
        |id: &str| matches.is_some_and(|m| m.value_source(id) == Some(ValueSource::CommandLine));
    let source = if given("limit") || given("window") || given("burst") {
        args.rate.rates()?;
        args.rate.burst_applies(&args.limiter.0)?;
        RuleSource::Given(&args.rate)
    } else {
        RuleSource::Derived(match args.outcome {
            Some(OutcomeArg::Denied) => Outcome::Denied,
            _ => Outcome::Allowed,
        })
    };
    if args.keys > 100_000_000 {
        return Err(format!("--keys {}: at most 100,000,000", args.keys));
    }
    if args.threads > 4096 {
        return Err(format!("--threads {}: at most 4096", args.threads));
    }
    let plan = Plan {
        keys: args.keys,
        threads: args.threads,
        length: match (args.decisions, args.duration) {
            (Some(n), _) => Length::Decisions(n),
            (None, Some(d)) => Length::For(d),
            (None, None) => Length::For(Duration::from_secs(2)),
        },
        seed: args.seed,
        source,
    };
    let store = match args.store.as_str() {
        "memory" => {
            args.redis_tls.for_store("memory")?;
            None
        }
        url => Some(url),
    };
    let mut results: Vec<Measured> = Vec::new();
    match store {
        None if args.limiter.0.len() == 1 => {
            results.push(memory::run(args.limiter.0[0], &plan)?);
        }
        // One process per limiter, so that each one's RSS growth is its own
        // (not memory an earlier limiter freed and the allocator kept).
        None => {
            for &algorithm in &args.limiter.0 {
                results.extend(in_child(algorithm, &plan)?);
            }
        }
        Some(url) if limits_memcached::is_memcached_url(url) => {
            args.redis_tls.for_store(url)?;
            results = memcached::run(url, &args.limiter.0, &plan)?
        }
        Some(url) if limits_redis::is_redis_url(url) => {
            let tls = args.redis_tls.for_store(url)?;
            let module = args.redis_module.setting();
            results = redis::run(url, (tls, module), &args.limiter.0, &plan)?
        }
        Some(url) => {
            return Err(format!(
                "--store {:?}: {}",
                limits_redis::redact(url),
                crate::args::STORE_URLS
            ))
        }
    }
    let report = Report {
        machine: Machine::here(),
        clock: match store {
            None => "SystemClock (the real clock, read on every decision)",
            Some(url) if limits_memcached::is_memcached_url(url) => {
                "SystemClock (this host's: memcached has no clock)"
            }
            Some(_) => "Redis's clock (the store's own, read in each call)",
        }
        .to_owned(),
        store: limits_redis::redact(&args.store),
        results,
    };
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
    Ok(())
}
