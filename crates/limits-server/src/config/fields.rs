//! The values of a rule that need more than a type: rates, keys (with their
//! `missing` and `normalize`), methods and
//! names, each through the parser the command line uses. Rates and keys
//! report their problems with the line of each part; a method or a name is
//! one value, so its check returns the problem and the caller adds the line.

use super::raw::{KeyField, RawCount, Whole};
use super::Problems;
use crate::store::{RuleStore, StoreKind, StoreOptions};
use http::Method;
use limits::{parse_duration, Rate, RateError, Rates, Rule, DEFAULT_WINDOW};
use limits_http::{CostFrom, Counts, KeySpec, Missing, Normalize, NormalizeStep, STANDARD_METHODS};
use serde_spanned::Spanned;
use std::ops::Range;

/// The rates of a rule: `rates = "..."`, or `limit = N` with an optional
/// `window` (one second by default, as `--limit N` on the command line).
pub(super) fn rates(
    label: &str,
    table: &Range<usize>,
    rates: Option<Spanned<String>>,
    limit: Option<Spanned<Whole>>,
    window: Option<Spanned<String>>,
    p: &mut Problems<'_>,
) -> Option<Rates> {
    match (rates, limit) {
        (Some(rates), Some(limit)) => {
            let problem = format!(
                "{label} has both rates (line {}) and limit: give one of them",
                p.line(&rates.span())
            );
            p.add(&limit.span(), problem);
            None
        }
        (Some(rates), None) => {
            if let Some(window) = &window {
                p.add(
                    &window.span(),
                    "window goes with limit = N; rates = \"...\" already names its windows",
                );
            }
            match rates.get_ref().parse::<Rates>() {
                Ok(r) => Some(r),
                Err(e) => {
                    p.add(&rates.span(), e.to_string());
                    None
                }
            }
        }
        (None, Some(limit)) => {
            let length = match &window {
                None => DEFAULT_WINDOW,
                Some(w) => match parse_duration(w.get_ref()) {
                    Ok(d) => d,
                    Err(e) => {
                        p.add(&w.span(), format!("window: {e}"));
                        return None;
                    }
                },
            };
            match Rate::new(limit.get_ref().0, length) {
                Ok(rate) => Some(rate.into()),
                Err(e @ (RateError::ZeroWindow | RateError::WindowTooLong)) => {
                    let span = window.as_ref().map_or(limit.span(), |w| w.span());
                    p.add(&span, format!("window: {e}"));
                    None
                }
                Err(e) => {
                    p.add(&limit.span(), format!("limit: {e}"));
                    None
                }
            }
        }
        (None, None) => {
            let problem = format!(
                "{label} has no rates: add rates = \"10/second\" (or limit = 10, window = \"1s\")"
            );
            p.add(table, problem);
            None
        }
    }
}

/// A key spec from a string, or from a list of parts joined by `+`; each part
/// is checked on its own line.
pub(super) fn key_spec(key: Spanned<KeyField>, p: &mut Problems<'_>) -> Option<KeySpec> {
    let span = key.span();
    match key.into_inner() {
        KeyField::One(text) => match text.parse::<KeySpec>() {
            Ok(spec) => Some(spec),
            Err(e) => {
                p.add(&span, e.to_string());
                None
            }
        },
        KeyField::Many(parts) if parts.is_empty() => {
            p.add(&span, "key is an empty list: leave it out to key by \"ip\"");
            None
        }
        KeyField::Many(parts) => {
            let mut ok = true;
            for part in &parts {
                if let Err(e) = part.get_ref().parse::<KeySpec>() {
                    p.add(&part.span(), e.to_string());
                    ok = false;
                }
            }
            let joined: Vec<&str> = parts.iter().map(|part| part.get_ref().as_str()).collect();
            // Every part parsed, so the joined spec does too.
            ok.then(|| joined.join("+").parse().ok()).flatten()
        }
    }
}

