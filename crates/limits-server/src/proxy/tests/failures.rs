//! A failing upstream becomes a counted 502 or 504 problem.

use super::*;

/// Checks a problem response: status, content type, JSON status, detail.
async fn assert_problem(response: Response<Body>, status: StatusCode, detail_has: &[&str]) {
    assert_eq!(response.status(), status);
    let content_type = response
        .headers()
        .get("content-type")
        .expect("content-type");
    assert_eq!(content_type, limits_http::PROBLEM_JSON);
    let problem = json_body(response).await;
    assert_eq!(problem["status"], status.as_u16());
    let detail = problem["detail"].as_str().expect("detail");
    for part in detail_has {
        assert!(detail.contains(part), "{detail:?} lacks {part:?}");
    }
}

#[tokio::test]
async fn upstream_down_is_502() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let proxy = proxy(addr);
    let request = Request::get("/").body(Body::empty()).expect("req");
    let response = proxy.forward(request, Some(CLIENT)).await;
    let name = format!("http://{addr}");
    assert_problem(response, StatusCode::BAD_GATEWAY, &[&name, "refused"]).await;
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
    assert_problem(
        response,
        StatusCode::BAD_GATEWAY,
        &[&format!("http://{addr}")],
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
    assert_problem(response, StatusCode::GATEWAY_TIMEOUT, &[&name, "200ms"]).await;
    assert_eq!(
        proxy.errors(),
        ProxyErrors {
            bad_gateway: 0,
            gateway_timeout: 1,
            bad_request_body: 0
        }
    );
}
