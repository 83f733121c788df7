//! A tower [`Layer`](tower_layer::Layer) that puts an exact rate limiter in
//! front of any HTTP service (axum, tonic, hyper): key extraction, the
//! decision (through a [`limits::Store`]: in memory, or Redis), the
//! RateLimit headers of draft-ietf-httpapi-ratelimit-headers-10, and 429
//! responses with Retry-After and an RFC 9457 problem body.
//!
//! `limits serve` is built on this layer; see [`RateLimitLayer`] and
//! [`RateLimitLayer::builder`] for axum examples, [`KeyExtractor`] to key on
//! what only your application knows, and the crate's `examples/` (axum, a
//! custom key, tonic).

#![warn(missing_docs)]

mod body;
mod builder;
mod client_ip;
mod decide;
mod future;
pub mod headers;
mod in_force;
mod key;
mod last_value;
mod layer;
mod members;
mod method;
pub use method::STANDARD_METHODS;
mod path;
mod policy;
mod prepare;
mod problem;
mod refusals;
mod respond;
mod service;
mod too_many;

pub use body::BodyBudget;
pub use builder::RateLimitLayerBuilder;
pub use client_ip::{
    ClientIp, ClientIpHeader, ResolvedClient, TrustedProxies, DEFAULT_IPV6_PREFIX,
};
pub use future::ResponseFuture;
pub use in_force::PolicyHandle;
pub use key::{
    Key, KeyError, KeyErrorReason, KeyExtractor, KeyPart, KeySpec, KeySpecError, Missing,
    Normalize, NormalizeStep, MAX_KEY_LEN,
};
pub use layer::RateLimitLayer;
pub use path::{match_path, normalize_path, PathError};
pub use policy::{
    FailurePolicy, HttpRule, LayerOptions, NoObserver, Observer, Outcome, PathMatch, Policy,
    RuleObserver, DEFAULT_BODY_BUDGET,
};
pub use prepare::PeerAddr;
pub use problem::{problem, problem_with, PROBLEM_JSON};
pub use respond::LimitedBody;
pub use service::RateLimit;
