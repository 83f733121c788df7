//! What `LIMITS.DECIDE` is asked, read from its arguments: the arguments of
//! the store's Lua scripts, after the key and the limiter's name, so that
//! the store sends the module and a script the same request.

use limits::{Algorithm, Mode, Rate, Rule};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

/// One decision asked of the module.
#[derive(Clone, Debug)]
pub struct Request {
    /// The rule, built from the limiter's name and the rates' numbers
    /// (once: calls of the same rule share it).
    pub rule: Rc<Rule>,
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
        Request::parse_as("LIMITS.DECIDE", args, (0, 0))
    }

    /// [`parse`](Request::parse) for `command`, whose arguments go on
    /// `after.0` past the rates, and which takes `after.1` keys more.
    pub(crate) fn parse_as(
        command: &str,
        args: &[&[u8]],
        after: (usize, usize),
    ) -> Result<Request, BadArgument> {
        let shared = Shared::parse(command, args, after)?;
        let arg = |at: usize| args[at];
        let cost = number(arg(2), "cost")?;
        let mode = match arg(3) {
            b"0" => Mode::Peek,
            b"1" => Mode::Record,
            b"2" => Mode::RecordAlways,
            other => {
                return Err(BadArgument(format!(
                "{command}: the mode is 0 (peek), 1 (record) or 2 (record a denial too), not {:?}",
                String::from_utf8_lossy(other)
            )))
            }
        };
        Ok(Request {
            rule: shared.rule,
            now: shared.now,
            cost,
            mode,
            ttl_floor_ms: shared.ttl_floor_ms,
            keys: shared.keys,
        })
    }
}

/// What the scripts' arguments hold for every command: the limiter (at
/// 0), the time (1), two of the command's own (2, 3), the keys' least time
/// to live (4), the rates (5 on), then `after.0` more of the command's own,
/// the rule's other keys, and `after.1` keys more.
pub(crate) struct Shared {
    pub rule: Rc<Rule>,
    pub now: Option<u64>,
    pub ttl_floor_ms: u64,
    pub keys: usize,
    /// Where the arguments after the rates start.
    pub rates_end: usize,
}

impl Shared {
    pub(crate) fn parse(
        command: &str,
        args: &[&[u8]],
        (after, more): (usize, usize),
    ) -> Result<Shared, BadArgument> {
        let missing = |what: &str| BadArgument(format!("{command}: the {what} is missing"));
        let names = [
            "limiter",
            "time",
            "cost",
            "mode",
            "time-to-live floor",
            "number of rates",
        ];
        if let Some(absent) = names.get(args.len()) {
            return Err(missing(absent));
        }
        let now = match args[1] {
            b"" => None,
            given => Some(below(number(given, "time")?, "time", TIMES)?),
        };
        let ttl_floor_ms = number(args[4], "time-to-live floor")?;
        let count = number(args[5], "number of rates")?;
        let rates_end = usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(3)?.checked_add(6))
            .filter(|&end| end + after + more <= args.len());
        let Some(rates_end) = rates_end else {
            let given = args.len().saturating_sub(6) / 3 + 1;
            let field = ["limit", "window", "burst"][args.len().saturating_sub(6) % 3];
            return Err(missing(&format!("{field} of rate {given}")));
        };
        let rule = RULES.with(|rules| rules.borrow_mut().get(args[0], &args[5..rates_end]))?;
        let keys = crate::layout::keys(&rule);
        let more_keys = args.len() - rates_end - after - more;
        if more_keys + 1 != keys {
            return Err(BadArgument(format!(
                "{command}: {} of {count} rates keeps {keys} keys; {} given",
                rule.algorithm(),
                more_keys + 1
            )));
        }
        Ok(Shared {
            rule,
            now,
            ttl_floor_ms,
            keys,
            rates_end,
        })
    }
}

thread_local! {
    /// The rules built lately (Redis calls a module's commands on one
    /// thread).
    static RULES: RefCell<Rules> = RefCell::default();
}

