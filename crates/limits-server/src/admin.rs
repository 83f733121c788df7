//! The admin endpoint's routes: `/metrics` (Prometheus), `/healthz`
//! (liveness) and `/readyz` (readiness), as Kubernetes probes expect them.
//!
//! Liveness and readiness are two questions. `/healthz` answers whether the
//! process serves at all: 200 as long as it answers, so that a probe never
//! restarts an instance for what a restart cannot fix (a Redis outage).
//! `/readyz` answers whether the instance decides by the shared limit: 503,
//! naming why, while its store is unreachable (requests are then answered
//! per the outage policy); 200 otherwise. A rules file that failed to
//! reload is named in the 200's body but leaves the instance ready: it
//! still serves the previous rules, and every instance given the same bad
//! file would otherwise leave the service at once.

use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use limits_redis::RedisConnection;
use std::sync::Arc;

/// Why an instance is not ready, if it is not (the rules' side; the
/// store's is read from the connection).
pub(crate) type RulesError = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// `/metrics` from `render`, `/healthz` (and the reference's `/healthcheck`), and `/readyz` from the Redis
/// connection's health (if the store is Redis) and `rules_error`.
pub(crate) fn admin_router(
    render: Arc<dyn Fn() -> String + Send + Sync>,
    redis: Option<RedisConnection>,
    rules_error: RulesError,
) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let text = render();
                async move {
                    (
                        [(
                            CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    )
                        .into_response()
                }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        // envoyproxy/ratelimit's liveness path on its HTTP port, which
        // `limits rls` serves its admin on in a deployment written for it.
        .route("/healthcheck", get(|| async { "OK" }))
        .route(
            "/readyz",
            get(move || {
                let answer = readiness(redis.as_ref(), rules_error());
                async move { answer }
            }),
        )
}

/// `/readyz`'s status and body: 503 naming why while the store is out; 200
/// otherwise, naming a rules file that failed to reload.
fn readiness(redis: Option<&RedisConnection>, rules_error: Option<String>) -> (StatusCode, String) {
    if redis.is_some_and(|r| !r.is_healthy()) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the Redis store is unreachable (requests are answered per --on-store-error)\n"
                .to_string(),
        );
    }
    match rules_error {
        None => (StatusCode::OK, "ready\n".to_string()),
        Some(e) => (
            StatusCode::OK,
            format!(
                "ready; the rules file failed to reload, the previous rules are in force: {e}\n"
            ),
        ),
    }
}
