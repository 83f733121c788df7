//! A 429 is written into the refused request's header map, emptied: its
//! fields, in order, are those of a 429 to a request that had none, however
//! many the refused request had.

use crate::common;

use axum::body::Body;
use common::{app, rule, send, store};
use http::Request;
use http_body_util::BodyExt;
use limits::{Algorithm, ManualClock};
use limits_http::{PeerAddr, Policy};

/// A `GET /` from `peer` with `fields` header fields besides Host.
fn request(peer: &str, fields: usize) -> Request<Body> {
    let mut builder = Request::get("/").header("host", "example.com");
    for i in 0..fields {
        builder = builder.header(format!("x-field-{i}"), "value");
    }
    let mut r = builder.body(Body::empty()).unwrap();
    r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
    r
}

/// The fields, in order, and the body of the 429 to the second request of
/// a client with `fields` header fields, under a 1/m rule.
async fn too_many(fields: usize, legacy: bool) -> (Vec<(String, String)>, Vec<u8>) {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![rule(
        "api",
        "/",
        "ip",
        store(Algorithm::TokenBucket, "1/m", &clock),
    )]);
    policy.options.legacy_headers = legacy;
    let app = app(policy);
    assert_eq!(
        send(&app, request("192.0.2.1:1", fields)).await.status(),
        200
    );
    let r = send(&app, request("192.0.2.1:1", fields)).await;
    assert_eq!(r.status(), 429);
    let (parts, body) = r.into_parts();
    let headers = parts
        .headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    (headers, body.collect().await.unwrap().to_bytes().to_vec())
}

#[tokio::test]
async fn no_request_field_reaches_a_429() {
    for legacy in [false, true] {
        let (bare, body) = too_many(0, legacy).await;
        let mut names: Vec<&str> = vec![
            "content-type",
            "ratelimit-policy",
            "ratelimit",
            "retry-after",
        ];
        if legacy {
            names.extend([
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset",
            ]);
        }
        // axum's route adds the body's length last.
        names.push("content-length");
        let got: Vec<&str> = bare.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, names);
        for fields in [1, 10, 100] {
            assert_eq!(too_many(fields, legacy).await, (bare.clone(), body.clone()));
        }
    }
}
