//! The request body on its way upstream, watched: if it fails, the failure
//! is the client's (a malformed chunk, a connection cut mid-body), and the
//! caller must hear 400, not a 502 that blames the upstream.

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// A body that raises a flag when it fails.
pub(super) struct Watched {
    inner: Body,
    failed: Arc<AtomicBool>,
}

impl Watched {
    /// `body`, and the flag it raises if reading it fails.
    pub(super) fn new(body: Body) -> (Watched, Arc<AtomicBool>) {
        let failed = Arc::new(AtomicBool::new(false));
        let watched = Watched {
            inner: body,
            failed: failed.clone(),
        };
        (watched, failed)
    }
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Err(_))) = &polled {
            self.failed.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
