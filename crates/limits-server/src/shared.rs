//! What the server's tasks share (its configuration, metrics and the
//! handle to the policy in force), and how the rules are loaded into it, at
//! start and on each reload.

use crate::config::{self, RulesFile};
use crate::events::{Events, ServerEvent};
use crate::metrics::Metrics;
use crate::rules::{self, ServerRule};
use crate::server_config::{RulesSource, ServerConfig};
use crate::store::RuleStore;
use limits_http::{LayerOptions, Lists, Policy, PolicyHandle};
use std::sync::Arc;

/// What the server's tasks share.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) handle: PolicyHandle<RuleStore>,
    /// The owner's handler of what the server does.
    pub(crate) events: Events,
    /// Why the last load of the rules failed, while the rules in force are
    /// not the file's (cleared by a load that succeeds).
    pub(crate) rules_error: std::sync::RwLock<Option<String>>,
}

impl Shared {
    /// Records why the rules failed to load (`None`: they loaded).
    fn set_rules_error(&self, error: Option<String>) {
        *self.rules_error.write().unwrap_or_else(|e| e.into_inner()) = error;
    }

    /// Why the last load of the rules failed, if it did.
    pub(crate) fn rules_error(&self) -> Option<String> {
        self.rules_error
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Re-reads the rules file: unchanged rules keep their state; a bad file
/// keeps the old rules and says why. Without a file, says so.
pub(crate) fn reload(shared: &Shared) {
    if !matches!(shared.config.rules, RulesSource::File(_)) {
        tracing::warn!("SIGHUP: no --config to reload; still serving");
        shared.events.emit(ServerEvent::NothingToReload);
        return;
    }
    match load_rules(&shared.config) {
        Ok(file) => {
            let old = shared.handle.current();
            let (fresh, kept) = rules::keep_state(file.rules, &old.rules);
            let count = fresh.len();
            let file = RulesFile {
                rules: fresh,
                lists: file.lists,
            };
            shared
                .handle
                .replace(policy(file, &shared.config, &shared.metrics));
            tracing::info!(rules = count, kept, "config reloaded");
            shared.set_rules_error(None);
            shared
                .events
                .emit(ServerEvent::Reloaded { rules: count, kept });
        }
        Err(e) => {
            tracing::error!(error = %e, "config not reloaded; keeping the old rules");
            shared.set_rules_error(Some(e.clone()));
            shared.events.emit(ServerEvent::NotReloaded { error: e });
        }
    }
}

/// The rules of the configured source, each with a new store, and the
/// file's lists (and its list files), read again on every reload.
pub(crate) fn load_rules(config: &ServerConfig) -> Result<RulesFile, String> {
    match &config.rules {
        RulesSource::File(path) => config::load_file(path, &config.stores),
        RulesSource::One { rule, key, cost } => Ok(RulesFile {
            rules: vec![rules::single(
                rule.clone(),
                key.clone(),
                *cost,
                &config.stores,
            )?],
            lists: Lists::default(),
        }),
    }
}

/// The layer's policy: the file's rules with the configured options (the
/// file's lists added to the configured ones), observed by `metrics`.
pub(crate) fn policy(
    file: RulesFile,
    config: &ServerConfig,
    metrics: &Arc<Metrics>,
) -> Policy<RuleStore> {
    let mut options = config.layer.clone();
    warn_of_unbelieved_tiers(&file.rules, &options);
    options.lists.allow.extend(file.lists.allow);
    options.lists.deny.extend(file.lists.deny);
    Policy {
        rules: file.rules,
        options,
        observer: metrics.clone(),
    }
}

/// Says, at each load, that a tiered rule's tier header will never be
/// believed: it counts only from a trusted proxy, and none is trusted, so
/// every request would be on the default tier.
fn warn_of_unbelieved_tiers(rules: &[ServerRule], options: &LayerOptions) {
    if !options.client_ip.trusted().is_empty() {
        return;
    }
    for rule in rules {
        let Some(tier) = &rule.tier else {
            continue;
        };
        let tiers = tier.tiers();
        let first = rules.iter().find(|r| {
            r.tier
                .as_ref()
                .is_some_and(|t| Arc::ptr_eq(t.tiers(), tiers))
        });
        if tiers.needs_trusted_proxy() && first.is_some_and(|f| std::ptr::eq(f, rule)) {
            tracing::warn!(
                rule = %rule.name,
                "its tier header counts only from a --trust-proxy peer, and none is trusted: \
                 every request is on the default tier, {}",
                tiers.default_tier()
            );
        }
    }
}
