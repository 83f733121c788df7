//! The configuration file of the server: a TOML file of `[[rule]]` tables.
//!
//! Why a module of its own: a rate-limit file is read once, at start, and a
//! mistake in it must stop the server before the first request rather than
//! limit the wrong thing quietly. So everything that can be checked without a
//! request is checked here, each problem is reported as `FILE:LINE: problem`
//! (all of them, one a line, once the file is valid TOML of the right shape;
//! a TOML syntax or type error is reported alone), and rates, durations,
//! limiter names and key specs go through the parsers the command line uses,
//! so that a rule means in the file exactly what it means on `limits rule`.
//!
//! A rule comes out in the server's one runtime shape, [`ServerRule`], with a
//! fresh store built by [`StoreOptions`]; the server swaps in the old store of
//! a rule that did not change on reload.
//!
//! The format, with every field, is in `docs/limits.example.toml`.
//!
//! ```
//! use limits_server::{config, StoreOptions};
//! let text = "[[rule]]\nname = \"api\"\npath = \"/api\"\nrates = \"10/s\"\n";
//! let rules = config::parse(text, "limits.toml", &StoreOptions::default()).unwrap();
//! assert_eq!(rules[0].path_prefix, "/api");
//! let bad = config::parse("[[rule]]\nname = \"api\"\n", "limits.toml", &StoreOptions::default());
//! assert_eq!(bad.err().unwrap(), "limits.toml:1: rule \"api\" has no rates: add rates = \"10/second\" (or limit = 10, window = \"1s\")");
//! ```

use crate::rules::{check_cost, ServerRule};
use crate::store::StoreOptions;
use http::Method;
use limits::{Algorithm, Rule, MAX_LIMIT};
use limits_http::{HttpRule, KeySpec, Lists, PathMatch};
use raw::{RawFile, RawRule, RawTiers, Whole};
use serde_spanned::Spanned;
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

mod distinct;
mod fields;
mod files;
mod in_flight;
mod lists;
mod penalty;
mod raw;
mod sketch;
#[cfg(test)]
mod tests;
mod tiers;

/// Reads and validates the file at `path`: its rules in file order (a
/// request is limited by every rule whose path prefix and method match it),
/// each with a new store built by `stores`. Problems are reported as
/// `FILE:LINE: problem`, one a line.
pub fn load(path: &Path, stores: &StoreOptions) -> Result<Vec<ServerRule>, String> {
    load_file(path, stores).map(|file| file.rules)
}

/// Parses and validates configuration `text`, as [`load`] does; `origin`
/// names the file in messages (`origin:LINE: problem`).
pub fn parse(text: &str, origin: &str, stores: &StoreOptions) -> Result<Vec<ServerRule>, String> {
    parse_file(text, origin, stores).map(|file| file.rules)
}

/// What a rules file holds: its rules, and the lists for every request
/// (`allow`, `deny`, `allow_file`, `deny_file` at the top of the file).
pub struct RulesFile {
    /// The rules, in file order.
    pub rules: Vec<ServerRule>,
    /// The allow and deny lists of every request, before any rule.
    pub lists: Lists,
}

/// Reads and validates the file at `path`, as [`load`], with its lists;
/// list files are read relative to its folder.
pub fn load_file(path: &Path, stores: &StoreOptions) -> Result<RulesFile, String> {
    let origin = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| format!("{origin}: cannot read the configuration: {e}"))?;
    match std::str::from_utf8(&bytes) {
        Ok(text) => parse_file(text, &origin, stores),
        Err(e) => {
            let line = line_at(&bytes, e.valid_up_to());
            Err(format!("{origin}:{line}: the file is not UTF-8 text"))
        }
    }
}

