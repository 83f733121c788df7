//! A rule that counts only some responses (its [`Counts`](crate::Counts))
//! refunds the requests it admitted when their response head arrives with
//! a status it does not count, and one that reads the real cost from the
//! response ([`CostFrom`](crate::CostFrom)) settles them to it: what a
//! request's decision leaves for its response ([`Unsettled`]), and the
//! settlement ([`settle_by_response`]), left [`Pending`] for a store
//! elsewhere.

use crate::in_force::InForce;
use crate::key::Key;
use crate::policy::HttpRule;
use http::{HeaderMap, StatusCode};
use limits::{Receipt, Store};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Waker};

/// A request one rule admitted and may refund: the rule (its index in the
/// policy), the key it was counted under, and the store's receipt.
pub(crate) struct Unsettled {
    pub rule: usize,
    pub key: Key,
    pub receipt: Receipt,
}

/// What a request's rules may refund once its response head is known:
/// empty (no allocation) unless a rule counts only some responses.
pub(crate) type Settlements = Vec<Unsettled>;

/// What settling a response leaves for a store elsewhere (Redis): each
/// settlement's future, or none (no allocation).
#[must_use = "a store elsewhere settles only when awaited or spawned"]
pub(crate) struct Pending(Vec<Settling>);

/// One settlement by a store elsewhere.
pub(crate) type Settling = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Pending {
    /// Settles in turn: awaited before the response goes out, so that the
    /// client's next request finds its last one settled, as in memory.
    pub(crate) async fn finish(self) {
        for settle in self.0 {
            settle.await;
        }
    }

    /// Settles in a task of its own, where the response cannot wait (it is
    /// ready, or ours): the settlements land a round trip later.
    pub(crate) fn spawn(self) {
        if !self.0.is_empty() {
            tokio::spawn(self.finish());
        }
    }
}

/// Settles each request in `unsettled` by its response, of `status` and
/// `headers` (none: our own answer): refunded in full when its rule does
/// not count the status, else to the real cost its rule reads from the
/// headers ([`CostFrom`](crate::CostFrom)), the estimate it was counted
/// for when they do not say. A store that settles in this process
/// (memory) does so at once; any other's settlement is left [`Pending`].
/// A settlement that fails is logged: the request stays as counted.
pub(crate) fn settle_by_response<S: Store, K>(
    in_force: &InForce<S, K>,
    unsettled: Settlements,
    status: StatusCode,
    headers: Option<&HeaderMap>,
) -> Pending {
    let mut pending = Vec::new();
    for Unsettled { rule, key, receipt } in unsettled {
        let rule = &in_force.policy.rules[rule];
        let cost = real_cost(rule, receipt.cost, status, headers);
        if cost == receipt.cost {
            continue;
        }
        pending.extend(settle_one(&rule.store, &rule.name, key, receipt, cost));
    }
    Pending(pending)
}

/// Settles the request of `receipt` that `store` counted under `key` to
/// `cost`: at once in a store of this process (None left to do), else the
/// settlement to await. A settlement that fails is logged (`rule` names
/// it): the request stays as counted.
pub(crate) fn settle_one<S: Store>(
    store: &Arc<S>,
    rule: &str,
    key: Key,
    receipt: Receipt,
    cost: u64,
) -> Option<Settling> {
    let local = store.local().is_some();
    let (store, name) = (store.clone(), rule.to_string());
    let settle = async move {
        if let Err(e) = store.settle(key.as_str(), None, receipt, cost).await {
            tracing::debug!(rule = %name, key = %key, cost, error = %e, "could not settle a request");
        }
    };
    if !local {
        return Some(Box::pin(settle));
    }
    // In memory: done on the first poll.
    let mut settle = pin!(settle);
    let done = settle
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
    if done.is_pending() {
        tracing::warn!(rule = %rule, "an in-process store did not settle at once");
    }
    None
}

/// The real cost of a request `rule` counted at `counted`, by its
/// response: nothing if the rule does not count `status`, else what its
/// `cost_from` header says, else `counted`.
fn real_cost<S, K>(
    rule: &HttpRule<S, K>,
    counted: u64,
    status: StatusCode,
    headers: Option<&HeaderMap>,
) -> u64 {
    if !rule.count.counts(status) {
        return 0;
    }
    let Some(from) = &rule.cost_from else {
        return counted;
    };
    match headers.and_then(|headers| from.read(headers)) {
        Some(cost) => cost,
        None => {
            if headers.is_some() {
                tracing::debug!(rule = %rule.name, header = %from.header, "no cost in the response: the estimate stands");
            }
            counted
        }
    }
}
