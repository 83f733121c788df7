//! The request's own limit (`RateLimitDescriptor.limit`, which Envoy fills
//! from a route's `rate_limits[].limit.dynamic_metadata`), applied as the
//! reference applies it (its `TestConfigLimitOverride`): in a domain that
//! has a configuration, the descriptor gets that limit whatever its entries
//! match, never in shadow mode, named in the metrics after the descriptor
//! itself (`DOMAIN.key_value.key2_value2`), so that a change of the
//! override keeps counting under the same name.
//!
//! Each distinct override (domain, algorithm, requests per unit, unit) is
//! one limit with a store of its own, made at its first use and kept across
//! reloads: the counts of a descriptor are per limit, so a descriptor whose
//! override changes starts a fresh count under the new limit (the
//! reference keeps one counter per descriptor and unit). Overrides are
//! decided with the domain's file's `algorithm` (fixed windows, as the
//! reference, unless the file says otherwise). A client cannot make
//! unbounded stores: beyond [`MAX_OVERRIDES`] distinct overrides, a new one
//! is refused.

use super::config::{Reported, RlsLimit, Unit};
use crate::store::{RuleStore, StoreOptions};
use limits::{Algorithm, Rate, Rates, Rule, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most distinct overrides kept at once.
pub const MAX_OVERRIDES: usize = 1000;

/// One override's limit and its store (none when it blocks everything).
pub struct Override {
    /// The limit, as a configured one would be.
    pub limit: RlsLimit,
    /// Where it is decided; None for `requests_per_unit: 0`.
    pub store: Option<Arc<RuleStore>>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Shape {
    domain: String,
    algorithm: Algorithm,
    requests_per_unit: u32,
    unit: Unit,
}

/// Every override met so far, each with its store.
pub struct Overrides {
    options: StoreOptions,
    known: Mutex<HashMap<Shape, Arc<Override>>>,
}

impl Overrides {
    /// None yet; their stores are made as `options` says.
    pub fn new(options: StoreOptions) -> Overrides {
        Overrides {
            options,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The limit of `requests_per_unit` per `unit` in `domain`, decided by
    /// `algorithm`: the one made before, or a new one. Errors say why none
    /// can be made (too many overrides, or a store refusing the rule).
    pub fn get(
        &self,
        domain: &str,
        algorithm: Algorithm,
        requests_per_unit: u32,
        unit: Unit,
    ) -> Result<Arc<Override>, String> {
        let shape = Shape {
            domain: domain.to_string(),
            algorithm,
            requests_per_unit,
            unit,
        };
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = known.get(&shape) {
            return Ok(found.clone());
        }
        if known.len() >= MAX_OVERRIDES {
            return Err(format!(
                "more than {MAX_OVERRIDES} distinct limit overrides; this one \
                 ({requests_per_unit} per {}) is refused",
                unit.name()
            ));
        }
        let made = Arc::new(self.make(&shape)?);
        known.insert(shape, made.clone());
        Ok(made)
    }

    fn make(&self, shape: &Shape) -> Result<Override, String> {
        let seconds = shape
            .unit
            .seconds()
            .ok_or_else(|| "a limit override needs a unit".to_string())?;
        let id = format!(
            "{}.limit_override_{}_per_{}",
            shape.domain,
            shape.requests_per_unit,
            shape.unit.name()
        );
        let rule = match shape.requests_per_unit {
            0 => None,
            n => {
                let rate = Rate::new(u64::from(n), Duration::from_secs(seconds))
                    .map_err(|e| format!("limit override: {e}"))?;
                let rates = Rates::new(vec![rate]).ok_or("limit override: no rate")?;
                Some(Rule::new(shape.algorithm, rates))
            }
        };
        let store = match &rule {
            Some(rule) => Some(Arc::new(
                self.options
                    .store(&id, rule.clone())
                    .map_err(|e| format!("limit override {id}: {e}"))?,
            )),
            None => None,
        };
        let limit = RlsLimit {
            id,
            domain: shape.domain.clone(),
            name: None,
            blocked: rule.is_none(),
            rule,
            reported: Reported {
                requests_per_unit: shape.requests_per_unit,
                unit: shape.unit,
            },
            shadow_mode: false,
            quota_mode: false,
            soft_requests_per_unit: 0,
            metadata: None,
            replaces: Vec::new(),
            detailed_metric: false,
            origin: "the request's limit override".into(),
        };
        Ok(Override { limit, store })
    }

    /// Drops the keys that can no longer affect a decision, in the stores
    /// in this process.
    pub fn sweep(&self) -> usize {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known
            .values()
            .filter_map(|o| o.store.as_ref()?.local().map(|l| l.sweep()))
            .sum()
    }
}
