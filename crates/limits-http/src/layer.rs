//! The tower Layer and Service: for every request, the rules that match it
//! decide in order; the first denial answers 429 (unless dry run); an
//! admitted request is held for its delay (leaky bucket), then served, and
//! its response carries the RateLimit headers of every rule it passed.
//!
//! Rules are checked one after the other and each records as it allows, so a
//! request denied by a later rule has still been counted by the earlier ones
//! (as nginx's `limit_req` zones do). Within one rule, several rates are
//! all-or-nothing.

use crate::body::read_bounded;
use crate::headers::{self, RuleStatus};
use crate::path::normalize_target;
use crate::policy::{FailurePolicy, Outcome, Policy};
use crate::problem::problem_with;
use crate::responses::{self, ours};
use arc_swap::ArcSwap;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{Either, Full};
use limits::{Mode, Store};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower_layer::Layer;
use tower_service::Service;

/// The peer's address, as a request extension. `limits serve` inserts it;
/// with the `axum` feature, axum's `ConnectInfo<SocketAddr>` works too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// Where the current policy lives; replace it to reload rules without
/// dropping requests in flight (they finish under the policy they started with).
pub struct PolicyHandle<S>(Arc<ArcSwap<Policy<S>>>);

impl<S> Clone for PolicyHandle<S> {
    fn clone(&self) -> Self {
        PolicyHandle(self.0.clone())
    }
}

impl<S> PolicyHandle<S> {
    /// The policy now in force.
    pub fn current(&self) -> Arc<Policy<S>> {
        self.0.load_full()
    }

    /// Puts `policy` in force for every request from now on.
    pub fn replace(&self, policy: Policy<S>) {
        self.0.store(Arc::new(policy));
    }
}

/// Rate limits an HTTP service.
///
/// The layer normalizes each request's path (see [`normalize_path`](crate::normalize_path))
/// and hands the inner service the normalized request. Put it around the
/// whole router, as below, so that routing sees the same path the rules
/// matched; `Router::layer` would route on the path as sent.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, Rule};
/// use limits_http::{HttpRule, KeySpec, Policy, RateLimitLayer};
/// use std::sync::Arc;
///
/// let store = KeyedLimiter::<String>::new(Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap()));
/// let layer = RateLimitLayer::new(Policy::new(vec![HttpRule {
///     name: "default".into(),
///     path_prefix: "/".into(),
///     methods: vec![],
///     key: KeySpec::ip(),
///     cost: 1,
///     store: Arc::new(store),
/// }]));
/// let routes = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
/// let app: axum::Router = axum::Router::new().fallback_service(tower_layer::Layer::layer(&layer, routes));
/// # let _ = app;
/// ```
pub struct RateLimitLayer<S> {
    policy: PolicyHandle<S>,
}

impl<S> Clone for RateLimitLayer<S> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            policy: self.policy.clone(),
        }
    }
}

impl<S> RateLimitLayer<S> {
    /// A layer enforcing `policy`.
    pub fn new(policy: Policy<S>) -> RateLimitLayer<S> {
        RateLimitLayer {
            policy: PolicyHandle(Arc::new(ArcSwap::from_pointee(policy))),
        }
    }

    /// The handle through which the policy can be replaced.
    pub fn handle(&self) -> PolicyHandle<S> {
        self.policy.clone()
    }
}

impl<S, Inner> Layer<Inner> for RateLimitLayer<S> {
    type Service = RateLimit<Inner, S>;

    fn layer(&self, inner: Inner) -> RateLimit<Inner, S> {
        RateLimit {
            inner,
            policy: self.policy.clone(),
        }
    }
}

/// The service [`RateLimitLayer`] wraps around another.
pub struct RateLimit<Inner, S> {
    inner: Inner,
    policy: PolicyHandle<S>,
}

