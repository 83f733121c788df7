//! One `rate_limit` block: the reference's `unit`/`requests_per_unit` (with
//! its `unit_multiplier` and `soft_requests_per_unit`, or `unlimited`), or
//! our `window`/`requests_per_window` and `rates` list, with an
//! `algorithm`; made into one [`limits::Rule`].
//!
//! `unit_multiplier: N` makes the window N units long, aligned to the Unix
//! epoch as every fixed window here is (the reference starts it at `now -
//! now % (unit * N)`), and is reported as the reference reports it: the
//! unit and its `requests_per_unit`, the protocol having no field for the
//! multiplier. `soft_requests_per_unit` is a threshold below the limit
//! (refused at or above it): an admitted request past it is marked for
//! the upstream (see the `service` module).

use super::fields::Fields;
use super::yaml::Node;
use super::Reported;
use limits::{Algorithm, Rate, Rates, Rule};
use std::time::Duration;

/// The unit of a limit, numbered as the protocol's enum
/// `RateLimitResponse.RateLimit.Unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Unit {
    /// No unit, or a window that is no whole unit.
    Unknown = 0,
    /// One second.
    Second = 1,
    /// 60 seconds.
    Minute = 2,
    /// 3600 seconds.
    Hour = 3,
    /// 86400 seconds.
    Day = 4,
    /// 30 days, as the reference service counts a month.
    Month = 5,
    /// 365 days, as the reference service counts a year.
    Year = 6,
    /// 7 days.
    Week = 7,
}

impl Unit {
    /// Every unit with a length, shortest first.
    pub const ALL: [Unit; 7] = [
        Unit::Second,
        Unit::Minute,
        Unit::Hour,
        Unit::Day,
        Unit::Week,
        Unit::Month,
        Unit::Year,
    ];

    /// The unit's length in seconds (the reference's `UnitToDivider`); None
    /// for Unknown.
    ///
    /// ```
    /// use limits_server::rls::config::Unit;
    /// assert_eq!(Unit::Month.seconds(), Some(30 * 86_400));
    /// assert_eq!(Unit::Unknown.seconds(), None);
    /// ```
    pub fn seconds(self) -> Option<u64> {
        Some(match self {
            Unit::Unknown => return None,
            Unit::Second => 1,
            Unit::Minute => 60,
            Unit::Hour => 3600,
            Unit::Day => 86_400,
            Unit::Week => 7 * 86_400,
            Unit::Month => 30 * 86_400,
            Unit::Year => 365 * 86_400,
        })
    }

    /// The unit's name in a config file (lower case).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Unknown => "unknown",
            Unit::Second => "second",
            Unit::Minute => "minute",
            Unit::Hour => "hour",
            Unit::Day => "day",
            Unit::Week => "week",
            Unit::Month => "month",
            Unit::Year => "year",
        }
    }

    /// A unit by name, in any case as the reference accepts it; "unknown" is
    /// no unit.
    pub fn from_name(name: &str) -> Option<Unit> {
        Unit::ALL
            .into_iter()
            .find(|u| u.name().eq_ignore_ascii_case(name))
    }

    /// The unit exactly as long as `window`, if any.
    pub fn of_window(window: Duration) -> Unit {
        Unit::ALL
            .into_iter()
            .find(|u| u.seconds().map(Duration::from_secs) == Some(window))
            .unwrap_or(Unit::Unknown)
    }
}

/// A parsed `rate_limit`.
pub(super) struct Limit {
    pub name: Option<String>,
    /// `soft_requests_per_unit`; 0 is none.
    pub soft: u32,
    pub replaces: Vec<String>,
    pub rule: Option<Rule>,
    pub reported: Reported,
    pub blocked: bool,
}

