//! The tower [`Service`] the layer wraps around another: it carries out what
//! [`prepare`](crate::prepare) and [`decide`](crate::decide) decided,
//! answering itself ([`refusals`]) or holding the request
//! for its delay, serving it, and adding the RateLimit headers to the
//! response. It decides in `call` when the stores answer at once, so that
//! the common request needs no boxed future ([`future`](crate::future)).

use crate::decide::{Admitted, Passed, Refusal, Resume, Step, decide_now, decide_rest};
use crate::future::{Headers, ResponseFuture};
use crate::in_force::{InForce, PolicyHandle};
use crate::key::{KeyExtractor, KeySpec};
use crate::no_client::no_client_address;
use crate::prepare::{Matched, Prepared, prepare};
use crate::refusals;
use crate::respond::{LimitedBody, add_headers, ours};
use crate::settle::settle_by_response;
use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use limits::Store;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_service::Service;

/// The service [`RateLimitLayer`](crate::RateLimitLayer) wraps around another.
pub struct RateLimit<Inner, S, K = KeySpec> {
    inner: Inner,
    policy: PolicyHandle<S, K>,
    peer: Option<SocketAddr>,
}

impl<Inner, S, K> RateLimit<Inner, S, K> {
    pub(crate) fn new(inner: Inner, policy: PolicyHandle<S, K>) -> Self {
        RateLimit {
            inner,
            policy,
            peer: None,
        }
    }

    /// This service for the requests of one connection from `peer`: the
    /// keys' client address is `peer` for every request that carries no
    /// [`PeerAddr`](crate::PeerAddr) (or axum `ConnectInfo`) extension.
    ///
    /// A server that makes a service per connection (hyper's
    /// `serve_connection`, axum's `into_make_service_with_connect_info`)
    /// gives the peer this way instead of inserting an extension into every
    /// request, which costs three allocations per request.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Rule};
    /// use limits_http::{HttpRule, KeySpec, Policy, RateLimitLayer};
    /// use tower::{Layer, ServiceExt};
    /// use axum::body::Body;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let store = KeyedLimiter::<String>::new(Rule::new(Algorithm::TokenBucket, "1/min".parse().unwrap()));
    /// let layer = RateLimitLayer::new(Policy::new(vec![HttpRule::new("per-ip", store, KeySpec::ip())]));
    /// let app = tower::service_fn(|_req: http::Request<Body>| async {
    ///     Ok::<_, std::convert::Infallible>(http::Response::new(Body::from("hello")))
    /// });
    /// // One service per accepted connection, with the connection's peer.
    /// let from = |peer: &str| layer.layer(app.clone()).with_peer(peer.parse().unwrap());
    /// let request = || http::Request::get("/").body(Body::empty()).unwrap();
    ///
    /// let first = from("192.0.2.7:50000").oneshot(request()).await.unwrap();
    /// assert_eq!(first.status(), 200);
    /// // The same client on another connection: the same key, over its limit.
    /// let again = from("192.0.2.7:50001").oneshot(request()).await.unwrap();
    /// assert_eq!(again.status(), 429);
    /// // Another client has a budget of its own.
    /// let other = from("198.51.100.1:50000").oneshot(request()).await.unwrap();
    /// assert_eq!(other.status(), 200);
    /// # }
    /// ```
    pub fn with_peer(mut self, peer: SocketAddr) -> Self {
        self.peer = Some(peer);
        self
    }
}

impl<Inner: Clone, S, K> Clone for RateLimit<Inner, S, K> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
            peer: self.peer,
        }
    }
}

