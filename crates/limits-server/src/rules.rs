//! The rules a server enforces, each with its store. A rule has one runtime
//! shape, the layer's own [`HttpRule`] over a [`RuleStore`]: the limiter
//! (algorithm, rates, burst) lives in the store, where it decides. On
//! reload, a rule whose shape did not change keeps its store, and so its
//! clients' state.

use crate::state;
use crate::store::{RuleStore, StoreOptions};
use limits::{Algorithm, Rule, Store};
use limits_http::HttpRule;

/// A rule of the server: which requests, keyed how, at what cost, decided
/// by which store (which holds the limiter).
pub type ServerRule = HttpRule<RuleStore>;

/// Whether two rules are the same but for their stores: same name, match,
/// key, cost, kind of store and limiter. A reloaded rule keeps the state of
/// the old rule it has the same shape as.
pub fn same_shape(a: &ServerRule, b: &ServerRule) -> bool {
    a.name == b.name
        && a.path_prefix == b.path_prefix
        && a.path_match == b.path_match
        && a.methods == b.methods
        && a.key == b.key
        && a.distinct == b.distinct
        && a.cost == b.cost
        && a.store.same_kind(&b.store)
}

/// `rules` with the stores of the `previous` rules of the same shape, and
/// how many they kept.
pub fn keep_state(mut rules: Vec<ServerRule>, previous: &[ServerRule]) -> (Vec<ServerRule>, usize) {
    let mut kept = 0;
    for rule in &mut rules {
        if let Some(old) = previous.iter().find(|old| same_shape(rule, old)) {
            rule.store = old.store.clone();
            kept += 1;
        }
    }
    (rules, kept)
}

/// What identifies a rule's state in the state file: its limiter, rates
/// and key, with the key's `missing` policy and normalization (they change
/// the keys). State saved under another shape is not loaded.
pub fn fingerprint(rule: &ServerRule) -> String {
    let key = &rule.key;
    let missing = key
        .missing()
        .map_or("default".to_string(), |m| m.to_string());
    let normalize = key
        .normalize()
        .map_or("default".to_string(), |n| n.to_string());
    // A penalty's states mean the same only under the same penalty.
    let penalty = rule
        .store
        .penalty()
        .map_or(String::new(), |p| format!(" penalty={p}"));
    let distinct = (rule.distinct.as_ref()).map_or(String::new(), |of| format!(" distinct={of}"));
    format!(
        "{} key={key} missing={missing} normalize={normalize}{penalty}{distinct}",
        limiter_shape(rule.store.rule()),
    )
}

/// A rule in one line, as `limits serve --check-config` prints it: its
/// name, limiter, where and how it counts, and its tier.
///
/// ```
/// use limits_server::{config, describe, StoreOptions};
/// let text = "[[rule]]\nname = \"login\"\npath = \"/login\"\nmethods = [\"POST\"]\nkey = \"form:user\"\nrates = \"5/m\"\n";
/// let rules = config::parse(text, "limits.toml", &StoreOptions::default()).unwrap();
/// assert_eq!(describe(&rules[0]), "login: sliding-log 5/m, POST /login, by form:user, in memory");
/// let text = "[[rule]]\nname = \"pages\"\npath = \"/p\"\ndistinct = { of = \"path\", at_most = 100, window = \"1h\" }\n";
/// let rules = config::parse(text, "limits.toml", &StoreOptions::default()).unwrap();
/// assert_eq!(describe(&rules[0]), "pages: at most 100 distinct path in 1h, any method /p, by ip, in memory (distinct values)");
/// ```
pub fn describe(rule: &ServerRule) -> String {
    let methods: Vec<&str> = rule.methods.iter().map(|m| m.as_str()).collect();
    let methods = match methods.is_empty() {
        true => "any method".to_string(),
        false => methods.join("|"),
    };
    let tier = rule.tier.as_ref().map_or(String::new(), |t| {
        let tiers = t.tiers();
        let default = match tiers.default_tier() == t.name() {
            true => ", the default",
            false => "",
        };
        format!(
            ", tier {} of {}{default}",
            t.name(),
            tiers.names().join("|")
        )
    });
    let penalty = rule
        .store
        .penalty()
        .map_or(String::new(), |p| format!(", penalty {p}"));
    let cost = match rule.cost {
        1 => String::new(),
        n => format!(", cost {n}"),
    };
    let lists = &rule.lists;
    let lists = match (lists.allow.len(), lists.deny.len()) {
        (0, 0) => String::new(),
        (allowed, denied) => format!(", {allowed} allowed and {denied} denied"),
    };
    let limiter = match (rule.store.rule().rates().as_slice(), &rule.distinct) {
        ([lease], _) if rule.in_flight => format!(
            "at most {} under way (lease {})",
            lease.limit(),
            limits::format_duration(lease.window())
        ),
        ([limit], Some(of)) => format!(
            "at most {} distinct {of} in {}",
            limit.limit(),
            limits::format_duration(limit.window())
        ),
        _ => limiter_shape(rule.store.rule()),
    };
    format!(
        "{}: {limiter}, {methods} {}, by {}{cost}, in {}{penalty}{lists}{tier}",
        rule.name,
        rule.path_prefix,
        rule.key,
        rule.store.place(),
    )
}

/// A limiter as the state file's shapes write it: algorithm, rates and
/// burst (`sliding-log 2/1h`, `leaky-bucket 10/1s burst=5`).
pub(crate) fn limiter_shape(limiter: &Rule) -> String {
    let burst = limiter
        .burst()
        .map_or(String::new(), |b| format!(" burst={b}"));
    format!("{} {}{burst}", limiter.algorithm(), limiter.rates())
}

