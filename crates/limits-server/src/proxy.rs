//! The reverse proxy behind the limiter (`limits serve --upstream URL`).
//!
//! A reverse proxy is a client to the upstream and a server to the caller at
//! once, and most of what it must get right is keeping those two roles apart:
//!
//! - **Hop-by-hop headers stay on their hop.** `Connection` (and every header
//!   it names), `Keep-Alive`, `Transfer-Encoding`, `Upgrade` and friends
//!   describe one TCP connection; passing them on would make the upstream (or
//!   the caller) act on a connection it is not part of. They are dropped in
//!   both directions (RFC 9110 §7.6.1).
//! - **The upstream learns who really asked.** The client address is appended
//!   to `X-Forwarded-For`, the original `Host` travels as `X-Forwarded-Host`,
//!   and `Host` itself becomes the upstream's authority so virtual hosting
//!   upstream still works.
//! - **Bodies stream.** Request and response bodies pass through frame by
//!   frame; nothing is buffered whole, so a large upload or a slow
//!   server-sent stream costs memory for one chunk, not for the whole body.
//! - **Failures are the proxy's, and say so.** An upstream that cannot be
//!   reached is a 502 ("upstream unavailable"), one that does not answer in
//!   time is a 504 ("upstream timed out"), each with an RFC 9457 problem
//!   body. The client is not told the upstream's address (an internal
//!   name it has no use for); the log names it, with the cause. They are
//!   counted, logged, and never panic.
//!
//! Plain HTTP/1.1 to the upstream only: there is no TLS in this build.

mod body;
mod forwarding;
mod pool;
mod sending;
mod service;
#[cfg(test)]
mod tests;
mod timer;
mod upstream;

use axum::body::Body;
use forwarding::{rewrite_request, strip_hop_by_hop, ClientAddr};
use http::header::{self, HeaderValue};
use http::uri::Uri;
use http::{Request, Response, StatusCode, Version};
use pool::{Pool, Returning};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use upstream::{chain, client_body_failed, describe, parse_upstream, UpstreamError};

pub use body::ProxyBody;
pub use service::Forwarding;

/// A reverse proxy to one plain-HTTP upstream. Cheap to clone: clones share
/// the connection pool and the error counters ([`with_own_pool`](Self::with_own_pool):
/// the counters only).
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
    /// The idle upstream connections this proxy's requests take and give back.
    pool: Arc<Pool>,
}

/// What every copy of a proxy shares, whatever pool it uses.
struct Inner {
    /// `host[:port]`, sent as `Host`.
    host: HeaderValue,
    /// The upstream's base path without a trailing slash ("" for none).
    base_path: String,
    /// `http://authority/base`, for messages.
    name: String,
    timeout: Duration,
    bad_gateway: AtomicU64,
    gateway_timeout: AtomicU64,
    bad_request_body: AtomicU64,
}

/// How many forwarded requests failed, by the status the caller was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyErrors {
    /// Upstream unreachable, refused, or reset before answering (502).
    pub bad_gateway: u64,
    /// Upstream sent no response headers within the timeout (504).
    pub gateway_timeout: u64,
    /// The client's request body failed on the way (malformed chunks, cut
    /// short): the client's error, answered 400, not the upstream's.
    pub bad_request_body: u64,
}

impl Proxy {
    /// A proxy to `upstream`: "http://host:port", optionally with a base
    /// path ("http://127.0.0.1:9000/api") that every request path is
    /// appended to. `timeout` bounds the wait for the upstream's response
    /// headers (connecting included); the body may take as long as it takes.
    ///
    /// Errors name what is wrong with `upstream`: not a URL, not `http://`
    /// (https is refused: this build has no TLS), no host, or parts a
    /// proxy target cannot carry (credentials, a query).
    pub fn new(upstream: &str, timeout: Duration) -> Result<Proxy, String> {
        let (authority, base_path) = parse_upstream(upstream)?;
        let name = format!("http://{authority}{base_path}");
        let host = HeaderValue::from_str(authority.as_str())
            .map_err(|e| format!("upstream {upstream:?}: host is not a valid Host header: {e}"))?;
        Ok(Proxy {
            pool: Pool::new(&authority),
            inner: Arc::new(Inner {
                host,
                base_path,
                name,
                timeout,
                bad_gateway: AtomicU64::new(0),
                gateway_timeout: AtomicU64::new(0),
                bad_request_body: AtomicU64::new(0),
            }),
        })
    }

    /// This proxy with a pool of its own, empty: for a thread that serves
    /// its connections on its own runtime, so that its requests take and
    /// give back connections no other thread touches (and whose tasks run
    /// on that thread). The error counters stay shared.
    pub fn with_own_pool(&self) -> Proxy {
        Proxy {
            inner: Arc::clone(&self.inner),
            pool: self.pool.empty_like(),
        }
    }

    /// Forwards one request from `client` (its address goes into
    /// `X-Forwarded-For`) and returns the upstream's response, or a 502/504
    /// problem if the upstream failed, or a 400 if the client's body did.
    /// `CONNECT` (a tunnel, which no rule could see into) is refused with
    /// 405. Never panics; always returns a response.
    pub async fn forward(&self, req: Request<Body>, client: Option<IpAddr>) -> Response<Body> {
        let mut service = self.for_client(client);
        let Ok(response) = tower::Service::call(&mut service, req).await;
        response.map(Body::new)
    }

