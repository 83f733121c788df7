//! Rates: "L requests per window W", one or several on a rule.
//!
//! The one rate parser of the project lives here; the command line, the HTTP
//! configuration and the Redis store all go through it.

use crate::duration::{duration_tokens, largest_unit, nanos_of};
use crate::parse::{ParseError, Token, TokenKind, tokens};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The largest limit a rate may have (2^62). It keeps every intermediate
/// product of the exact arithmetic inside `u128`.
pub const MAX_LIMIT: u64 = 1 << 62;

/// The longest window a rate may have: 2^62 ns, about 146 years.
pub const MAX_WINDOW: Duration = Duration::from_nanos(1 << 62);

/// The window of a bare limit with no window of its own (`--limit 10`,
/// `limit = 10` in a configuration file): one second, in every front end.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);

/// A limit of `limit` units of cost per `window`.
///
/// ```
/// use limits::Rate;
/// use std::time::Duration;
/// let rate = Rate::new(10, Duration::from_secs(1)).unwrap();
/// assert_eq!(rate.to_string(), "10/s");
/// assert_eq!("10 per second".parse::<Rate>().unwrap(), rate);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    limit: u64,
    window_ns: u64,
}

/// Why a limit or window cannot make a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateError {
    /// A limit of 0 would deny everything; use a deny rule instead.
    ZeroLimit,
    /// A window must be at least one nanosecond.
    ZeroWindow,
    /// The limit is above [`MAX_LIMIT`].
    LimitTooLarge,
    /// The window is longer than [`MAX_WINDOW`].
    WindowTooLong,
}

impl fmt::Display for RateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RateError::ZeroLimit => "the limit must be at least 1",
            RateError::ZeroWindow => "the window must be longer than zero",
            RateError::LimitTooLarge => "the limit is too large (at most 2^62)",
            RateError::WindowTooLong => "the window is too long (at most 2^62 ns, about 146 years)",
        })
    }
}

impl std::error::Error for RateError {}

impl Rate {
    /// A rate of `limit` per `window`; both must be positive and within
    /// [`MAX_LIMIT`] and [`MAX_WINDOW`].
    pub fn new(limit: u64, window: Duration) -> Result<Rate, RateError> {
        if limit == 0 {
            return Err(RateError::ZeroLimit);
        }
        if limit > MAX_LIMIT {
            return Err(RateError::LimitTooLarge);
        }
        if window.is_zero() {
            return Err(RateError::ZeroWindow);
        }
        if window > MAX_WINDOW {
            return Err(RateError::WindowTooLong);
        }
        Ok(Rate {
            limit,
            window_ns: nanos_of(window),
        })
    }

    /// `limit` per second.
    ///
    /// ```
    /// assert_eq!(limits::Rate::per_second(5).unwrap().to_string(), "5/s");
    /// ```
    pub fn per_second(limit: u64) -> Result<Rate, RateError> {
        Rate::new(limit, Duration::from_secs(1))
    }

    /// The number of cost units allowed per window.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The window.
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.window_ns)
    }

    /// The window in nanoseconds.
    pub fn window_nanos(&self) -> u64 {
        self.window_ns
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match largest_unit(self.window_ns) {
            (1, unit) => write!(f, "{}/{unit}", self.limit),
            (count, unit) => write!(f, "{}/{count}{unit}", self.limit),
        }
    }
}

impl FromStr for Rate {
    type Err = ParseError;

    /// Parses exactly one rate; see [`Rates`] for the syntax.
    fn from_str(s: &str) -> Result<Rate, ParseError> {
        let toks = tokens(s);
        let (rate, used) = rate_tokens(&toks, s)?;
        match toks.get(used) {
            None => Ok(rate),
            Some(t) => Err(ParseError::new(
                "rate",
                s,
                t.at,
                t.text,
                "unexpected text after the rate",
            )),
        }
    }
}

/// Reads `LIMIT ('/' | 'per') [NUMBER] UNIT` from the start of `toks`.
fn rate_tokens(toks: &[Token<'_>], input: &str) -> Result<(Rate, usize), ParseError> {
    let err = |tok: Option<&Token<'_>>, problem: &str| match tok {
        Some(t) => ParseError::new("rate", input, t.at, t.text, problem),
        None => ParseError::new("rate", input, input.len(), "", problem),
    };
    let limit_tok = match toks.first() {
        Some(t) if t.kind == TokenKind::Number => t,
        other => return Err(err(other, "expected a limit such as 10/second")),
    };
    let limit: u64 = match limit_tok.text.parse() {
        Ok(n) if n > MAX_LIMIT => return Err(err(Some(limit_tok), "the limit is too large")),
        Ok(n) => n,
        Err(_) if limit_tok.text.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(err(Some(limit_tok), "the limit is too large"));
        }
        Err(_) => return Err(err(Some(limit_tok), "the limit must be a whole number")),
    };
    if limit == 0 {
        return Err(err(Some(limit_tok), "the limit must be at least 1"));
    }
    match toks.get(1) {
        Some(t) if t.kind == TokenKind::Slash => {}
        Some(t) if t.kind == TokenKind::Word && t.text.eq_ignore_ascii_case("per") => {}
        other => return Err(err(other, "expected '/' or 'per' after the limit")),
    }
    let (window_ns, used) = duration_tokens(&toks[2..], input, "rate", true)?;
    let rate = Rate::new(limit, Duration::from_nanos(window_ns))
        .map_err(|e| err(toks.get(2), &e.to_string()))?;
    Ok((rate, 2 + used))
}

