//! Caps on requests in flight (nginx's `limit_conn`): a rule marked
//! [`in_flight`](crate::HttpRule::in_flight) counts each request it admits
//! as a slot taken, and gives it back ([`Slots`]) when the request is done:
//! its response body has ended or was dropped (sent, failed, or the client
//! went away), or the request was refused by a later rule, or its response
//! never came. Giving back is settling the request to cost 0, so the rule's
//! limiter is what counts the slots: a sliding log of N per lease holds at
//! most N requests at once. While a request is under way its slot is
//! renewed every half lease ([`Store::renew`]: its entry moves to now), so
//! a response longer than the lease keeps its slot, and a slot never given
//! back (an instance that died holding it) frees itself within one lease
//! of its last renewal.

use crate::key::Key;
use crate::settle::settle_one;
use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use limits::{Receipt, Store};
use pin_project_lite::pin_project;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

/// One slot's giving back.
type Release = Box<dyn FnOnce() + Send + Sync>;

/// The slots a request holds, each given back when this is dropped (or
/// [`release`](Slots::release)d): empty, and no allocation, for a request
/// no in-flight rule admitted.
#[derive(Default)]
pub(crate) struct Slots(Vec<Release>);

impl Slots {
    /// Holds the slot a request took in `store` under `key`: renewed every
    /// half of the rule's lease (its shortest window) while held, given
    /// back by settling its latest receipt to cost 0 (`rule` names it in
    /// logs). Outside a Tokio runtime it is not renewed.
    pub(crate) fn hold<S: Store>(
        &mut self,
        store: &Arc<S>,
        rule: &str,
        key: &Key,
        receipt: Receipt,
    ) {
        let slot = Arc::new(Slot {
            store: store.clone(),
            rule: rule.to_string(),
            key: key.clone(),
            lease: Mutex::new(Lease::Held(receipt)),
        });
        let renewal = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let every = renewal_period(store.rule());
            let first = tokio::time::Instant::now() + every;
            runtime
                .spawn(slot.clone().renew_every(first, every))
                .abort_handle()
        });
        self.0.push(Box::new(move || {
            let held = std::mem::replace(&mut *slot.lease(), Lease::Done);
            // Renewing: the renewal gives back what it renewed.
            if let Lease::Held(receipt) = held {
                if let Some(renewal) = renewal {
                    renewal.abort();
                }
                slot.give_back(receipt);
            }
        }));
    }

    /// Gives every slot back now.
    pub(crate) fn release(&mut self) {
        for release in self.0.drain(..) {
            release();
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        self.release();
    }
}

/// Half the rule's shortest window (its lease), at least a millisecond.
fn renewal_period(rule: &limits::Rule) -> Duration {
    let lease = rule.rates().iter().map(|rate| rate.window()).min();
    (lease.unwrap_or_default() / 2).max(Duration::from_millis(1))
}

/// Where a held slot's receipt is: with the slot, out for renewal, or
/// given back (its request done).
enum Lease {
    Held(Receipt),
    Renewing,
    Done,
}

/// One slot a request holds, shared by its giving back and its renewal.
struct Slot<S> {
    store: Arc<S>,
    rule: String,
    key: Key,
    lease: Mutex<Lease>,
}

impl<S: Store> Slot<S> {
    fn lease(&self) -> std::sync::MutexGuard<'_, Lease> {
        self.lease.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Settles `receipt` to cost 0: at once in memory, else in a task.
    fn give_back(&self, receipt: Receipt) {
        if let Some(settling) = settle_one(&self.store, &self.rule, self.key.clone(), receipt, 0) {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(settling)),
                Err(_) => {
                    tracing::warn!(rule = %self.rule, "a slot held outside a Tokio runtime was not given back: it frees itself when its lease ends")
                }
            }
        }
    }

    /// Renews the slot at `first`, then every `every`, until it is given
    /// back. A renewal that fails leaves the receipt as it was (the slot
    /// frees itself when its lease ends); one the request finished during
    /// gives back what it renewed.
    async fn renew_every(self: Arc<Self>, first: tokio::time::Instant, every: Duration) {
        let mut due = first;
        loop {
            tokio::time::sleep_until(due).await;
            due = tokio::time::Instant::now() + every;
            let receipt = {
                let mut lease = self.lease();
                let Lease::Held(receipt) = *lease else {
                    return;
                };
                *lease = Lease::Renewing;
                receipt
            };
            let renewed = match self.store.renew(self.key.as_str(), None, receipt).await {
                Ok(renewed) => renewed,
                Err(e) => {
                    tracing::debug!(rule = %self.rule, key = %self.key, error = %e, "could not renew a slot: it frees itself when its lease ends");
                    receipt
                }
            };
            let mut lease = self.lease();
            if let Lease::Done = *lease {
                drop(lease);
                self.give_back(renewed);
                return;
            }
            *lease = Lease::Held(renewed);
        }
    }
}

pin_project! {
    /// The inner service's response body, holding the slots its request
    /// took in the rules that cap requests in flight until it ends or is
    /// dropped.
    pub struct Holding<B> {
        #[pin]
        body: B,
        slots: Slots,
    }
}

impl<B> Holding<B> {
    pub(crate) fn new(body: B, slots: Slots) -> Holding<B> {
        Holding { body, slots }
    }

    /// The body, its slots given back.
    pub fn into_inner(self) -> B {
        self.body
    }
}

impl<B: Body> Body for Holding<B>
where
    B::Data: Buf,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = ready!(this.body.poll_frame(cx));
        if !matches!(frame, Some(Ok(_))) && !this.slots.is_empty() {
            // The body's end, or its failure: done with.
            this.slots.release();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
