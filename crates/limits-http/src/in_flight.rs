//! Caps on requests in flight (nginx's `limit_conn`): a rule marked
//! [`in_flight`](crate::HttpRule::in_flight) counts each request it admits
//! as a slot taken, and gives it back ([`Slots`]) when the request is done:
//! its response body has ended or was dropped (sent, failed, or the client
//! went away), or the request was refused by a later rule, or its response
//! never came. Giving back is settling the request to cost 0, so the rule's
//! limiter is what counts the slots: a sliding log of N per lease holds at
//! most N requests at once, and a slot never given back (an instance that
//! died holding it) frees itself when its entry leaves the window.

use crate::key::Key;
use crate::settle::settle_one;
use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use limits::{Receipt, Store};
use pin_project_lite::pin_project;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// One slot's giving back.
type Release = Box<dyn FnOnce() + Send + Sync>;

/// The slots a request holds, each given back when this is dropped (or
/// [`release`](Slots::release)d): empty, and no allocation, for a request
/// no in-flight rule admitted.
#[derive(Default)]
pub(crate) struct Slots(Vec<Release>);

impl Slots {
    /// Holds the slot a request took in `store` under `key`: given back by
    /// settling its `receipt` to cost 0 (`rule` names it in logs).
    pub(crate) fn hold<S: Store>(
        &mut self,
        store: &Arc<S>,
        rule: &str,
        key: &Key,
        receipt: Receipt,
    ) {
        let (store, rule, key) = (store.clone(), rule.to_string(), key.clone());
        self.0.push(Box::new(move || {
            if let Some(settling) = settle_one(&store, &rule, key, receipt, 0) {
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => drop(runtime.spawn(settling)),
                    Err(_) => {
                        tracing::warn!(rule = %rule, "a slot held outside a Tokio runtime was not given back: it frees itself when its lease ends")
                    }
                }
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
