//! The admin endpoint's routes: `/metrics` (Prometheus), `/healthz`
//! (liveness) and `/readyz` (readiness), as Kubernetes probes expect them.
//!
//! Liveness and readiness are two questions. `/healthz` answers whether the
//! process serves at all: 200 as long as it answers, so that a probe never
//! restarts an instance for what a restart cannot fix (a Redis outage, a
//! clock off from the other instances', which its body names).
//! `/readyz` answers whether the instance decides by the shared limit: 503,
//! naming why, while its store is unreachable (requests are then answered
//! per the outage policy); 200 otherwise. A rules file that failed to
//! reload is named in the 200's body but leaves the instance ready: it
//! still serves the previous rules, and every instance given the same bad
//! file would otherwise leave the service at once.

mod dashboard;
mod history;
mod latency;
mod top_limited;

pub(crate) use dashboard::{layer_answer, serve_rows, snapshot, store_view, RuleRow};
pub(crate) use history::Second;

use crate::store::StoreOptions;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use std::time::Duration;

/// What the live page keeps of its own, in fixed memory, fed by the
/// layer's observer ([`Metrics`](crate::Metrics)) and a sampler: the keys
/// refused most, the awaited decisions' latencies, each rule's seconds.
pub(crate) struct PageRecords {
    pub(crate) top: top_limited::TopLimited,
    pub(crate) latency: latency::LatencyLog,
    pub(crate) history: history::History,
}

impl PageRecords {
    pub(crate) fn new() -> PageRecords {
        PageRecords {
            top: top_limited::TopLimited::new(std::time::Instant::now()),
            latency: latency::LatencyLog::new(),
            history: history::History::default(),
        }
    }
}

/// The page's data as JSON text (an error named in JSON, should encoding
/// ever fail).
pub(crate) fn to_json(snapshot: &dashboard::Snapshot) -> String {
    serde_json::to_string(snapshot).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

/// Why an instance is not ready, if it is not (the rules' side; the
/// store's is read from the connection).
pub(crate) type RulesError = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The live page's data, as JSON text ([`snapshot`]).
pub(crate) type PageData = Arc<dyn Fn() -> String + Send + Sync>;

/// The live page and its script, built into the binary: nothing fetched
/// from elsewhere, so it works offline.
const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");

/// What the page may load and run: its own script and data, nothing else
/// (no other origin, no form, no frame).
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; connect-src 'self'; \
     style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// `/metrics` from `render`, `/healthz` (and the reference's
/// `/healthcheck`), `/readyz` from the shared stores' health (Redis,
/// memcached) and `rules_error`, and the live page on `/` (and `/page.js`)
/// with its data on `/dashboard.json` from `data`: all read-only (GET).
pub(crate) fn admin_router(
    render: Arc<dyn Fn() -> String + Send + Sync>,
    stores: StoreOptions,
    rules_error: RulesError,
    data: PageData,
) -> Router {
    let json = move || {
        let json = data();
        async move {
            let headers = [
                (CONTENT_TYPE, "application/json"),
                (CACHE_CONTROL, "no-store"),
            ];
            (headers, json).into_response()
        }
    };
    Router::new()
        .route(
            "/",
            get(|| async { page_asset("text/html; charset=utf-8", PAGE) }),
        )
        .route(
            "/page.js",
            get(|| async { page_asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route("/dashboard.json", get(json))
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
        .route("/healthz", {
            let stores = stores.clone();
            get(move || {
                let answer = liveness(&stores);
                async move { answer }
            })
        })
        // envoyproxy/ratelimit's liveness path on its HTTP port, which
        // `limits rls` serves its admin on in a deployment written for it.
        .route("/healthcheck", get(|| async { "OK" }))
        .route(
            "/readyz",
            get(move || {
                let answer = readiness(&stores, rules_error());
                async move { answer }
            }),
        )
}

/// One of the page's files, with the policy that keeps it to itself.
fn page_asset(content_type: &'static str, body: &'static str) -> axum::response::Response {
    let headers = [
        (CONTENT_TYPE, content_type),
        (CONTENT_SECURITY_POLICY, PAGE_POLICY),
        (CACHE_CONTROL, "no-cache"),
    ];
    (headers, body).into_response()
}

/// How far apart the instances' clocks on memcached may be before
/// `/healthz` says so: beyond it, a window's edge is as far apart between
/// them, which NTP keeps well under.
pub(crate) const CLOCK_OFFSET_BOUND: Duration = Duration::from_millis(10);

/// `/healthz`'s body (always a 200: a restart fixes nothing it names):
/// `ok`, and this instance's clock offset from the others on the memcached
/// store when it is beyond [`CLOCK_OFFSET_BOUND`].
fn liveness(stores: &StoreOptions) -> String {
    let offset = stores.memcached.as_ref().and_then(|m| m.clock_offset());
    match offset.filter(|o| o.beyond(CLOCK_OFFSET_BOUND)) {
        Some(o) => format!(
            "ok; this instance's clock is {:.1} ms {} the other instances' on memcached (to within {:.1} ms; over {} ms, their windows' edges are as far apart)\n",
            o.from_others.unsigned_abs() as f64 / 1e6,
            if o.from_others > 0 { "ahead of" } else { "behind" },
            o.uncertainty as f64 / 1e6,
            CLOCK_OFFSET_BOUND.as_millis(),
        ),
        None => "ok\n".to_string(),
    }
}

/// `/readyz`'s status and body: 503 naming why while the store is out
/// (Redis, or every memcached server); 200 otherwise, naming the memcached
/// servers that are out (their keys only are answered per the outage
/// policy) and a rules file that failed to reload.
fn readiness(stores: &StoreOptions, rules_error: Option<String>) -> (StatusCode, String) {
    let policy = "answered per --on-store-error";
    if stores.redis.as_ref().is_some_and(|r| !r.is_healthy()) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: the Redis store is unreachable (requests are {policy})\n"),
        );
    }
    let mut notes = Vec::new();
    if let Some(memcached) = &stores.memcached {
        let out = memcached.unreachable();
        if !out.is_empty() && out.len() == memcached.servers().len() {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "not ready: the memcached store is unreachable ({}; requests are {policy})\n",
                    out.join(", ")
                ),
            );
        }
        if !out.is_empty() {
            notes.push(format!(
                "memcached {} unreachable (its keys are {policy})",
                out.join(", ")
            ));
        }
    }
    if let Some(e) = rules_error {
        notes.push(format!(
            "the rules file failed to reload, the previous rules are in force: {e}"
        ));
    }
    match notes.is_empty() {
        true => (StatusCode::OK, "ready\n".to_string()),
        false => (StatusCode::OK, format!("ready; {}\n", notes.join("; "))),
    }
}
