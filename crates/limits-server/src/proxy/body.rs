//! The body of a proxied response as the listener serves it: the
//! upstream's, streamed, or the proxy's own problem; one enum, so that no
//! response is boxed into axum's `Body` on its way out (one allocation and a
//! dynamic call per frame fewer per proxied request).

use super::pool::Returning;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The body of a response from [`Forwarding`](super::Forwarding): the
/// upstream's body, frame by frame as it arrives (its connection goes back
/// to the pool when it ends), or the proxy's own answer (a 400, 405, 502 or
/// 504 problem).
pub struct ProxyBody {
    kind: Kind,
}

enum Kind {
    Upstream(Returning),
    Own(Full<Bytes>),
}

impl ProxyBody {
    pub(super) fn upstream(body: Returning) -> ProxyBody {
        let kind = Kind::Upstream(body);
        ProxyBody { kind }
    }

    pub(super) fn own(body: Full<Bytes>) -> ProxyBody {
        let kind = Kind::Own(body);
        ProxyBody { kind }
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match &mut self.kind {
            Kind::Upstream(body) => Pin::new(body).poll_frame(cx),
            Kind::Own(body) => match Pin::new(body).poll_frame(cx) {
                Poll::Ready(Some(Err(never))) => match never {},
                Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Upstream(body) => body.is_end_stream(),
            Kind::Own(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Upstream(body) => body.size_hint(),
            Kind::Own(body) => body.size_hint(),
        }
    }
}
