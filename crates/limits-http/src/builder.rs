//! A builder for the layer, as tower_governor's `GovernorConfigBuilder`:
//! rules one by one and the options that differ from the defaults, without
//! spelling out a [`Policy`] and its [`LayerOptions`].

use crate::policy::{FailurePolicy, HttpRule, LayerOptions, NoObserver, Observer, Policy};
use crate::{AccessList, BodyBudget, ClientIp, KeySpec, Lists, RateLimitLayer};
use std::sync::Arc;
use std::time::Duration;

/// Builds a [`RateLimitLayer`] (or its [`Policy`]): start with
/// [`RateLimitLayer::builder`].
///
/// Every option starts at its [`LayerOptions::default`] and there is no
/// observer until one is given.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, Rule};
/// use limits_http::{HttpRule, KeySpec, Outcome, RateLimitLayer};
/// use std::time::Duration;
///
/// let per_second = Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap());
/// let layer = RateLimitLayer::builder()
///     .rule(HttpRule::new("api", KeyedLimiter::<String>::new(per_second), KeySpec::ip()).path("/api"))
///     .dry_run(true)
///     .legacy_headers(true)
///     .observer(|rule: &str, outcome: Outcome, _: Duration| {
///         if outcome == Outcome::WouldLimit {
///             eprintln!("{rule} would have limited a request");
///         }
///     })
///     .build();
/// assert!(layer.handle().current().options.dry_run);
/// let routes = axum::Router::new().route("/api", axum::routing::get(|| async { "hello" }));
/// let app: axum::Router = axum::Router::new().fallback_service(tower_layer::Layer::layer(&layer, routes));
/// # let _ = app;
/// ```
pub struct RateLimitLayerBuilder<S, K = KeySpec> {
    rules: Vec<HttpRule<S, K>>,
    options: LayerOptions,
    observer: Arc<dyn Observer>,
}

impl<S, K> RateLimitLayer<S, K> {
    /// A builder with no rules, the default options and no observer.
    pub fn builder() -> RateLimitLayerBuilder<S, K> {
        RateLimitLayerBuilder::default()
    }
}

impl<S, K> Default for RateLimitLayerBuilder<S, K> {
    fn default() -> Self {
        RateLimitLayerBuilder {
            rules: Vec::new(),
            options: LayerOptions::default(),
            observer: Arc::new(NoObserver),
        }
    }
}

impl<S, K> RateLimitLayerBuilder<S, K> {
    /// Adds a rule after those already added: every rule that matches a
    /// request applies, in this order.
    pub fn rule(mut self, rule: HttpRule<S, K>) -> Self {
        self.rules.push(rule);
        self
    }

    /// Adds several rules, in order.
    pub fn rules(mut self, rules: impl IntoIterator<Item = HttpRule<S, K>>) -> Self {
        self.rules.extend(rules);
        self
    }

    /// Replaces every option at once (the setters below change one).
    pub fn options(mut self, options: LayerOptions) -> Self {
        self.options = options;
        self
    }

    /// See [`LayerOptions::dry_run`].
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.options.dry_run = dry_run;
        self
    }

    /// See [`LayerOptions::legacy_headers`].
    pub fn legacy_headers(mut self, legacy: bool) -> Self {
        self.options.legacy_headers = legacy;
        self
    }

    /// See [`LayerOptions::client_ip`].
    pub fn client_ip(mut self, client_ip: ClientIp) -> Self {
        self.options.client_ip = client_ip;
        self
    }

    /// See [`LayerOptions::on_store_error`].
    pub fn on_store_error(mut self, policy: FailurePolicy) -> Self {
        self.options.on_store_error = policy;
        self
    }

    /// See [`LayerOptions::max_body`].
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.options.max_body = bytes;
        self
    }

    /// See [`LayerOptions::body_timeout`].
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.options.body_timeout = timeout;
        self
    }

    /// See [`LayerOptions::body_budget`].
    pub fn body_budget(mut self, budget: BodyBudget) -> Self {
        self.options.body_budget = budget;
        self
    }

    /// See [`LayerOptions::lists`]: requests no rule limits, and requests
    /// refused (403) before any rule.
    pub fn lists(mut self, lists: Lists) -> Self {
        self.options.lists = lists;
        self
    }

    /// Adds `list` to the layer's allow list: no rule limits them.
    ///
    /// ```
    /// use limits_http::{AccessList, RateLimitLayer};
    /// let office = AccessList::parse(["10.0.0.0/8"]).unwrap();
    /// let layer = RateLimitLayer::<limits::KeyedLimiter<String>>::builder()
    ///     .allow(office)
    ///     .deny(AccessList::parse(["203.0.113.0/24"]).unwrap())
    ///     .build();
    /// let options = &layer.handle().current().options;
    /// assert_eq!((options.lists.allow.len(), options.lists.deny.len()), (1, 1));
    /// ```
    pub fn allow(mut self, list: AccessList) -> Self {
        self.options.lists.allow.extend(list);
        self
    }

    /// Adds `list` to the layer's deny list: refused with 403.
    pub fn deny(mut self, list: AccessList) -> Self {
        self.options.lists.deny.extend(list);
        self
    }

    /// Who hears about decisions: any [`Observer`], `()` or a closure
    /// `Fn(&str, Outcome, Duration)`.
    pub fn observer(self, observer: impl Observer) -> Self {
        self.shared_observer(Arc::new(observer))
    }

    /// Like [`observer`](Self::observer), for an observer you keep a handle
    /// on (metrics you also render elsewhere).
    pub fn shared_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// The policy, to put in force later through a
    /// [`PolicyHandle`](crate::PolicyHandle) (a reload).
    pub fn policy(self) -> Policy<S, K> {
        Policy {
            rules: self.rules,
            options: self.options,
            observer: self.observer,
        }
    }

    /// The layer.
    pub fn build(self) -> RateLimitLayer<S, K> {
        RateLimitLayer::new(self.policy())
    }
}
