//! The proxy as a tower service for one connection: the client's address
//! is known when the connection is accepted, so the service carries it and
//! no request needs it as an extension (which would cost three allocations
//! per request: the extension map, its table and the value), and its
//! `X-Forwarded-For` entry is written once, not per request.

use super::forwarding::ClientAddr;
use super::{Proxy, ProxyBody};
use axum::body::Body;
use http::{Request, Response};
use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
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
#[derive(Clone)]
pub struct Forwarding {
    proxy: Proxy,
    client: Option<ClientAddr>,
}

impl Proxy {
    /// A service forwarding requests from `client` (its address goes into
    /// `X-Forwarded-For`; `None` when unknown): one per connection.
    pub fn for_client(&self, client: Option<IpAddr>) -> Forwarding {
        Forwarding {
            proxy: self.clone(),
            client: client.and_then(ClientAddr::new),
        }
    }
}

impl tower::Service<Request<Body>> for Forwarding {
    type Response = Response<ProxyBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ProxyBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let proxy = self.proxy.clone();
        let client = self.client.clone();
        Box::pin(async move { Ok(proxy.exchange(request, client.as_ref()).await) })
    }
}
