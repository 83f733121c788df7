//! The admin endpoint's routes: `/metrics` (Prometheus), `/healthz`
//! (liveness) and `/readyz` (readiness), as Kubernetes probes expect them.
//!
//! Liveness and readiness are two questions. `/healthz` answers whether the
//! process serves at all: 200 as long as it answers, so that a probe never
//! restarts an instance for what a restart cannot fix (a Redis outage).
//! `/readyz` answers whether the instance serves as configured: 503, naming
//! why, while its store is unreachable (requests are then answered per the
//! outage policy, not by the shared limit) or while its rules file failed
//! to load (the rules in force are not the file's); 200 otherwise.

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

/// `/metrics` from `render`, `/healthz`, and `/readyz` from the Redis
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
        .route(
            "/readyz",
            get(move || {
                let why = not_ready(redis.as_ref(), rules_error());
                async move {
                    match why {
                        None => (StatusCode::OK, "ready\n".to_string()),
                        Some(why) => (
                            StatusCode::SERVICE_UNAVAILABLE,
                            format!("not ready: {why}\n"),
                        ),
                    }
                }
            }),
        )
}

/// Every reason the instance is not ready, joined; `None` when it is.
fn not_ready(redis: Option<&RedisConnection>, rules_error: Option<String>) -> Option<String> {
    let mut why = Vec::new();
    if redis.is_some_and(|r| !r.is_healthy()) {
        why.push(
            "the Redis store is unreachable (requests are answered per --on-store-error)"
                .to_string(),
        );
    }
    if let Some(e) = rules_error {
        why.push(format!(
            "the rules file failed to load, the previous rules are in force: {e}"
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}