/// One or more rates checked together: a request is allowed only if every
/// rate allows it.
///
/// Syntax: `10/second`, `10/s`, `10 per second`, `100/5m`, `1000/hour`,
/// `5/2 seconds`, several separated by `;` or `,`. Units: ns, us, ms,
/// s/sec/second(s), m/min/minute(s), h/hr/hour(s), d/day(s).
///
/// ```
/// use limits::Rates;
/// let rates: Rates = "10/second; 1000 per hour".parse().unwrap();
/// assert_eq!(rates.len(), 2);
/// assert_eq!(rates.to_string(), "10/s; 1000/h");
/// let err = "10/s; 0/m".parse::<Rates>().unwrap_err();
/// assert_eq!(err.column(), 7);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rates(Vec<Rate>);

impl Rates {
    /// Several rates; `None` when `rates` is empty.
    pub fn new(rates: Vec<Rate>) -> Option<Rates> {
        (!rates.is_empty()).then_some(Rates(rates))
    }

    /// The rates, in the order given.
    pub fn as_slice(&self) -> &[Rate] {
        &self.0
    }

    /// How many rates there are (at least one).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Iterates over the rates.
    pub fn iter(&self) -> std::slice::Iter<'_, Rate> {
        self.0.iter()
    }
}

impl From<Rate> for Rates {
    fn from(rate: Rate) -> Rates {
        Rates(vec![rate])
    }
}

impl<'a> IntoIterator for &'a Rates {
    type Item = &'a Rate;
    type IntoIter = std::slice::Iter<'a, Rate>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for Rates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rate) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{rate}")?;
        }
        Ok(())
    }
}

impl FromStr for Rates {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Rates, ParseError> {
        let toks = tokens(s);
        let mut rates = Vec::new();
        let mut i = 0;
        loop {
            let (rate, used) = rate_tokens(&toks[i..], s)?;
            rates.push(rate);
            i += used;
            match toks.get(i) {
                None => return Ok(Rates(rates)),
                Some(t) if t.kind == TokenKind::Separator => i += 1,
                Some(t) => {
                    return Err(ParseError::new(
                        "rate",
                        s,
                        t.at,
                        t.text,
                        "expected ';' or ',' between rates",
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> (u64, u64) {
        let r: Rate = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
        (r.limit(), r.window_nanos())
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn familiar_syntax_parses() {
        assert_eq!(rate("10/second"), (10, S));
        assert_eq!(rate("10/s"), (10, S));
        assert_eq!(rate("10 per second"), (10, S));
        assert_eq!(rate("100 per minute"), (100, 60 * S));
        assert_eq!(rate("100/5m"), (100, 300 * S));
        assert_eq!(rate("1000/hour"), (1000, 3600 * S));
        assert_eq!(rate("5/2 seconds"), (5, 2 * S));
        assert_eq!(rate("5 PER 1.5 s"), (5, 3 * S / 2));
        assert_eq!(rate("1/d"), (1, 86_400 * S));
    }

    #[test]
    fn several_rates_split_on_semicolon_or_comma() {
        let r: Rates = "10/s, 100/m; 1000/h".parse().unwrap();
        let limits: Vec<u64> = r.iter().map(Rate::limit).collect();
        assert_eq!(limits, vec![10, 100, 1000]);
    }

    #[test]
    fn errors_name_token_and_column() {
        let e = "0/s".parse::<Rate>().unwrap_err();
        assert_eq!(
            (e.column(), e.problem()),
            (1, "the limit must be at least 1")
        );
        let e = "10/0s".parse::<Rate>().unwrap_err();
        assert_eq!(e.column(), 4);
        let e = "10 second".parse::<Rate>().unwrap_err();
        assert_eq!(e.token(), "second");
        let e = "1.5/s".parse::<Rate>().unwrap_err();
        assert!(e.problem().contains("whole number"), "{e}");
        let e = "10/s 20/s".parse::<Rates>().unwrap_err();
        assert_eq!(e.token(), "20");
        let e = "10/s;".parse::<Rates>().unwrap_err();
        assert_eq!(e.column(), 6);
        let e = "99999999999999999999/s".parse::<Rate>().unwrap_err();
        assert!(e.problem().contains("too large"), "{e}");
        let e = "10/200 years".parse::<Rate>().unwrap_err();
        assert_eq!(e.token(), "years");
        let e = "10/60000d".parse::<Rate>().unwrap_err();
        assert!(e.problem().contains("too long"), "{e}");
    }

    #[test]
    fn display_round_trips() {
        for s in ["10/s", "100/5m", "5/2s", "7/1500ms", "1/d", "3/h"] {
            assert_eq!(s.parse::<Rate>().unwrap().to_string(), s);
        }
    }
}