/// Rules by their arguments, so that a rule is built once rather than on
/// every call: at most [`Rules::MOST`], forgotten all at once past it.
#[derive(Default)]
struct Rules {
    built: HashMap<Vec<u8>, Rc<Rule>>,
    /// The arguments of the rule looked up, joined (kept for its room).
    key: Vec<u8>,
}

impl Rules {
    const MOST: usize = 1024;

    /// The rule of the limiter `name` and `N (LIMIT WINDOW BURST)...`.
    fn get(&mut self, name: &[u8], rates: &[&[u8]]) -> Result<Rc<Rule>, BadArgument> {
        self.key.clear();
        for arg in std::iter::once(&name).chain(rates) {
            self.key.extend_from_slice(arg);
            self.key.push(b' ');
        }
        if let Some(rule) = self.built.get(&self.key) {
            return Ok(rule.clone());
        }
        let rule = Rc::new(build(name, &rates[1..])?);
        if self.built.len() >= Self::MOST {
            self.built.clear();
        }
        self.built.insert(self.key.clone(), rule.clone());
        Ok(rule)
    }
}

/// The rule of the limiter `name` at `(LIMIT WINDOW BURST)...`.
fn build(name: &[u8], rates: &[&[u8]]) -> Result<Rule, BadArgument> {
    let algorithm: Algorithm = text(name, "limiter")?
        .parse()
        .map_err(|e| BadArgument(format!("{e}")))?;
    if !DECIDED.contains(&algorithm) {
        return Err(BadArgument(format!(
            "LIMITS.DECIDE decides what the store's scripts decide, not {algorithm}"
        )));
    }
    let mut parsed = Vec::with_capacity(rates.len() / 3);
    let mut bursts = Vec::with_capacity(rates.len() / 3);
    for (i, rate) in rates.chunks_exact(3).enumerate() {
        let i = i + 1;
        let in_rate = |at: usize, what: &str| {
            let n = number(rate[at], what)?;
            below(n, what, RATES).map_err(|e| BadArgument(format!("rate {i}: {e}")))
        };
        let (limit, window) = (in_rate(0, "limit")?, in_rate(1, "window")?);
        bursts.push(number(rate[2], "burst")?);
        let rate = Rate::new(limit, Duration::from_micros(window))
            .map_err(|e| BadArgument(format!("LIMITS.DECIDE: rate {i}: {e}")))?;
        parsed.push(rate);
    }
    let rates = limits::Rates::new(parsed)
        .ok_or_else(|| BadArgument("LIMITS.DECIDE: a rule has at least one rate".into()))?;
    let rule = Rule::new(algorithm, rates);
    // The scripts take each rate's burst: the rule's, or the rate's own
    // limit when the rule sets none, which is what the core does too.
    let own_limits = rule
        .rates()
        .iter()
        .map(|r| r.limit())
        .eq(bursts.iter().copied());
    Ok(match algorithm {
        Algorithm::LeakyBucket if !own_limits => rule.with_burst(bursts[0]),
        _ => rule,
    })
}

fn text<'a>(arg: &'a [u8], what: &str) -> Result<&'a str, BadArgument> {
    std::str::from_utf8(arg).map_err(|_| BadArgument(format!("the {what} is not text")))
}

/// The scripts' layout keeps limits and windows (µs) below 2^48, so that
/// a sliding log's ring entries are at most 6 bytes wide, and times below
/// 2^52 µs, so that every number a double holds stays exact.
const RATES: (u64, &str) = (1 << 48, "2^48");
const TIMES: (u64, &str) = (1 << 52, "2^52");

/// `n`, the `what`, if below the range `(most, named)`.
fn below(n: u64, what: &str, (most, named): (u64, &str)) -> Result<u64, BadArgument> {
    if n >= most {
        return Err(BadArgument(format!(
            "the {what} is {n}, past the Redis store's range (below {named})"
        )));
    }
    Ok(n)
}

pub(crate) fn number(arg: &[u8], what: &str) -> Result<u64, BadArgument> {
    text(arg, what)?.parse().map_err(|_| {
        BadArgument(format!(
            "the {what} is a whole number, not {:?}",
            String::from_utf8_lossy(arg)
        ))
    })
}
