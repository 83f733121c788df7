//! A failing upstream becomes a counted 502 or 504 problem.

use super::*;

/// Checks a problem response: status, content type, JSON status, its
/// detail exactly, and that nothing in the body names `upstream` (the
/// internal address, port included, is the log's, not the client's).
async fn assert_problem(
    response: Response<Body>,
    status: StatusCode,
    detail: &str,
    upstream: &str,
) {
    assert_eq!(response.status(), status);
    let content_type = response
        .headers()
        .get("content-type")
        .expect("content-type");
    assert_eq!(content_type, limits_http::PROBLEM_JSON);
    let problem = json_body(response).await;
    assert_eq!(problem["status"], status.as_u16());
    assert_eq!(problem["detail"], detail);
    let port = upstream.rsplit(':').next().expect("a port");
    let body = problem.to_string();
    assert!(
        !body.contains(upstream) && !body.contains(port),
        "the body shows the upstream {upstream}: {body}"
    );
}

/// An address on this machine where nothing listens (bound, then closed).
async fn closed_port() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    listener.local_addr().expect("addr")
}

/// The 502 told the client "upstream http://10.0.0.5:3000 refused the
/// connection": an internal address and the cause are the operator's to
/// know. The client hears "upstream unavailable"; nothing of the address.
#[tokio::test]
async fn a_502_body_no_longer_shows_the_internal_upstream_url() {
    let addr = closed_port().await;
    // A base path: part of the internal URL too.
    let name = format!("http://{addr}/internal-api");
    let proxy = Proxy::new(&name, TIMEOUT).expect("proxy");
    let request = Request::get("/x").body(Body::empty()).expect("req");
    let response = proxy.forward(request, Some(CLIENT)).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let text = json_body(response).await.to_string();
    assert!(
        text.contains("\"detail\":\"upstream unavailable\""),
        "{text}"
    );
    for secret in [&addr.to_string(), "internal-api", "refused"] {
        assert!(!text.contains(secret), "{secret:?} shown: {text}");
    }
}

#[tokio::test]
async fn upstream_down_is_502() {
    let addr = closed_port().await;
    let proxy = proxy(addr);
    let request = Request::get("/").body(Body::empty()).expect("req");
    let response = proxy.forward(request, Some(CLIENT)).await;
    let name = format!("http://{addr}");
    assert_problem(
        response,
        StatusCode::BAD_GATEWAY,
        "upstream unavailable",
        &name,
    )
    .await;
    assert_eq!(
        proxy.errors(),
        ProxyErrors {
            bad_gateway: 1,
            gateway_timeout: 0,
            bad_request_body: 0
        }
    );
}

#[tokio::test]
async fn upstream_hanging_up_is_502() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            drop(socket);
        }
    });
    let proxy = proxy(addr);
    let request = Request::get("/").body(Body::empty()).expect("req");
    let response = proxy.forward(request, None).await;
    let name = format!("http://{addr}");
    assert_problem(
        response,
        StatusCode::BAD_GATEWAY,
        "upstream unavailable",
        &name,
    )
    .await;
    assert_eq!(
        proxy.errors(),
        ProxyErrors {
            bad_gateway: 1,
            gateway_timeout: 0,
            bad_request_body: 0
        }
    );
}

#[tokio::test]
async fn slow_upstream_is_504() {
    let upstream = spawn(Router::new().fallback(|| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        "too late"
    }))
    .await;
    let proxy = Proxy::new(&format!("http://{upstream}"), Duration::from_millis(200)).expect("p");
    let request = Request::get("/").body(Body::empty()).expect("req");
    let response = proxy.forward(request, None).await;
    let name = format!("http://{upstream}");
    assert_problem(
        response,
        StatusCode::GATEWAY_TIMEOUT,
        "upstream timed out",
        &name,
    )
    .await;
    assert_eq!(
        proxy.errors(),
        ProxyErrors {
            bad_gateway: 0,
            gateway_timeout: 1,
            bad_request_body: 0
        }
    );
}

/// A gRPC client reads a 502 problem as a broken stream (INTERNAL): its
/// 502 is the gRPC status UNAVAILABLE, which it may retry, and a 504 too.
#[tokio::test]
async fn a_grpc_clients_502_and_504_are_unavailable() {
    let down = closed_port().await;
    let slow = spawn(Router::new().route(
        "/",
        axum::routing::post(|| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            "too late"
        }),
    ))
    .await;
    let grpc = || {
        Request::post("/")
            .header("content-type", "application/grpc")
            .body(Body::empty())
            .expect("req")
    };
    let timeout = Duration::from_millis(200);
    for (upstream, message) in [(down, "upstream unavailable"), (slow, "upstream timed out")] {
        let proxy = Proxy::new(&format!("http://{upstream}"), timeout).expect("proxy");
        let response = proxy.forward(grpc(), Some(CLIENT)).await;
        assert_eq!(response.status(), StatusCode::OK, "{message}");
        let headers = response.headers();
        assert_eq!(headers["content-type"], "application/grpc");
        assert_eq!(headers["grpc-status"], "14", "{message}");
        assert_eq!(headers["grpc-message"], message);
        let body = response.into_body().collect().await.expect("body");
        assert!(body.to_bytes().is_empty(), "trailers-only");
    }
}