/// Parses and validates configuration `text`, as [`parse`], with its lists
/// (list files relative to the folder of `origin`).
///
/// ```
/// use limits_server::{config, StoreOptions};
/// let text = "allow = [\"10.0.0.0/8\"]\n[[rule]]\nname = \"api\"\nrates = \"10/s\"\ndeny = [\"192.0.2.0/24\"]\n";
/// let file = config::parse_file(text, "limits.toml", &StoreOptions::default()).unwrap();
/// assert_eq!(file.lists.allow.len(), 1);
/// assert_eq!(file.rules[0].lists.deny.len(), 1);
/// let bad = "deny = [\"10.0.0.0/8\", \"10.0.0/8\"]\n[[rule]]\nname = \"api\"\nrates = \"10/s\"\n";
/// let e = config::parse_file(bad, "limits.toml", &StoreOptions::default()).err().unwrap();
/// assert!(e.starts_with("limits.toml:1: deny: \"10.0.0/8\": not an address"), "{e}");
/// ```
pub fn parse_file(text: &str, origin: &str, stores: &StoreOptions) -> Result<RulesFile, String> {
    let file: RawFile = toml::from_str(text).map_err(|e| {
        let line = line_at(text.as_bytes(), e.span().map_or(0, |s| s.start));
        let message = e.message().trim().replace('\n', "; ");
        format!("{origin}:{line}: {message}")
    })?;
    let mut problems = Problems {
        text,
        found: Vec::new(),
        elsewhere: Vec::new(),
    };
    let folder = Path::new(origin).parent().unwrap_or(Path::new(""));
    let global = lists::RawLists {
        allow: file.allow,
        deny: file.deny,
        allow_file: file.allow_file,
        deny_file: file.deny_file,
    };
    let lists = lists::lists(global, folder, &mut problems);
    let rules = match file.rule {
        None => {
            problems.add(&(0..0), "no rules: add a [[rule]] table");
            Vec::new()
        }
        Some(list) if list.get_ref().0.is_empty() => {
            problems.add(&list.span(), "no rules: add a [[rule]] table");
            Vec::new()
        }
        Some(list) => {
            let mut names = HashMap::new();
            list.into_inner()
                .0
                .into_iter()
                .flat_map(|raw| rule_config(raw, &mut problems, &mut names, stores, folder))
                .collect()
        }
    };
    if problems.found.is_empty() && problems.elsewhere.is_empty() {
        return Ok(RulesFile { rules, lists });
    }
    problems.found.sort_by_key(|(line, _)| *line);
    let lines: Vec<String> = problems
        .found
        .iter()
        .map(|(line, problem)| format!("{origin}:{line}: {problem}"))
        .chain(problems.elsewhere)
        .collect();
    Err(lines.join("\n"))
}

/// The 1-based line of byte `at` in `text`.
fn line_at(text: &[u8], at: usize) -> usize {
    let end = at.min(text.len());
    text[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The problems found so far, by line.
struct Problems<'a> {
    text: &'a str,
    found: Vec<(usize, String)>,
    /// Problems of other files (list files), each with its own FILE:LINE.
    elsewhere: Vec<String>,
}

impl Problems<'_> {
    fn add(&mut self, span: &Range<usize>, problem: impl Into<String>) {
        let line = self.line(span);
        self.found.push((line, problem.into()));
    }

    fn line(&self, span: &Range<usize>) -> usize {
        line_at(self.text.as_bytes(), span.start)
    }
}

