//! The upstream timeout on a connection's shared timer: every request gets
//! its own deadline, counted from when it is sent, whether the timer is new,
//! reset after a quick answer (a later deadline than the one the runtime
//! holds), reset after it fired, or lost with a request that was dropped.

use super::*;
use axum::routing::get;
use std::convert::Infallible;
use tower::ServiceExt;

const SHORT: Duration = Duration::from_millis(300);

/// `/fast` answers at once, `/slow` after a minute.
async fn slow_and_fast_upstream() -> SocketAddr {
    let slow = || async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        "too late"
    };
    spawn(
        Router::new()
            .route("/fast", get(|| async { "fast" }))
            .route("/slow", get(slow)),
    )
    .await
}

fn get_request(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).expect("request")
}

/// Sends `path` on `service` and returns the status, the body and how long
/// the answer took.
async fn send<S>(service: &S, path: &str) -> (StatusCode, String, Duration)
where
    S: tower::Service<Request<Body>, Response = Response<ProxyBody>, Error = Infallible> + Clone,
{
    let started = std::time::Instant::now();
    let response = service.clone().oneshot(get_request(path)).await;
    let Ok(response) = response;
    let took = started.elapsed();
    let status = response.status();
    let body = response.into_body().collect().await.expect("body");
    let text = String::from_utf8(body.to_bytes().to_vec()).expect("utf-8");
    (status, text, took)
}

/// A 504 that came no sooner than the timeout, and says so without naming
/// the upstream.
fn assert_timed_out((status, body, took): (StatusCode, String, Duration), upstream: &str) {
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert!(
        took >= SHORT,
        "a 504 after {took:?}, before the {SHORT:?} timeout"
    );
    let problem: Value = serde_json::from_str(&body).expect("problem json");
    assert_eq!(problem["detail"], "upstream timed out", "{body}");
    assert!(!body.contains(upstream), "{body}");
}

#[tokio::test]
async fn each_request_on_a_connection_gets_its_own_deadline() {
    let upstream = slow_and_fast_upstream().await;
    let name = format!("http://{upstream}");
    let proxy = Proxy::new(&name, SHORT).expect("proxy");
    let service = proxy.for_client(Some(CLIENT));

    // A new timer, set and not fired.
    let (status, body, _) = send(&service, "/fast").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "fast"));
    // The same timer set later than the deadline the runtime holds for it:
    // the old deadline must neither fire early nor be kept.
    tokio::time::sleep(SHORT * 2 / 3).await;
    assert_timed_out(send(&service, "/slow").await, &name);
    // After it fired: set again, for a quick answer and then a slow one.
    let (status, body, _) = send(&service, "/fast").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "fast"));
    assert_timed_out(send(&service, "/slow").await, &name);
    assert_eq!(proxy.errors().gateway_timeout, 2);
}

#[tokio::test]
async fn quick_answers_do_not_leave_a_deadline_behind() {
    let upstream = slow_and_fast_upstream().await;
    let name = format!("http://{upstream}");
    let proxy = Proxy::new(&name, SHORT).expect("proxy");
    let service = proxy.for_client(None);
    // Quick answers for longer than the timeout, each setting the timer a
    // little later than the last: none of them is cut off by an earlier one's
    // deadline, and the timer fires for none of them.
    let started = std::time::Instant::now();
    let mut answered = 0;
    while started.elapsed() < SHORT * 2 {
        let (status, _, _) = send(&service, "/fast").await;
        assert_eq!(status, StatusCode::OK);
        answered += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(answered > 5, "{answered} requests");
    assert_eq!(proxy.errors().gateway_timeout, 0);
    assert_timed_out(send(&service, "/slow").await, &name);
}

#[tokio::test]
async fn a_dropped_request_takes_its_timer_and_the_next_gets_one() {
    let upstream = slow_and_fast_upstream().await;
    let name = format!("http://{upstream}");
    let proxy = Proxy::new(&name, SHORT).expect("proxy");
    let service = proxy.for_client(Some(CLIENT));
    // The client goes away while the upstream is still thinking: its
    // request's future, and the timer lent to it, are dropped unfinished.
    let waited =
        tokio::time::timeout(SHORT / 3, service.clone().oneshot(get_request("/slow"))).await;
    assert!(waited.is_err(), "the slow upstream answered");
    assert_eq!(proxy.errors().gateway_timeout, 0);
    let (status, body, _) = send(&service, "/fast").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "fast"));
    assert_timed_out(send(&service, "/slow").await, &name);
    // Another connection's service has a timer of its own.
    let other = proxy.for_client(Some(CLIENT));
    assert_timed_out(send(&other, "/slow").await, &name);
    assert_eq!(proxy.errors().gateway_timeout, 2);
}
