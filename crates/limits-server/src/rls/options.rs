//! The reference service's switches that change how a whole configuration
//! is read and answered, each a field here so that an embedder (and the
//! `limits rls` command, from the reference's environment variables) sets
//! them in one place. Every one is off by default, as in the reference.

use std::path::PathBuf;

/// The rate limit service's switches, as envoyproxy/ratelimit names them in
/// its environment (the variable each stands for is in its doc).
///
/// ```
/// use limits_server::rls::RlsOptions;
/// let options = RlsOptions::default()
///     .merge_domains(true)
///     .global_shadow(true);
/// assert!(options.merge_domains && options.global_shadow);
/// assert!(!options.global_quota && !options.healthy_with_at_least_one_config);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RlsOptions {
    /// `MERGE_DOMAIN_CONFIG`: several files of one domain are merged into
    /// one tree, file after file (a descriptor two files both give is still
    /// refused, as the reference refuses it); off, a second file of a
    /// domain is refused.
    pub merge_domains: bool,
    /// `SHADOW_MODE`: every limit in shadow mode: decided and counted, the
    /// request answered OK whatever the descriptors say (their statuses
    /// still say OVER_LIMIT), as the reference's global shadow mode.
    pub global_shadow: bool,
    /// `QUOTA_MODE`: every descriptor in quota mode, as if each limit said
    /// `quota_mode: true`.
    pub global_quota: bool,
    /// `RESPONSE_DYNAMIC_METADATA`: answers carry dynamic metadata (the
    /// domain, the descriptors, and the `metadata` of those that passed),
    /// as the reference builds it.
    pub response_dynamic_metadata: bool,
    /// `HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED`: health answers SERVING
    /// only while a configuration with at least one domain is loaded; the
    /// server then starts with no file at all (a ConfigMap not mounted
    /// yet) and becomes healthy when one loads.
    pub healthy_with_at_least_one_config: bool,
    /// The reference's descriptor key file (`include_entry_value_for_keys`,
    /// by default and per domain): which entries of a descriptor carrying
    /// its own limit name it in the metrics with their value. Without it,
    /// every entry with a value does. Read with the configuration, so a
    /// reload reads it again.
    pub descriptor_key_config: Option<PathBuf>,
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false` (`--count-denied-hits`):
    /// a denied descriptor's hits are added to its count, as the
    /// reference's counter adds every hit (fixed-window and sliding-window
    /// limits only; a configuration with any other limiter is refused).
    /// Off, a denial takes nothing.
    pub count_denied_hits: bool,
    /// A request's descriptors record all or nothing: when any is over its
    /// limit (a blocked limit included), the others take nothing, as the
    /// reference's `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true` (which
    /// also counts the over descriptor's hits: with
    /// [`count_denied_hits`](Self::count_denied_hits)). Whether each
    /// descriptor admits is asked of the counts the request found, as the
    /// reference asks; then all record, atomically: in memory, one such
    /// request decides at a time; on one Redis, the request is one script
    /// call. Off, each descriptor is decided, and counted, on its own.
    pub all_or_nothing: bool,
}

impl RlsOptions {
    /// Sets [`merge_domains`](Self::merge_domains).
    pub fn merge_domains(mut self, on: bool) -> Self {
        self.merge_domains = on;
        self
    }

    /// Sets [`global_shadow`](Self::global_shadow).
    pub fn global_shadow(mut self, on: bool) -> Self {
        self.global_shadow = on;
        self
    }

    /// Sets [`global_quota`](Self::global_quota).
    pub fn global_quota(mut self, on: bool) -> Self {
        self.global_quota = on;
        self
    }

    /// Sets [`response_dynamic_metadata`](Self::response_dynamic_metadata).
    pub fn response_dynamic_metadata(mut self, on: bool) -> Self {
        self.response_dynamic_metadata = on;
        self
    }

    /// Sets [`healthy_with_at_least_one_config`](Self::healthy_with_at_least_one_config).
    pub fn healthy_with_at_least_one_config(mut self, on: bool) -> Self {
        self.healthy_with_at_least_one_config = on;
        self
    }

    /// Sets [`count_denied_hits`](Self::count_denied_hits).
    pub fn count_denied_hits(mut self, on: bool) -> Self {
        self.count_denied_hits = on;
        self
    }

    /// Sets [`all_or_nothing`](Self::all_or_nothing).
    pub fn all_or_nothing(mut self, on: bool) -> Self {
        self.all_or_nothing = on;
        self
    }

    /// Sets [`descriptor_key_config`](Self::descriptor_key_config).
    pub fn descriptor_key_config(mut self, path: Option<PathBuf>) -> Self {
        self.descriptor_key_config = path;
        self
    }
}
