//! The built-in demo API, so that `limits serve` works out of the box:
//! a few JSON endpoints to point curl at and watch the limiter work.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// `GET /`, `GET /api/items`, `GET /api/items/{id}`, `POST /login`.
pub(crate) fn routes() -> Router {
    Router::new()
        .route("/", get(index))
        .route("/api/items", get(items))
        .route("/api/items/{id}", get(item))
        .route("/login", post(login))
}

/// What the demo serves, and what to look for in its answers.
async fn index() -> Json<Value> {
    Json(json!({
        "service": "limits demo API",
        "endpoints": ["GET /api/items", "GET /api/items/{id}", "POST /login"],
        "headers": "every response carries RateLimit-Policy and RateLimit; a 429 adds Retry-After",
    }))
}

/// The items, by id from 1.
const ITEMS: [&str; 3] = ["anvil", "bucket", "compass"];

async fn items() -> Json<Value> {
    let list: Vec<Value> = ITEMS
        .iter()
        .enumerate()
        .map(|(i, name)| json!({ "id": i + 1, "name": name }))
        .collect();
    Json(json!({ "items": list }))
}

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
mod tests;
