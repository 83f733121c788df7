//! Command-line arguments shared by the subcommands: which limiter, and at
//! what rate. Rates go through the core's one parser.

use clap::Args;
use limits::{parse_duration, Algorithm, Rate, Rates, Rule, DEFAULT_WINDOW};

/// `--limiter NAME --limit N [--window D] [--burst B]`, or `--limit 100/min`.
#[derive(Args, Clone, Debug)]
pub struct RuleArgs {
    /// The limiter: none, fixed-window, sliding-log, sliding-window,
    /// token-bucket or leaky-bucket.
    #[arg(long, value_parser = parse_algorithm, default_value = "sliding-log")]
    pub limiter: Algorithm,

    #[command(flatten)]
    pub rate: RateArgs,
}

impl RuleArgs {
    /// The rule these arguments describe.
    pub fn rule(&self) -> Result<Rule, String> {
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
    fn limiter_names_are_exactly_the_six() {
        for name in [
            "none",
            "fixed-window",
            "sliding-log",
            "sliding-window",
            "token-bucket",
            "leaky-bucket",
        ] {
            assert_eq!(parse_algorithm(name).unwrap().name(), name);
        }
        let err = parse_algorithm("gcra").unwrap_err();
        assert!(err.contains("sliding-log"), "{err}");
    }
}
