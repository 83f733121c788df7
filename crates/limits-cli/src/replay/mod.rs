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
mod report_html;
mod run;
pub(crate) mod store;
mod summary;
mod timeline;
mod trace;

use crate::args::{parse_limiters, Limiters, RateArgs};
use clap::Args;
use keys::Keys;
use limits::{parse_duration, Algorithm};
use reorder::Reorder;
use run::{Replayed, Run};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use summary::Summary;
use trace::{LineError, TraceFormat};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The limiter (none, fixed-window, sliding-log, sliding-window,
    /// token-bucket, leaky-bucket, smoothed-rate), or `all` to compare them
    /// all.
    #[arg(long, default_value = "sliding-log", value_parser = parse_limiters)]
    limiter: Limiters,

    #[command(flatten)]
    rate: RateArgs,

    /// The trace: CSV `time,key[,cost[,value]]` (time in decimal seconds from the
    /// trace's zero) or an nginx/Apache combined access log; `-` reads
    /// standard input (a gzipped file: `zcat FILE | limits replay ... -`).
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

    /// Also write the replay as one self-contained HTML page (inline SVG,
    /// no script): per limiter its numbers, its allowed and limited
    /// requests over time and who it limited most; then the keys whose
    /// fate differed most between the limiters.
    #[arg(long, value_name = "REPORT.html")]
    report: Option<PathBuf>,

    /// Where the limiters decide: `memory`, a Redis (any URL `serve
    /// --store` takes: redis://, rediss://, redis+unix://,
    /// redis[s]+cluster://, redis[s]+sentinel://) with the trace's times
    /// floored to the microsecond, or a memcached (memcached://HOST:PORT) at
    /// the trace's nanoseconds; under a fresh key prefix per run.
    #[arg(long, default_value = "memory", value_name = "URL")]
    store: String,

    #[command(flatten)]
    redis_tls: crate::args::RedisTlsArgs,

    #[command(flatten)]
    redis_module: crate::args::RedisModuleArgs,

    /// Also replay the sliding-window counter in a sketch of SIZE bytes
    /// (`16MB`, `64KiB`), in memory whatever `--store` says: a row
    /// `sketch SIZE`, whose false denials are what the fixed memory
    /// costs.
    #[arg(long, value_name = "SIZE", value_parser = limits_server::parse_memory)]
    sketch: Option<usize>,

    /// Also replay a limit on distinct values per key: at most N in any
    /// window (`100/h`), a value repeated free. The value is the request's
    /// path in an access log (without its query), a CSV trace's fourth
    /// field (`time,key,cost,value`). In memory whatever `--store` says: a
    /// row `distinct N/W` beside the rate limiters.
    #[arg(long, value_name = "N/WINDOW", value_parser = parse_distinct)]
    distinct: Option<limits::Distinct>,
}

/// `N/WINDOW` as a limit on distinct values.
fn parse_distinct(s: &str) -> Result<limits::Distinct, String> {
    s.parse::<limits::Rate>()
        .map(limits::Distinct::from)
        .map_err(|e| e.to_string())
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

pub fn replay(args: ReplayArgs) -> Result<(), String> {
    let rates = args.rate.rates()?;
    args.rate.burst_applies(&args.limiter.0)?;
    let window = rates.as_slice()[0].window_nanos();
    if args.decisions.is_some() && args.limiter.0.len() > 1 {
        return Err(format!(
            "--decisions takes one limiter; --limiter all runs {}",
            Algorithm::ALL.len()
        ));
    }
    let bytes_read = Arc::new(AtomicU64::new(0));
    let values = args.distinct.is_some();
    let (format, mut events) = trace::open(&args.trace, args.format, bytes_read.clone(), values)?;
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
    if let Some(path) = &args.report {
        report_html::write(path, &summary, args.top)?;
        eprintln!("report written to {}", path.display());
    }
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
