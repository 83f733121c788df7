//! What `LIMITS.DECIDE` is asked, read from its arguments: the arguments of
//! the store's Lua scripts, after the key and the limiter's name, so that
//! the store sends the module and a script the same request.

use limits::{Algorithm, Mode, Rate, Rule};
use std::fmt;
use std::time::Duration;

/// One decision asked of the module.
#[derive(Clone, Debug)]
pub struct Request {
    /// The rule, built from the limiter's name and the rates' numbers.
    pub rule: Rule,
    /// The time in microseconds, or `None` for Redis's own clock.
    pub now: Option<u64>,
    /// The request's cost.
    pub cost: u64,
    /// Peek, record, or record a denial too.
    pub mode: Mode,
    /// The keys' least time to live in milliseconds, whatever their state.
    pub ttl_floor_ms: u64,
    /// How many keys hold the state ([`layout::keys`](crate::layout::keys)):
    /// the command's first, and the rest after the rates.
    pub keys: usize,
}

/// An argument that is not what the command takes: which one, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadArgument(pub String);

impl fmt::Display for BadArgument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The limiters the module decides: every one the store's scripts do.
pub const DECIDED: [Algorithm; 5] = [
    Algorithm::FixedWindow,
    Algorithm::SlidingLog,
    Algorithm::TokenBucket,
    Algorithm::SlidingWindow,
    Algorithm::LeakyBucket,
];

impl Request {
    /// Reads `ALGORITHM NOW COST MODE FLOOR N (LIMIT WINDOW BURST)...
    /// [KEY...]` (the arguments after the first key): the limiter by the
    /// core's name, the time in microseconds or empty for Redis's clock, the
    /// mode as the scripts take it (0 peek, 1 record, 2 record a denial
    /// too), per rate its limit, its window in microseconds and the leaky
    /// bucket's burst, and for the sliding log the keys of its other rates
    /// (a key per rate, as the scripts keep it), which are not read here.
    ///
    /// ```
    /// use limits::{Algorithm, Mode};
    /// use limits_redis_module::Request;
    ///
    /// let args: Vec<&[u8]> = ["token-bucket", "", "1", "1", "0", "1", "10", "1000000", "0"]
    ///     .iter()
    ///     .map(|a| a.as_bytes())
    ///     .collect();
    /// let request = Request::parse(&args).unwrap();
    /// assert_eq!(request.rule.algorithm(), Algorithm::TokenBucket);
    /// assert_eq!(request.rule.rates().to_string(), "10/s");
    /// assert_eq!((request.now, request.cost, request.mode), (None, 1, Mode::Record));
    ///
    /// let err = Request::parse(&args[..5]).unwrap_err();
    /// assert!(err.0.contains("number of rates"), "{err}");
    /// ```
    pub fn parse(args: &[&[u8]]) -> Result<Request, BadArgument> {
        let mut args = args.iter().copied();
        let mut next = |what: &str| {
            args.next()
                .ok_or_else(|| BadArgument(format!("LIMITS.DECIDE: the {what} is missing")))
        };
        let name = text(next("limiter")?, "limiter")?;
        let algorithm: Algorithm = name.parse().map_err(|e| BadArgument(format!("{e}")))?;
        if !DECIDED.contains(&algorithm) {
            return Err(BadArgument(format!(
                "LIMITS.DECIDE decides what the store's scripts decide, not {algorithm}"
            )));
        }
        let now = match next("time")? {
            b"" => None,
            given => Some(number(given, "time")?),
        };
        let cost = number(next("cost")?, "cost")?;
        let mode = match next("mode")? {
            b"0" => Mode::Peek,
            b"1" => Mode::Record,
            b"2" => Mode::RecordAlways,
            other => {
                return Err(BadArgument(format!(
                    "LIMITS.DECIDE: the mode is 0 (peek), 1 (record) or 2 (record a denial too), not {:?}",
                    String::from_utf8_lossy(other)
                )))
            }
        };
        let ttl_floor_ms = number(next("time-to-live floor")?, "time-to-live floor")?;
        let count = number(next("number of rates")?, "number of rates")?;
        let mut rates = Vec::new();
        let mut bursts = Vec::new();
        for i in 1..=count {
            let limit = number(next(&format!("limit of rate {i}"))?, "limit")?;
            let window = number(next(&format!("window of rate {i}"))?, "window")?;
            let burst = number(next(&format!("burst of rate {i}"))?, "burst")?;
            let rate = Rate::new(limit, Duration::from_micros(window))
                .map_err(|e| BadArgument(format!("LIMITS.DECIDE: rate {i}: {e}")))?;
            rates.push(rate);
            bursts.push(burst);
        }
        let more_keys = args.count();
        let rates = limits::Rates::new(rates)
            .ok_or_else(|| BadArgument("LIMITS.DECIDE: a rule has at least one rate".into()))?;
        let mut rule = Rule::new(algorithm, rates);
        // The scripts take each rate's burst: the rule's, or the rate's own
        // limit when the rule sets none, which is what the core does too.
        let own_limits = rule
            .rates()
            .iter()
            .map(|r| r.limit())
            .eq(bursts.iter().copied());
        if algorithm == Algorithm::LeakyBucket && !own_limits {
            rule = rule.with_burst(bursts[0]);
        }
        let keys = crate::layout::keys(&rule);
        if more_keys + 1 != keys {
            return Err(BadArgument(format!(
                "LIMITS.DECIDE: {algorithm} of {count} rates keeps {keys} keys; {} given",
                more_keys + 1
            )));
        }
        Ok(Request {
            rule,
            now,
            cost,
            mode,
            ttl_floor_ms,
            keys,
        })
    }
}

fn text<'a>(arg: &'a [u8], what: &str) -> Result<&'a str, BadArgument> {
    std::str::from_utf8(arg)
        .map_err(|_| BadArgument(format!("LIMITS.DECIDE: the {what} is not text")))
}

fn number(arg: &[u8], what: &str) -> Result<u64, BadArgument> {
    text(arg, what)?.parse().map_err(|_| {
        BadArgument(format!(
            "LIMITS.DECIDE: the {what} is a whole number, not {:?}",
            String::from_utf8_lossy(arg)
        ))
    })
}
