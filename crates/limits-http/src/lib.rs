//! A tower [`Layer`](tower_layer::Layer) that puts an exact rate limiter in
//! front of any HTTP service (axum, tonic, hyper): key extraction, the
//! decision (through a [`limits::Store`]: in memory, or Redis), the
//! RateLimit headers of draft-ietf-httpapi-ratelimit-headers-10, and 429
//! responses with Retry-After and an RFC 9457 problem body.
//!
//! An axum app limited to two requests a minute per client address on
//! `/api`:
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use limits::{Algorithm, KeyedLimiter, Rule};
//! use limits_http::{HttpRule, KeySpec, RateLimitLayer};
//! use std::net::SocketAddr;
//! use tower_layer::Layer;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let two_a_minute = Rule::new(Algorithm::SlidingLog, "2/min".parse()?);
//!     let store = KeyedLimiter::<String>::new(two_a_minute);
//!     let api = HttpRule::new("api", store, KeySpec::ip()).path("/api");
//!     let layer = RateLimitLayer::builder().rule(api).build();
//!
//!     let routes = Router::new().route("/api/hello", get(|| async { "hello\n" }));
//!     // Around the whole router: routing sees the path the rules matched.
//!     let app = Router::new().fallback_service(layer.layer(routes));
//!
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//!     // The peer address of each connection: the layer keys clients by it
//!     // (without it, a rule keyed on the address answers 500).
//!     axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
//!     Ok(())
//! }
//! ```
//!
//! It serves until stopped, so it is only compiled here; the same app is
//! `examples/axum_app.rs`, which the tests serve and send requests through
//! (`cargo run -p limits-http --example axum_app`).
//!
//! **Where the layer goes.** Wrap the whole router, as above
//! (`Router::new().fallback_service(layer.layer(routes))`, or
//! `layer.layer(router)` served as it is). The layer normalizes each
//! request's path (`/x/../login`, `//login` and `/%6cogin` are `/login`) and
//! hands the router the normalized request, so routing and the rules see
//! one path. `Router::layer` runs the layer only after the router has
//! routed on the path as sent, and `route_layer` only on requests that
//! matched a route: a spelling the router reads one way and the rules
//! another would be limited under one path and served under another.
//!
//! **The client's address** comes from the connection: serve with
//! `into_make_service_with_connect_info::<SocketAddr>()` (axum), give each
//! connection's service the peer with [`RateLimit::with_peer`], or put a
//! [`PeerAddr`] extension in each request. Behind a proxy, trust it with
//! [`TrustedProxies`] and read its one forwarding header ([`ClientIp`]).
//!
//! See [`HttpRule`] for what a rule matches, [`RateLimitLayer::builder`]
//! for the options, [`KeyExtractor`] to key on what only your application
//! knows, and the crate's `examples/` (axum, a custom key, tonic).
//! `limits serve` is built on this layer.

#![warn(missing_docs)]

mod body;
mod builder;
mod client_ip;
mod decide;
mod future;
mod grpc;
pub mod headers;
mod in_flight;
mod in_force;
mod key;
mod last_value;
mod layer;
mod lists;
mod members;
mod method;
mod no_client;
pub use method::STANDARD_METHODS;
mod cost_from;
mod path;
mod penalty;
mod policy;
mod prepare;
mod problem;
mod refusals;
mod respond;
mod service;
mod settle;
mod tiers;
mod too_many;

pub use body::BodyBudget;
pub use builder::RateLimitLayerBuilder;
pub use client_ip::{
    ClientIp, ClientIpHeader, DEFAULT_IPV6_PREFIX, ResolvedClient, TrustedProxies,
};
pub use cost_from::CostFrom;
pub use future::ResponseFuture;
pub use grpc::{error_answer, is_grpc};
pub use in_flight::Holding;
pub use in_force::PolicyHandle;
pub use key::{
    Key, KeyError, KeyErrorReason, KeyExtractor, KeyPart, KeySpec, KeySpecError, MAX_KEY_LEN,
    Missing, Normalize, NormalizeStep,
};
pub use layer::RateLimitLayer;
pub use lists::{AccessList, ListEntryError, ListKind, Lists};
pub use path::{PathError, match_path, normalize_path};
pub use policy::{
    Counts, DEFAULT_BODY_BUDGET, FailurePolicy, HttpRule, LayerOptions, NoObserver, Observer,
    Outcome, PathMatch, Policy, RuleObserver,
};
pub use prepare::PeerAddr;
pub use problem::{PROBLEM_JSON, problem, problem_with};
pub use respond::LimitedBody;
pub use service::RateLimit;
pub use tiers::{Tier, Tiers};
