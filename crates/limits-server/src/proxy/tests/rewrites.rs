//! The cheaper header rewrites and the unboxed per-connection service give
//! the same headers and bytes as the code they replaced: hop-by-hop
//! stripping against a reference that removes every name one by one, the
//! `X-Forwarded-For` value against one built with `format!`, and the
//! service's responses against `Proxy::forward`'s, through real upstreams.

use super::forwarding::{add_forwarding, strip_hop_by_hop, ClientAddr};
use super::*;
use http::header::{HeaderMap, HeaderName};
use tower::ServiceExt;

/// The hop-by-hop names every hop drops (RFC 9110 7.6.1, and the
/// de facto `keep-alive` and `proxy-connection`), as the references list them.
pub(super) const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
];

/// The stripping as it was: `Connection`'s tokens, then each fixed name.
pub(super) fn strip_reference(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

pub(super) fn map(pairs: &[(&str, &[u8])]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("name");
        headers.append(name, HeaderValue::from_bytes(value).expect("value"));
    }
    headers
}

pub(super) fn listed(headers: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    let pairs = headers.iter();
    pairs
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect()
}

#[test]
fn stripping_removes_what_the_reference_removes() {
    let cases: &[&[(&str, &[u8])]] = &[
        &[],
        &[("host", b"a"), ("x-kept", b"1")],
        &[("connection", b"keep-alive"), ("server", b"nginx")],
        &[("connection", b"close, X-Private"), ("x-private", b"1")],
        &[("connection", b" x-a ,,x-b"), ("x-a", b"1"), ("x-b", b"2")],
        &[
            ("connection", b"x-a"),
            ("connection", b"x-b"),
            ("x-b", b"2"),
        ],
        &[("connection", b"x-kept, caf\xc3\xa9"), ("x-kept", b"1")],
        &[("keep-alive", b"timeout=5"), ("x-kept", b"1")],
        &[("connection", b"Keep-Alive"), ("keep-alive", b"timeout=5")],
        &[("connection", b"close"), ("close", b"1"), ("x-kept", b"1")],
        &[
            ("connection", b"keep-alive, TE, x-a"),
            ("te", b"x"),
            ("x-a", b"1"),
        ],
        &[
            ("x-a", b"1"),
            ("connection", b"x-a, upgrade"),
            ("upgrade", b"h2c"),
        ],
        &[("proxy-connection", b"keep-alive")],
        &[("te", b"trailers"), ("trailer", b"x-sum")],
        &[("transfer-encoding", b"chunked"), ("upgrade", b"h2c")],
        &[
            ("proxy-authenticate", b"Basic"),
            ("proxy-authorization", b"x"),
        ],
        &[("x-upgrade", b"1"), ("keep-alive-ish", b"2"), ("tee", b"3")],
    ];
    for pairs in cases {
        let mut ours = map(pairs);
        let mut reference = map(pairs);
        strip_hop_by_hop(&mut ours);
        strip_reference(&mut reference);
        assert_eq!(listed(&ours), listed(&reference), "{pairs:?}");
    }
}

/// `X-Forwarded-For` as it was built: every visible line trimmed and kept
/// if not empty, ", " between, the client written by `Display`.
fn forwarded_reference(lines: &[&[u8]], ip: IpAddr) -> Vec<u8> {
    let mut chain = String::new();
    for line in lines {
        let value = HeaderValue::from_bytes(line).expect("value");
        let Ok(line) = value.to_str() else {
            continue;
        };
        if !line.trim().is_empty() {
            chain.push_str(line.trim());
            chain.push_str(", ");
        }
    }
    chain.push_str(&ip.to_string());
    chain.into_bytes()
}

#[test]
fn x_forwarded_for_is_the_reference_value() {
    let ips: Vec<IpAddr> = [
        "0.0.0.0",
        "9.10.99.100",
        "203.0.113.7",
        "255.255.255.255",
        "::1",
        "2001:db8::1",
        "::ffff:192.0.2.128",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    ]
    .iter()
    .map(|ip| ip.parse().expect("ip"))
    .collect();
    let line_sets: &[&[&[u8]]] = &[
        &[],
        &[b"198.51.100.1"],
        &[b" 198.51.100.1 ", b"198.51.100.2, 10.0.0.1"],
        &[b"", b"   "],
        &[b"caf\xc3\xa9", b"198.51.100.3"],
        &[b"unknown", b"_hidden"],
    ];
    for &ip in &ips {
        let client = ClientAddr::new(ip).expect("an address is a header value");
        for lines in line_sets {
            let mut headers = HeaderMap::new();
            for line in *lines {
                let value = HeaderValue::from_bytes(line).expect("value");
                headers.append("x-forwarded-for", value);
            }
            add_forwarding(&mut headers, Some(&client), None);
            let values: Vec<&[u8]> = headers
                .get_all("x-forwarded-for")
                .iter()
                .map(HeaderValue::as_bytes)
                .collect();
            let expected = forwarded_reference(lines, ip);
            assert_eq!(values, [expected.as_slice()], "{ip} after {lines:?}");
            assert_eq!(headers["x-forwarded-proto"], "http");
            assert!(headers.get("x-forwarded-host").is_none());
        }
    }
}

/// Status, headers (but the date) and body bytes of a response.
async fn whole<B>(response: Response<B>) -> (StatusCode, Vec<(String, Vec<u8>)>, bytes::Bytes)
where
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    let (parts, body) = response.into_parts();
    let mut headers = listed(&parts.headers);
    headers.retain(|(name, _)| name != "date");
    let body = body.collect().await.expect("body").to_bytes();
    (parts.status, headers, body)
}

fn request(method: &str, xff: Option<&str>) -> Request<Body> {
    let mut builder = Request::builder()
        .method(method)
        .uri("/p?q=1")
        .header("host", "front.example");
    if let Some(xff) = xff {
        builder = builder.header("x-forwarded-for", xff);
    }
    builder.body(Body::from("payload")).expect("request")
}

#[tokio::test]
async fn the_connection_service_answers_what_forward_answers() {
    let upstream = echo_upstream().await;
    let proxy = proxy(upstream);
    // One service for many requests: the client's shared entry must not
    // take anything from one request into the next.
    let service = proxy.for_client(Some(CLIENT));
    for xff in [None, Some("198.51.100.1"), None, Some("198.51.100.2")] {
        for method in ["GET", "POST", "CONNECT"] {
            let via_service = service
                .clone()
                .oneshot(request(method, xff))
                .await
                .expect("infallible");
            let via_forward = proxy.forward(request(method, xff), Some(CLIENT)).await;
            let (a, b) = (whole(via_service).await, whole(via_forward).await);
            assert_eq!(a, b, "{method} with {xff:?}");
            if method != "CONNECT" {
                let echo: serde_json::Value = serde_json::from_slice(&a.2).expect("json");
                let expected = match xff {
                    Some(before) => format!("{before}, 203.0.113.7"),
                    None => "203.0.113.7".to_string(),
                };
                assert_eq!(seen(&echo, "x-forwarded-for"), Some(expected));
            }
        }
    }
    // The proxy's own answer, a 502 from an upstream that is gone.
    let gone = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let gone_proxy = super::proxy(gone.local_addr().expect("addr"));
    drop(gone);
    let via_service = gone_proxy
        .for_client(None)
        .oneshot(request("GET", None))
        .await
        .expect("infallible");
    let via_forward = gone_proxy.forward(request("GET", None), None).await;
    let (a, b) = (whole(via_service).await, whole(via_forward).await);
    assert_eq!(a.0, StatusCode::BAD_GATEWAY);
    assert_eq!(a, b);
}
