//! What the server's tasks share (its configuration, metrics and the
//! handle to the policy in force), and how the rules are loaded into it, at
//! start and on each reload.

use crate::config;
use crate::metrics::Metrics;
use crate::rules::{self, ServerRule};
use crate::server_config::{RulesSource, ServerConfig};
use crate::store::RuleStore;
use limits_http::{Policy, PolicyHandle};
use std::sync::Arc;

/// What the server's tasks share.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) handle: PolicyHandle<RuleStore>,
}

/// Re-reads the rules file: unchanged rules keep their state; a bad file
/// keeps the old rules and says why. Without a file, says so.
pub(crate) fn reload(shared: &Shared) {
    if !matches!(shared.config.rules, RulesSource::File(_)) {
        tracing::warn!("SIGHUP: no --config to reload; still serving");
        println!("limits serve: SIGHUP: no --config to reload; still serving");
        return;
    }
    match load_rules(&shared.config) {
        Ok(fresh) => {
            let old = shared.handle.current();
            let (fresh, kept) = rules::keep_state(fresh, &old.rules);
            let count = fresh.len();
            shared
                .handle
                .replace(policy(fresh, &shared.config, &shared.metrics));
            tracing::info!(rules = count, kept, "config reloaded");
            println!("limits serve: config reloaded ({count} rules, {kept} kept their state)");
        }
        Err(e) => {
            tracing::error!(error = %e, "config not reloaded; keeping the old rules");
            println!("limits serve: config not reloaded: {e}");
        }
    }
}

/// The rules of the configured source, each with a new store.
pub(crate) fn load_rules(config: &ServerConfig) -> Result<Vec<ServerRule>, String> {
    match &config.rules {
        RulesSource::File(path) => config::load(path, &config.stores),
        RulesSource::One { rule, key, cost } => Ok(vec![rules::single(
            rule.clone(),
            key.clone(),
            *cost,
            &config.stores,
        )?]),
    }
}

/// The layer's policy: `rules` with the configured options, observed by
/// `metrics`.
pub(crate) fn policy(
    rules: Vec<ServerRule>,
    config: &ServerConfig,
    metrics: &Arc<Metrics>,
) -> Policy<RuleStore> {
    Policy {
        rules,
        options: config.layer.clone(),
        observer: metrics.clone(),
    }
}
