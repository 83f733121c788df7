//! The built-in demo API, so that `limits serve` works out of the box:
//! a few JSON endpoints to point curl at and watch the limiter work.
//!
//! Its `GET`s with a static answer are matched first on the method and the
//! path and answered from constants ([`Fast`], the service the server runs,
//! with no router around it): axum's routes would build an extension map
//! for the URL parameters, box the handler's future and its body and format
//! Content-Length; a router's fallback would clone its boxed service and box
//! its future. A static answer's body is the constant itself
//! ([`Full`] of static [`Bytes`]), not boxed into axum's `Body`. Every other
//! request goes to the axum routes ([`routes`]), which answer as before; a
//! test compares both answers as hyper writes them, byte for byte.

use axum::body::Body;
use axum::extract::{Path, Request};
use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use axum::routing::future::RouteFuture;
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use http_body_util::{Either, Full};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower_service::Service;

/// `GET /`, `GET /api/items`, `GET /api/items/{id}`, `POST /login`.
pub(crate) fn service() -> Fast {
    Fast { routes: routes() }
}

/// The demo API as axum routes.
fn routes() -> Router {
    Router::new()
        .route("/", get(index))
        .route("/api/items", get(items))
        .route("/api/items/{id}", get(item))
        .route("/login", post(login))
}

/// `GET /`'s body: written out once, as `json!` serialized it (a test
/// checks that it still does), instead of built and serialized per request.
const INDEX: &str = concat!(
    r#"{"endpoints":["GET /api/items","GET /api/items/{id}","POST /login"],"#,
    r#""headers":"every response carries RateLimit-Policy and RateLimit; a 429 adds Retry-After","#,
    r#""service":"limits demo API"}"#
);

/// `GET /api/items`'s body, likewise.
const ITEMS_BODY: &str =
    r#"{"items":[{"id":1,"name":"anvil"},{"id":2,"name":"bucket"},{"id":3,"name":"compass"}]}"#;

/// `GET /api/items/{id}`'s bodies for ids 1, 2 and 3, likewise.
const ITEM_BODIES: [&str; 3] = [
    r#"{"id":1,"name":"anvil"}"#,
    r#"{"id":2,"name":"bucket"}"#,
    r#"{"id":3,"name":"compass"}"#,
];

/// The static answers: a path and its body.
const STATIC: [(&str, &str); 5] = [
    ("/", INDEX),
    ("/api/items", ITEMS_BODY),
    ("/api/items/1", ITEM_BODIES[0]),
    ("/api/items/2", ITEM_BODIES[1]),
    ("/api/items/3", ITEM_BODIES[2]),
];

async fn index() -> ([(HeaderName, HeaderValue); 1], &'static str) {
    ([(CONTENT_TYPE, JSON)], INDEX)
}

async fn items() -> ([(HeaderName, HeaderValue); 1], &'static str) {
    ([(CONTENT_TYPE, JSON)], ITEMS_BODY)
}

/// The Content-Type axum's `Json` sends.
const JSON: HeaderValue = HeaderValue::from_static("application/json");

const ITEMS: [&str; 3] = ["anvil", "bucket", "compass"];

async fn item(Path(id): Path<usize>) -> Result<Json<Value>, (StatusCode, Json<Value>)> {
    match id.checked_sub(1).and_then(|i| ITEMS.get(i)) {
        Some(name) => Ok(Json(json!({ "id": id, "name": name }))),
        None => Err((
            StatusCode::NOT_FOUND,
            Json(json!({ "status": 404, "detail": format!("no item {id}") })),
        )),
    }
}

/// Accepts any login and says so: the point is the limiter in front of it.
async fn login(body: String) -> Json<Value> {
    Json(json!({ "ok": true, "received_bytes": body.len() }))
}

/// The static answers, else the axum routes.
#[derive(Clone)]
pub(crate) struct Fast {
    routes: Router,
}

/// The demo's response body: a static answer's constant, or the routes'.
pub(crate) type DemoBody = Either<Full<Bytes>, Body>;

/// The response as axum writes it for these routes: 200, Content-Type
/// JSON, the body; its headers in the map of the request it answers,
/// emptied.
///
/// Content-Length is left to hyper, which writes it for a response without
/// one whose body's size is exact (a [`Full`]'s is): the same field as
/// axum's, for about 170 instructions per request fewer than inserting it
/// in the map. hyper writes it after the map's fields, where axum's is the
/// map's second: after the RateLimit fields the layer adds (a test compares
/// the bytes on the wire without them).
///
/// hyper hands each request of a connection the map of the connection's
/// previous response, so a map made per response and the
/// request's freed would be two allocations and two frees per request for
/// nothing; reused, one map serves the whole connection (and has room for
/// the RateLimit headers the layer adds: it held them last time).
fn answer(body: &'static str, request: Request) -> http::Response<DemoBody> {
    let mut headers = request.into_parts().0.headers;
    // Emptied: none of the request's fields may reach the response.
    headers.clear();
    headers.insert(CONTENT_TYPE, JSON);
    let body = Full::new(Bytes::from_static(body.as_bytes()));
    let mut response = http::Response::new(Either::Left(body));
    let new = std::mem::replace(response.headers_mut(), headers);
    // A new response's map is `HeaderMap::new()`, which allocates nothing
    // (`tests/it/new_response_map.rs` checks): forgotten, it frees nothing, and its
    // drop glue (about 50 instructions per request) is skipped.
    debug_assert_eq!(new.capacity(), 0);
    std::mem::forget(new);
    response
}

impl Service<Request> for Fast {
    type Response = http::Response<DemoBody>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Answer {
        if req.method() == Method::GET {
            let path = req.uri().path();
            if let Some(&(_, body)) = STATIC.iter().find(|(p, _)| *p == path) {
                return Answer::Now(Some(answer(body, req)));
            }
        }
        Answer::Routed(self.routes.call(req))
    }
}

/// [`Fast`]'s response: at once, or the axum routes'.
pub(crate) enum Answer {
    Now(Option<http::Response<DemoBody>>),
    Routed(RouteFuture<Infallible>),
}

impl Future for Answer {
    type Output = Result<http::Response<DemoBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Answer::Now(response) => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                // Polled again after it answered.
                None => Poll::Pending,
            },
            Answer::Routed(future) => Pin::new(future)
                .poll(cx)
                .map(|routed| routed.map(|response: Response| response.map(Either::Right))),
        }
    }
}

#[cfg(test)]
#[path = "demo_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "demo_wire.rs"]
mod wire;

#[cfg(test)]
#[path = "demo_static_tests.rs"]
mod static_tests;

#[cfg(test)]
#[path = "demo_map_tests.rs"]
mod map_tests;
