//! The tower [`Layer`]: the policy in force, behind a handle through which
//! it can be replaced while requests are in flight. What each request meets
//! is in [`service`](crate::service) (carrying out) and
//! [`prepare`](crate::prepare) and [`decide`](crate::decide) (deciding).

use crate::headers::RateLimitValue;
use crate::key::KeySpec;
use crate::policy::{HttpRule, Policy, RuleObserver};
use crate::service::RateLimit;
use crate::too_many::TooManyBody;
use crate::{headers, prepare};
use arc_swap::ArcSwap;
use bytes::Bytes;
use http::HeaderValue;
use limits::Store;
use std::sync::{Arc, OnceLock};
use tower_layer::Layer;

/// Where the current policy lives; replace it to reload rules without
/// dropping requests in flight (they finish under the policy they started with).
pub struct PolicyHandle<S, K = KeySpec>(Arc<ArcSwap<InForce<S, K>>>);

/// A policy in force, and what the layer derives from it once rather than
/// for every request.
pub(crate) struct InForce<S, K> {
    pub(crate) policy: Arc<Policy<S, K>>,
    /// Each rule's header values, or their text, for a response it alone
    /// decided, made on first use.
    values: OnceLock<Vec<RuleValues>>,
    /// Each rule's 429 problem body, but for its number of seconds, made on
    /// first use.
    too_many: OnceLock<Vec<TooManyBody>>,
    /// Each rule's observer ([`Observer::rule_observer`](crate::Observer::rule_observer)), asked for
    /// as the policy is put in force.
    observers: Vec<Option<Box<dyn RuleObserver>>>,
}

impl<S, K> InForce<S, K> {
    fn new(policy: Policy<S, K>) -> InForce<S, K> {
        let observers = policy
            .rules
            .iter()
            .map(|rule| policy.observer.rule_observer(&rule.name))
            .collect();
        InForce {
            policy: Arc::new(policy),
            values: OnceLock::new(),
            too_many: OnceLock::new(),
            observers,
        }
    }

    /// The observer of rule `rule`'s decisions, if the policy's observer
    /// made one (else the policy's observer hears them, by name).
    pub(crate) fn rule_observer(&self, rule: usize) -> Option<&dyn RuleObserver> {
        self.observers.get(rule)?.as_deref()
    }
}

impl<S: Store, K> InForce<S, K> {
    /// The RateLimit-Policy value of rule `rule` alone, if it is a value.
    pub(crate) fn policy_value(&self, rule: usize) -> Option<&HeaderValue> {
        self.values(rule)?.policy.as_ref()
    }

    /// [`InForce::policy_value`] of rule `rule`, and its RateLimit value's
    /// text if it has one rate and its name is visible ASCII: read at once.
    pub(crate) fn rule_values(
        &self,
        rule: usize,
    ) -> (Option<&HeaderValue>, Option<&RateLimitValue>) {
        match self.values(rule) {
            Some(v) => (v.policy.as_ref(), v.ratelimit.as_ref()),
            None => (None, None),
        }
    }

    fn values(&self, rule: usize) -> Option<&RuleValues> {
        let values = self.values.get_or_init(|| {
            let rules = &self.policy.rules;
            rules.iter().map(RuleValues::new).collect()
        });
        values.get(rule)
    }

    /// The problem body of a 429 of rule `rule` (an index into the policy's
    /// rules) telling the client to retry in `secs` seconds.
    pub(crate) fn too_many_body(&self, rule: usize, secs: u64) -> Bytes {
        let bodies = self.too_many.get_or_init(|| {
            let rules = &self.policy.rules;
            rules.iter().map(|r| TooManyBody::new(&r.name)).collect()
        });
        bodies[rule].body(secs)
    }
}

/// What a rule's header values are made of, made once.
struct RuleValues {
    /// Its RateLimit-Policy value (`None`: not a value, not sent).
    policy: Option<HeaderValue>,
    /// Its RateLimit value's text, if it has one rate (`None`: written per
    /// response).
    ratelimit: Option<RateLimitValue>,
}

impl RuleValues {
    fn new<S: Store, K>(rule: &HttpRule<S, K>) -> RuleValues {
        let mut rates = prepare::rates(rule);
        let ratelimit = match (rates.next(), rates.next()) {
            (Some(one), None) => RateLimitValue::new(one),
            _ => None,
        };
        RuleValues {
            policy: headers::policy_value(prepare::rates(rule)),
            ratelimit,
        }
    }
}

impl<S, K> Clone for PolicyHandle<S, K> {
    fn clone(&self) -> Self {
        PolicyHandle(self.0.clone())
    }
}

impl<S, K> PolicyHandle<S, K> {
    /// The policy now in force.
    pub fn current(&self) -> Arc<Policy<S, K>> {
        self.0.load().policy.clone()
    }

    /// Puts `policy` in force for every request from now on.
    pub fn replace(&self, policy: Policy<S, K>) {
        self.0.store(Arc::new(InForce::new(policy)));
    }

    /// The policy now in force, with what is derived from it.
    pub(crate) fn in_force(&self) -> Arc<InForce<S, K>> {
        self.0.load_full()
    }
}

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
/// matched; `Router::layer` would route on the path as sent.
///
/// Build it from a [`Policy`] with [`RateLimitLayer::new`], or rule by rule
/// with [`RateLimitLayer::builder`].
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, Rule};
/// use limits_http::{HttpRule, KeySpec, Policy, RateLimitLayer};
/// use std::sync::Arc;
///
/// let store = KeyedLimiter::<String>::new(Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap()));
/// let layer = RateLimitLayer::new(Policy::new(vec![HttpRule {
///     name: "default".into(),
///     path_prefix: "/".into(),
///     path_match: Default::default(),
///     methods: vec![],
///     key: KeySpec::ip(),
///     cost: 1,
///     store: Arc::new(store),
/// }]));
/// let routes = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
/// let app: axum::Router = axum::Router::new().fallback_service(tower_layer::Layer::layer(&layer, routes));
/// # let _ = app;
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
            policy: PolicyHandle(Arc::new(ArcSwap::from_pointee(InForce::new(policy)))),
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
