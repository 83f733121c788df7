//! The response future of the layer's service, named so that the common
//! request costs no allocation for it.
//!
//! When every matching rule's store decides at once (in memory) and no key
//! reads the body, the service decides in `call` itself: the future is then
//! our own answer, ready, or the inner service's future, to whose response
//! the RateLimit headers are added as it completes. Only what must wait (a
//! body read for a key, a leaky bucket's delay, a store over the network)
//! is an `async` block, boxed: the one arm whose size is not known here.

use crate::in_flight::Slots;
use crate::in_force::InForce;
use crate::members::Statuses;
use crate::respond::{LimitedBody, add_headers, untouched};
use crate::settle::{Settlements, settle_by_response};
use http::Response;
use limits::Store;
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

/// A boxed future, for what must wait.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

pin_project! {
    /// The future of [`RateLimit`](crate::RateLimit)'s response: the inner
    /// service's response `F` (of body `B`, or error `E`) with the
    /// RateLimit headers, or one of ours.
    pub struct ResponseFuture<F, B, E, S, K> {
        #[pin]
        kind: Kind<F, B, E, S, K>,
    }
}

pin_project! {
    #[project = KindProjection]
    enum Kind<F, B, E, S, K> {
        // Our answer (429, 400, 503), made in `call`.
        Ready { response: Option<Response<LimitedBody<B>>> },
        // The inner service's response, with the headers of the rules it
        // passed added when it completes (`None`: no rule matched it).
        Inner {
            #[pin]
            future: F,
            headers: Option<Headers<S, K>>,
        },
        // Everything that waits before the inner service is called.
        Boxed { future: BoxFuture<Result<Response<LimitedBody<B>>, E>> },
    }
}

/// The RateLimit headers a response is owed: the statuses of the rules it
/// passed, under the policy they decided in; and what its rules refund if
/// its status is one they do not count.
pub(crate) struct Headers<S, K> {
    pub in_force: Arc<InForce<S, K>>,
    pub statuses: Statuses,
    pub legacy: bool,
    pub unsettled: Settlements,
    /// The slots taken in rules that cap requests in flight, held by the
    /// response body (given back if the response never comes).
    pub slots: Slots,
}

impl<F, B, E, S, K> ResponseFuture<F, B, E, S, K> {
    /// Our own answer.
    pub(crate) fn ready(response: Response<LimitedBody<B>>) -> Self {
        let response = Some(response);
        let kind = Kind::Ready { response };
        ResponseFuture { kind }
    }

    /// The inner service's response, with `headers` added.
    pub(crate) fn inner(future: F, headers: Option<Headers<S, K>>) -> Self {
        let kind = Kind::Inner { future, headers };
        ResponseFuture { kind }
    }

    /// What must wait.
    pub(crate) fn boxed(future: BoxFuture<Result<Response<LimitedBody<B>>, E>>) -> Self {
        let kind = Kind::Boxed { future };
        ResponseFuture { kind }
    }
}

impl<F, B, E, S, K> Future for ResponseFuture<F, B, E, S, K>
where
    F: Future<Output = Result<Response<B>, E>>,
    S: Store,
{
    type Output = Result<Response<LimitedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Ready { response } => {
                let response = response.take().expect("polled after it completed");
                Poll::Ready(Ok(response))
            }
            KindProjection::Inner { future, headers } => {
                let response = ready!(future.poll(cx))?;
                // Read in place (the statuses are held inline), dropped
                // with the future.
                Poll::Ready(Ok(match headers {
                    Some(h) => {
                        if !h.unsettled.is_empty() {
                            let unsettled = std::mem::take(&mut h.unsettled);
                            // Decided at once: in memory, settled at once too.
                            let (status, headers) = (response.status(), Some(response.headers()));
                            settle_by_response(&h.in_force, unsettled, status, headers).spawn();
                        }
                        let slots = std::mem::take(&mut h.slots);
                        add_headers(&h.in_force, &h.statuses, h.legacy, response, slots)
                    }
                    None => untouched(response),
                }))
            }
            KindProjection::Boxed { future } => future.as_mut().poll(cx),
        }
    }
}
