//! Accepting connections with bounds a client cannot push past: header size
//! and count, time to send headers (slowloris; it also closes idle
//! keep-alive connections), and a graceful drain on shutdown.
//!
//! The time to send headers is not hyper's `header_read_timeout`, which
//! sets a timer per request, but [`header_timeout`](crate::listener::header_timeout):
//! one sweep per listener every quarter of the timeout, and two counts per
//! connection. A connection is closed between T and 1.25 T after it began
//! to wait for a request head (T the timeout), never while it is answering
//! a request.
//!
//! How many connections are open at once is capped in total and per client
//! address ([`connection_caps`](crate::listener::connection_caps)): a connection over a
//! cap is closed as soon as it is accepted.
//!
//! The accept loop runs on the server's runtime, or on one current-thread
//! runtime per core ([`per_core`](crate::listener::per_core)).

pub(crate) mod connection_caps;
mod drain;
mod header_timeout;
pub(crate) mod per_core;

use crate::listener::connection_caps::ConnectionCaps;
use crate::listener::drain::Drain;
use crate::listener::header_timeout::{Answer, WatchedIo, Watches};
use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use pin_project_lite::pin_project;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::net::TcpListener;
use tower::util::Oneshot;
use tower::{Service, ServiceExt};

/// The number of headers hyper 1 accepts when not told otherwise.
const HYPER_MAX_HEADERS: usize = 100;

/// Limits on what one connection may cost us.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Longest wait for a request's headers (and for the next request on an
    /// idle keep-alive connection), counted from the connection's accept or
    /// from its previous response written in full. A connection waiting
    /// longer is closed between this and 1.25 times this after it began to
    /// wait (checked every quarter of it; later only if the runtime is
    /// late), never sooner, and never while a request is being answered
    /// (the service running, reading the request's body, or the response's
    /// body being written, however long).
    pub header_timeout: Duration,
    /// Read buffer per connection: a request head must fit in it.
    pub max_head_bytes: usize,
    /// Most headers in one request.
    pub max_headers: usize,
    /// Longest wait for in-flight requests on shutdown.
    pub drain_timeout: Duration,
    /// Most connections open at once on the main listener (the admin
    /// listener has its own, [`ADMIN_MAX_CONNECTIONS`](crate::ADMIN_MAX_CONNECTIONS)):
    /// beyond it a new connection is closed as soon as it is accepted.
    /// Keep it within the file limit
    /// ([`connections_within_file_limit`](crate::connections_within_file_limit)),
    /// so that an accept never fails for want of a descriptor.
    pub max_connections: usize,
    /// Most connections open at once from one client address (an IPv6
    /// client by its `--ipv6-prefix` network; trusted proxies are bounded
    /// by the total only); beyond it, as beyond the total.
    pub max_connections_per_client: usize,
}

/// [`Bounds::max_connections`] unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// [`Bounds::max_connections_per_client`] unless told otherwise: a browser
/// opens at most 6 connections to a host, so 256 is some 40 browsers behind
/// one address all holding every connection they may open.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 256;

impl Default for Bounds {
    /// Headers within 10 s, 16 KiB and 100 of them; 30 s to drain; 10,000
    /// connections, 256 per client address.
    fn default() -> Bounds {
        Bounds {
            header_timeout: Duration::from_secs(10),
            max_head_bytes: 16 * 1024,
            max_headers: 100,
            drain_timeout: Duration::from_secs(30),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
        }
    }
}

