//! The layer: keys a client cannot forge, repeat, encode or spell around.

use crate::common;

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use common::*;
use http::{Request, StatusCode};
use limits::{Algorithm, ManualClock, Store};
use limits_http::{HttpRule, KeySpec, PeerAddr, Policy, RateLimitLayer};

// Issue 7: keys a client cannot forge, repeat, encode or spell around.

/// A login route that echoes any body, UTF-8 or not.
fn login_app<S: Store>(policy: Policy<S>) -> Router {
    Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/login", post(|body: bytes::Bytes| async move { body }))
        .layer(RateLimitLayer::new(policy))
}

fn login_with(content_type: Option<&str>, body: impl Into<Body>, peer: &str) -> Request<Body> {
    let mut r = Request::post("/login");
    if let Some(ct) = content_type {
        r = r.header("content-type", ct);
    }
    let mut r = r.body(body.into()).unwrap();
    r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
    r
}

fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    text.encode_utf16()
        .flat_map(|u| {
            if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        })
        .collect()
}

#[tokio::test]
async fn an_api_key_header_spelling_an_address_does_not_spend_that_addresss_limit() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "api",
        "/",
        "header:X-Api-Key",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]));
    // 127.0.0.41 without a key: its one request a minute.
    assert_eq!(send(&app, request("/", "127.0.0.41:1")).await.status(), 200);
    // Another client naming 127.0.0.41's fallback key as its API key has a
    // limit of its own, and did not spend 127.0.0.41's.
    let mut forged = request("/", "192.0.2.7:1");
    forged
        .headers_mut()
        .insert("x-api-key", "ip:127.0.0.41".parse().unwrap());
    assert_eq!(send(&app, forged).await.status(), 200);
    assert_eq!(send(&app, request("/", "127.0.0.41:1")).await.status(), 429);
}

#[tokio::test]
async fn a_query_key_repeated_with_different_values_is_400_naming_it() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "api",
        "/",
        "query:api_key",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]));
    for _ in 0..2 {
        let r = send(&app, request("/?api_key=r1&api_key=real", "192.0.2.1:1")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(header(&r, "content-type"), "application/problem+json");
        let body = json(r).await;
        assert_eq!(body["field"], "query:api_key");
        assert!(
            body["detail"].as_str().unwrap().contains("api_key"),
            "{body}"
        );
    }
    // The same value twice is one key.
    let same = "/?api_key=real&api_key=real";
    assert_eq!(send(&app, request(same, "192.0.2.1:1")).await.status(), 200);
    assert_eq!(send(&app, request(same, "192.0.2.2:1")).await.status(), 429);
}

#[tokio::test]
async fn a_duplicate_json_member_with_different_values_is_400() {
    let clock = ManualClock::new(0);
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "json:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let body = r#"{"username":"alice","username":"mallory"}"#;
    let r = send(
        &app,
        login_with(Some("application/json"), body, "192.0.2.1:1"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body = json(r).await;
    assert_eq!(body["field"], "json:username");
    assert_eq!(body["rule"], "login");
}

#[tokio::test]
async fn utf8_spellings_of_one_login_share_its_limit_and_other_charsets_are_415() {
    // Regression (issue 7): bodies the limiter could not parse but the
    // upstream could fell back to the address key. Regression (issue 22):
    // UTF-16 bodies were transcoded, while upstreams read raw bytes.
    let clock = ManualClock::new(0);
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "json:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let plain = r#"{"username":"alice","password":"guess"}"#;
    let deep = format!(
        r#"{{"pad":{}{},"username":"alice"}}"#,
        "[".repeat(8_000),
        "]".repeat(8_000)
    );
    let bom8 = [b"\xEF\xBB\xBF", plain.as_bytes()].concat();
    let readable: Vec<(Option<&str>, Vec<u8>)> = vec![
        (Some("application/json"), plain.into()),
        (Some("application/json"), bom8.clone()),
        (Some("application/json"), deep.into_bytes()),
        (Some("application/json; charset=UTF-8"), bom8),
        (Some("text/plain"), plain.into()),
    ];
    let mut statuses = Vec::new();
    for (i, (ct, body)) in readable.into_iter().enumerate() {
        let r = send(&app, login_with(ct, body, &format!("192.0.2.{}:1", i + 1))).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let mut bom16 = vec![0xFE, 0xFF];
    bom16.extend(utf16(plain, true));
    let other_charsets: Vec<(Option<&str>, Vec<u8>)> = vec![
        (
            Some("application/json; charset=utf-16le"),
            utf16(plain, false),
        ),
        (None, bom16),
        (Some("application/json"), utf16(plain, false)),
        (Some("application/json; charset=latin1"), plain.into()),
    ];
    for (i, (ct, body)) in other_charsets.into_iter().enumerate() {
        let r = send(&app, login_with(ct, body, &format!("192.0.2.{}:1", i + 10))).await;
        assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ct:?}");
        assert_eq!(header(&r, "content-type"), "application/problem+json");
        assert_eq!(json(r).await["field"], "json:username");
    }

    // A JSON body (or any other) on a form rule is unreadable: 400, not the address key.
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "form:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    for (i, ct) in [
        Some("application/json"),
        None,
        Some("multipart/form-data; boundary=x"),
    ]
    .into_iter()
    .enumerate()
    {
        let r = send(&app, login_with(ct, plain, &format!("198.51.100.{i}:1"))).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{ct:?}");
        assert_eq!(json(r).await["field"], "form:username");
    }
}

#[tokio::test]
async fn spellings_of_one_account_share_its_limit_by_default() {
    let clock = ManualClock::new(0);
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "json:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let attempt = |name: &str, peer: &str| {
        let body = serde_json::json!({ "username": name, "password": "guess" }).to_string();
        login_with(Some("application/json"), body, peer)
    };
    let mut statuses = Vec::new();
    for (i, name) in ["alice", "Alice", " alice ", "ａｌｉｃｅ", "ALICE\t"]
        .into_iter()
        .enumerate()
    {
        let r = send(&app, attempt(name, &format!("192.0.2.{i}:1"))).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    // Composed (NFC) and decomposed (NFD) accents are one name.
    let mut statuses = Vec::new();
    for (i, name) in ["zo\u{eb}", "zoe\u{308}", "ZOE\u{308}", " Zo\u{eb}"]
        .into_iter()
        .enumerate()
    {
        let r = send(&app, attempt(name, &format!("198.51.100.{i}:1"))).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429]);
}

#[tokio::test]
async fn missing_shared_puts_every_keyless_request_in_one_bucket() {
    let clock = ManualClock::new(0);
    let key = "header:X-Api-Key"
        .parse::<KeySpec>()
        .unwrap()
        .with_missing(limits_http::Missing::Shared);
    let app = app(Policy::new(vec![HttpRule {
        key,
        ..rule(
            "api",
            "/",
            "ip",
            store(Algorithm::SlidingLog, "2/m", &clock),
        )
    }]));
    let statuses = [
        send(&app, request("/", "192.0.2.1:1")).await.status(),
        send(&app, request("/", "192.0.2.2:1")).await.status(),
        send(&app, request("/", "192.0.2.3:1")).await.status(),
    ];
    assert_eq!(statuses, [200, 200, 429]);
    let mut keyed = request("/", "192.0.2.3:1");
    keyed
        .headers_mut()
        .insert("x-api-key", "k1".parse().unwrap());
    assert_eq!(send(&app, keyed).await.status(), 200);
}
