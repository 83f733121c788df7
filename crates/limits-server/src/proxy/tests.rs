//! The proxy against real upstreams on 127.0.0.1: no mocks.

mod failures;
mod hop_names;
mod idle_looks;
mod lazy_timer;
mod one_look;
mod pool;
mod rewrites;
mod streaming;
mod timeouts;

use super::*;
use axum::extract::Request as AxumRequest;
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Generous: only the 504 test wants the upstream to run out of time.
const TIMEOUT: Duration = Duration::from_secs(10);
const CLIENT: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 7));

/// Serves `router` on 127.0.0.1 and returns its address.
async fn spawn(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// An upstream that answers everything with 201 and what it received as
/// JSON, plus a hop-by-hop header pair it must not leak.
async fn echo_upstream() -> SocketAddr {
    spawn(Router::new().fallback(|req: AxumRequest| async move {
        let (parts, body) = req.into_parts();
        let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in &parts.headers {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            headers.entry(name.to_string()).or_default().push(value);
        }
        let body = body.collect().await.expect("body").to_bytes();
        let echo = json!({
            "method": parts.method.as_str(),
            "path": parts.uri.path(),
            "query": parts.uri.query(),
            "headers": headers,
            "body": String::from_utf8_lossy(&body),
        });
        Response::builder()
            .status(StatusCode::CREATED)
            .header("content-type", "application/json")
            .header("x-upstream", "echo")
            .header("connection", "x-private")
            .header("x-private", "1")
            .body(Body::from(echo.to_string()))
            .expect("response")
    }))
    .await
}

fn proxy(addr: SocketAddr) -> Proxy {
    Proxy::new(&format!("http://{addr}"), TIMEOUT).expect("proxy")
}

async fn json_body(response: Response<Body>) -> Value {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    serde_json::from_slice(&bytes).expect("json body")
}

/// All values of one header the upstream saw, joined by "; ".
fn seen(echo: &Value, name: &str) -> Option<String> {
    let values = echo["headers"][name].as_array()?;
    let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
    Some(values.join("; "))
}

#[test]
fn proxy_is_cheap_to_share() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<Proxy>();
}

#[tokio::test]
async fn forwards_method_path_query_headers_and_body() {
    let upstream = echo_upstream().await;
    let request = Request::post("/things/7?x=1&y=two")
        .header("host", "front.example")
        .header("x-custom", "kept")
        .body(Body::from("hello"))
        .expect("request");
    let proxy = proxy(upstream);
    let response = proxy.forward(request, Some(CLIENT)).await;

    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(response.headers()["x-upstream"], "echo");
    assert!(response.headers().get("connection").is_none());
    assert!(
        response.headers().get("x-private").is_none(),
        "named in Connection"
    );
    let echo = json_body(response).await;
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["path"], "/things/7");
    assert_eq!(echo["query"], "x=1&y=two");
    assert_eq!(echo["body"], "hello");
    assert_eq!(seen(&echo, "x-custom").as_deref(), Some("kept"));
    assert_eq!(seen(&echo, "host"), Some(upstream.to_string()));
    assert_eq!(
        seen(&echo, "x-forwarded-host").as_deref(),
        Some("front.example")
    );
    assert_eq!(seen(&echo, "x-forwarded-proto").as_deref(), Some("http"));
    assert_eq!(
        seen(&echo, "x-forwarded-for").as_deref(),
        Some("203.0.113.7")
    );
    assert_eq!(proxy.errors(), ProxyErrors::default());
}

#[tokio::test]
async fn x_forwarded_for_is_appended_to() {
    let proxy = proxy(echo_upstream().await);
    let forwarded = |values: &[&str], client: Option<IpAddr>| {
        let mut request = Request::get("/").body(Body::empty()).expect("request");
        for value in values {
            let value = HeaderValue::from_str(value).expect("value");
            request.headers_mut().append("x-forwarded-for", value);
        }
        let proxy = proxy.clone();
        async move {
            seen(
                &json_body(proxy.forward(request, client).await).await,
                "x-forwarded-for",
            )
        }
    };
    let one = forwarded(&["198.51.100.1"], Some(CLIENT)).await;
    assert_eq!(one.as_deref(), Some("198.51.100.1, 203.0.113.7"));
    let two_lines = forwarded(&["198.51.100.1", "198.51.100.2"], Some(CLIENT)).await;
    assert_eq!(
        two_lines.as_deref(),
        Some("198.51.100.1, 198.51.100.2, 203.0.113.7")
    );
    let v6 = forwarded(&[], Some("2001:db8::1".parse().expect("ip"))).await;
    assert_eq!(v6.as_deref(), Some("2001:db8::1"));
    let unknown_client = forwarded(&["198.51.100.1"], None).await;
    assert_eq!(unknown_client.as_deref(), Some("198.51.100.1"));
}

