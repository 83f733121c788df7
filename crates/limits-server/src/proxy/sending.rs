//! A request on its way to the upstream, as a future of its own size.
//!
//! Every proxied request's future is moved a few times on its way into
//! hyper's connection task (built by the service, wrapped by the layer, by
//! `oneshot`, then stored by hyper), each move a copy of all of it. Written
//! as `async` code, it would hold the request several times over (as each
//! nested function's argument, and inside hyper's exchange future). Here
//! the request is handed to a pooled connection when the
//! future is made ([`Pool::start`]: hyper's `try_send_request` sends it at
//! once, and its future only waits for the answer), so the future holds
//! that wait, the connection and nothing else. Opening a connection, and
//! trying the next one after a pooled one was found closed, are rare:
//! those go to [`Pool::send`], boxed, so that they do not size the future
//! of every request (`service::Exchange`, this and the timer).

use super::pool::{Pool, Returning, Sender};
use super::upstream::UpstreamError;
use axum::body::Body;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::TrySendError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// The boxed slow path: [`Pool::send`].
type Slow = Pin<Box<dyn Future<Output = Result<Response<Returning>, UpstreamError>> + Send>>;

/// What hyper's `try_send_request` answers.
pub(super) type Sent = Result<Response<Incoming>, TrySendError<Request<Body>>>;

pin_project_lite::pin_project! {
    /// The upstream's response to one request, with the connection it came
    /// on given back to the pool when its body ends (see [`Returning`]).
    /// `H` is hyper's future for an exchange on a pooled connection, which
    /// has no name.
    pub(super) struct Sending<H> {
        // The exchange on a pooled connection, and that connection.
        #[pin]
        sent: Option<H>,
        sender: Option<Sender>,
        pool: Arc<Pool>,
        // Anything else.
        slow: Option<Slow>,
    }
}

impl Pool {
    /// Sends `request` on the most recently used idle connection now, or,
    /// when there is none, starts [`Pool::send`] for it; the future answers
    /// as [`Pool::send`] does.
    pub(super) fn start(
        self: &Arc<Self>,
        request: Request<Body>,
    ) -> Sending<impl Future<Output = Sent> + Send + 'static> {
        let pool = Arc::clone(self);
        let (sent, sender, slow) = match self.take_idle() {
            Some(mut sender) => (Some(sender.try_send_request(request)), Some(sender), None),
            None => {
                let slow: Slow = Box::pin(Arc::clone(&pool).send(request));
                (None, None, Some(slow))
            }
        };
        Sending {
            sent,
            sender,
            pool,
            slow,
        }
    }
}

impl<H> Future for Sending<H>
where
    H: Future<Output = Sent>,
{
    type Output = Result<Response<Returning>, UpstreamError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Some(sent) = this.sent.as_mut().as_pin_mut() {
            let answer = ready!(sent.poll(cx));
            this.sent.set(None);
            match answer {
                Ok(response) => {
                    let sender = this.sender.take();
                    let pool = &*this.pool;
                    return Poll::Ready(
                        Ok(response.map(|body| Returning::new(body, sender, pool))),
                    );
                }
                // The connection closed before the request was written to
                // it (the upstream hung up while it was idle): hyper hands
                // the request back unsent, and it goes to the next one.
                Err(mut e) => match e.take_message() {
                    Some(unsent) => {
                        *this.sender = None;
                        let pool = Arc::clone(this.pool);
                        *this.slow = Some(Box::pin(pool.send(unsent)));
                    }
                    None => return Poll::Ready(Err(UpstreamError::Http(e.into_error()))),
                },
            }
        }
        match this.slow {
            Some(slow) => slow.as_mut().poll(cx),
            // Polled again after it answered.
            None => Poll::Pending,
        }
    }
}
