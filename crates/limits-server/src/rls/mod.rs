//! `limits rls`: Envoy's rate limit service protocol (gRPC
//! `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`) in front
//! of the exact limiters, so that any Envoy (Istio, Contour, Emissary, Envoy
//! Gateway) can use them by changing one address.
//!
//! - [`config`]: envoyproxy/ratelimit's YAML, read as it is, with our
//!   extensions; descriptor matching.
//! - [`proto`]: the protocol's messages and service, generated at build time.
//! - [`RlsServer`]: the gRPC server with its stores (one per limit, built by
//!   [`StoreOptions`]), reload, metrics and shutdown, configured by a plain
//!   [`RlsServerConfig`].
//!
//! What each field of a response means, and where it follows the reference
//! service, is said in the `service` and `decide` modules.

mod capped_incoming;
pub mod config;
mod count_denied;
mod decide;
mod fingerprint;
mod limits;
mod metric_series;
mod metrics;
mod options;
mod outage;
mod outcome;
mod overrides;
pub mod proto;
mod reloader;
mod response_headers;
mod server;
mod service;
mod watch;

pub use options::RlsOptions;
pub use overrides::MAX_OVERRIDES;
pub use reloader::RlsReloader;
pub use response_headers::{ReferenceHeaderNames, ResponseHeaders};
pub use server::RlsServer;

use crate::store::StoreOptions;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What a descriptor's answer is when its store cannot decide (Redis
/// unreachable or too slow, or full). A Redis store may decide in this
/// process instead ([`Fallback::Local`](limits_redis::Fallback)): then it
/// returns no error, and this is not asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnStoreError {
    /// Fail the call with gRPC UNAVAILABLE, so that Envoy's own
    /// `failure_mode_deny` decides (by default Envoy lets the request
    /// through).
    #[default]
    Unavailable,
    /// Answer OK for that descriptor (with no limit).
    Allow,
    /// Answer OVER_LIMIT for that descriptor (unless its limit is in shadow
    /// mode).
    Deny,
}

impl OnStoreError {
    /// The policy's name, as `--on-store-error` spells it.
    pub fn name(self) -> &'static str {
        match self {
            OnStoreError::Unavailable => "unavailable",
            OnStoreError::Allow => "allow",
            OnStoreError::Deny => "deny",
        }
    }
}

/// Everything an [`RlsServer`] needs.
///
/// ```
/// use limits_server::rls::{OnStoreError, RlsServerConfig};
///
/// let mut config = RlsServerConfig::new("config/".into());
/// config.listen = "127.0.0.1:0".parse().unwrap();
/// assert_eq!(config.on_store_error, OnStoreError::Unavailable);
/// assert_eq!(config.on_store_full, OnStoreError::Deny);
/// assert!(config.admin.is_none() && config.reload_on_hangup && config.state.is_none());
/// assert_eq!(config.watch_interval, std::time::Duration::from_secs(1));
/// ```
#[derive(Clone, Debug)]
pub struct RlsServerConfig {
    /// The YAML file, or a directory of them (one domain each).
    pub config: PathBuf,
    /// Address of the gRPC listener (port 0: any free port).
    pub listen: SocketAddr,
    /// Where to serve Prometheus `/metrics` and `/healthz`, if anywhere.
    pub admin: Option<SocketAddr>,
    /// How each limit's store is built (`--store`, `--max-keys`).
    pub stores: StoreOptions,
    /// The answer when a store cannot decide (unavailable).
    pub on_store_error: OnStoreError,
    /// The answer when a store answers that it is full (Redis's `OOM`);
    /// by default [`OnStoreError::Deny`]: a flood of keys may be what
    /// filled it.
    pub on_store_full: OnStoreError,
    /// Reload the configuration on SIGHUP (Unix).
    pub reload_on_hangup: bool,
    /// How often to check the configuration's files (sizes, mtimes,
    /// identities, following symlinks) and reload them when they changed;
    /// zero: never.
    pub watch_interval: Duration,
    /// Longest wait for calls in flight on shutdown.
    pub drain_timeout: Duration,
    /// Save the in-process stores' counts here on shutdown (each limit's
    /// under its id), load them on start; the file `limits serve --state`
    /// writes, with the same checks.
    pub state: Option<PathBuf>,
    /// Most connections open at once on the gRPC listener; beyond it a new
    /// connection is closed as soon as it is accepted (the admin listener
    /// has caps of its own).
    pub max_connections: usize,
    /// Most connections open at once from one address (an IPv6 peer by its
    /// /64); beyond it, as beyond the total.
    pub max_connections_per_client: usize,
    /// Most series per metric family named after descriptor values (limits
    /// with `detailed_metric`); values beyond it are counted in one
    /// `descriptor="other"` series per family.
    pub max_metric_series: usize,
    /// The header fields answers carry: none by default, as the reference
    /// service.
    pub response_headers: ResponseHeaders,
    /// The reference's switches (merged domains, global shadow and quota
    /// modes, dynamic metadata, health only once a config loaded, the
    /// descriptor key file): all off by default, as in the reference.
    pub options: RlsOptions,
}

/// [`RlsServerConfig::max_metric_series`] unless told otherwise.
pub const DEFAULT_MAX_METRIC_SERIES: usize = 1000;

impl RlsServerConfig {
    /// The limits of `config`, with the defaults of `limits rls`: listen on
    /// 127.0.0.1:8081, no admin, in memory, UNAVAILABLE on store errors,
    /// reload on SIGHUP and on change (checked every second), 30 s to drain,
    /// no state file, the connection caps of `limits serve`'s
    /// [`Bounds`](crate::Bounds), 1,000 detailed series per metric family,
    /// no response header fields.
    pub fn new(config: PathBuf) -> RlsServerConfig {
        RlsServerConfig {
            config,
            listen: SocketAddr::from(([127, 0, 0, 1], 8081)),
            admin: None,
            stores: StoreOptions::default(),
            on_store_error: OnStoreError::Unavailable,
            on_store_full: OnStoreError::Deny,
            reload_on_hangup: true,
            watch_interval: Duration::from_secs(1),
            drain_timeout: Duration::from_secs(30),
            state: None,
            max_connections: crate::DEFAULT_MAX_CONNECTIONS,
            max_connections_per_client: crate::DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            max_metric_series: DEFAULT_MAX_METRIC_SERIES,
            response_headers: ResponseHeaders::default(),
            options: RlsOptions::default(),
        }
    }
}
