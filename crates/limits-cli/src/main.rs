//! `limits`: the command-line face of the toolkit.

mod args;
mod config;
mod plot;
mod proxy;
mod replay;
mod report;
mod simulate;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exact rate limiting: a sliding log and its peers.
#[derive(Parser, Debug)]
#[command(name = "limits", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the limiters and what each one promises.
    Limiters,
    /// Run limiters over a traffic pattern and compare them (the lab's table).
    Simulate(simulate::SimulateArgs),
    /// Run a CSV trace or an access log through a limiter: who would have been limited.
    Replay(replay::ReplayArgs),
    /// Check a rule: parse a limiter and its rates, and print them normalized.
    Rule(args::RuleArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Limiters => {
            for algorithm in limits::Algorithm::ALL {
                println!("{:<16}{}", algorithm.name(), describe(algorithm));
            }
            Ok(())
        }
        Command::Simulate(args) => simulate::simulate(args),
        Command::Replay(args) => replay::replay(args),
        Command::Rule(args) => {
            let rule = args.rule()?;
            println!(
                "{} {} (largest cost that can pass: {})",
                rule.algorithm(),
                rule.rates(),
                rule.max_cost()
            );
            Ok(())
        }
    }
}

fn describe(algorithm: limits::Algorithm) -> &'static str {
    use limits::Algorithm::*;
    match algorithm {
        None => "allows everything: the baseline",
        FixedWindow => "a counter per window; up to 2x the limit across an edge",
        SlidingLog => "exact: never more than the limit in any window; 8 bytes per request",
        TokenBucket => "bursts up to the limit, then the limit per window, exactly",
        SlidingWindow => "two counters, weighted; at most 2x the limit in any window",
        LeakyBucket => "a queue draining evenly; admitted requests wait their turn",
    }
}