/// `missing = "ip" | "reject" | "shared"` and `normalize = [...]` on `key`
/// (if it parsed), each value checked on its own line. Both are about the
/// values a client sends: on a key that is only `ip`, either is a mistake.
pub(super) fn key_options(
    key: Option<KeySpec>,
    missing: Option<Spanned<String>>,
    normalize: Option<Spanned<Vec<Spanned<String>>>>,
    p: &mut Problems<'_>,
) -> Option<KeySpec> {
    let mut ok = true;
    let missing = missing.and_then(|m| match m.get_ref().parse::<Missing>() {
        Ok(policy) => Some((policy, m.span())),
        Err(e) => {
            p.add(&m.span(), format!("missing: {e}"));
            ok = false;
            None
        }
    });
    let normalize = normalize.map(|list| {
        let span = list.span();
        let mut steps = Vec::new();
        for step in list.into_inner() {
            match step.get_ref().parse::<NormalizeStep>() {
                Ok(s) => steps.push(s),
                Err(e) => {
                    p.add(&step.span(), format!("normalize: {e}"));
                    ok = false;
                }
            }
        }
        (Normalize::from_steps(steps), span)
    });
    let mut key = key?;
    if !key.reads_client_values() {
        let set = [
            missing.as_ref().map(|(_, span)| ("missing", span)),
            normalize.as_ref().map(|(_, span)| ("normalize", span)),
        ];
        for (field, span) in set.into_iter().flatten() {
            let problem = format!(
                "{field} applies to keys with a header, cookie, query, form or json part; \
                 this rule's key is \"{key}\" (the address is never missing nor normalized)"
            );
            p.add(span, problem);
            ok = false;
        }
    }
    if let Some((policy, _)) = missing {
        key = key.with_missing(policy);
    }
    if let Some((steps, _)) = normalize {
        key = key.with_normalize(steps);
    }
    ok.then_some(key)
}

/// The standard method `name`, or why it is not one.
pub(super) fn method(name: &str) -> Result<Method, String> {
    if let Some(m) = STANDARD_METHODS.iter().find(|m| m.as_str() == name) {
        return Ok(m.clone());
    }
    if let Some(m) = STANDARD_METHODS
        .iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(name))
    {
        return Err(format!(
            "unknown method {name:?}: methods are upper case ({m})"
        ));
    }
    let known: Vec<&str> = STANDARD_METHODS.iter().map(Method::as_str).collect();
    Err(format!(
        "unknown method {name:?} (expected one of: {})",
        known.join(", ")
    ))
}

/// A rule name goes into response headers: a short, plain token.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the rule name is empty".to_string());
    }
    if name.len() > 64 {
        return Err(format!(
            "rule name {name:?} is {} bytes long; at most 64",
            name.len()
        ));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        Some(c) => Err(format!(
            "rule name {name:?} has {c:?}: use only letters, digits, '_', '.' and '-'"
        )),
        None => Ok(()),
    }
}

/// The store of a rule: the one `store = "memory" | "redis" | "memcached"`
/// names, else the server's default (the one `--store` names). Its problem
/// (an unknown kind, a shared store without `--store`, a rule it cannot
/// decide exactly or keep) is reported on the `store` line, or the rule's.
pub(super) fn rule_store(
    kind: Option<Spanned<String>>,
    table: &Range<usize>,
    stores: &StoreOptions,
    (name, rule): (&str, Rule),
    p: &mut Problems<'_>,
) -> Option<RuleStore> {
    let build = |kind: Option<StoreKind>| match kind {
        Some(kind) => stores.store_in(kind, name, rule),
        None => stores.store(name, rule),
    };
    store_named(kind, table, name, build, p)
}

