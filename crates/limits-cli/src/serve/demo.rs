//! The built-in demo API, so that `limits serve` works out of the box:
//! a few JSON endpoints to point curl at and watch the limiter work.

use axum::extract::Path;
use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// `GET /`, `GET /api/items`, `GET /api/items/{id}`, `POST /login`.
pub fn router() -> Router {
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

#[cfg(test)]
#[path = "demo_tests.rs"]
mod tests;
