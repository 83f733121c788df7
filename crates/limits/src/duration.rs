//! Durations as text: `1s`, `1.5s`, `500ms`, `2 minutes`, parsed exactly to the
//! nanosecond (no floating point), and printed back in a form that parses again.

use crate::parse::{ParseError, Token, TokenKind, tokens};
use std::time::Duration;

const NS: u64 = 1;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const MIN: u64 = 60 * SEC;
const HOUR: u64 = 60 * MIN;
const DAY: u64 = 24 * HOUR;

/// Units from the largest down, with the short name used when printing.
const UNITS: [(u64, &str); 7] = [
    (DAY, "d"),
    (HOUR, "h"),
    (MIN, "m"),
    (SEC, "s"),
    (MS, "ms"),
    (US, "us"),
    (NS, "ns"),
];

/// The unit names we accept, in nanoseconds.
fn unit_nanos(word: &str) -> Option<u64> {
    Some(match word.to_ascii_lowercase().as_str() {
        "ns" | "nanosecond" | "nanoseconds" => NS,
        "us" | "µs" | "microsecond" | "microseconds" => US,
        "ms" | "millisecond" | "milliseconds" => MS,
        "s" | "sec" | "secs" | "second" | "seconds" => SEC,
        "m" | "min" | "mins" | "minute" | "minutes" => MIN,
        "h" | "hr" | "hrs" | "hour" | "hours" => HOUR,
        "d" | "day" | "days" => DAY,
        _ => return None,
    })
}

/// Parses a duration such as `1s`, `1.5s`, `250ms`, `2 minutes` or `1 day`.
///
/// The value is exact: `0.1s` is 100,000,000 ns, and a value that is not a whole
/// number of nanoseconds (`1.5ns`) is an error rather than a rounded guess.
/// A unit is required, so that `--window 1` cannot silently mean one nanosecond.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(limits::parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
/// assert_eq!(limits::parse_duration("2 minutes").unwrap(), Duration::from_secs(120));
/// assert!(limits::parse_duration("10").is_err());
/// ```
pub fn parse_duration(input: &str) -> Result<Duration, ParseError> {
    let toks = tokens(input);
    let (nanos, used) = duration_tokens(&toks, input, "duration", false)?;
    if let Some(extra) = toks.get(used) {
        return Err(ParseError::new(
            "duration",
            input,
            extra.at,
            extra.text,
            "unexpected text after the duration",
        ));
    }
    Ok(Duration::from_nanos(nanos))
}

/// Parses decimal seconds, such as a trace's time field: `12`, `0.25`,
/// `1700000000.123456789`. Exact to the nanosecond; more precision than that,
/// a sign, or a unit is an error.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(limits::parse_seconds("1.000000001").unwrap(), Duration::new(1, 1));
/// assert!(limits::parse_seconds("0.0000000001").is_err());
/// assert!(limits::parse_seconds("-1").is_err());
/// ```
pub fn parse_seconds(input: &str) -> Result<Duration, ParseError> {
    let text = input.trim();
    let err = |problem: &str| ParseError::new("time", input, 0, text, problem);
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(err("expected decimal seconds such as 12 or 0.25"));
    }
    scale_decimal(text, SEC)
        .map(Duration::from_nanos)
        .map_err(err)
}

/// Reads `[NUMBER] UNIT` from the start of `toks`; returns nanoseconds and the
/// number of tokens used. With `number_optional`, a bare unit means one of it
/// (`10/second`).
pub(crate) fn duration_tokens(
    toks: &[Token<'_>],
    input: &str,
    what: &'static str,
    number_optional: bool,
) -> Result<(u64, usize), ParseError> {
    let err = |tok: Option<&Token<'_>>, problem: &str| match tok {
        Some(t) => ParseError::new(what, input, t.at, t.text, problem),
        None => ParseError::new(what, input, input.len(), "", problem),
    };
    let mut i = 0;
    let number = match toks.first() {
        Some(t) if t.kind == TokenKind::Number => {
            i += 1;
            Some(*t)
        }
        Some(t) if t.kind == TokenKind::Word && number_optional => None,
        other => return Err(err(other, "expected a duration such as 1s or 500ms")),
    };
    let unit_tok = match toks.get(i) {
        Some(t) if t.kind == TokenKind::Word => *t,
        other => {
            return Err(err(
                other,
                "expected a unit (ns, us, ms, s, m, h or d) after the number",
            ));
        }
    };
    let unit = unit_nanos(unit_tok.text).ok_or_else(|| {
        err(
            Some(&unit_tok),
            "unknown unit (expected ns, us, ms, s, m, h or d)",
        )
    })?;
    let nanos = match number {
        None => unit,
        Some(n) => scale_decimal(n.text, unit).map_err(|p| err(Some(&n), p))?,
    };
    if nanos == 0 {
        return Err(err(number.as_ref(), "a duration must be greater than zero"));
    }
    Ok((nanos, i + 1))
}