/// Each rule's store under the rule's name, with its [`fingerprint`]: what
/// `limits serve` saves and loads.
pub(crate) fn state_entries(rules: &[ServerRule]) -> impl Iterator<Item = state::Entry<'_>> {
    rules
        .iter()
        .map(|rule| (rule.name.as_str(), fingerprint(rule), &*rule.store))
}

/// (rule, keys tracked, keys evicted, of which limited keys) for each rule
/// whose store is in this process.
pub(crate) fn sizes(rules: &[ServerRule]) -> Vec<(String, usize, u64, u64)> {
    rules
        .iter()
        .filter_map(|r| {
            let local = r.store.local()?;
            let sizes = (local.len(), local.evictions(), local.limited_evictions());
            Some((r.name.clone(), sizes.0, sizes.1, sizes.2))
        })
        .collect()
}

/// (rule, bans this instance started) for each rule with a penalty.
pub(crate) fn bans(rules: &[ServerRule]) -> Vec<(String, u64)> {
    rules
        .iter()
        .filter_map(|r| Some((r.name.clone(), r.store.bans()?)))
        .collect()
}

/// Drops every key that can no longer affect a decision, in the stores in
/// this process.
pub(crate) fn sweep(rules: &[ServerRule]) -> usize {
    rules
        .iter()
        .filter_map(|r| r.store.local())
        .map(|local| local.sweep())
        .sum()
}

/// Why a cost cannot go with a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CostError {
    /// A cost of 0 would count nothing.
    Zero,
    /// Above what the rule can ever pass: every request would be denied.
    TooHigh {
        /// The cost asked for.
        cost: u64,
        /// The rule's capacity, explained ("limit 10", "burst 3 + 1").
        cap: String,
        /// What to raise instead ("the limit", "the burst").
        raise: &'static str,
    },
}

impl CostError {
    /// The problem, naming the field (`cost`, `--cost`) it is about.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// use limits_server::check_cost;
    /// let rule = Rule::new(Algorithm::FixedWindow, "10/s".parse().unwrap());
    /// let problem = check_cost(20, Some(&rule)).unwrap_err().message("cost");
    /// assert_eq!(problem, "cost 20 is above what the rule can ever pass (limit 10): lower cost or raise the limit");
    /// assert!(check_cost(10, Some(&rule)).is_ok());
    /// ```
    pub fn message(&self, field: &str) -> String {
        match self {
            CostError::Zero => format!("{field} must be at least 1"),
            CostError::TooHigh { cost, cap, raise } => format!(
                "{field} {cost} is above what the rule can ever pass ({cap}): lower {field} or raise {raise}"
            ),
        }
    }
}

/// Checks that `cost` is at least 1 and at most what `rule` can ever pass:
/// the one check of a rule's cost, for every front end. Without a rule (it
/// was invalid), only the lower bound is checked.
pub fn check_cost(cost: u64, rule: Option<&Rule>) -> Result<(), CostError> {
    if cost == 0 {
        return Err(CostError::Zero);
    }
    let Some(rule) = rule else { return Ok(()) };
    let most = rule.max_cost();
    if cost <= most {
        return Ok(());
    }
    let (cap, raise) = match (rule.algorithm(), rule.burst()) {
        (Algorithm::LeakyBucket, Some(_)) => {
            (format!("burst {} + 1", most.saturating_sub(1)), "the burst")
        }
        (Algorithm::LeakyBucket, None) => (
            format!(
                "burst {} + 1; the burst defaults to the limit",
                most.saturating_sub(1)
            ),
            "the burst",
        ),
        _ => (format!("limit {most}"), "the limit"),
    };
    Err(CostError::TooHigh { cost, cap, raise })
}

/// A rule over all paths and methods, as the command line gives one:
/// named "default", keyed by `key`, its cost checked.
pub(crate) fn single(
    rule: Rule,
    key: limits_http::KeySpec,
    cost: u64,
    stores: &StoreOptions,
) -> Result<ServerRule, String> {
    check_cost(cost, Some(&rule)).map_err(|e| e.message("--cost"))?;
    let store = stores.store("default", rule)?;
    Ok(HttpRule::new("default", store, key).cost(cost))
}

#[cfg(test)]
mod tests {
    use super::*;
    use limits_http::KeySpec;
    use std::sync::Arc;

    fn rule(name: &str, rates: &str) -> ServerRule {
        let limiter = Rule::new(Algorithm::SlidingLog, rates.parse().unwrap());
        let mut r = single(limiter, KeySpec::ip(), 1, &StoreOptions::default()).unwrap();
        r.name = name.into();
        r
    }

    #[test]
    fn unchanged_rules_keep_their_stores_and_changed_ones_start_afresh() {
        let old = vec![rule("a", "5/s"), rule("b", "5/s")];
        let new = vec![rule("a", "5/s"), rule("b", "6/s"), rule("c", "5/s")];
        let (new, kept) = keep_state(new, &old);
        assert_eq!(kept, 1);
        assert!(Arc::ptr_eq(&new[0].store, &old[0].store));
        assert!(!Arc::ptr_eq(&new[1].store, &old[1].store));
        assert_eq!(
            fingerprint(&new[0]),
            "sliding-log 5/s key=ip missing=default normalize=default"
        );
    }

    #[test]
    fn costs_are_checked_against_the_rule_or_alone() {
        assert_eq!(check_cost(0, None), Err(CostError::Zero));
        assert_eq!(check_cost(99, None), Ok(()));
        let leaky = Rule::build(Algorithm::LeakyBucket, "2/s".parse().unwrap(), None);
        let problem = check_cost(4, Some(&leaky)).unwrap_err().message("--cost");
        assert_eq!(problem, "--cost 4 is above what the rule can ever pass (burst 2 + 1; the burst defaults to the limit): lower --cost or raise the burst");
    }
}