    /// The request as the upstream is to get it (hop-by-hop headers
    /// dropped, forwarding ones set, `Host` the upstream's, the target in
    /// origin form, HTTP/1.1), or the proxy's own answer when it is not to
    /// be forwarded (a gRPC status for a gRPC client, `grpc`).
    fn prepare(&self, req: Request<Body>, client: Option<&ClientAddr>, grpc: bool) -> Prepared {
        let inner = &*self.inner;
        let (mut parts, body) = req.into_parts();
        if parts.method == http::Method::CONNECT {
            return Prepared::Answer(connect_refused());
        }
        let uri = match self.upstream_uri(&parts.uri) {
            Ok(uri) => uri,
            Err(e) => {
                tracing::warn!(upstream = %inner.name, uri = %parts.uri, error = %e,
                    "cannot build the upstream URI");
                let detail = format!("request target {} cannot be forwarded", parts.uri);
                return Prepared::Answer(problem(StatusCode::BAD_REQUEST, &detail, grpc));
            }
        };
        rewrite_request(&mut parts.headers, &parts.uri, client, &inner.host);
        if let Some(uri) = uri {
            parts.uri = uri;
        }
        // The upstream leg is always HTTP/1.1, whatever the caller spoke.
        parts.version = Version::HTTP_11;
        Prepared::Forward(Request::from_parts(parts, body))
    }

    /// The caller's answer to what the upstream did: its response, without
    /// hop-by-hop headers; a 502 (or the client's 400) for a failure before
    /// the response headers; a 504 for `None`, no headers within the timeout.
    /// Our own answers to a gRPC client (`grpc`) are gRPC statuses.
    fn answer(
        &self,
        answer: Option<Result<Response<Returning>, UpstreamError>>,
        grpc: bool,
    ) -> Response<ProxyBody> {
        let inner = &*self.inner;
        match answer {
            Some(Ok(response)) => {
                let (mut parts, body) = response.into_parts();
                strip_hop_by_hop(&mut parts.headers);
                Response::from_parts(parts, ProxyBody::upstream(body))
            }
            Some(Err(e)) => self.failed(&e, grpc),
            None => {
                inner.gateway_timeout.fetch_add(1, Ordering::Relaxed);
                let waited = inner.timeout;
                tracing::warn!(upstream = %inner.name, timeout = ?waited,
                    "gateway timeout: the upstream sent no response headers in time");
                problem(StatusCode::GATEWAY_TIMEOUT, UPSTREAM_TIMED_OUT, grpc)
            }
        }
    }

    /// The answer to a request that failed before its response headers: the
    /// client's 400 when its own body broke, else a 502 (the log names the
    /// upstream and why; the client is told neither).
    fn failed(&self, e: &UpstreamError, grpc: bool) -> Response<ProxyBody> {
        let inner = &*self.inner;
        if client_body_failed(e) {
            inner.bad_request_body.fetch_add(1, Ordering::Relaxed);
            tracing::info!(upstream = %inner.name, error = %chain(e), "the client's request body failed");
            return problem(
                StatusCode::BAD_REQUEST,
                "the request body is malformed or was cut short",
                grpc,
            );
        }
        inner.bad_gateway.fetch_add(1, Ordering::Relaxed);
        let what = describe(e);
        tracing::warn!(upstream = %inner.name, error = %chain(e), "bad gateway: {what}");
        problem(StatusCode::BAD_GATEWAY, UPSTREAM_UNAVAILABLE, grpc)
    }

    /// Requests that failed so far: 502s (unreachable, refused, reset) and
    /// 504s (timed out).
    pub fn errors(&self) -> ProxyErrors {
        ProxyErrors {
            bad_gateway: self.inner.bad_gateway.load(Ordering::Relaxed),
            gateway_timeout: self.inner.gateway_timeout.load(Ordering::Relaxed),
            bad_request_body: self.inner.bad_request_body.load(Ordering::Relaxed),
        }
    }

    /// The upstream's request target, in origin form (the connection is
    /// to the upstream already): base path + path, query kept; `None` when
    /// that is `target` as it came (not cloned, then the old one dropped).
    fn upstream_uri(&self, target: &Uri) -> Result<Option<Uri>, http::Error> {
        let path = target.path();
        let origin_form = target.scheme().is_none() && target.authority().is_none();
        if origin_form && (path == "*" || self.inner.base_path.is_empty() && path.starts_with('/'))
        {
            // As it came: the usual case, and no new string.
            return Ok(None);
        }
        let mut joined = if path == "*" {
            // `OPTIONS *` asks about the server as a whole: so it stays.
            path.to_string()
        } else {
            let slash = if path.starts_with('/') { "" } else { "/" };
            format!("{}{slash}{path}", self.inner.base_path)
        };
        if let Some(query) = target.query() {
            joined.push('?');
            joined.push_str(query);
        }
        Uri::builder().path_and_query(joined).build().map(Some)
    }
}

/// The 502's detail: what the client may know of an upstream that failed.
const UPSTREAM_UNAVAILABLE: &str = "upstream unavailable";

/// The 504's detail.
const UPSTREAM_TIMED_OUT: &str = "upstream timed out";

/// What becomes of a request: forwarded as rewritten, or answered by the
/// proxy itself.
enum Prepared {
    Forward(Request<Body>),
    Answer(Response<ProxyBody>),
}

/// 405 for `CONNECT`: a tunnel is nothing a rule could see into.
fn connect_refused() -> Response<ProxyBody> {
    let mut r = problem(
        StatusCode::METHOD_NOT_ALLOWED,
        "CONNECT is not proxied: this is a reverse proxy, not a tunnel",
        false,
    );
    r.headers_mut().insert(
        header::ALLOW,
        HeaderValue::from_static("GET, HEAD, POST, PUT, DELETE, OPTIONS, TRACE, PATCH"),
    );
    r
}

/// An RFC 9457 problem response, the proxy's own; a gRPC status for a
/// gRPC client (`grpc`).
fn problem(status: StatusCode, detail: &str, grpc: bool) -> Response<ProxyBody> {
    limits_http::error_answer(grpc, status, detail).map(ProxyBody::own)
}
