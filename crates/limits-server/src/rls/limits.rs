//! The limits in force: the configuration read from the YAML files with one
//! store per limit. Swapped whole on reload; a limit whose id, store kind
//! and rule did not change keeps its store, and so its clients' counts.

use super::config::{RlsConfig, RlsLimit};
use super::overrides::Overrides;
use super::RlsOptions;
use crate::rules::limiter_shape;
use crate::state;
use crate::store::{RuleStore, StoreOptions};
use limits::Store;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The configuration and one store per limit (the unlimited ones have none).
pub struct RlsLimits {
    /// Every domain's limits.
    pub config: RlsConfig,
    stores: HashMap<String, Arc<RuleStore>>,
    /// The requests' own limits met so far, kept across reloads.
    pub overrides: Arc<Overrides>,
}

impl RlsLimits {
    /// `config` with a new store for each of its limits, named by the
    /// limit's id (a Redis store's keys carry it).
    pub fn new(config: RlsConfig, options: &StoreOptions) -> Result<RlsLimits, String> {
        let mut stores = HashMap::new();
        for limit in config.limits() {
            let Some(rule) = &limit.rule else { continue };
            let store = options
                .store(&limit.id, rule.clone())
                .map_err(|e| format!("limit {}: {e}", limit.id))?;
            stores.insert(limit.id.clone(), Arc::new(store));
        }
        Ok(RlsLimits {
            config,
            stores,
            overrides: Arc::new(Overrides::new(options.clone())),
        })
    }

    /// Reads `path` (a file, or a directory of them) as `rls` says and
    /// builds its stores.
    pub fn load(
        path: &Path,
        rls: &RlsOptions,
        options: &StoreOptions,
    ) -> Result<RlsLimits, String> {
        let config = RlsConfig::load_with(path, rls)?;
        super::count_denied::check(&config, rls.count_denied_hits)?;
        RlsLimits::new(config, options)
    }

    /// Whether a server with these limits answers health SERVING: always,
    /// unless `options` wait for a configuration with a domain.
    pub fn healthy_under(&self, options: &RlsOptions) -> bool {
        !options.healthy_with_at_least_one_config || !self.config.is_empty()
    }

    /// The store deciding `limit`, if it has one.
    pub fn store(&self, limit: &RlsLimit) -> Option<&Arc<RuleStore>> {
        self.stores.get(&limit.id)
    }

    /// Every store with the id of its limit.
    pub fn stores(&self) -> impl Iterator<Item = (&str, &Arc<RuleStore>)> {
        self.stores.iter().map(|(id, s)| (id.as_str(), s))
    }

    /// Takes over the stores of `previous` whose limit has the same id, the
    /// same kind of store and the same rule, and its requests' own limits;
    /// returns how many configured limits kept their store.
    pub fn keep_state(&mut self, previous: &RlsLimits) -> usize {
        self.overrides = previous.overrides.clone();
        let mut kept = 0;
        for (id, store) in &mut self.stores {
            if let Some(old) = previous.stores.get(id) {
                if old.same_kind(store) {
                    *store = old.clone();
                    kept += 1;
                }
            }
        }
        kept
    }

    /// Each store under its limit's id, with a shape made of the id and the
    /// rule (algorithm, rates, burst): what `--state` saves and loads, so
    /// that a limit whose rule changed starts afresh.
    pub(crate) fn state_entries(&self) -> impl Iterator<Item = state::Entry<'_>> {
        self.stores.iter().map(|(id, store)| {
            let shape = format!("limit {id}: {}", limiter_shape(store.rule()));
            (id.as_str(), shape, &**store)
        })
    }

    /// Drops the keys that can no longer affect a decision, in the stores
    /// in this process.
    pub fn sweep(&self) -> usize {
        let configured: usize = self
            .stores
            .values()
            .filter_map(|s| s.local())
            .map(|local| local.sweep())
            .sum();
        configured + self.overrides.sweep()
    }
}
