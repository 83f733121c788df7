//! A static answer is written into the request's header map, emptied: none
//! of the request's fields may reach the response, however many it had.

use super::wire::exchange;
use super::{routes, service};

/// A `GET path` with `fields` more header fields, as a client sends it.
fn request(path: &str, fields: usize) -> Vec<u8> {
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: text/plain\r\ncontent-length: 0\r\n"
    );
    for i in 0..fields {
        request.push_str(&format!("x-field-{i}: value\r\n"));
    }
    request.push_str("\r\n");
    request.into_bytes()
}

#[tokio::test]
async fn no_request_field_reaches_a_static_answer() {
    for fields in [0, 1, 10, 90] {
        for path in ["/", "/api/items", "/api/items/2"] {
            let request = request(path, fields);
            let fast = exchange(service(), &request).await;
            let routed = exchange(routes(), &request).await;
            assert_eq!(fast, routed, "{path} with {fields} more fields");
            let head = fast.split("\r\n\r\n").next().unwrap();
            let names: Vec<&str> = head
                .lines()
                .skip(1)
                .map(|line| line.split(':').next().unwrap())
                .collect();
            assert_eq!(names, ["content-type", "content-length"], "{path}");
        }
    }
}
