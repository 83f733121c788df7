//! The proxy as a tower service for one connection: the client's address
//! is known when the connection is accepted, so the service carries it and
//! no request needs it as an extension (which would cost three allocations
//! per request: the extension map, its table and the value), and its
//! `X-Forwarded-For` entry is written once, not per request. Its requests,
//! one at a time, share one upstream timer (see `timer`), and each one's
//! future is written out ([`Exchange`]) rather than boxed: it is small, and
//! the request is on its way to the upstream once it is made.

use super::forwarding::ClientAddr;
use super::pool::Pool;
use super::sending::{Sending, Sent};
use super::timer::{self, SharedTimer};
use super::{Prepared, Proxy, ProxyBody};
use axum::body::Body;
use http::{Request, Response};
use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::time::{Instant, Sleep};

/// [`Proxy::forward`] as a [`tower::Service`], for the requests of one
/// client: made by [`Proxy::for_client`]. Its responses carry a
/// [`ProxyBody`] (the upstream's body as it streams, or the proxy's own
/// problem), not boxed into axum's `Body`.
///
/// ```
/// use limits_server::Proxy;
/// use std::time::Duration;
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Nothing listens on port 9 of 127.0.0.1: the proxy answers 502 itself.
/// let proxy = Proxy::new("http://127.0.0.1:9", Duration::from_secs(1)).unwrap();
/// let client = "192.0.2.7".parse().ok();
/// let request = http::Request::get("/").body(axum::body::Body::empty()).unwrap();
/// let response = proxy.for_client(client).oneshot(request).await.unwrap();
/// assert_eq!(response.status(), 502);
/// # }
/// ```
///
/// `H` is the type of hyper's future for one exchange with the upstream,
/// which has no name: the type is written `Forwarding<impl Future<...>>`
/// where it must be. A request's future (`Exchange`) holds it unboxed.
pub struct Forwarding<H> {
    conn: Arc<Conn>,
    /// Sends a request on the pool: `Pool::start`, whose future holds an `H`.
    start: fn(&Arc<Pool>, Request<Body>) -> Sending<H>,
}

/// What one connection's requests share.
struct Conn {
    proxy: Proxy,
    client: Option<ClientAddr>,
    timer: SharedTimer,
}

impl<H> Clone for Forwarding<H> {
    fn clone(&self) -> Self {
        Forwarding {
            conn: Arc::clone(&self.conn),
            start: self.start,
        }
    }
}

/// What one forwarded request's future answers.
type Answer = Result<Response<ProxyBody>, Infallible>;

impl Proxy {
    /// A service forwarding requests from `client` (its address goes into
    /// `X-Forwarded-For`; `None` when unknown): one per connection, whose
    /// requests share one upstream timeout timer.
    pub fn for_client(
        &self,
        client: Option<IpAddr>,
    ) -> Forwarding<impl Future<Output = Sent> + Send + 'static> {
        let conn = Conn {
            proxy: self.clone(),
            client: client.and_then(ClientAddr::new),
            timer: SharedTimer::default(),
        };
        Forwarding {
            conn: Arc::new(conn),
            start: Pool::start,
        }
    }
}

impl<H> tower::Service<Request<Body>> for Forwarding<H>
where
    H: Future<Output = Sent>,
{
    type Response = Response<ProxyBody>;
    type Error = Infallible;
    type Future = Exchange<H>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    /// Prepares the request and sends it on a pooled connection at once,
    /// with the connection's timer going off no later than its deadline.
    fn call(&mut self, request: Request<Body>) -> Exchange<H> {
        let conn = Arc::clone(&self.conn);
        let grpc = limits_http::is_grpc(request.headers());
        match conn.proxy.prepare(request, conn.client.as_ref(), grpc) {
            Prepared::Forward(request) => {
                let inner = &*conn.proxy.inner;
                let deadline = timer::deadline(inner.timeout);
                let timer = conn.timer.take(deadline);
                let sending = (self.start)(&conn.proxy.pool, request);
                Exchange {
                    sending: Some(sending),
                    answer: None,
                    timer: Some((timer, deadline)),
                    grpc,
                    conn,
                }
            }
            Prepared::Answer(answer) => Exchange {
                sending: None,
                answer: Some(answer),
                timer: None,
                grpc,
                conn,
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// One forwarded request: the upstream's answer within the timeout, or
    /// the proxy's own answer at once.
    pub struct Exchange<H> {
        #[pin]
        sending: Option<Sending<H>>,
        answer: Option<Response<ProxyBody>>,
        // The connection's timer, which goes off no later than this
        // request's own deadline, and that deadline.
        timer: Option<(Pin<Box<Sleep>>, Instant)>,
        // Whether the client speaks gRPC: our own answers are then its statuses.
        grpc: bool,
        conn: Arc<Conn>,
    }
}

impl<H> Future for Exchange<H>
where
    H: Future<Output = Sent>,
{
    type Output = Answer;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let mut this = self.project();
        let Some(sending) = this.sending.as_mut().as_pin_mut() else {
            return match this.answer.take() {
                Some(answer) => Poll::Ready(Ok(answer)),
                // Polled again after it answered.
                None => Poll::Pending,
            };
        };
        // As `tokio::time::timeout`: the exchange first, then the timer.
        let answer = match sending.poll(cx) {
            Poll::Ready(answer) => Some(answer),
            Poll::Pending => match this.timer {
                Some((timer, deadline)) => {
                    ready!(timer::poll_expired(timer.as_mut(), *deadline, cx));
                    None
                }
                None => return Poll::Pending,
            },
        };
        this.sending.set(None);
        if let Some((timer, _)) = this.timer.take() {
            this.conn.timer.give_back(timer);
        }
        Poll::Ready(Ok(this.conn.proxy.answer(answer, *this.grpc)))
    }
}
