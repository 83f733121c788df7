//! envoyproxy/ratelimit's YAML configuration, read as it is, plus our
//! extensions; and the reference service's descriptor matching.
//!
//! A user of the reference service points `limits rls --config` at their
//! existing directory and gets the same limits, decided exactly.
//!
//! # The format (as the reference service reads it)
//!
//! One file per domain: `domain`, then nested `descriptors`, each with a
//! `key`, an optional `value` (each `*` in it matches any text: `foo*`,
//! `*.example.com`, `svc*ep*rpc`), an
//! optional `rate_limit { unit, requests_per_unit, name, replaces: [{name}],
//! unlimited, unit_multiplier, soft_requests_per_unit }`, `shadow_mode`,
//! `quota_mode`, `metadata`, `detailed_metric`, `share_threshold` (the
//! values a wildcard matches share one counter) and `value_to_metric`
//! (metric names as the reference gives them: see [`Matched::metric_name`]). Units
//! are second, minute, hour, day, week (7 days), month (30 days) and year
//! (365 days), as the reference's `UnitToDivider` defines them.
//! `requests_per_unit: 0` blocks every request (the reference's README
//! example 3); see [`RlsLimit::blocked`].
//!
//! Validation follows the reference's `config_impl.go`, with the same words
//! and a line: "descriptor has empty key", "duplicate descriptor composite key
//! 'D.k_v'" (the composite key is `key_value` as the reference builds it, so
//! every config it refuses as a duplicate, we refuse too), "invalid rate limit unit 'x'",
//! "should not specify rate limit unit when unlimited", "should not have an
//! empty replaces entry", "replaces should not contain name of same
//! descriptor", "config file cannot have empty domain", "duplicate domain 'd'
//! in config file", "unknown key 'k'". Where we are stricter, it is for a
//! mistake the reference silently ignores: a key valid elsewhere but not at
//! this level, a key given twice, `share_threshold` on a value that is no
//! wildcard, a second YAML document.
//!
//! # Our extensions, in the same files
//!
//! - `algorithm: sliding-log` at the top of a file (the file's default) or in
//!   a `rate_limit` (names as [`limits::Algorithm`] parses them); the default
//!   is `fixed-window`, so an existing config decides as before.
//! - Any window: `window: 5m` with `requests_per_window: 100` instead of
//!   `unit` and `requests_per_unit` (parsed by [`limits::parse_duration`]).
//! - Several rates decided all-or-nothing: `rates: [{unit: second,
//!   requests_per_unit: 10}, {window: 1h, requests_per_window: 1000}]` inside
//!   the `rate_limit`. The list lives in the `rate_limit` block rather than
//!   beside it so that one descriptor node keeps one limit, as in the
//!   reference: its name, `replaces`, algorithm and stats id stay where they
//!   are, and the rates become one [`limits::Rule`].
//!
//! # Matching (the reference's `GetLimit`)
//!
//! For each entry of the request's descriptor, in order: the node whose key
//! and value equal the entry's, else the first wildcard (in file order) that
//! matches the value, else the key-only node; no node ends the
//! walk. A node's limit applies only if it matched the descriptor's last
//! entry: a request with more entries than the config has levels gets no
//! limit. Keys are compared as keys (the reference compares the string
//! `key_value`, which differs only for keys containing `_` that spell another
//! key's `key_value`).

mod build;
mod check;
mod descriptor_keys;
mod fields;
mod load;
mod lookup;
mod metadata;
mod pattern;
mod rate;
mod yaml;

use super::RlsOptions;
use std::collections::HashMap;
use std::path::Path;

pub use check::{check, check_with, Checked};
pub use descriptor_keys::DescriptorKeys;
pub(crate) use load::config_files;
pub use rate::Unit;

/// Every domain's limits, read from envoyproxy/ratelimit YAML files.
///
/// ```
/// use limits_server::rls::config::RlsConfig;
/// let yaml = "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: second\n      requests_per_unit: 10\n";
/// let config = RlsConfig::parse(yaml, "edge.yaml")?;
/// let matched = config.lookup("edge", &[("remote_address", "203.0.113.7")]).unwrap();
/// assert_eq!(matched.limit.id, "edge.remote_address");
/// assert_eq!(matched.limit.reported.requests_per_unit, 10);
/// assert!(config.lookup("edge", &[("path", "/")]).is_none());
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Default)]
pub struct RlsConfig {
    domains: Vec<build::Domain>,
    by_name: HashMap<String, usize>,
    /// Every limit's id, with where it is.
    ids: HashMap<String, String>,
    /// Which entries name a request's own limit with their value.
    descriptor_keys: Option<DescriptorKeys>,
}

