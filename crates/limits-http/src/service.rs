//! The tower [`Service`] the layer wraps around another: it carries out what
//! [`decide`](crate::decide) decided, answering itself
//! ([`responses`](crate::responses)) or holding the request for its delay,
//! serving it, and adding the RateLimit headers to the response.

use crate::decide::{decide, members, Admitted, Decision};
use crate::headers;
use crate::key::{KeyExtractor, KeySpec};
use crate::layer::PolicyHandle;
use crate::policy::Policy;
use crate::responses::{self, ours};
use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use http_body_util::{Either, Full};
use limits::Store;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_service::Service;

/// The service [`RateLimitLayer`](crate::RateLimitLayer) wraps around another.
pub struct RateLimit<Inner, S, K = KeySpec> {
    inner: Inner,
    policy: PolicyHandle<S, K>,
}

impl<Inner, S, K> RateLimit<Inner, S, K> {
    pub(crate) fn new(inner: Inner, policy: PolicyHandle<S, K>) -> Self {
        RateLimit { inner, policy }
    }
}

impl<Inner: Clone, S, K> Clone for RateLimit<Inner, S, K> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
        }
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The response body: the inner service's, or one of ours (429, 413, 503).
pub type LimitedBody<B> = Either<B, Full<Bytes>>;

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
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        // The clone is the one that was not polled ready: keep the ready one.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let policy = self.policy.current();
        Box::pin(handle(policy, inner, req))
    }
}

async fn handle<Inner, S, K, ReqBody, ResBody>(
    policy: Arc<Policy<S, K>>,
    mut inner: Inner,
    req: Request<ReqBody>,
) -> Result<Response<LimitedBody<ResBody>>, Inner::Error>
where
    Inner: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S: Store,
    K: KeyExtractor,
    ReqBody: Body<Data = Bytes> + From<Bytes>,
    ReqBody::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut parts, body) = req.into_parts();
    let legacy = policy.options.legacy_headers;
    match decide(&policy, &mut parts, body).await {
        Decision::Unmatched(body) => {
            let response = inner.call(Request::from_parts(parts, body)).await?;
            Ok(response.map(Either::Left))
        }
        Decision::Refuse(refusal) => Ok(ours(responses::refusal(&policy, refusal, legacy))),
        Decision::Admit(admitted) => serve(&policy, inner, parts, admitted, legacy).await,
    }
}

/// Holds an admitted request for its delay, serves it, and adds the
/// RateLimit headers of the rules it passed.
async fn serve<Inner, S, K, ReqBody, ResBody>(
    policy: &Policy<S, K>,
    mut inner: Inner,
    parts: Parts,
    admitted: Admitted<ReqBody>,
    legacy: bool,
) -> Result<Response<LimitedBody<ResBody>>, Inner::Error>
where
    Inner: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S: Store,
{
    let Admitted {
        body,
        statuses,
        delay,
        held,
    } = admitted;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let response = inner.call(Request::from_parts(parts, body)).await;
    // The body's charge to the budget lasts until the inner service is done.
    drop(held);
    let mut response = response?.map(Either::Left);
    let members = members(policy, &statuses);
    headers::write_members(response.headers_mut(), members, legacy, None);
    Ok(response)
}
