//! `Backend::service`: any cloneable tower service behind the limits, with
//! no router around it; served over real HTTP, limited with the standard
//! headers, and stopped by a shutdown future that need not be `Send`.

use crate::serving::one_rule;
use bytes::Bytes;
use http_body_util::Full;
use limits_http::PeerAddr;
use limits_server::{Backend, Server};
use std::convert::Infallible;
use std::rc::Rc;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Answers with its method and path, and whether the request carried a
/// `PeerAddr` extension; its body is its own type (not axum's).
fn echo() -> impl tower::Service<
    axum::extract::Request,
    Response = http::Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Send,
> + Clone
       + Send
       + 'static {
    tower::service_fn(|req: axum::extract::Request| async move {
        let peer = req.extensions().get::<PeerAddr>().is_some();
        let text = format!("{} {} peer_addr={peer}\n", req.method(), req.uri().path());
        Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from(text))))
    })
}

#[tokio::test(flavor = "current_thread")]
async fn a_service_is_served_behind_the_limits_and_stops_with_its_shutdown() {
    let config = one_rule("2/min");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    // Not `Send`: the server runs on this thread, beside the client.
    let local = Rc::new(());
    let shutdown = async move {
        let _ = stopped.await;
        drop(local);
    };
    let server = Server::new(config).expect("valid config");
    let serving = server.serve_on(listener, Backend::service("echo", echo()), shutdown);

    let client = async move {
        let client = reqwest::Client::new();
        let url = format!("http://{addr}/any/path");
        for remaining in ["1", "0"] {
            let ok = client.get(&url).send().await.unwrap();
            assert_eq!(ok.status(), 200);
            let header = ok.headers()["ratelimit"].to_str().unwrap().to_string();
            assert!(header.contains(&format!("r={remaining}")), "{header}");
            assert!(ok.headers().contains_key("ratelimit-policy"));
            assert_eq!(ok.text().await.unwrap(), "GET /any/path peer_addr=false\n");
        }
        let limited = client.post(&url).send().await.unwrap();
        assert_eq!(limited.status(), 429);
        assert!(limited.headers().contains_key("retry-after"));
        assert_eq!(
            limited.headers()["content-type"],
            "application/problem+json"
        );
        stop.send(()).unwrap();
    };
    let (served, ()) = tokio::join!(serving, client);
    served.expect("stopped cleanly");
}

#[tokio::test(flavor = "current_thread")]
async fn a_router_still_becomes_a_backend_with_the_peer_address() {
    let config = one_rule("100/min");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let router = axum::Router::new().fallback_service(echo());
    let server = Server::new(config).expect("valid config");
    let serving = server.serve_on(listener, Backend::new("echo", router), async {
        let _ = stopped.await;
    });
    let client = async move {
        let body = reqwest::get(format!("http://{addr}/x"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "GET /x peer_addr=true\n");
        stop.send(()).unwrap();
    };
    let (served, ()) = tokio::join!(serving, client);
    served.expect("stopped cleanly");
}