const KEYS: &[&str] = &[
    "unit",
    "requests_per_unit",
    "unit_multiplier",
    "soft_requests_per_unit",
    "unlimited",
    "name",
    "replaces",
    "algorithm",
    "window",
    "requests_per_window",
    "rates",
];
const RATE_KEYS: &[&str] = &[
    "unit",
    "requests_per_unit",
    "unit_multiplier",
    "window",
    "requests_per_window",
];

/// Reads a `rate_limit` block whose key is at `line`; `algorithm` is the
/// file's default.
pub(super) fn rate_limit(
    node: &Node,
    line: usize,
    origin: &str,
    algorithm: Algorithm,
) -> Result<Limit, String> {
    let f = Fields::of(node, origin, "rate_limit", KEYS)?.at(line);
    let mut limit = limits_of(&f, origin, algorithm)?;
    let soft = f.number("soft_requests_per_unit", u32::MAX.into())?;
    if let Some(soft) = soft.filter(|&s| s > 0) {
        // As the reference: a threshold at or above the limit would never
        // mark anything, so it is a mistake, not a setting.
        if soft >= u64::from(limit.reported.requests_per_unit) {
            return Err(format!(
                "{origin}:{}: soft_requests_per_unit must be below requests_per_unit ({soft} is not below {})",
                f.line_of("soft_requests_per_unit"),
                limit.reported.requests_per_unit
            ));
        }
        limit.soft = soft as u32;
    }
    Ok(limit)
}

/// The limit of a `rate_limit` block read as `f`, without its soft
/// threshold.
fn limits_of(f: &Fields<'_>, origin: &str, algorithm: Algorithm) -> Result<Limit, String> {
    let at = |key: &str| format!("{origin}:{}", f.line_of(key));
    let name = f
        .text("name")?
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    let mut replaces = Vec::new();
    for item in f.list("replaces")? {
        let r = Fields::of(item, origin, "a replaces entry", &["name"])?;
        match r.text("name")? {
            Some(n) if !n.is_empty() => {
                if Some(n) == name.as_deref() {
                    return Err(format!(
                        "{origin}:{}: replaces should not contain name of same descriptor",
                        r.line
                    ));
                }
                replaces.push(n.to_string());
            }
            _ => {
                return Err(format!(
                    "{origin}:{}: should not have an empty replaces entry",
                    r.line
                ))
            }
        }
    }
    let algorithm = match f.text("algorithm")? {
        Some(a) => a.parse().map_err(|e| format!("{}: {e}", at("algorithm")))?,
        None => algorithm,
    };
    let single = ["unit", "requests_per_unit", "window", "requests_per_window"];
    if f.flag("unlimited")? {
        if f.has("unit") {
            return Err(format!(
                "{}: should not specify rate limit unit when unlimited",
                at("unit")
            ));
        }
        for key in [
            "window",
            "requests_per_window",
            "rates",
            "algorithm",
            "unit_multiplier",
        ] {
            if f.has(key) {
                return Err(format!(
                    "{}: an unlimited rate_limit takes no {key}",
                    at(key)
                ));
            }
        }
        let requests = f.number("requests_per_unit", u32::MAX.into())?.unwrap_or(0);
        return Ok(Limit {
            name,
            soft: 0,
            replaces,
            rule: None,
            reported: Reported {
                requests_per_unit: requests as u32,
                unit: Unit::Unknown,
            },
            blocked: false,
        });
    }
    let mut rates = Vec::new();
    let mut reported = None;
    if f.has("rates") {
        if let Some(key) = single.iter().find(|k| f.has(k)) {
            return Err(format!(
                "{}: {key} beside rates: give every rate inside rates",
                at(key)
            ));
        }
        let items = f.list("rates")?;
        if items.is_empty() {
            return Err(format!("{}: rates is empty", at("rates")));
        }
        for item in items {
            let r = Fields::of(item, origin, "a rate", RATE_KEYS)?;
            let (rate, shown) = one_rate(&r, origin)?;
            let Some(rate) = rate else {
                return Err(format!(
                    "{origin}:{}: requests_per_unit: 0 blocks everything; it cannot be one of rates",
                    r.line_of("requests_per_unit")
                ));
            };
            rates.push(rate);
            reported.get_or_insert(shown);
        }
    } else {
        let (rate, shown) = one_rate(f, origin)?;
        reported = Some(shown);
        match rate {
            Some(rate) => rates.push(rate),
            None => {
                return Ok(Limit {
                    name,
                    soft: 0,
                    replaces,
                    rule: None,
                    reported: shown,
                    blocked: true,
                })
            }
        }
    }
    let reported = reported.unwrap_or(Reported {
        requests_per_unit: 0,
        unit: Unit::Unknown,
    });
    let rates = Rates::new(rates).ok_or_else(|| format!("{}: no rate", at("rates")))?;
    Ok(Limit {
        name,
        soft: 0,
        replaces,
        rule: Some(Rule::new(algorithm, rates)),
        reported,
        blocked: false,
    })
}

