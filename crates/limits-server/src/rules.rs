//! The rules a server enforces, each with its in-memory store. On reload, a
//! rule whose configuration did not change keeps its store, and so its
//! clients' state.

use crate::config::RuleConfig;
use limits::{KeyedLimiter, Options, SystemClock};
use limits_http::HttpRule;
use std::sync::Arc;

/// A rule's state: keys to limiter state, in memory.
pub type MemoryStore = KeyedLimiter<String, SystemClock>;

/// The rules in force, in order, with their stores.
pub struct RuleSet {
    pub entries: Vec<(RuleConfig, Arc<MemoryStore>)>,
}

impl RuleSet {
    /// Stores for `configs`, reusing those of `previous` rules that are
    /// unchanged (same name, match, key, limiter, rates and cost).
    pub fn build(configs: Vec<RuleConfig>, previous: Option<&RuleSet>, max_keys: usize) -> RuleSet {
        let entries = configs
            .into_iter()
            .map(|config| {
                let kept = previous
                    .and_then(|p| p.entries.iter().find(|(c, _)| *c == config))
                    .map(|(_, store)| store.clone());
                let store = kept.unwrap_or_else(|| {
                    let options = Options {
                        max_keys: Some(max_keys),
                        ..Options::default()
                    };
                    Arc::new(KeyedLimiter::with_options(
                        config.rule.clone(),
                        SystemClock::new(),
                        options,
                    ))
                });
                (config, store)
            })
            .collect();
        RuleSet { entries }
    }

    /// How many of this set's stores came from `previous`.
    pub fn kept_from(&self, previous: &RuleSet) -> usize {
        self.entries
            .iter()
            .filter(|(_, s)| previous.entries.iter().any(|(_, p)| Arc::ptr_eq(s, p)))
            .count()
    }

    /// The rules as the HTTP layer takes them.
    pub fn http_rules(&self) -> Vec<HttpRule<MemoryStore>> {
        self.entries
            .iter()
            .map(|(c, store)| HttpRule {
                name: c.name.clone(),
                path_prefix: c.path_prefix.clone(),
                methods: c.methods.clone(),
                key: c.key.clone(),
                cost: c.cost,
                store: store.clone(),
            })
            .collect()
    }

    /// (rule, keys tracked, keys evicted, of which limited keys) for each rule.
    pub fn sizes(&self) -> Vec<(String, usize, u64, u64)> {
        self.entries
            .iter()
            .map(|(c, s)| {
                let limited = s.limited_evictions();
                (c.name.clone(), s.len(), s.evictions(), limited)
            })
            .collect()
    }

    /// Drops every key that can no longer affect a decision.
    pub fn sweep(&self) -> usize {
        self.entries.iter().map(|(_, s)| s.sweep()).sum()
    }

    /// What identifies a rule's state in the state file: its limiter, rates
    /// and key, with the key's `missing` policy and normalization (they
    /// change the keys). State saved under another shape is not loaded.
    pub fn fingerprint(config: &RuleConfig) -> String {
        let burst = config
            .rule
            .burst()
            .map_or(String::new(), |b| format!(" burst={b}"));
        let key = &config.key;
        let missing = key
            .missing()
            .map_or("default".to_string(), |m| m.to_string());
        let normalize = key
            .normalize()
            .map_or("default".to_string(), |n| n.to_string());
        format!(
            "{} {}{burst} key={key} missing={missing} normalize={normalize}",
            config.rule.algorithm(),
            config.rule.rates(),
        )
    }
}