/// Validates one rule, adding its problems: the rule, or one rule per tier
/// of a tiered rule (none if it has any problem). `names` maps the names
/// seen so far to their lines.
fn rule_config(
    raw: Spanned<RawRule>,
    p: &mut Problems<'_>,
    names: &mut HashMap<String, usize>,
    stores: &StoreOptions,
    folder: &Path,
) -> Vec<ServerRule> {
    let before = p.found.len() + p.elsewhere.len();
    let table = raw.span();
    let raw = raw.into_inner();

    let name = rule_name(raw.name, &table, p, names);
    let label = if name.is_empty() {
        "this rule".to_string()
    } else {
        format!("rule {name:?}")
    };

    let path_prefix = match raw.path {
        None => "/".to_string(),
        Some(path) => {
            if !path.get_ref().starts_with('/') {
                let problem = format!("path {:?} must start with '/'", path.get_ref());
                p.add(&path.span(), problem);
            }
            path.into_inner()
        }
    };

    let path_match = PathMatch {
        case_insensitive: raw.case_insensitive.unwrap_or(false),
        format_suffixes: raw.format_suffixes.unwrap_or(false),
    };

    let methods = raw.methods.map_or_else(Vec::new, |list| methods(list, p));

    let key = match raw.key {
        None => Some(KeySpec::ip()),
        Some(key) => fields::key_spec(key, p),
    };
    let (missing, normalize) = match (&raw.distinct, &key) {
        (Some(_), Some(spec)) if !spec.reads_client_values() => {
            distinct::options_beside(spec, raw.missing, raw.normalize, p);
            (None, None)
        }
        _ => (raw.missing, raw.normalize),
    };
    let key = fields::key_options(key, missing, normalize, p);

    let raw_lists = lists::RawLists {
        allow: raw.allow,
        deny: raw.deny,
        allow_file: raw.allow_file,
        deny_file: raw.deny_file,
    };
    let lists = lists::lists(raw_lists, folder, p);

    if let Some(limit) = raw.distinct {
        let beside = [
            ("limiter", span_of(&raw.limiter)),
            ("rates", span_of(&raw.rates)),
            ("limit", span_of(&raw.limit)),
            ("window", span_of(&raw.window)),
            ("cost", span_of(&raw.cost)),
            ("burst", span_of(&raw.burst)),
            ("memory", span_of(&raw.memory)),
            ("count", span_of(&raw.count)),
            ("cost_from", span_of(&raw.cost_from)),
            ("max_cost", span_of(&raw.max_cost)),
            ("penalty", span_of(&raw.penalty)),
            ("tiers", span_of(&raw.tiers)),
            ("tier_from", span_of(&raw.tier_from)),
            ("tier_file", span_of(&raw.tier_file)),
            ("default_tier", span_of(&raw.default_tier)),
            ("concurrency", span_of(&raw.concurrency)),
            ("lease", span_of(&raw.lease)),
        ];
        let limit = distinct::distinct(limit, &beside, p);
        let store = limit.as_ref().and_then(|&(_, limit)| {
            let build = |kind| stores.distinct_store(kind, &name, limit);
            fields::store_named(raw.store, &table, &name, build, p)
        });
        let (Some((of, _)), Some(store), Some(key)) = (limit, store, key) else {
            return Vec::new();
        };
        if p.found.len() + p.elsewhere.len() != before {
            return Vec::new();
        }
        let rule = HttpRule::new(name, store, key)
            .path(path_prefix)
            .path_match(path_match)
            .methods(methods)
            .lists(lists)
            .distinct(of);
        return vec![rule];
    }

    let algorithm = match raw.limiter {
        None => Some(Algorithm::SlidingLog),
        Some(name) => match name.get_ref().parse::<Algorithm>() {
            Ok(a) => Some(a),
            Err(e) => {
                p.add(&name.span(), e.to_string());
                None
            }
        },
    };

    let beside_memory = [
        ("store", span_of(&raw.store)),
        ("count", span_of(&raw.count)),
        ("cost_from", span_of(&raw.cost_from)),
        ("concurrency", span_of(&raw.concurrency)),
    ];
    let memory = raw
        .memory
        .and_then(|m| sketch::memory(m, &beside_memory, p));

    let raw_tiers = RawTiers {
        tiers: raw.tiers,
        tier_from: raw.tier_from,
        tier_file: raw.tier_file,
        default_tier: raw.default_tier,
    };
    // One rule per tier, or the rule alone.
    let variants = match &raw_tiers.tiers {
        Some(listed) => {
            let given = [("rates", &raw.rates), ("window", &raw.window)];
            let limit = raw.limit.as_ref().map(Spanned::span);
            let spans = given
                .iter()
                .filter_map(|(f, s)| Some((*f, s.as_ref()?.span())));
            for (field, span) in spans.chain(limit.map(|s| ("limit", s))) {
                let problem = format!(
                    "{field} does not go with tiers: each tier has its rates (line {})",
                    p.line(&listed.span())
                );
                p.add(&span, problem);
            }
            let tiered = tiers::tiers(raw_tiers, &label, folder, p);
            tiered.map(|t| {
                let tier = |name: &str| t.tiers.tier(name);
                let each = t.rates.iter().map(|(tier_name, rates)| {
                    let variant = format!("{name}.{tier_name}");
                    (variant, rates.clone(), tier(tier_name))
                });
                each.collect::<Vec<_>>()
            })
        }
        None => {
            tiers::tiers(raw_tiers, &label, folder, p);
            let capped_only = raw.concurrency.is_some()
                && raw.rates.is_none()
                && raw.limit.is_none()
                && raw.window.is_none();
            match capped_only {
                true => Some(Vec::new()),
                false => fields::rates(&label, &table, raw.rates, raw.limit, raw.window, p)
                    .map(|rates| vec![(name.clone(), rates, None)]),
            }
        }
    };
    let cap = in_flight::cap(raw.concurrency, raw.lease, p);

    let burst = raw.burst.map(|burst| checked_burst(burst, algorithm, p));

    let penalty_span = raw.penalty.as_ref().map(Spanned::span);
    let penalty = raw.penalty.and_then(|table| penalty::penalty(table, p));

    let count = raw
        .count
        .map(|count| fields::counts(count, p))
        .unwrap_or_default();

    let (cost, cost_span) = raw
        .cost
        .map_or((1, table.clone()), |c| (c.get_ref().0, c.span()));
    let cost_from = fields::cost_from(raw.cost_from, raw.max_cost, cost, p);
    let (Some(algorithm), Some(variants), Some(key)) = (algorithm, variants, key) else {
        return Vec::new();
    };
    let mut rules = Vec::new();
    for (variant, rates, tier) in variants {
        let rule = Rule::build(algorithm, rates, burst);
        if let Err(e) = check_cost(cost, Some(&rule)) {
            let of = tier
                .as_ref()
                .map_or(String::new(), |t| format!(" (tier {:?})", t.name()));
            p.add(&cost_span, format!("{}{of}", e.message("cost")));
        }
        if tier.is_some() {
            derived_name(&variant, "tier's", &label, &table, p, names);
        }
        let store = match &memory {
            Some(memory) => sketch::store(memory, &label, rule, p),
            None => fields::rule_store(raw.store.clone(), &table, stores, (&variant, rule), p),
        };
        let store = match (store, penalty, &penalty_span) {
            (Some(store), Some(penalty), Some(span)) => {
                penalty::with_penalty(store, penalty, span, p)
            }
            (store, ..) => store,
        };
        let Some(store) = store else {
            continue;
        };
        rules.push(HttpRule {
            name: variant,
            path_prefix: path_prefix.clone(),
            path_match,
            methods: methods.clone(),
            key: key.clone(),
            distinct: None,
            cost,
            count: count.clone(),
            cost_from: cost_from.clone(),
            store: Arc::new(store),
            lists: lists.clone(),
            tier,
            in_flight: false,
        });
    }
    if let Some(cap) = cap {
        let cap_name = format!("{name}.{}", in_flight::SUFFIX);
        derived_name(&cap_name, "concurrency cap's", &label, &table, p, names);
        let store = fields::rule_store(raw.store, &table, stores, (&cap_name, cap), p);
        if let Some(store) = store {
            let capped = HttpRule::new(cap_name, store.without_deny_cache(), key)
                .path(path_prefix)
                .path_match(path_match)
                .methods(methods)
                .lists(lists)
                .in_flight();
            rules.push(capped);
        }
    }
    if p.found.len() + p.elsewhere.len() != before {
        return Vec::new();
    }
    rules
}

