//! `limits replay`: a real access log or a CSV trace through any limiter,
//! streamed (a multi-gigabyte log is never held in memory), with a summary of
//! who would have been limited and, on request, every decision.

mod access_log;
mod decisions;
#[cfg(test)]
mod forget_tests;
mod keys;
mod rejected;
mod reorder;
pub(crate) mod store;
mod summary;
mod trace;

use crate::args::{parse_algorithm, RateArgs};
use clap::Args;
use decisions::DecisionsWriter;
use indicatif::{ProgressBar, ProgressStyle};
use keys::{KeyId, Keys};
use limits::simulate::Tally;
use limits::{parse_duration, Algorithm, KeyedLimiter, ManualClock, Rule};
use rejected::Rejected;
use reorder::Reorder;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use store::{Limiter, Redis};
use summary::Summary;
use trace::{Event, LineError, TraceFormat};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The limiter (none, fixed-window, sliding-log, sliding-window,
    /// token-bucket, leaky-bucket), or `all` to compare them all.
    #[arg(long, default_value = "sliding-log", value_parser = parse_limiters)]
    limiter: Limiters,

    #[command(flatten)]
    rate: RateArgs,

    /// The trace: CSV `time,key[,cost]` (time in decimal seconds from the
    /// trace's zero) or an nginx/Apache combined access log.
    trace: PathBuf,

    /// Write every decision to this CSV file (one limiter only).
    #[arg(long, value_name = "OUT.csv")]
    decisions: Option<PathBuf>,

    /// Count and report malformed or too-late lines instead of stopping.
    #[arg(long)]
    skip_bad: bool,

    /// How far out of order access-log lines may be (CSV times must never go
    /// backwards).
    #[arg(long, default_value = "5s", value_parser = parse_window)]
    reorder_window: u64,

    /// The trace's format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Auto)]
    format: TraceFormat,

    /// How many of the most-limited keys to name per limiter.
    #[arg(long, default_value_t = 5)]
    top: usize,

    /// Where the limiters decide: `memory`, or a Redis (redis://HOST:PORT[/DB]
    /// or redis+cluster://HOST1:PORT1,...) with the trace's times floored to
    /// the microsecond, under a fresh key prefix per run.
    #[arg(long, default_value = "memory", value_name = "URL")]
    store: String,
}

#[derive(Clone, Debug)]
struct Limiters(Vec<Algorithm>);

fn parse_limiters(s: &str) -> Result<Limiters, String> {
    if s == "all" {
        return Ok(Limiters(Algorithm::ALL.to_vec()));
    }
    parse_algorithm(s)
        .map(|a| Limiters(vec![a]))
        .map_err(|e| format!("{e}, or all"))
}

/// A duration, or zero ("0", "0s") for no reordering at all.
fn parse_window(s: &str) -> Result<u64, String> {
    let number: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    if !number.is_empty() && number.chars().all(|c| c == '0' || c == '.') {
        return Ok(0);
    }
    parse_duration(s)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .map_err(|e| e.to_string())
}

/// Lines skipped with --skip-bad: how many, and the first few to show.
#[derive(Default)]
struct BadLines {
    total: u64,
    first: Vec<LineError>,
}

impl BadLines {
    const SHOWN: usize = 10;

    fn count(&mut self, e: LineError) {
        self.total += 1;
        if self.first.len() < Self::SHOWN {
            self.first.push(e);
        }
    }
}

/// One limiter being replayed, and the tally of its decisions.
struct Replayed {
    algorithm: Algorithm,
    limiter: Limiter,
    tally: Tally<KeyId>,
    /// Rejections per key.
    rejected: Rejected,
}

pub fn replay(args: ReplayArgs) -> Result<(), String> {
    let rates = args.rate.rates()?;
    let window = rates.as_slice()[0].window_nanos();
    if args.decisions.is_some() && args.limiter.0.len() > 1 {
        return Err(format!(
            "--decisions takes one limiter; --limiter all runs {}",
            Algorithm::ALL.len()
        ));
    }
    let bytes_read = Arc::new(AtomicU64::new(0));
    let (format, mut events) = trace::open(&args.trace, args.format, bytes_read.clone())?;
    let mut run = Run::new(&args, &rates, window, bytes_read)?;
    let name = args.trace.display().to_string();
    let mut reorder = Reorder::new(match format {
        TraceFormat::Log => args.reorder_window,
        _ => 0,
    });
    let mut bad = BadLines::default();
    let mut keys = Keys::default();
    while let Some(item) = events.next(&mut keys) {
        // Held until its request is decided, whatever else is swept.
        let item = item.inspect(|e| keys.hold(e.key, e.t));
        match item.and_then(|e| reorder.push(e)) {
            Ok(_) => {
                while let Some((seq, e)) = reorder.pop_ready() {
                    run.decide(seq, e, &mut keys)?;
                }
            }
            Err(e) if args.skip_bad => bad.count(e),
            Err(e) => return Err(format!("{name}:{}: {}", e.line, e.message)),
        }
    }
    while let Some((seq, e)) = reorder.pop() {
        run.decide(seq, e, &mut keys)?;
    }
    let (requests, floored, replayed) = run.finish()?;
    if requests == 0 {
        let skipped = match bad.total {
            0 => String::new(),
            n => format!(" ({n} bad line{} skipped)", if n == 1 { "" } else { "s" }),
        };
        return Err(format!("{name}: no events in the trace{skipped}"));
    }
    let summary = Summary {
        name: &name,
        requests,
        rates: &rates,
        window,
        replayed: &replayed,
        keys: &keys,
    };
    summary.print(&bad, args.top);
    if floored > 0 {
        println!();
        let s = if floored == 1 { "" } else { "s" };
        println!(
            "{floored} event{s} had a time below the microsecond: Redis decided {} at the microsecond below",
            if floored == 1 { "it" } else { "them" }
        );
    }
    Ok(())
}

