//! The static answers of the demo API (the service the server runs) are
//! byte for byte what its axum routes answer, and every other request still
//! reaches the routes.

use super::{routes, service, ITEMS, ITEM_BODIES, STATIC};
use axum::body::Body;
use axum::extract::Request;
use axum::http::Method;
use http_body_util::BodyExt;
use serde_json::json;
use std::future::poll_fn;
use tower_service::Service;

#[test]
fn the_item_bodies_are_the_json_they_replaced() {
    for (i, name) in ITEMS.iter().enumerate() {
        let built = json!({ "id": i + 1, "name": name });
        assert_eq!(ITEM_BODIES[i], serde_json::to_string(&built).unwrap());
    }
}

#[test]
fn each_static_length_is_its_body_s() {
    for (path, body, length) in STATIC {
        assert_eq!(length, body.len().to_string(), "{path}");
    }
}

/// The status, headers (in order) and body of `service`'s answer.
async fn answer<S, B>(mut service: S, method: Method, path: &str, body: &str) -> String
where
    S: Service<Request, Response = http::Response<B>>,
    S::Error: std::fmt::Debug,
    B: axum::body::HttpBody,
    B::Error: std::fmt::Debug,
{
    let req = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::from(body.to_owned()))
        .unwrap();
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    let response = service.call(req).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let headers: Vec<String> = parts
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value:?}"))
        .collect();
    format!(
        "{}\n{}\n{}",
        parts.status,
        headers.join("\n"),
        String::from_utf8_lossy(&body)
    )
}

#[tokio::test]
async fn every_request_is_answered_as_the_routes_answer_it() {
    let mut paths: Vec<&str> = STATIC.iter().map(|(path, _, _)| *path).collect();
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
            let fast = answer(service(), method.clone(), path, "user=a").await;
            let routed = answer(routes(), method.clone(), path, "user=a").await;
            assert_eq!(fast, routed, "{method} {path}");
        }
    }
}
