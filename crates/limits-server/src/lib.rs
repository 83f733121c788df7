//! The rate-limiting server as a library: what `limits serve` runs, for any
//! program to embed around its own service.
//!
//! - [`config`]: the TOML rules file, every problem reported as `FILE:LINE`.
//! - [`ServerRule`]: a rule with its store ([`RuleStore`], chosen per rule),
//!   kept across reloads when unchanged ([`same_shape`]).
//! - [`Server`]: the listener and its bounds, graceful drain, reload on
//!   SIGHUP, a sweeper, Prometheus metrics on an admin port, state saved on
//!   shutdown and loaded on start; configured by a plain [`ServerConfig`].
//! - [`Proxy`]: the reverse proxy to put behind the limits.
//!
//! The server takes the service to protect as an axum [`Router`](axum::Router),
//! or as any cloneable tower service ([`Backend::service`]: no router, no
//! boxing per request), or the [`Proxy`]:
//!
//! ```no_run
//! use limits_server::{config, Server, ServerConfig, RulesSource};
//!
//! # async fn run() -> Result<(), String> {
//! let config = ServerConfig::new(RulesSource::File("limits.toml".into()));
//! let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello\n" }));
//! Server::new(config)?.serve(app, limits_server::shutdown_signal()).await
//! # }
//! ```
//!
//! Dependencies go one way: the `limits` command -> this crate ->
//! `limits-http` (the layer) -> `limits` (the core).

#![warn(missing_docs)]

mod admin;
pub mod config;
mod counts;
mod events;
mod label_value;
mod listener;
mod memcached_metrics;
mod metrics;
mod proxy;
mod redis_metrics;
pub mod rls;
mod rules;
mod server;
mod server_config;
mod shared;
mod state;
mod store;
mod tasks;

pub use events::ServerEvent;
/// The Redis store's connection, for [`StoreOptions::redis`].
pub use limits_memcached::{MemcachedClient, MemcachedOptions};
pub use limits_redis::{Fallback, RedisConnection, RedisModule, RedisOptions};
pub use listener::connection_caps::{
    connections_within_file_limit, ADMIN_MAX_CONNECTIONS, ADMIN_MAX_CONNECTIONS_PER_CLIENT,
    RESERVED_DESCRIPTORS,
};
pub use listener::per_core::Runtimes;
pub use listener::{Bounds, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_CLIENT};
pub use proxy::{Forwarding, Proxy, ProxyBody, ProxyErrors};
pub use rules::{check_cost, describe, fingerprint, keep_state, same_shape, CostError, ServerRule};
pub use server::{Backend, Server};
pub use server_config::{LayerOptions, RulesSource, ServerConfig};
pub use state::CLOCK_TOLERANCE;
pub use store::{format_memory, parse_memory, RuleStore, StoreKind, StoreOptions};
pub use tasks::shutdown_signal;