impl<Inner, S, K, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimit<Inner, S, K>
where
    Inner: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    Inner::Future: Send,
    S: Store,
    K: KeyExtractor,
    ReqBody: Body<Data = Bytes> + From<Bytes> + Send + 'static,
    ReqBody::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    ResBody: Send + 'static,
{
    type Response = Response<LimitedBody<ResBody>>;
    type Error = Inner::Error;
    type Future = ResponseFuture<Inner::Future, ResBody, Inner::Error, S, K>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    /// Decides at once when it can (see [`ResponseFuture`]): every matching
    /// rule's store answers without waiting and no key reads the body.
    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        // The clone is the one that was not polled ready: keep the ready one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let in_force = self.policy.in_force();
        let legacy = in_force.policy.options.legacy_headers;
        let (mut parts, body) = req.into_parts();
        let refusal = |in_force: &InForce<S, K>, refusal, parts: Parts| {
            let answer = refusals::refusal(in_force, refusal, legacy, parts.headers);
            ResponseFuture::ready(ours(answer))
        };
        let matched = match prepare(&in_force.policy, &mut parts, self.peer) {
            Prepared::Refuse(e) => return refusal(&in_force, Refusal::Path(e), parts),
            Prepared::RefuseMethod(e) => return refusal(&in_force, Refusal::Method(e), parts),
            Prepared::Unmatched => {
                return ResponseFuture::inner(inner.call(Request::from_parts(parts, body)), None);
            }
            Prepared::NoClient(rule) => {
                let name = in_force.policy.rules[rule].name.as_str();
                self.policy.no_client().log_once(name);
                // A dry run never refuses: the request goes on, unlimited.
                if !in_force.policy.options.dry_run {
                    let grpc = crate::grpc::is_grpc(&parts.headers);
                    return ResponseFuture::ready(ours(no_client_address(name, grpc)));
                }
                return ResponseFuture::inner(inner.call(Request::from_parts(parts, body)), None);
            }
            Prepared::Denied(rule) => return refusal(&in_force, Refusal::Denied(rule), parts),
            Prepared::Matched(matched) => matched,
        };
        let resume = if matched.needs_body(&in_force.policy) {
            Resume::start()
        } else {
            let mut passed = Passed::default();
            match decide_now(&in_force, &matched, &parts, &mut passed) {
                Step::Refused(r) => return refusal(&in_force, r, parts),
                Step::Passed if passed.delay.is_zero() => {
                    let future = inner.call(Request::from_parts(parts, body));
                    let headers = Headers {
                        in_force,
                        statuses: passed.statuses,
                        legacy,
                        unsettled: passed.unsettled,
                        slots: passed.slots,
                    };
                    return ResponseFuture::inner(future, Some(headers));
                }
                Step::Passed => Resume::done(&matched, passed),
                Step::Wait(resume) => resume,
            }
        };
        let rest = handle(in_force, inner, parts, body, matched, resume);
        ResponseFuture::boxed(Box::pin(rest))
    }
}

/// Decides what [`decide_now`] could not (from `resume` on), holds an
/// admitted request for its delay, serves it, and adds the RateLimit
/// headers of the rules it passed.
async fn handle<Inner, S, K, ReqBody, ResBody>(
    in_force: Arc<InForce<S, K>>,
    mut inner: Inner,
    parts: Parts,
    body: ReqBody,
    matched: Matched,
    resume: Resume,
) -> Result<Response<LimitedBody<ResBody>>, Inner::Error>
where
    Inner: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S: Store,
    K: KeyExtractor,
    ReqBody: Body<Data = Bytes> + From<Bytes>,
    ReqBody::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let legacy = in_force.policy.options.legacy_headers;
    let admitted = match decide_rest(&in_force, &matched, &parts, body, resume).await {
        Ok(admitted) => admitted,
        Err(refusal) => {
            let answer = refusals::refusal(&in_force, refusal, legacy, parts.headers);
            return Ok(ours(answer));
        }
    };
    let Admitted { body, passed, held } = admitted;
    if !passed.delay.is_zero() {
        tokio::time::sleep(passed.delay).await;
    }
    let response = inner.call(Request::from_parts(parts, body)).await;
    // The body's charge to the budget lasts until the inner service is done.
    drop(held);
    let response = response?;
    if !passed.unsettled.is_empty() {
        let (status, headers) = (response.status(), Some(response.headers()));
        settle_by_response(&in_force, passed.unsettled, status, headers)
            .finish()
            .await;
    }
    Ok(add_headers(
        &in_force,
        &passed.statuses,
        legacy,
        response,
        passed.slots,
    ))
}