/// One rate: `unit` with `requests_per_unit`, or `window` with
/// `requests_per_window`. None is `requests_per_unit: 0` (blocked).
fn one_rate(f: &Fields<'_>, origin: &str) -> Result<(Option<Rate>, Reported), String> {
    let unit_form = f.has("unit") || f.has("requests_per_unit");
    let window_form = f.has("window") || f.has("requests_per_window");
    let max = u64::from(u32::MAX);
    if unit_form && window_form {
        let key = if f.has("unit") {
            "unit"
        } else {
            "requests_per_unit"
        };
        return Err(format!(
            "{origin}:{}: a rate is either unit with requests_per_unit or window with requests_per_window, not both",
            f.line_of(key)
        ));
    }
    if window_form {
        if f.has("unit_multiplier") {
            return Err(format!(
                "{origin}:{}: unit_multiplier goes with unit, not with window (write the whole window: window: 5m)",
                f.line_of("unit_multiplier")
            ));
        }
        let Some(text) = f.text("window")? else {
            return Err(format!(
                "{origin}:{}: requests_per_window needs a window (such as window: 5m)",
                f.line_of("requests_per_window")
            ));
        };
        let window = limits::parse_duration(text)
            .map_err(|e| format!("{origin}:{}: window: {e}", f.line_of("window")))?;
        let Some(limit) = f.number("requests_per_window", max)? else {
            return Err(format!(
                "{origin}:{}: window needs requests_per_window",
                f.line_of("window")
            ));
        };
        let rate = Rate::new(limit, window)
            .map_err(|e| format!("{origin}:{}: {e}", f.line_of("requests_per_window")))?;
        let reported = Reported {
            requests_per_unit: limit as u32,
            unit: Unit::of_window(window),
        };
        return Ok((Some(rate), reported));
    }
    let name = f.text("unit")?.unwrap_or("");
    let Some(unit) = Unit::from_name(name) else {
        return Err(format!(
            "{origin}:{}: invalid rate limit unit '{name}' (second, minute, hour, day, week, month or year; or window: 5m with requests_per_window)",
            f.line_of("unit")
        ));
    };
    let requests = f.number("requests_per_unit", max)?.unwrap_or(0);
    let reported = Reported {
        requests_per_unit: requests as u32,
        unit,
    };
    let multiplier = match f.number("unit_multiplier", u32::MAX.into())? {
        None => 1,
        Some(0) => {
            return Err(format!(
                "{origin}:{}: invalid unit multiplier of 0",
                f.line_of("unit_multiplier")
            ))
        }
        Some(n) => n,
    };
    let seconds = unit.seconds().unwrap_or(1) * multiplier;
    let rate = match requests {
        0 => None,
        n => Some(
            Rate::new(n, Duration::from_secs(seconds))
                .map_err(|e| format!("{origin}:{}: {e}", f.line_of("requests_per_unit")))?,
        ),
    };
    Ok((rate, reported))
}
