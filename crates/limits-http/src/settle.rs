//! A rule that counts only some responses (its [`Counts`](crate::Counts))
//! refunds the requests it admitted when their response head arrives with
//! a status it does not count: what a request's decision leaves for its
//! response ([`Unsettled`]), and the refund ([`settle_by_status`]), left
//! [`Pending`] for a store elsewhere.

use crate::in_force::InForce;
use crate::key::Key;
use http::StatusCode;
use limits::{Receipt, Store};
use std::future::Future;
use std::pin::{pin, Pin};
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
type Settling = Pin<Box<dyn Future<Output = ()> + Send>>;

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

/// Refunds each request in `unsettled` whose rule does not count a
/// response of `status`. A store that settles in this process (memory)
/// does so at once; any other's settlement is left [`Pending`]. A refund
/// that fails is logged: the request stays counted.
pub(crate) fn settle_by_status<S: Store, K>(
    in_force: &InForce<S, K>,
    unsettled: Settlements,
    status: StatusCode,
) -> Pending {
    let mut pending = Vec::new();
    for Unsettled { rule, key, receipt } in unsettled {
        let rule = &in_force.policy.rules[rule];
        if rule.count.counts(status) {
            continue;
        }
        let store = rule.store.clone();
        let name = rule.name.clone();
        let refund = async move {
            if let Err(e) = store.settle(key.as_str(), None, receipt, 0).await {
                tracing::debug!(rule = %name, key = %key, error = %e, "could not refund a request");
            }
        };
        if rule.store.local().is_some() {
            // In memory: done on the first poll.
            let mut refund = pin!(refund);
            let done = refund
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()));
            if done.is_pending() {
                tracing::warn!(rule = %rule.name, "an in-process store did not settle at once");
            }
        } else {
            pending.push(Box::pin(refund) as Settling);
        }
    }
    Pending(pending)
}
