//! An axum app served with `axum::serve(listener, app)` gives the layer no
//! peer address: a rule keyed on the address put every client in one bucket
//! (`ip=unknown`) without a word. The layer now answers 500 naming the fix
//! and logs it once; served with `connect_info`, it limits each client.

use axum::Router;
use axum::routing::get;
use http::StatusCode;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use limits::{Algorithm, KeyedLimiter, Rule};
use limits_http::{HttpRule, KeySpec, Missing, RateLimitLayer};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tower::Layer;

/// Two requests a minute per client on every path, keyed by `key`.
fn app(key: KeySpec) -> Router {
    app_with(key, false)
}

/// [`app`], in a dry run or not.
fn app_with(key: KeySpec, dry_run: bool) -> Router {
    let rule = Rule::new(Algorithm::SlidingLog, "2/min".parse().unwrap());
    let layer = RateLimitLayer::builder()
        .rule(HttpRule::new("api", KeyedLimiter::<String>::new(rule), key))
        .dry_run(dry_run)
        .build();
    let routes = Router::new().route("/", get(|| async { "hello" }));
    Router::new().fallback_service(layer.layer(routes))
}

/// Serves `app` on 127.0.0.1, with or without `connect_info`; its address.
async fn serve(app: Router, connect_info: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    if connect_info {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, service).await });
    } else {
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    addr
}

/// Status, content type and body of `n` GETs of `/`, each on the wire.
async fn get_n(addr: SocketAddr, n: usize) -> Vec<(StatusCode, String, String)> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<bytes::Bytes>>();
    let mut seen = Vec::new();
    for _ in 0..n {
        let r = client
            .get(format!("http://{addr}/").parse().unwrap())
            .await
            .unwrap();
        let status = r.status();
        let content_type = r
            .headers()
            .get("content-type")
            .map_or("", |v| v.to_str().unwrap())
            .to_string();
        let body = r.into_body().collect().await.unwrap().to_bytes();
        seen.push((status, content_type, String::from_utf8_lossy(&body).into()));
    }
    seen
}

/// What the layer logs, as text.
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<u8>>>);

impl Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logged {
    /// Logs of this thread go here until the guard is dropped (the tests
    /// run on one thread, server and client alike).
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn lines(&self) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines().map(String::from).collect()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn served_without_connect_info_every_client_shared_ip_unknown() {
    let logged = Logged::default();
    let _guard = logged.capture();
    let addr = serve(app(KeySpec::ip()), false).await;
    let seen = get_n(addr, 3).await;
    // Every request is refused alike: none is limited under `ip=unknown`.
    for (status, content_type, body) in &seen {
        assert_eq!(*status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
        assert_eq!(content_type, "application/problem+json");
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["status"], 500);
        assert_eq!(problem["rule"], "api");
        let detail = problem["detail"].as_str().unwrap();
        assert!(
            detail.contains("into_make_service_with_connect_info::<SocketAddr>()"),
            "{detail}"
        );
        assert!(detail.contains("no client address"), "{detail}");
    }
    // Said once for the layer, not once per request.
    let errors: Vec<_> = logged
        .lines()
        .into_iter()
        .filter(|l| l.contains("ERROR"))
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("into_make_service_with_connect_info::<SocketAddr>()")
            && errors[0].contains("rule=\"api\""),
        "{}",
        errors[0]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn served_with_connect_info_each_client_is_limited() {
    let logged = Logged::default();
    let _guard = logged.capture();
    let addr = serve(app(KeySpec::ip()), true).await;
    let statuses: Vec<_> = get_n(addr, 3).await.into_iter().map(|s| s.0).collect();
    assert_eq!(statuses, [200, 200, 429]);
    assert!(
        !logged.lines().iter().any(|l| l.contains("ERROR")),
        "{:#?}",
        logged.lines()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_missing_header_falling_back_to_the_address_needs_it_too() {
    // `header:x-api-key` counts a request without the header by its address
    // (`missing = ip`, the default): without an address, that is one bucket.
    let addr = serve(app("header:x-api-key".parse().unwrap()), false).await;
    let seen = get_n(addr, 1).await;
    assert_eq!(
        seen[0].0,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{}",
        seen[0].2
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_key_that_never_reads_the_address_needs_none() {
    let key: KeySpec = "header:x-api-key".parse().unwrap();
    let addr = serve(app(key.with_missing(Missing::Shared)), false).await;
    let statuses: Vec<_> = get_n(addr, 3).await.into_iter().map(|s| s.0).collect();
    // Requests without the key share `missing:shared`, as configured.
    assert_eq!(statuses, [200, 200, 429]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_dry_run_without_an_address_passes_unlimited_and_says_why_once() {
    let logged = Logged::default();
    let _guard = logged.capture();
    let addr = serve(app_with(KeySpec::ip(), true), false).await;
    let seen = get_n(addr, 3).await;
    // A dry run never refuses, and no rule decided: bodies as served.
    for (status, _, body) in &seen {
        assert_eq!(*status, StatusCode::OK, "{body}");
        assert_eq!(body, "hello");
    }
    let errors = logged.lines().into_iter().filter(|l| l.contains("ERROR"));
    assert_eq!(errors.count(), 1, "{:#?}", logged.lines());
}
