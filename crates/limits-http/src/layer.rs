//! The tower [`Layer`]: it wraps a service in [`RateLimit`], sharing the
//! handle to the policy in force ([`in_force`](crate::in_force)). What each
//! request meets is in [`service`](crate::service).

use crate::in_force::PolicyHandle;
use crate::key::KeySpec;
use crate::policy::Policy;
use crate::service::RateLimit;
use tower_layer::Layer;

/// Rate limits an HTTP service.
///
/// For every request, the rules that match it decide in order; the first
/// denial answers 429 (unless dry run); an admitted request is held for its
/// delay (leaky bucket), then served, and its response carries the
/// RateLimit headers of every rule it passed.
///
/// The layer normalizes each request's path (see [`normalize_path`](crate::normalize_path))
/// and hands the inner service the normalized request. Put it around the
/// whole router, as below, so that routing sees the same path the rules
/// matched (the crate page says why not `Router::layer`), and serve the
/// app with the client's address (`into_make_service_with_connect_info`).
///
/// Build it from a [`Policy`] with [`RateLimitLayer::new`], or rule by rule
/// with [`RateLimitLayer::builder`].
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, Rule};
/// use limits_http::{HttpRule, KeySpec, Policy, RateLimitLayer};
///
/// let store = KeyedLimiter::<String>::new(Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap()));
/// let layer = RateLimitLayer::new(Policy::new(vec![HttpRule::new("default", store, KeySpec::ip())]));
/// let routes = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
/// let app: axum::Router = axum::Router::new().fallback_service(tower_layer::Layer::layer(&layer, routes));
/// let service = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
/// # let _ = service;
/// ```
pub struct RateLimitLayer<S, K = KeySpec> {
    policy: PolicyHandle<S, K>,
}

impl<S, K> Clone for RateLimitLayer<S, K> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            policy: self.policy.clone(),
        }
    }
}

impl<S, K> RateLimitLayer<S, K> {
    /// A layer enforcing `policy`.
    pub fn new(policy: Policy<S, K>) -> RateLimitLayer<S, K> {
        RateLimitLayer {
            policy: PolicyHandle::new(policy),
        }
    }

    /// The handle through which the policy can be replaced.
    pub fn handle(&self) -> PolicyHandle<S, K> {
        self.policy.clone()
    }
}

impl<S, K, Inner> Layer<Inner> for RateLimitLayer<S, K> {
    type Service = RateLimit<Inner, S, K>;

    fn layer(&self, inner: Inner) -> RateLimit<Inner, S, K> {
        RateLimit::new(inner, self.policy.clone())
    }
}
