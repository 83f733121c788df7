//! A request the layer cannot key because the server gave it no client
//! address: a rule keyed on the address would put every client in one
//! bucket (`ip=unknown`), so the layer answers 500 naming the fix, and logs
//! it once per layer (every request of such a deployment would repeat it).

use crate::grpc;
use crate::problem::problem_members;
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the operator must change, said in the log and in the 500's body.
pub(crate) const FIX: &str = "serve the app with \
    `into_make_service_with_connect_info::<SocketAddr>()` (axum), or give the \
    layer the peer with `RateLimit::with_peer` or a `PeerAddr` extension";

/// Whether a layer has said it has no client address yet: shared by every
/// service the layer made, so that the error is logged once.
#[derive(Debug, Default)]
pub(crate) struct Said(AtomicBool);

impl Said {
    /// Logs, the first time only, that `rule` keys on the client address
    /// and the server gives none.
    pub(crate) fn log_once(&self, rule: &str) {
        if !self.0.swap(true, Ordering::Relaxed) {
            tracing::error!(rule, "{}", detail(rule));
        }
    }
}

/// What is wrong and how to fix it.
fn detail(rule: &str) -> String {
    format!(
        "the server gives the rate limiter no client address, and rule {rule:?} keys on it \
         (every client would share one limit): {FIX}"
    )
}

/// The 500 of a request that rule `rule` would key on an address it has
/// not; a gRPC status INTERNAL for a gRPC client (`grpc`).
pub(crate) fn no_client_address(rule: &str, grpc: bool) -> Response<Full<Bytes>> {
    let detail = detail(rule);
    let response = problem_members(StatusCode::INTERNAL_SERVER_ERROR, &detail, [("rule", rule)]);
    if grpc {
        grpc::answer(response, &detail, None)
    } else {
        response
    }
}
