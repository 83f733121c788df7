//! The policy in force, and what the layer derives from it once (each
//! rule's header values, 429 bodies and observer), behind the handle through
//! which it is replaced while requests are in flight.

use crate::headers::{self, RateLimitValue};
use crate::key::KeySpec;
use crate::members;
use crate::no_client::Said;
use crate::policy::{HttpRule, Policy, RuleObserver};
use crate::too_many::{self, TooManyBody};
use arc_swap::ArcSwap;
use bytes::Bytes;
use http::HeaderValue;
use limits::Store;
use std::sync::{Arc, OnceLock};

/// Where the current policy lives; replace it to reload rules without
/// dropping requests in flight (they finish under the policy they started with).
pub struct PolicyHandle<S, K = KeySpec>(Arc<Handled<S, K>>);

/// What every service of one layer shares: the policy in force, and what
/// the layer has said once for all of them.
struct Handled<S, K> {
    in_force: ArcSwap<InForce<S, K>>,
    /// Whether the layer has logged that it has no client address.
    no_client: Said,
}

/// A policy in force, and what the layer derives from it once rather than
/// for every request.
pub(crate) struct InForce<S, K> {
    pub(crate) policy: Arc<Policy<S, K>>,
    /// Each rule's text that no decision changes (its header values, its
    /// 429 body but for the seconds), made on first use: one per policy,
    /// where the values with numbers are the thread's last ones
    /// ([`last_value`](crate::last_value)).
    texts: OnceLock<Vec<RuleTexts>>,
    /// Each rule's observer ([`Observer::rule_observer`](crate::Observer::rule_observer)), asked for
    /// as the policy is put in force.
    observers: Vec<Option<Box<dyn RuleObserver>>>,
    /// The response headers the rules read real costs from
    /// ([`CostFrom`](crate::CostFrom)): the upstream's, never the client's.
    pub(crate) cost_headers: Vec<http::HeaderName>,
}

impl<S, K> InForce<S, K> {
    fn new(policy: Policy<S, K>) -> InForce<S, K> {
        let observers = policy
            .rules
            .iter()
            .map(|rule| policy.observer.rule_observer(&rule.name))
            .collect();
        let mut cost_headers: Vec<http::HeaderName> = Vec::new();
        for from in policy
            .rules
            .iter()
            .filter_map(|rule| rule.cost_from.as_ref())
        {
            if !cost_headers.contains(&from.header) {
                cost_headers.push(from.header.clone());
            }
        }
        InForce {
            policy: Arc::new(policy),
            texts: OnceLock::new(),
            observers,
            cost_headers,
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
        self.texts(rule)?.policy.as_ref()
    }

    /// [`InForce::policy_value`] of rule `rule`, and its RateLimit value's
    /// text if it has one rate and its name is visible ASCII: read at once.
    pub(crate) fn rule_values(
        &self,
        rule: usize,
    ) -> (Option<&HeaderValue>, Option<&RateLimitValue>) {
        match self.texts(rule) {
            Some(v) => (v.policy.as_ref(), v.ratelimit.as_ref()),
            None => (None, None),
        }
    }

    fn texts(&self, rule: usize) -> Option<&RuleTexts> {
        let texts = self.texts.get_or_init(|| {
            let rules = &self.policy.rules;
            rules.iter().map(RuleTexts::new).collect()
        });
        texts.get(rule)
    }

    /// The problem body of a 429 of rule `rule` (an index into the policy's
    /// rules) telling the client to retry in `secs` seconds.
    pub(crate) fn too_many_body(&self, rule: usize, secs: u64) -> Bytes {
        self.texts(rule)
            .map(|t| t.too_many.body(secs))
            .unwrap_or_default()
    }

    /// What a client refused by rule `rule` is told was exceeded.
    pub(crate) fn exceeded(&self, rule: usize) -> &str {
        self.texts(rule).map_or("", |t| t.exceeded.as_str())
    }
}

/// A rule's text that no decision changes, made once per policy.
struct RuleTexts {
    /// Its RateLimit-Policy value (`None`: not a value, not sent).
    policy: Option<HeaderValue>,
    /// Its RateLimit value's text, if it has one rate (`None`: written per
    /// response).
    ratelimit: Option<RateLimitValue>,
    /// Its 429 problem body, but for the number of seconds.
    too_many: TooManyBody,
    /// What a client it refuses is told was exceeded (gRPC's message).
    exceeded: String,
}

impl RuleTexts {
    fn new<S: Store, K>(rule: &HttpRule<S, K>) -> RuleTexts {
        let mut rates = members::policy_members(rule);
        let ratelimit = match (rates.next(), rates.next()) {
            (Some(one), None) => RateLimitValue::new(one),
            _ => None,
        };
        let rates = rule.store.rule().rates().as_slice();
        let distinct = (rule.distinct.as_ref()).and_then(|_| rates.first().copied());
        RuleTexts {
            policy: headers::policy_value(members::policy_members(rule)),
            ratelimit,
            too_many: TooManyBody::new(&rule.name, distinct),
            exceeded: too_many::exceeded(&rule.name, distinct),
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
        PolicyHandle(Arc::new(Handled {
            in_force: ArcSwap::from_pointee(InForce::new(policy)),
            no_client: Said::default(),
        }))
    }

    /// The policy now in force.
    pub fn current(&self) -> Arc<Policy<S, K>> {
        self.0.in_force.load().policy.clone()
    }

    /// Puts `policy` in force for every request from now on.
    pub fn replace(&self, policy: Policy<S, K>) {
        self.0.in_force.store(Arc::new(InForce::new(policy)));
    }

    /// The policy now in force, with what is derived from it.
    pub(crate) fn in_force(&self) -> Arc<InForce<S, K>> {
        self.0.in_force.load_full()
    }

    /// Whether this layer has logged that the server gives it no client
    /// address (once for all its services).
    pub(crate) fn no_client(&self) -> &Said {
        &self.0.no_client
    }
}