/// A matched limit and the store key of this request's descriptor.
#[derive(Debug)]
pub struct Matched<'a> {
    /// The limit that applies.
    pub limit: &'a RlsLimit,
    /// The counter's key: the request's entries as the reference service keys
    /// them (each distinct value under a key-only node gets its own counter; a
    /// wildcard's matched value too, unless `share_threshold` is on), escaped
    /// so that no two descriptors collide: `key=value|key2=value2`, with `\`,
    /// `=` and `|` in keys and values preceded by a `\`. It holds neither the
    /// domain nor the limit: name the store by [`RlsLimit::id`].
    pub key: String,
    /// The name in metrics when it is not the limit's id.
    metric: Option<String>,
}

impl Matched<'_> {
    /// The name of this match in metrics, as the reference names its
    /// stats since its PR #528: with `detailed_metric` on the limit, the
    /// domain and every entry of the request as `key_value`
    /// (`nested.key-1_value-1.key-2_value-2`; a `share_threshold` level by
    /// its pattern, `files_files/*`); else the limit's id, where a level
    /// with `value_to_metric` shows the request's value
    /// (`domain.route_draw.http_method_GET.subject_id`: `http_method` has
    /// it, `subject_id` has not); for the request's own limit
    /// ([`RlsConfig::lookup_override`]), the descriptor's name.
    pub fn metric_name(&self) -> String {
        self.metric.clone().unwrap_or_else(|| self.limit.id.clone())
    }
}

/// One `rate_limit` of one descriptor node.
#[derive(Clone, Debug)]
pub struct RlsLimit {
    /// Unique and stable across reloads for the same node: "DOMAIN.key_value.key2"
    /// as the reference service names its stats.
    pub id: String,
    /// The domain this limit belongs to.
    pub domain: String,
    /// `rate_limit.name`, if any (what `replaces` refers to).
    pub name: Option<String>,
    /// What to decide with; None when `unlimited: true` (and when blocked).
    pub rule: Option<limits::Rule>,
    /// The first rate as the protocol's RateLimit reports it.
    pub reported: Reported,
    /// Whatever the decision, the answer is OK (metrics still count).
    pub shadow_mode: bool,
    /// `quota_mode`: over its limit, the descriptor reports OVER_LIMIT, but
    /// the request is over only if every quota-mode descriptor of it is
    /// (see the `service` module).
    pub quota_mode: bool,
    /// `soft_requests_per_unit`: an admitted request that leaves more than
    /// this used is marked for the upstream; 0 is none.
    pub soft_requests_per_unit: u32,
    /// The descriptor node's `metadata`, returned in the response's
    /// dynamic metadata when the descriptor passes.
    pub metadata: Option<prost_types::Struct>,
    /// Names of the limits this one replaces when both match one request.
    pub replaces: Vec<String>,
    /// `detailed_metric`: metrics named after the request's entries (see
    /// [`Matched::metric_name`]).
    pub detailed_metric: bool,
    /// `requests_per_unit: 0`: every request is over the limit (the
    /// reference's way to block a value). `rule` is then None.
    pub blocked: bool,
    /// Where the `rate_limit` is: "FILE:LINE".
    pub origin: String,
}

impl RlsLimit {
    /// True for `unlimited: true`: always OK, never counted in a store.
    pub fn is_unlimited(&self) -> bool {
        self.rule.is_none() && !self.blocked
    }
}

/// A limit as the protocol's `RateLimitResponse.RateLimit` carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported {
    /// Requests per unit; for a window that is no whole unit (`window: 5m`),
    /// the window's limit, with `unit` Unknown.
    pub requests_per_unit: u32,
    /// The unit.
    pub unit: Unit,
}

impl RlsConfig {
    /// A directory of `*.yaml`/`*.yml` files (one domain each, subdirectories
    /// included, dot-files skipped; two files with one domain is an error), or
    /// a single file. Errors read "FILE:LINE: what is wrong".
    pub fn load(path: &Path) -> Result<RlsConfig, String> {
        RlsConfig::load_with(path, &RlsOptions::default())
    }