/// One replay in progress: every limiter asked, with a sliding log alongside
/// for the false allows and denies, the rows written, the progress shown.
struct Run {
    replayed: Vec<Replayed>,
    exact: Exact,
    writer: Option<DecisionsWriter>,
    progress: Option<ProgressBar>,
    bytes_read: Arc<AtomicU64>,
    requests: u64,
    /// Whether the limiters decide in Redis (`--store`), at microseconds.
    in_redis: bool,
    /// Events whose time was floored to the microsecond for Redis.
    floored: u64,
    /// The tallies' window (ns): how long an admitted request is held there.
    window: u64,
}

/// Where the exact sliding log's decisions come from: a replayed sliding log
/// in memory decides exactly as the one alongside would (same rule, same
/// events), so it is asked once, not twice.
enum Exact {
    Own(KeyedLimiter<KeyId, ManualClock>),
    Replayed(usize),
}

impl Run {
    fn new(
        args: &ReplayArgs,
        rates: &limits::Rates,
        window: u64,
        bytes_read: Arc<AtomicU64>,
    ) -> Result<Run, String> {
        let rule = |a: Algorithm| Rule::build(a, rates.clone(), args.rate.burst);
        let keyed = |r: Rule| KeyedLimiter::with_clock(r, ManualClock::new(0));
        let redis = match args.store.as_str() {
            "memory" => None,
            url => {
                let redis = Redis::connect(url)?;
                eprintln!("replaying in {url}, keys under {}", redis.prefix());
                Some(Rc::new(redis))
            }
        };
        let replayed: Vec<Replayed> = args
            .limiter
            .0
            .iter()
            .map(|&algorithm| {
                let limiter = match &redis {
                    Some(redis) => redis.limiter(rule(algorithm))?,
                    None => Limiter::Memory(keyed(rule(algorithm))),
                };
                Ok(Replayed {
                    algorithm,
                    limiter,
                    tally: Tally::new(window),
                    rejected: Rejected::default(),
                })
            })
            .collect::<Result<_, String>>()?;
        let exact = match replayed.iter().position(|r| {
            r.algorithm == Algorithm::SlidingLog && matches!(r.limiter, Limiter::Memory(_))
        }) {
            Some(i) => Exact::Replayed(i),
            None => Exact::Own(keyed(rule(Algorithm::SlidingLog))),
        };
        let writer = match &args.decisions {
            Some(path) => Some(DecisionsWriter::create(path)?),
            None => None,
        };
        Ok(Run {
            replayed,
            exact,
            writer,
            progress: progress_bar(&args.trace),
            bytes_read,
            requests: 0,
            in_redis: redis.is_some(),
            floored: 0,
            window,
        })
    }

    /// Event number `seq` (input order), decided by every limiter; its key
    /// held until it is idle in all of them and in their tallies, and a few
    /// keys idle everywhere forgotten.
    fn decide(&mut self, seq: u64, mut e: Event, keys: &mut Keys) -> Result<(), String> {
        self.requests += 1;
        if self.in_redis && e.t % 1000 != 0 {
            e.t -= e.t % 1000;
            self.floored += 1;
        }
        // When the key is back to its full limit everywhere: from then on
        // its states decide exactly as absent ones.
        let mut idle_at = e.t;
        let (reference, mut decided) = match &self.exact {
            Exact::Own(exact) => {
                let d = exact.check_at(&e.key, e.t, e.cost);
                idle_at = idle_at.max(after(e.t, d.reset_after));
                (d.allowed, None)
            }
            &Exact::Replayed(i) => {
                let d = self.replayed[i].limiter.decide(e.key, keys, e.t, e.cost)?;
                (d.allowed, Some((i, d)))
            }
        };
        for (i, r) in self.replayed.iter_mut().enumerate() {
            let d = match decided.take_if(|(at, _)| *at == i) {
                Some((_, d)) => d,
                None => r.limiter.decide(e.key, keys, e.t, e.cost)?,
            };
            let release = r.tally.count(&e.key, e.t, e.cost, &d, reference);
            idle_at = idle_at.max(after(e.t, d.reset_after));
            if d.allowed {
                // The tally's worst window holds it until a window later.
                idle_at = idle_at.max(release.saturating_add(self.window));
            } else {
                r.rejected.count(e.key);
            }
            if let Some(w) = self.writer.as_mut() {
                w.add(seq, e.t, keys.name(e.key), e.cost, &d)?;
            }
        }
        keys.hold(e.key, idle_at);
        // Two numbers per line: the sweep comes round while there are at
        // most as many forgettable keys as held ones.
        let replayed = &mut self.replayed;
        keys.sweep(e.t, 2, |id, name| {
            for r in replayed.iter_mut() {
                r.rejected.forget(id, name);
            }
        });
        if self.requests % 4096 == 0 {
            if let Some(p) = &self.progress {
                p.set_position(self.bytes_read.load(Ordering::Relaxed));
            }
        }
        Ok(())
    }

    /// Flushes the rows; how many requests were decided, how many of their
    /// times were floored for Redis, and by whom.
    fn finish(self) -> Result<(u64, u64, Vec<Replayed>), String> {
        if let Some(p) = self.progress {
            p.finish_and_clear();
        }
        if let Some(w) = self.writer {
            w.finish()?;
        }
        Ok((self.requests, self.floored, self.replayed))
    }
}

/// `t` plus `d` in nanoseconds, saturating.
fn after(t: u64, d: std::time::Duration) -> u64 {
    t.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn progress_bar(path: &std::path::Path) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} replaying [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}
