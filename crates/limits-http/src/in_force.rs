//! The policy in force, and what the layer derives from it once (each
//! rule's header values, 429 bodies and observer), behind the handle through
//! which it is replaced while requests are in flight.

use crate::headers::{self, RateLimitValue};
use crate::key::KeySpec;
use crate::members;
use crate::policy::{HttpRule, Policy, RuleObserver};
use crate::too_many::TooManyBody;
use arc_swap::ArcSwap;
use bytes::Bytes;
use http::HeaderValue;
use limits::Store;
use std::sync::{Arc, OnceLock};

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
        let mut rates = members::policy_members(rule);
        let ratelimit = match (rates.next(), rates.next()) {
            (Some(one), None) => RateLimitValue::new(one),
            _ => None,
        };
        RuleValues {
            policy: headers::policy_value(members::policy_members(rule)),
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
    /// A handle with `policy` in force.
    pub(crate) fn new(policy: Policy<S, K>) -> PolicyHandle<S, K> {
        PolicyHandle(Arc::new(ArcSwap::from_pointee(InForce::new(policy))))
    }

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
