//! `call_now` hands a ready service its request at once, before its answer
//! is polled (so that hyper's next read finds the request's head released),
//! and a service that is not ready once it is, as `oneshot` does.

use super::super::call_now;
use std::convert::Infallible;
use std::future::{ready, Ready};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;

/// Not ready for its first `not_ready` polls (waking its caller each
/// time); says when it was called.
#[derive(Clone)]
struct Svc {
    not_ready: Arc<AtomicUsize>,
    called: Arc<AtomicBool>,
}

impl Svc {
    fn new(not_ready: usize) -> Svc {
        Svc {
            not_ready: Arc::new(AtomicUsize::new(not_ready)),
            called: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Service<axum::extract::Request> for Svc {
    type Response = http::Response<String>;
    type Error = Infallible;
    type Future = Ready<Result<http::Response<String>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        let left = self.not_ready.load(Ordering::SeqCst);
        if left == 0 {
            return Poll::Ready(Ok(()));
        }
        self.not_ready.store(left - 1, Ordering::SeqCst);
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        assert_eq!(
            self.not_ready.load(Ordering::SeqCst),
            0,
            "called before ready"
        );
        self.called.store(true, Ordering::SeqCst);
        ready(Ok(http::Response::new(request.uri().path().to_string())))
    }
}

fn request(path: &str) -> axum::extract::Request {
    http::Request::get(path)
        .body(axum::body::Body::empty())
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_ready_service_is_called_before_its_answer_is_polled() {
    let svc = Svc::new(0);
    let answer = call_now(svc.clone(), request("/now"));
    assert!(svc.called.load(Ordering::SeqCst));
    assert_eq!(answer.await.unwrap().into_body(), "/now");
}

#[tokio::test(flavor = "current_thread")]
async fn a_service_not_ready_is_called_once_it_is() {
    let svc = Svc::new(3);
    let answer = call_now(svc.clone(), request("/later"));
    assert!(!svc.called.load(Ordering::SeqCst));
    assert_eq!(answer.await.unwrap().into_body(), "/later");
    assert!(svc.called.load(Ordering::SeqCst));
    assert_eq!(svc.not_ready.load(Ordering::SeqCst), 0);
}