/// Serves on `listener` until `shutdown` completes, then stops accepting
/// and lets in-flight requests finish (up to the drain timeout). A
/// connection that `caps` does not admit is closed at once. Each
/// connection is served by `per_connection(peer)`: any service (the layer
/// around a router or the proxy: no router around it to box its futures
/// and bodies once more) that knows the client's address without an
/// extension in every request.
pub(crate) async fn serve<M, A, B>(
    listener: TcpListener,
    per_connection: M,
    bounds: Bounds,
    caps: Arc<ConnectionCaps>,
    shutdown: impl Future<Output = ()>,
) where
    M: Fn(SocketAddr) -> A,
    A: Service<axum::extract::Request, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    A::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let drain = Drain::new();
    let watches = Watches::start(bounds.header_timeout);
    let mut http = http1::Builder::new();
    // No timer, no timeout of hyper's: its header timeout sets a timer per
    // request; `watches` bounds the wait.
    http.header_read_timeout(None)
        .max_buf_size(bounds.max_head_bytes.max(8192))
        // One buffer per response (head and a small body copied together)
        // and one `write`, not a `writev` of a queue of buffers: 3-5% less
        // CPU per request on the allow path (BENCHMARKS.md, HTTP).
        .writev(false);
    // Hyper's own bound is 100 headers, parsed into slots on the stack; any
    // other bound makes it set up the slots per request (see hyper's
    // `max_headers`): ask for it only when it differs.
    if bounds.max_headers != HYPER_MAX_HEADERS {
        http.max_headers(bounds.max_headers);
    }
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: wait, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = caps.admit(peer) else {
            // Over a cap: closed before a byte is read (counted by `caps`).
            tracing::debug!(%peer, "connection over the cap: closed");
            drop(stream);
            continue;
        };
        let app = per_connection(peer);
        let watch = watches.watch();
        let service = {
            let watch = watch.clone();
            hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                watch.head();
                Answer::new(call_now(app.clone(), req.map(body)), watch.clone())
            })
        };
        let io = WatchedIo::new(TokioIo::new(stream), watch.clone());
        let conn = drain.watch(http.serve_connection(io, service), watch);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            // The connection and its socket are gone: its place is free.
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!("shutting down: no new connections; finishing requests in flight");
    if tokio::time::timeout(bounds.drain_timeout, drain.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(timeout = ?bounds.drain_timeout, "requests still in flight after the drain timeout");
    }
}

/// `app`'s answer to `request`, called at once when `app` is ready (every
/// service here always is): hyper reads from the connection again right
/// after handing over a request, before it polls the answer, and a request
/// still held then (as `oneshot` holds it until its first poll) holds the
/// bytes of its head, so hyper allocates a new read buffer (8 kB) instead of
/// reusing its own: one allocation per request. A service that is not
/// ready is called once it is, as `oneshot` does.
fn call_now<A, B>(mut app: A, request: axum::extract::Request) -> CallNow<A>
where
    A: Service<axum::extract::Request, Response = http::Response<B>, Error = Infallible>,
{
    // Asked without a waker: if it is not ready, `oneshot` asks again with one.
    let mut cx = Context::from_waker(Waker::noop());
    match app.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => CallNow::Called {
            answer: app.call(request),
        },
        Poll::Ready(Err(never)) => match never {},
        Poll::Pending => CallNow::Waiting {
            oneshot: app.oneshot(request),
        },
    }
}

pin_project! {
    /// The answer of [`call_now`]: the service's future, polled where it
    /// was made (an `async` block holding it moved it out on its first
    /// poll: a copy of the whole future, the layer's statuses with it, per
    /// request), or `oneshot`'s for a service that was not ready.
    #[project = CallNowProjection]
    enum CallNow<A>
    where
        A: Service<axum::extract::Request>,
    {
        Called { #[pin] answer: A::Future },
        Waiting { #[pin] oneshot: Oneshot<A, axum::extract::Request> },
    }
}

impl<A, B> Future for CallNow<A>
where
    A: Service<axum::extract::Request, Response = http::Response<B>, Error = Infallible>,
{
    type Output = Result<http::Response<B>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CallNowProjection::Called { answer } => answer.poll(cx),
            CallNowProjection::Waiting { oneshot } => oneshot.poll(cx),
        }
    }
}

/// The request's body as axum's: hyper's boxed, or, when hyper says it ends
/// at once (no body, or `Content-Length: 0`), [`NoBody`] in axum's box,
/// which allocates nothing for it (one allocation per request fewer on a
/// `GET`).
fn body(incoming: Incoming) -> axum::body::Body {
    if incoming.is_end_stream() {
        axum::body::Body::new(UnsyncBoxBody::new(NoBody))
    } else {
        axum::body::Body::new(incoming)
    }
}

/// A body that ends at once, like hyper's empty [`Incoming`]; zero-sized, so
/// that boxing it allocates nothing, and with axum's error type, so that
/// axum takes its box as its own instead of boxing it again.
struct NoBody;

impl http_body::Body for NoBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        true
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(0)
    }
}

#[cfg(test)]
mod tests;