#[tokio::test]
async fn hop_by_hop_request_headers_are_dropped() {
    let request = Request::get("/")
        .header("connection", "keep-alive, x-secret")
        .header("x-secret", "1")
        .header("keep-alive", "timeout=5")
        .header("proxy-connection", "keep-alive")
        .header("te", "trailers")
        .header("trailer", "x-checksum")
        .header("upgrade", "websocket")
        .header("proxy-authorization", "Basic Zm9vOmJhcg==")
        .header("x-kept", "1")
        .body(Body::empty())
        .expect("request");
    let response = proxy(echo_upstream().await).forward(request, None).await;
    let echo = json_body(response).await;
    for name in [
        "connection",
        "x-secret",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
    ] {
        assert_eq!(seen(&echo, name), None, "{name} reached the upstream");
    }
    assert_eq!(seen(&echo, "x-kept").as_deref(), Some("1"));
}

#[tokio::test]
async fn base_path_is_prefixed() {
    let upstream = echo_upstream().await;
    for base in ["/api", "/api/"] {
        let proxy = Proxy::new(&format!("http://{upstream}{base}"), TIMEOUT).expect("proxy");
        let request = Request::get("/users/7?x=1")
            .body(Body::empty())
            .expect("req");
        let echo = json_body(proxy.forward(request, None).await).await;
        assert_eq!(echo["path"], "/api/users/7", "base {base}");
        assert_eq!(echo["query"], "x=1");
        let root = Request::get("/").body(Body::empty()).expect("req");
        assert_eq!(
            json_body(proxy.forward(root, None).await).await["path"],
            "/api/"
        );
    }
}

#[test]
fn new_rejects_what_it_cannot_proxy_to() {
    let rejects = |upstream: &str, says: &str| match Proxy::new(upstream, TIMEOUT) {
        Ok(_) => panic!("{upstream:?} was accepted"),
        Err(e) => assert!(e.contains(says), "{upstream:?}: {e:?} lacks {says:?}"),
    };
    rejects("https://127.0.0.1:9000", "no TLS");
    rejects("HTTPS://example.com", "no TLS");
    rejects("ftp://example.com", "\"ftp\"");
    rejects("not a url", "not a URL");
    rejects("", "not a URL");
    rejects("127.0.0.1:9000", "absolute http://");
    rejects("/api", "absolute http://");
    rejects("http://user:pw@example.com", "credentials");
    rejects("http://example.com/?x=1", "query");
    assert!(Proxy::new("http://example.com", TIMEOUT).is_ok());
    assert!(Proxy::new("http://[::1]:9000/api/v1/", TIMEOUT).is_ok());
}

#[tokio::test]
async fn works_behind_a_real_server() {
    // The way `limits serve` will use it: axum in front, a real HTTP client.
    let upstream = echo_upstream().await;
    let proxy = proxy(upstream);
    let front = Router::new().fallback(
        move |axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<SocketAddr>,
              req: AxumRequest| {
            let proxy = proxy.clone();
            async move { proxy.forward(req, Some(peer.ip())).await }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let front_addr = listener.local_addr().expect("addr");
    let service = front.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });

    let response = reqwest::Client::new()
        .post(format!("http://{front_addr}/a/b?c=d"))
        .header("x-forwarded-for", "198.51.100.1")
        .body("over the wire")
        .send()
        .await
        .expect("send");
    assert_eq!(response.status().as_u16(), 201);
    assert!(response.headers().get("x-private").is_none());
    let echo: Value = serde_json::from_slice(&response.bytes().await.expect("body")).expect("json");
    assert_eq!(echo["path"], "/a/b");
    assert_eq!(echo["query"], "c=d");
    assert_eq!(echo["body"], "over the wire");
    assert_eq!(seen(&echo, "host"), Some(upstream.to_string()));
    assert_eq!(
        seen(&echo, "x-forwarded-host"),
        Some(front_addr.to_string())
    );
    assert_eq!(
        seen(&echo, "x-forwarded-for").as_deref(),
        Some("198.51.100.1, 127.0.0.1")
    );
}
