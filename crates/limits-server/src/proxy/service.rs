//! The proxy as a tower service for one connection: the client's address
//! is known when the connection is accepted, so the service carries it and
//! no request needs it as an extension (which would cost three allocations
//! per request: the extension map, its table and the value), and its
//! `X-Forwarded-For` entry is written once, not per request.

use super::forwarding::ClientAddr;
use super::timer::SharedTimer;
use super::{Proxy, ProxyBody};
use axum::body::Body;
use http::{Request, Response};
use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::task::{Context, Poll};

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
/// `F` is the future of one forwarded request, unboxed: an `async` block's
/// type, which has no name, so the type is written as
/// `Forwarding<impl Future<...>>` where it must be.
pub struct Forwarding<F> {
    proxy: Proxy,
    client: Option<ClientAddr>,
    timer: SharedTimer,
    /// Starts one request's exchange: [`forward_one`], whose future is `F`.
    start: fn(Proxy, Option<ClientAddr>, SharedTimer, Request<Body>) -> F,
}

impl<F> Clone for Forwarding<F> {
    fn clone(&self) -> Self {
        Forwarding {
            proxy: self.proxy.clone(),
            client: self.client.clone(),
            timer: self.timer.clone(),
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
    ) -> Forwarding<impl Future<Output = Answer> + Send + 'static> {
        Forwarding {
            proxy: self.clone(),
            client: client.and_then(ClientAddr::new),
            timer: SharedTimer::default(),
            start: forward_one,
        }
    }
}

/// One request's exchange on the connection's timer, which it takes for
/// the time of the wait and gives back.
async fn forward_one(
    proxy: Proxy,
    client: Option<ClientAddr>,
    timer: SharedTimer,
    request: Request<Body>,
) -> Answer {
    let mut lent = timer.take();
    let response = proxy
        .exchange(request, client.as_ref(), lent.as_mut())
        .await;
    timer.give_back(lent);
    Ok(response)
}

impl<F> tower::Service<Request<Body>> for Forwarding<F>
where
    F: Future<Output = Answer>,
{
    type Response = Response<ProxyBody>;
    type Error = Infallible;
    type Future = F;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> F {
        let proxy = self.proxy.clone();
        let client = self.client.clone();
        (self.start)(proxy, client, self.timer.clone(), request)
    }
}