/// `text` (digits with at most one decimal point) times `unit`, exactly.
fn scale_decimal(text: &str, unit: u64) -> Result<u64, &'static str> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
        return Err("not a number");
    }
    if whole.len() + frac.len() > 30 {
        return Err("number too long");
    }
    let digits = |s: &str| -> u128 {
        s.bytes()
            .fold(0u128, |acc, b| acc * 10 + u128::from(b - b'0'))
    };
    // At most 30 digits: every step below fits in u128 but the last product.
    let scale = 10u128.pow(frac.len() as u32);
    let value = (digits(whole) * scale + digits(frac))
        .checked_mul(u128::from(unit))
        .ok_or("duration too long")?;
    if value % scale != 0 {
        return Err("not a whole number of nanoseconds");
    }
    u64::try_from(value / scale).map_err(|_| "duration too long")
}

/// Prints a duration in the largest unit that divides it exactly: `1s`,
/// `1500ms`, `5m`. The output parses back to the same duration.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(limits::format_duration(Duration::from_millis(1500)), "1500ms");
/// assert_eq!(limits::format_duration(Duration::from_secs(300)), "5m");
/// ```
pub fn format_duration(duration: Duration) -> String {
    let nanos = nanos_of(duration);
    let (count, unit) = largest_unit(nanos);
    format!("{count}{unit}")
}

/// The largest unit dividing `nanos` exactly, and the count of it.
pub(crate) fn largest_unit(nanos: u64) -> (u64, &'static str) {
    UNITS
        .iter()
        .find(|(u, _)| nanos % u == 0)
        .map(|&(u, name)| (nanos / u, name))
        .unwrap_or((nanos, "ns"))
}

/// Prints a duration as decimal seconds, exact to the nanosecond, without
/// trailing zeros: `1.5`, `0.000000001`, `2`.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(limits::format_seconds(Duration::from_millis(1500)), "1.5");
/// assert_eq!(limits::format_seconds(Duration::from_nanos(1)), "0.000000001");
/// assert_eq!(limits::format_seconds(Duration::from_secs(2)), "2");
/// ```
pub fn format_seconds(duration: Duration) -> String {
    let secs = duration.as_secs();
    let frac = duration.subsec_nanos();
    if frac == 0 {
        return secs.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{secs}.{}", digits.trim_end_matches('0'))
}

/// A duration in nanoseconds, saturating at `u64::MAX` (about 584 years).
pub(crate) fn nanos_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// `Duration::from_nanos`, without its division by 10^9 for a time under
/// a second (a decision's usual wait, reset and refill): a comparison
/// instead of a multiplication, shifts and a product.
#[inline]
pub(crate) fn of_nanos(nanos: u64) -> Duration {
    const SECOND: u64 = 1_000_000_000;
    if nanos < SECOND {
        Duration::new(0, nanos as u32)
    } else {
        Duration::from_nanos(nanos)
    }
}

#[cfg(test)]
mod of_nanos_tests {
    use super::of_nanos;
    use std::time::Duration;

    #[test]
    fn of_nanos_is_from_nanos_either_side_of_a_second() {
        let second = 1_000_000_000u64;
        for n in [
            0,
            1,
            second - 1,
            second,
            second + 1,
            2 * second - 1,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(of_nanos(n), Duration::from_nanos(n), "{n} ns");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(s: &str) -> u64 {
        nanos_of(parse_duration(s).expect(s))
    }

    #[test]
    fn every_unit_and_spelling_parses() {
        assert_eq!(ns("7ns"), 7);
        assert_eq!(ns("7us"), 7_000);
        assert_eq!(ns("7 ms"), 7_000_000);
        assert_eq!(ns("1s"), SEC);
        assert_eq!(ns("2 seconds"), 2 * SEC);
        assert_eq!(ns("1 sec"), SEC);
        assert_eq!(ns("5m"), 5 * MIN);
        assert_eq!(ns("1 minute"), MIN);
        assert_eq!(ns("3 hr"), 3 * HOUR);
        assert_eq!(ns("1 hours"), HOUR);
        assert_eq!(ns("1d"), DAY);
        assert_eq!(ns("2 DAYS"), 2 * DAY);
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(ns("1.5s"), 1_500_000_000);
        assert_eq!(ns("0.1s"), 100_000_000);
        assert_eq!(ns(".5s"), 500_000_000);
        assert_eq!(ns("0.000000001s"), 1);
        assert_eq!(ns("1.5m"), 90 * SEC);
    }

    #[test]
    fn bad_durations_name_the_problem() {
        let e = parse_duration("1.5ns").unwrap_err();
        assert!(e.problem().contains("whole number of nanoseconds"), "{e}");
        let e = parse_duration("10").unwrap_err();
        assert!(e.problem().contains("expected a unit"), "{e}");
        assert_eq!(e.column(), 3);
        let e = parse_duration("0s").unwrap_err();
        assert!(e.problem().contains("greater than zero"), "{e}");
        let e = parse_duration("1x").unwrap_err();
        assert_eq!((e.token(), e.column()), ("x", 2));
        let e = parse_duration("1s extra").unwrap_err();
        assert_eq!(e.token(), "extra");
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("99999999999999999999999 days").is_err());
        assert!(parse_duration("999999999999999999999999999999 days").is_err());
        assert!(parse_duration("99999999999999999999999999999.9d").is_err());
    }

    #[test]
    fn format_round_trips() {
        for s in ["1s", "1500ms", "5m", "3h", "2d", "7ns", "1001us"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