impl<Inner: Clone, S> Clone for RateLimit<Inner, S> {
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

impl<Inner, S, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimit<Inner, S>
where
    Inner: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    Inner::Future: Send,
    S: Store,
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

async fn handle<Inner, S, ReqBody, ResBody>(
    policy: Arc<Policy<S>>,
    mut inner: Inner,
    req: Request<ReqBody>,
) -> Result<Response<LimitedBody<ResBody>>, Inner::Error>
where
    Inner: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S: Store,
    ReqBody: Body<Data = Bytes> + From<Bytes>,
    ReqBody::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut parts, body) = req.into_parts();
    let path = match normalize_target(&mut parts) {
        Ok(path) => path,
        Err(e) => {
            tracing::debug!(uri = %parts.uri, error = %e, "path refused");
            let r = problem_with(StatusCode::BAD_REQUEST, &e.to_string(), Default::default());
            return Ok(ours(r));
        }
    };
    let matching: Vec<_> = policy
        .rules
        .iter()
        .filter(|r| r.matches(&parts.method, &path))
        .collect();
    if matching.is_empty() {
        let req = Request::from_parts(parts, body);
        return inner.call(req).await.map(|r| r.map(Either::Left));
    }
    let options = &policy.options;
    let client = peer(&parts.extensions).map(|p| options.client_ip.resolve(p, &parts.headers));
    if client.is_some_and(|c| c.unreadable) {
        policy.observer.unreadable_client_address();
    }
    let client = client.map(|c| c.ip);
    // Read the body only if a rule keys on one of its fields; what it holds
    // stays charged to the shared budget until the request is done.
    let mut _held = None;
    let (body, bytes) = if matching.iter().any(|r| r.key.needs_body()) {
        match read_bounded(
            body,
            options.max_body,
            options.body_timeout,
            &options.body_budget,
        )
        .await
        {
            Ok((bytes, reservation)) => {
                _held = Some(reservation);
                (ReqBody::from(bytes.clone()), Some(bytes))
            }
            Err(e) => return Ok(ours(responses::body_refused(e))),
        }
    } else {
        (body, None)
    };

    let mut statuses = Vec::with_capacity(matching.len());
    let mut delay = Duration::ZERO;
    for rule in matching {
        // The key reads Content-Type (the body's charset) from `parts`.
        let key = match rule.key.extract(&parts, client, bytes.as_deref()) {
            Ok(key) => key,
            Err(e) => {
                tracing::debug!(rule = %rule.name, error = %e, "no key: 400");
                let mut ext = serde_json::Map::new();
                ext.insert("rule".into(), rule.name.as_str().into());
                ext.insert("field".into(), e.field.as_str().into());
                let detail = e.to_string();
                return Ok(ours(problem_with(StatusCode::BAD_REQUEST, &detail, ext)));
            }
        };
        let started = Instant::now();
        let verdict = rule.store.decide(&key, rule.cost, Mode::Record).await;
        let latency = started.elapsed();
        let verdict = match verdict {
            Ok(v) => v,
            Err(e) => {
                policy
                    .observer
                    .decided(&rule.name, Outcome::StoreFailed, latency);
                tracing::warn!(rule = %rule.name, key = %key, error = %e, policy = ?options.on_store_error, "rate limit store failed");
                if options.on_store_error == FailurePolicy::Deny && !options.dry_run {
                    return Ok(ours(responses::unavailable(
                        "the rate limit store is unavailable",
                    )));
                }
                continue;
            }
        };
        let d = verdict.decision;
        statuses.push(RuleStatus::new(
            &rule.name,
            rule.store.rule(),
            d,
            &verdict.per_rate,
        ));
        if d.allowed {
            policy
                .observer
                .decided(&rule.name, Outcome::Allowed, latency);
            delay = delay.max(d.delay);
            continue;
        }
        if options.dry_run {
            policy
                .observer
                .decided(&rule.name, Outcome::WouldLimit, latency);
            tracing::info!(rule = %rule.name, key = %key, retry_after = %d.retry_after, "dry run: would limit");
            continue;
        }
        policy
            .observer
            .decided(&rule.name, Outcome::Limited, latency);
        tracing::debug!(rule = %rule.name, key = %key, retry_after = %d.retry_after, "limited");
        return Ok(ours(responses::too_many(
            &rule.name,
            &statuses,
            options.legacy_headers,
            d.retry_after,
        )));
    }
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let response = inner.call(Request::from_parts(parts, body)).await?;
    let mut response = response.map(Either::Left);
    headers::write(
        response.headers_mut(),
        &statuses,
        options.legacy_headers,
        None,
    );
    Ok(response)
}

fn peer(ext: &http::Extensions) -> Option<IpAddr> {
    if let Some(PeerAddr(addr)) = ext.get::<PeerAddr>() {
        return Some(addr.ip());
    }
    #[cfg(feature = "axum")]
    if let Some(info) = ext.get::<axum::extract::ConnectInfo<SocketAddr>>() {
        return Some(info.0.ip());
    }
    None
}