    /// As [`load`](Self::load), read as `options` say: several files of one
    /// domain merged ([`RlsOptions::merge_domains`]), a directory with no
    /// file at all taken as no domain
    /// ([`RlsOptions::healthy_with_at_least_one_config`]), and the
    /// descriptor key file ([`RlsOptions::descriptor_key_config`]).
    pub fn load_with(path: &Path, options: &RlsOptions) -> Result<RlsConfig, String> {
        let mut config = RlsConfig::default();
        let files = match load::config_files(path) {
            Err(e) if options.healthy_with_at_least_one_config && load::is_empty_dir(path) => {
                tracing::debug!(error = %e, "no config file yet");
                Vec::new()
            }
            other => other?,
        };
        for file in files {
            let origin = file.display().to_string();
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("{origin}: cannot read: {e}"))?;
            config.add(build::domain(&text, &origin)?, options.merge_domains)?;
        }
        if let Some(keys) = &options.descriptor_key_config {
            config.descriptor_keys = Some(DescriptorKeys::load(keys)?);
        }
        Ok(config)
    }

    /// One file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<RlsConfig, String> {
        let mut config = RlsConfig::default();
        config.add(build::domain(text, origin)?, false)?;
        Ok(config)
    }

    /// The limit that applies to one request descriptor (its entries in
    /// order), with the reference service's matching rules, or None (no limit:
    /// OK, unlimited).
    pub fn lookup<'a>(&'a self, domain: &str, entries: &[(&str, &str)]) -> Option<Matched<'a>> {
        let domain = &self.domains[*self.by_name.get(domain)?];
        lookup::lookup(domain, entries)
    }

    /// The request's own limit `limit` for the descriptor `entries`, as the
    /// reference applies it: in a domain this configuration has, whatever
    /// the entries match; counted under the descriptor's own entries, and
    /// named in metrics `DOMAIN.key_value.key2_value2` (a key alone when its
    /// value is empty, or when a descriptor key file leaves its value out:
    /// [`RlsOptions::descriptor_key_config`]). None when the domain has no
    /// configuration.
    pub fn lookup_override<'a>(
        &self,
        domain: &str,
        entries: &[(&str, &str)],
        limit: &'a RlsLimit,
    ) -> Option<Matched<'a>> {
        self.by_name.get(domain)?;
        let mut stat = domain.to_string();
        for (k, v) in entries {
            stat.push('.');
            stat.push_str(k);
            let named = self
                .descriptor_keys
                .as_ref()
                .is_none_or(|keys| keys.includes_value(domain, k));
            if named && !v.is_empty() {
                stat.push('_');
                stat.push_str(v);
            }
        }
        Some(Matched {
            limit,
            key: lookup::store_key(entries),
            metric: Some(stat),
        })
    }

    /// The `algorithm` of `domain`'s file, if this configuration has it.
    pub fn domain_algorithm(&self, domain: &str) -> Option<limits::Algorithm> {
        Some(self.domains[*self.by_name.get(domain)?].algorithm)
    }

    /// Every limit of every domain (to build one store per limit).
    pub fn limits(&self) -> impl Iterator<Item = &RlsLimit> {
        self.domains.iter().flat_map(|d| d.limits.iter())
    }

    /// The domains, in the order their files were read.
    pub fn domains(&self) -> impl Iterator<Item = &str> {
        self.domains.iter().map(|d| d.name.as_str())
    }

    /// Whether any domain is configured (a file may hold a domain without
    /// descriptors: it counts, as the reference counts it).
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }

    fn add(&mut self, domain: build::Domain, merge: bool) -> Result<(), String> {
        if let Some(&i) = self.by_name.get(&domain.name) {
            if !merge {
                let first = &self.domains[i];
                return Err(format!(
                    "{}: duplicate domain '{}' in config file (also in {})",
                    domain.origin, domain.name, first.origin
                ));
            }
            self.domains[i].check_merge(&domain)?;
            self.check_ids(&domain)?;
            for limit in &domain.limits {
                self.ids.insert(limit.id.clone(), limit.origin.clone());
            }
            return self.domains[i].merge(domain);
        }
        self.check_ids(&domain)?;
        for limit in &domain.limits {
            self.ids.insert(limit.id.clone(), limit.origin.clone());
        }
        self.by_name.insert(domain.name.clone(), self.domains.len());
        self.domains.push(domain);
        Ok(())
    }

    /// Refuses a limit of `domain` whose id another domain's limit has.
    fn check_ids(&self, domain: &build::Domain) -> Result<(), String> {
        for limit in &domain.limits {
            if let Some(other) = self.ids.get(&limit.id) {
                return Err(format!(
                    "{}: the limit '{}' has the same name as the one at {other}",
                    limit.origin, limit.id
                ));
            }
        }
        Ok(())
    }
}
