//! A static answer is written into the request's header map, emptied: none
//! of the request's fields may reach the response, however many it had.

use super::{routes, service};
use axum::body::Body;
use axum::extract::Request;
use http_body_util::BodyExt;
use std::future::poll_fn;
use tower_service::Service;

/// A `GET path` with `fields` header fields, as a client sends them.
fn request(path: &str, fields: usize) -> Request {
    let mut builder = Request::get(path)
        .header("host", "127.0.0.1")
        .header("content-type", "text/plain")
        .header("content-length", "0");
    for i in 0..fields {
        builder = builder.header(format!("x-field-{i}"), "value");
    }
    builder.body(Body::empty()).unwrap()
}

/// The status, the headers in order and the body of `service`'s answer.
async fn answer<S, B>(mut service: S, req: Request) -> (u16, Vec<(String, String)>, Vec<u8>)
where
    S: Service<Request, Response = http::Response<B>>,
    S::Error: std::fmt::Debug,
    B: axum::body::HttpBody,
    B::Error: std::fmt::Debug,
{
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    let response = service.call(req).await.unwrap();
    let (parts, body) = response.into_parts();
    let headers = parts
        .headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    let body = body.collect().await.unwrap().to_bytes().to_vec();
    (parts.status.as_u16(), headers, body)
}

#[tokio::test]
async fn no_request_field_reaches_a_static_answer() {
    for fields in [0, 1, 10, 100] {
        for path in ["/", "/api/items", "/api/items/2"] {
            let fast = answer(service(), request(path, fields)).await;
            let routed = answer(routes(), request(path, fields)).await;
            assert_eq!(fast, routed, "{path} with {fields} more fields");
            let names: Vec<&str> = fast.1.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["content-type", "content-length"], "{path}");
        }
    }
}