/// Where a field of the file was given, if it was.
fn span_of<T>(field: &Option<Spanned<T>>) -> Option<Range<usize>> {
    field.as_ref().map(Spanned::span)
}

/// Checks the name `NAME.SUFFIX` a tier's rule or a concurrency cap
/// (`whose`) is given, as a rule's own name is checked, and records it.
fn derived_name(
    name: &str,
    whose: &str,
    label: &str,
    table: &Range<usize>,
    p: &mut Problems<'_>,
    names: &mut HashMap<String, usize>,
) {
    let problem = match (fields::check_name(name), names.get(name)) {
        (Err(problem), _) => format!("{label}: its {whose} {problem}"),
        (Ok(()), Some(first)) => {
            format!("{label}: its {whose} rule name {name:?} is already used on line {first}")
        }
        (Ok(()), None) => {
            names.insert(name.to_string(), p.line(table));
            return;
        }
    };
    p.add(table, problem);
}

/// The rule's name, checked: present, a plain token, not used before
/// (`names` maps the names seen so far to their lines).
fn rule_name(
    name: Option<Spanned<String>>,
    table: &Range<usize>,
    p: &mut Problems<'_>,
    names: &mut HashMap<String, usize>,
) -> String {
    match name {
        None => {
            p.add(table, "this [[rule]] has no name: add name = \"...\"");
            String::new()
        }
        Some(name) => {
            if let Err(problem) = fields::check_name(name.get_ref()) {
                p.add(&name.span(), problem);
            } else if let Some(first) = names.get(name.get_ref()) {
                let problem = format!(
                    "rule name {:?} is already used on line {first}",
                    name.get_ref()
                );
                p.add(&name.span(), problem);
            } else {
                names.insert(name.get_ref().clone(), p.line(&name.span()));
            }
            name.into_inner()
        }
    }
}

/// The methods of `list`, each checked; duplicates dropped.
fn methods(list: Spanned<Vec<Spanned<String>>>, p: &mut Problems<'_>) -> Vec<Method> {
    let mut methods: Vec<Method> = Vec::new();
    if list.get_ref().is_empty() {
        p.add(
            &list.span(),
            "methods is empty: leave it out to match any method",
        );
    }
    for m in list.into_inner() {
        match fields::method(m.get_ref()) {
            Ok(m) if methods.contains(&m) => {}
            Ok(m) => methods.push(m),
            Err(problem) => p.add(&m.span(), problem),
        }
    }
    methods
}

/// The leaky bucket's burst: only on that limiter, at most 2^62.
fn checked_burst(burst: Spanned<Whole>, algorithm: Option<Algorithm>, p: &mut Problems<'_>) -> u64 {
    let b = burst.get_ref().0;
    match algorithm {
        Some(a) if a != Algorithm::LeakyBucket => {
            let problem = format!(
                "burst applies only to limiter = \"leaky-bucket\" (this rule's limiter is {a})"
            );
            p.add(&burst.span(), problem);
        }
        _ if b > MAX_LIMIT => p.add(
            &burst.span(),
            format!("burst {b} is too large (at most 2^62)"),
        ),
        _ => {}
    }
    b
}
