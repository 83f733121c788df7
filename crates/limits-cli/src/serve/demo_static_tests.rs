//! The static answers of the demo API (the service the server runs) are,
//! on the wire, byte for byte what its axum routes answer, and every other
//! request still reaches the routes.

use super::wire::exchange;
use super::{routes, service, ITEMS, ITEM_BODIES, STATIC};
use axum::http::Method;
use serde_json::json;

#[test]
fn the_item_bodies_are_the_json_they_replaced() {
    for (i, name) in ITEMS.iter().enumerate() {
        let built = json!({ "id": i + 1, "name": name });
        assert_eq!(ITEM_BODIES[i], serde_json::to_string(&built).unwrap());
    }
}

/// `method path` with `body`, as a client sends it.
fn request(method: &Method, path: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn every_request_is_answered_as_the_routes_answer_it() {
    let mut paths: Vec<&str> = STATIC.iter().map(|(path, _)| *path).collect();
    paths.extend([
        "/api/items/0",
        "/api/items/4",
        "/api/items/01",
        "/api/items/%31",
        "/api/items/x",
        "/api/items/",
        "/api/items/1/",
        "//",
        "/login",
        "/nowhere",
        "/?q=1",
        "/api/items?page=2",
    ]);
    let methods = [Method::GET, Method::HEAD, Method::POST, Method::DELETE];
    for path in paths {
        for method in &methods {
            for body in ["", "user=a"] {
                let request = request(method, path, body);
                let fast = exchange(service(), &request).await;
                let routed = exchange(routes(), &request).await;
                assert_eq!(fast, routed, "{method} {path} {body:?}");
                assert!(fast.starts_with("HTTP/1.1 "), "{fast}");
            }
        }
    }
}
