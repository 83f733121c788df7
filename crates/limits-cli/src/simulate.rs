//! `limits simulate`: the lab's simulator. Runs every limiter over a
//! deterministic traffic pattern and prints the chapter's table, plus what the
//! chapter could not show: decisions that differ from the exact sliding log,
//! and memory per key.

use crate::args::{parse_limiters, Limiters, RateArgs};
use crate::report::{self, limits_phrase, Row};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use limits::simulate::{Keep, Pattern, Runner, Simulation};
use limits::{format_seconds, Algorithm, Rule, SketchOptions};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// The most requests one client may get: the random pattern sorts one
/// client's times in memory (8 bytes each).
const MAX_PER_KEY: u64 = 20_000_000;
/// The most requests one simulation may run, all clients together. The run
/// streams, so memory does not grow with them, but time does.
const MAX_REQUESTS: u64 = 1_000_000_000;

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Traffic pattern: steady, edge, burst, random or ramp.
    #[arg(long, default_value = "steady", value_parser = parse_pattern)]
    pattern: Pattern,

    #[command(flatten)]
    rate: RateArgs,

    /// A limiter to run (repeat for several), or all; default: every one,
    /// in table order.
    #[arg(long = "limiter", value_parser = parse_limiters)]
    limiters: Vec<Limiters>,

    /// Clients; every one receives the whole pattern.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    keys: u32,

    /// Seed of the random pattern.
    #[arg(long, default_value_t = 0)]
    seed: u64,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,

    /// Also draw the run as an SVG picture to this file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,

    /// Also run the sliding-window counter in a sketch of SIZE bytes
    /// (`16MB`, `64KiB`) for all the clients: a row `sketch SIZE`, last,
    /// whose false denials are what the fixed memory costs.
    #[arg(long, value_name = "SIZE", value_parser = limits_server::parse_memory)]
    sketch: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Table,
    Json,
    Csv,
}

fn parse_pattern(s: &str) -> Result<Pattern, String> {
    s.parse()
}

pub fn simulate(args: SimulateArgs) -> Result<(), String> {
    let sim = build(&args)?;
    if let Some(path) = &args.plot {
        crate::plot::draw(path, &sim).map_err(|e| format!("--plot {}: {e}", path.display()))?;
    }
    let text = match args.format {
        Format::Table => report::table(&header(&sim), sim.window(), &rows(&sim)),
        Format::Json => json(&sim)?,
        Format::Csv => csv(&sim)?,
    };
    print!("{text}");
    Ok(())
}

fn build(args: &SimulateArgs) -> Result<Simulation, String> {
    let rates = args.rate.rates()?;
    let first = rates.as_slice()[0];
    let pattern = match args.pattern {
        Pattern::Random { .. } => Pattern::Random { seed: args.seed },
        p => p,
    };
    let per_key = pattern.requests_per_key(first.limit());
    let requests = per_key.saturating_mul(u64::from(args.keys));
    if per_key > MAX_PER_KEY {
        return Err(format!(
            "pattern {pattern} with --limit {} makes {per_key} requests per client; \
             the simulator takes at most {MAX_PER_KEY}: lower --limit",
            first.limit(),
        ));
    }
    if requests > MAX_REQUESTS {
        return Err(format!(
            "pattern {pattern} with --limit {} and --keys {} makes {requests} requests; \
             the simulator takes at most {MAX_REQUESTS}: lower --limit or --keys",
            first.limit(),
            args.keys
        ));
    }
    let mut limiters: Vec<Algorithm> = if args.limiters.is_empty() {
        Algorithm::ALL.to_vec()
    } else {
        args.limiters
            .iter()
            .flat_map(|l| l.0.iter().copied())
            .collect()
    };
    limiters.sort();
    limiters.dedup();
    args.rate.burst_applies(&limiters)?;
    let rules: Vec<Rule> = limiters
        .iter()
        .map(|&a| Rule::build(a, rates.clone(), args.rate.burst))
        .collect();
    // The tables need no record of the requests; the picture shows key 0's.
    let keep = if args.plot.is_some() {
        Keep::Key(0)
    } else {
        Keep::Nothing
    };
    let mut runner = Runner::new(&rules, args.keys, first.window_nanos(), keep);
    if let Some(memory) = args.sketch {
        // One shard and a fixed seed: the same cells, and so the same
        // table, on every machine and every run.
        let options = SketchOptions {
            shards: 1,
            seed: Some(0),
            ..SketchOptions::new(memory)
        };
        let rule = Rule::build(Algorithm::SlidingWindow, rates.clone(), args.rate.burst);
        runner
            .add_sketch(&rule, options)
            .map_err(|e| format!("--sketch: {e}"))?;
    }
    let bar = progress_bar(requests);
    let sim = Simulation::with_runner(pattern, rates, args.keys, runner, |done| {
        if let Some(bar) = &bar {
            bar.set_position(done);
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(sim)
}

/// A progress line on stderr, on a terminal and for runs long enough to
/// wait for (a million requests take about a second).
fn progress_bar(requests: u64) -> Option<ProgressBar> {
    if requests < 1_000_000 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(requests);
    let template = "{spinner} simulating [{bar:40}] {human_pos}/{human_len} requests ({eta} left)";
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

fn header(sim: &Simulation) -> String {
    let keys = if sim.keys > 1 {
        format!(" from {} clients", sim.keys)
    } else {
        String::new()
    };
    format!(
        "pattern {}: {} requests{keys}, limit {}",
        sim.pattern,
        sim.requests,
        limits_phrase(&sim.rates)
    )
}

fn rows(sim: &Simulation) -> Vec<Row> {
    sim.results
        .iter()
        .map(|o| Row {
            limiter: report::limiter_name(o.algorithm, o.sketch),
            allowed: o.allowed,
            rejected: o.rejected,
            worst_window: o.worst_window,
            false_allows: o.false_allows,
            false_denies: o.false_denies,
            bytes_per_key: Some(o.peak_bytes_per_key),
        })
        .collect()
}

fn json(sim: &Simulation) -> Result<String, String> {
    #[derive(Serialize)]
    struct Report {
        pattern: &'static str,
        seed: Option<u64>,
        requests: u64,
        keys: u32,
        rates: String,
        window_seconds: String,
        limiters: Vec<Row>,
    }
    let report = Report {
        pattern: sim.pattern.name(),
        seed: match sim.pattern {
            Pattern::Random { seed } => Some(seed),
            _ => None,
        },
        requests: sim.requests,
        keys: sim.keys,
        rates: sim.rates.to_string(),
        window_seconds: format_seconds(Duration::from_nanos(sim.window())),
        limiters: rows(sim),
    };
    serde_json::to_string_pretty(&report)
        .map(|s| s + "\n")
        .map_err(|e| e.to_string())
}

fn csv(sim: &Simulation) -> Result<String, String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    for row in rows(sim) {
        out.serialize(row).map_err(|e| e.to_string())?;
    }
    let bytes = out.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}
