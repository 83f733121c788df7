//! `distinct = { of = "form:username", at_most = 20, window = "1h" }`: at
//! most N distinct values of a request field per key in any window, a
//! value repeated free (credential stuffing tries many usernames from one
//! address, a scraper many pages). Optionally `sketch = { from = 256 }`
//! (with `registers` and `sub_windows`): past `from` values a key's values
//! turn into HyperLogLogs ([`limits::Distinct::with_sketch`]); and
//! `missing` and `normalize` for the value, as a rule's own are for its
//! key.
//!
//! The rule counts values, not requests, in memory or in Redis (`store`,
//! by default the server's): what counts requests (rates, a limiter,
//! costs) or gives back what it counted (count, cost_from, concurrency) is
//! refused beside it, naming the line of each.

use super::raw::{RawDistinct, RawSketch, Whole};
use super::Problems;
use limits::{parse_duration, Distinct, DistinctSketch};
use limits_http::KeySpec;
use serde_spanned::Spanned;
use std::ops::Range;

/// Registers per sketch unless `registers` says: a standard error of 3.25%.
const DEFAULT_REGISTERS: u64 = 1024;

/// Sketches per window unless `sub_windows` says: the window then slides
/// by eighths.
const DEFAULT_SUB_WINDOWS: u64 = 8;

/// The value a rule counts and its limit, each field checked; `None` (the
/// problems added) for a missing or bad field, or beside a field that
/// counts requests: `(field name, its span)` for each one given.
pub(super) fn distinct(
    raw: Spanned<RawDistinct>,
    beside: &[(&str, Option<Range<usize>>)],
    p: &mut Problems<'_>,
) -> Option<(KeySpec, Distinct)> {
    let span = raw.span();
    let raw = raw.into_inner();
    let mut fine = true;
    for (field, at) in beside {
        let Some(at) = at else { continue };
        let why = match *field {
            "memory" => "a sketch of counters keeps no values",
            "count" | "cost_from" | "concurrency" | "lease" => "a value held is not given back",
            "penalty" => "a penalty counts a key's denials, and distinct keeps none",
            f if f.starts_with("tier") || f == "default_tier" => {
                "tiers choose among rates, and distinct has one limit"
            }
            _ => "distinct counts values, not requests: at_most and window give its limit",
        };
        let problem = format!(
            "{field} (line {}) does not go with distinct: {why}",
            p.line(at)
        );
        p.add(&span, problem);
        fine = false;
    }
    let of = match raw.of {
        None => {
            p.add(
                &span,
                "distinct has no of: add of = \"form:username\" (the field whose values it counts)",
            );
            None
        }
        Some(of) => match of.get_ref().parse::<KeySpec>() {
            Ok(spec) => Some(spec),
            Err(e) => {
                p.add(&of.span(), format!("distinct.of: {e}"));
                None
            }
        },
    };
    let of = super::fields::key_options(of, raw.missing, raw.normalize, p);
    let limit = limit(raw.at_most, raw.window, &span, p);
    let limit = match (limit, raw.sketch) {
        (Some(limit), Some(sketch)) => with_sketch(limit, sketch, p),
        (limit, _) => limit,
    };
    match (of, limit) {
        (Some(of), Some(limit)) if fine => Some((of, limit)),
        _ => None,
    }
}

/// The problem of a rule's own `missing` or `normalize` beside `distinct`
/// when its key (`key`) has no client value to apply them to: they were
/// surely meant for the value, which takes them inside the table.
pub(super) fn options_beside(
    key: &KeySpec,
    missing: Option<Spanned<String>>,
    normalize: Option<Spanned<Vec<Spanned<String>>>>,
    p: &mut Problems<'_>,
) {
    let given = [
        ("missing", super::span_of(&missing)),
        ("normalize", super::span_of(&normalize)),
    ];
    for (field, span) in given {
        let Some(span) = span else { continue };
        let problem = format!(
            "{field} applies to the rule's key, here \"{key}\", which has none; for the value distinct counts, write it inside distinct = {{ of = ..., {field} = ... }}"
        );
        p.add(&span, problem);
    }
}

/// `at_most` values in any `window`, both given and checked.
fn limit(
    at_most: Option<Spanned<Whole>>,
    window: Option<Spanned<String>>,
    span: &Range<usize>,
    p: &mut Problems<'_>,
) -> Option<Distinct> {
    let (Some(at_most), Some(window)) = (at_most, window) else {
        p.add(span, "distinct needs at_most = N and window = \"DURATION\" (at most N distinct values in any window)");
        return None;
    };
    let duration = match parse_duration(window.get_ref()) {
        Ok(d) => d,
        Err(e) => {
            p.add(&window.span(), format!("distinct.window: {e}"));
            return None;
        }
    };
    Distinct::new(at_most.get_ref().0, duration)
        .map_err(|e| p.add(&at_most.span(), format!("distinct: {e}")))
        .ok()
}

/// `limit` with its values sketched past `from`, or the problem.
fn with_sketch(limit: Distinct, raw: Spanned<RawSketch>, p: &mut Problems<'_>) -> Option<Distinct> {
    let span = raw.span();
    let raw = raw.into_inner();
    let Some(from) = raw.from else {
        p.add(&span, "distinct.sketch has no from: add from = 256 (the values a key holds exactly before its sketches)");
        return None;
    };
    let whole =
        |field: Option<Spanned<Whole>>, default: u64| field.map_or(default, |f| f.get_ref().0);
    if from.get_ref().0 >= limit.at_most() {
        let problem = format!(
            "distinct.sketch.from {} is not below at_most {}: every value is kept exactly; leave sketch out",
            from.get_ref().0,
            limit.at_most()
        );
        p.add(&from.span(), problem);
        return None;
    }
    let fit = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let sketch = DistinctSketch {
        from: fit(from.get_ref().0),
        registers: fit(whole(raw.registers, DEFAULT_REGISTERS)),
        sub_windows: fit(whole(raw.sub_windows, DEFAULT_SUB_WINDOWS)),
    };
    limit
        .with_sketch(sketch)
        .map_err(|e| p.add(&span, format!("distinct.sketch: {e}")))
        .ok()
}