/// The store `build` makes in the kind `kind` names (`None`: the
/// server's default), or its problem, on the `store` line or the rule's
/// (`table`), for the rule named `name`: how a rate rule and a rule of
/// distinct values ([`distinct`](super::distinct)) get theirs.
pub(super) fn store_named(
    kind: Option<Spanned<String>>,
    table: &Range<usize>,
    name: &str,
    build: impl FnOnce(Option<StoreKind>) -> Result<RuleStore, String>,
    p: &mut Problems<'_>,
) -> Option<RuleStore> {
    let (store, span) = match &kind {
        None => (build(None), table.clone()),
        Some(kind) => match kind.get_ref().parse::<StoreKind>() {
            Ok(k) => (build(Some(k)), kind.span()),
            Err(e) => {
                p.add(&kind.span(), e);
                return None;
            }
        },
    };
    let label = if name.is_empty() {
        "this rule".to_string()
    } else {
        format!("rule {name:?}")
    };
    store
        .map_err(|e| p.add(&span, format!("{label}: {e}")))
        .ok()
}

/// `count = { status = [...], unless_status = [...] }`: which responses a
/// rule's requests count by, each status a real one (100 to 599), at least
/// one list given.
pub(super) fn counts(count: Spanned<RawCount>, p: &mut Problems<'_>) -> Counts {
    let span = count.span();
    let raw = count.into_inner();
    let before = p.found.len();
    let mut statuses = |list: Option<Spanned<Vec<Spanned<Whole>>>>, field: &str| {
        let Some(list) = list else {
            return Vec::new();
        };
        if list.get_ref().is_empty() {
            p.add(
                &list.span(),
                format!("count's {field} is empty: name a status, or leave it out"),
            );
        }
        let mut found = Vec::new();
        for status in list.into_inner() {
            match u16::try_from(status.get_ref().0) {
                Ok(s @ 100..=599) => found.push(s),
                _ => p.add(
                    &status.span(),
                    format!(
                        "count's {field} {} is not an HTTP status (100 to 599)",
                        status.get_ref().0
                    ),
                ),
            }
        }
        found
    };
    let counts = Counts {
        status: statuses(raw.status, "status"),
        unless_status: statuses(raw.unless_status, "unless_status"),
    };
    if counts.is_every_response() && p.found.len() == before {
        p.add(
            &span,
            "count needs status = [...] or unless_status = [...] (leave count out to count every response)",
        );
    }
    counts
}

/// `cost_from = "header:NAME"` and its `max_cost = N`: the real cost read
/// from the upstream's response header, at most N, settled from the
/// estimate `cost` counted on arrival (at least 1: checked with the cost).
/// Each problem on its own line; `None` without `cost_from`, or with a
/// problem.
pub(super) fn cost_from(
    from: Option<Spanned<String>>,
    max: Option<Spanned<Whole>>,
    cost: u64,
    p: &mut Problems<'_>,
) -> Option<CostFrom> {
    let Some(from) = from else {
        if let Some(max) = max {
            p.add(
                &max.span(),
                "max_cost caps the cost read by cost_from: add cost_from = \"header:NAME\", or leave max_cost out",
            );
        }
        return None;
    };
    let before = p.found.len();
    let name = match from.get_ref().strip_prefix("header:") {
        Some(name) if !name.is_empty() => name,
        _ => {
            let problem = format!(
                "cost_from {:?} is not \"header:NAME\" (the upstream's response header with the real cost)",
                from.get_ref()
            );
            p.add(&from.span(), problem);
            ""
        }
    };
    let max = match max {
        None => {
            p.add(
                &from.span(),
                "cost_from needs max_cost = N: the most one request is settled to, whatever the header says",
            );
            0
        }
        Some(max) => {
            let most = max.get_ref().0;
            if most == 0 {
                p.add(
                    &max.span(),
                    "max_cost is 0: every request would cost nothing",
                );
            } else if most < cost {
                let problem = format!("max_cost {most} is below the estimate cost = {cost}");
                p.add(&max.span(), problem);
            }
            most
        }
    };
    if p.found.len() != before {
        return None;
    }
    match CostFrom::header(name, max) {
        Ok(cost_from) => Some(cost_from),
        Err(_) => {
            let problem = format!("cost_from: {name:?} is not a header name");
            p.add(&from.span(), problem);
            None
        }
    }
}
