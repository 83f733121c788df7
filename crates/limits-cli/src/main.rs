//! `limits`: the command-line face of the toolkit.

mod args;
mod bench;
mod file_limit;
mod lines;
mod plot;
mod reference_env;
mod reference_redis_url;
mod replay;
mod report;
mod rls;
mod runtime;
mod serve;
mod simulate;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// Exact rate limiting: a sliding log and its peers.
#[derive(Parser, Debug)]
#[command(name = "limits", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,

    /// How log lines are written on stderr: text, or one JSON object a
    /// line (`rls` reads the reference's LOG_FORMAT when this is not
    /// given).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line (time, level, message, fields, target).
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the limiters and what each one promises.
    Limiters,
    /// Run limiters over a traffic pattern and compare them (the lab's table).
    Simulate(simulate::SimulateArgs),
    /// Run a CSV trace or an access log through a limiter: who would have been limited.
    Replay(replay::ReplayArgs),
    /// Put a limiter in front of an API: a built-in demo API, or --upstream URL.
    Serve(Box<serve::ServeArgs>),
    /// Check a rule: parse a limiter and its rates, and print them normalized.
    Rule(args::RuleArgs),
    /// Envoy's rate limit service (gRPC ShouldRateLimit) with envoyproxy/ratelimit's YAML config.
    Rls(Box<rls::RlsArgs>),
    /// Measure the limiters on this machine: ns per decision, decisions/s, bytes per key.
    Bench(Box<bench::BenchArgs>),
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // `rls` reads the reference's LOG_LEVEL when RUST_LOG says nothing, and
    // its LOG_FORMAT when --log-format is not given.
    let format_given = matches.value_source("log_format") == Some(ValueSource::CommandLine);
    let env = |name: &str| std::env::var(name).ok();
    let logging = match &cli.command {
        Command::Rls(_) => reference_env::log_level(&env).and_then(|level| {
            let json = reference_env::log_json(&env)?.filter(|_| !format_given);
            let format = match json {
                Some(true) => LogFormat::Json,
                Some(false) => LogFormat::Text,
                None => cli.log_format,
            };
            Ok((level, format))
        }),
        _ => Ok((None, cli.log_format)),
    };
    match logging {
        Ok((level, format)) => init_logging(level, format),
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    }
    // `bench` and `rls` tell a flag given from its default.
    let bench = matches.subcommand_matches("bench");
    let rls = matches.subcommand_matches("rls");
    match run(cli.command, bench, rls) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    command: Command,
    bench: Option<&clap::ArgMatches>,
    rls: Option<&clap::ArgMatches>,
) -> Result<(), String> {
    match command {
        Command::Limiters => {
            for algorithm in limits::Algorithm::ALL {
                println!("{:<16}{}", algorithm.name(), algorithm.describe());
            }
            println!();
            println!(
                "A sliding-window rule in fixed memory, whatever the keys: memory = \"16MB\" in a\n\
                 rules file (replay and simulate: --sketch 16MB); false denials only."
            );
            println!();
            println!(
                "At most N distinct values per key in any window, a value repeated free (the\n\
                 usernames one address tries, the pages it visits): distinct = {{ of = \"form:username\",\n\
                 at_most = 20, window = \"1h\" }} in a rules file (replay: --distinct 20/h, the paths);\n\
                 exact, or HyperLogLogs past a threshold (sketch = {{ from = 256 }})."
            );
            Ok(())
        }
        Command::Simulate(args) => simulate::simulate(args),
        Command::Replay(args) => replay::replay(args),
        Command::Serve(args) => serve::serve(*args),
        Command::Rls(args) => rls::rls(*args, rls),
        Command::Bench(args) => bench::bench(*args, bench),
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

/// Structured logs on stderr in `format`, filtered by RUST_LOG, else by
/// `level` (default: info).
fn init_logging(level: Option<&str>, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level.unwrap_or("info")));
    let logger = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => logger
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => logger.json().try_init(),
    };
}
