//! The demo API as a client sees it: each endpoint's status, Content-Type
//! and JSON body, and the answers to what it does not serve.

use super::routes;
use serde_json::{json, Value};

/// The demo's address, served on a free port until the test ends.
async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, routes()).await.unwrap() });
    format!("http://{addr}")
}

/// The status, Content-Type and body of `request`.
async fn answer(request: reqwest::RequestBuilder) -> (u16, String, String) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, content_type, response.text().await.unwrap())
}

/// The status and JSON body of `request`, which must say it is JSON.
async fn json_answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let (status, content_type, body) = answer(request).await;
    assert_eq!(content_type, "application/json", "{body}");
    (status, serde_json::from_str(&body).unwrap())
}

#[tokio::test]
async fn every_endpoint_answers_its_json() {
    let at = start().await;
    let client = reqwest::Client::new();
    let index = json!({
        "service": "limits demo API",
        "endpoints": ["GET /api/items", "GET /api/items/{id}", "POST /login"],
        "headers": "every response carries RateLimit-Policy and RateLimit; a 429 adds Retry-After",
    });
    assert_eq!(json_answer(client.get(&at)).await, (200, index));
    let items = json!({ "items": [
        { "id": 1, "name": "anvil" },
        { "id": 2, "name": "bucket" },
        { "id": 3, "name": "compass" },
    ]});
    let got = json_answer(client.get(format!("{at}/api/items"))).await;
    assert_eq!(got, (200, items));
    for (id, name) in [(1, "anvil"), (2, "bucket"), (3, "compass")] {
        let got = json_answer(client.get(format!("{at}/api/items/{id}"))).await;
        assert_eq!(got, (200, json!({ "id": id, "name": name })));
    }
    let login = client.post(format!("{at}/login")).body("user=alice");
    let got = json_answer(login).await;
    assert_eq!(got, (200, json!({ "ok": true, "received_bytes": 10 })));
}

#[tokio::test]
async fn an_item_that_does_not_exist_is_a_404_that_names_it() {
    let at = start().await;
    let client = reqwest::Client::new();
    for id in [0, 4, 1000] {
        let got = json_answer(client.get(format!("{at}/api/items/{id}"))).await;
        let detail = format!("no item {id}");
        assert_eq!(got, (404, json!({ "status": 404, "detail": detail })));
    }
}

#[tokio::test]
async fn what_the_demo_does_not_serve_is_refused_by_its_router() {
    let at = start().await;
    let client = reqwest::Client::new();
    let (status, _, _) = answer(client.get(format!("{at}/nowhere"))).await;
    assert_eq!(status, 404);
    let (status, _, _) = answer(client.get(format!("{at}/login"))).await;
    assert_eq!(status, 405, "login is a POST");
    let (status, _, _) = answer(client.get(format!("{at}/api/items/x"))).await;
    assert_eq!(status, 400, "an id is a number");
}
