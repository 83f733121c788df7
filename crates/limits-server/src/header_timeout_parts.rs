//! What a connection's task reports to its [`Watch`], and how it closes the
//! connection when told: the service's answer ([`Answer`]) and its body
//! ([`Counted`], which counts the response done when hyper drops it), the
//! socket ([`WatchedIo`], which says when a write waits for the client),
//! and the connection's future ([`Guarded`]).

use super::Watch;
use http_body::{Body, Frame, SizeHint};
use hyper::rt::{Read, ReadBufCursor, Write};
use pin_project_lite::pin_project;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, PoisonError};
use std::task::{ready, Context, Poll, Waker};

pin_project! {
    /// The service's answer to a request, its body [`Counted`].
    pub(crate) struct Answer<F> {
        #[pin]
        answer: F,
        watch: Option<Arc<Watch>>,
    }
}

impl<F> Answer<F> {
    /// `answer`, for a request just counted in `watch` (see
    /// [`Watch::head`]).
    pub(crate) fn new(answer: F, watch: Arc<Watch>) -> Answer<F> {
        Answer {
            answer,
            watch: Some(watch),
        }
    }
}

impl<F, B, E> Future for Answer<F>
where
    F: Future<Output = Result<http::Response<B>, E>>,
{
    type Output = Result<http::Response<Counted<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = ready!(this.answer.poll(cx));
        let watch = this.watch.take();
        Poll::Ready(answer.map(|response| response.map(|body| Counted { body, watch })))
    }
}

pin_project! {
    /// A response's body that counts the response done when dropped.
    pub(crate) struct Counted<B> {
        #[pin]
        body: B,
        watch: Option<Arc<Watch>>,
    }

    impl<B> PinnedDrop for Counted<B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(watch) = this.project().watch.take() {
                watch.done();
            }
        }
    }
}

impl<B: Body> Body for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.project().body.poll_frame(cx)
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection's socket that tells its [`Watch`] whether its last write
/// is waiting for the client to read (a response taken in full by hyper
/// but not yet written is still being answered).
pub(crate) struct WatchedIo<I> {
    io: I,
    watch: Arc<Watch>,
    blocked: bool,
}

impl<I> WatchedIo<I> {
    /// `io`, reporting to `watch`.
    pub(crate) fn new(io: I, watch: Arc<Watch>) -> WatchedIo<I> {
        WatchedIo {
            io,
            watch,
            blocked: false,
        }
    }

    /// Tells the watch when a write starts or stops waiting for the client.
    #[inline]
    fn wrote<T>(&mut self, polled: Poll<T>) -> Poll<T> {
        let blocked = polled.is_pending();
        if blocked != self.blocked {
            self.blocked = blocked;
            self.watch.blocked.store(blocked, Relaxed);
        }
        polled
    }
}

impl<I: Read + Unpin> Read for WatchedIo<I> {
    #[inline]
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: Write + Unpin> Write for WatchedIo<I> {
    #[inline]
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(polled)
    }

    #[inline]
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    #[inline]
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    #[inline]
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    #[inline]
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(polled)
    }
}

pin_project! {
    /// A connection's future that ends (dropping the connection and its
    /// socket) when its [`Watch`] is told to close and the connection,
    /// polled once more, is still waiting for the same request head.
    pub(crate) struct Guarded<C> {
        #[pin]
        conn: C,
        watch: Arc<Watch>,
        // The waker filed in the watch.
        filed: Option<Waker>,
    }
}

impl<C> Guarded<C> {
    /// `conn`, closed when `watch` says so.
    pub(crate) fn new(conn: C, watch: Arc<Watch>) -> Guarded<C> {
        Guarded {
            conn,
            watch,
            filed: None,
        }
    }
}

impl<C: Future<Output = hyper::Result<()>>> Future for Guarded<C> {
    type Output = hyper::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<hyper::Result<()>> {
        let this = self.project();
        // First the connection: a head that has arrived is served.
        let polled = this.conn.poll(cx);
        if polled.is_ready() {
            return polled;
        }
        // The waker is filed before `close` is read: a sweep that tells
        // the connection to close after this read wakes the task.
        match this.filed {
            Some(filed) if filed.will_wake(cx.waker()) => {}
            _ => {
                let waker = cx.waker().clone();
                *this
                    .watch
                    .waker
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(waker.clone());
                *this.filed = Some(waker);
            }
        }
        let close = this.watch.close.load(Relaxed);
        if close != 0 {
            if this.watch.waiting() == Some(close.wrapping_sub(1)) {
                tracing::debug!("no request head within the header timeout: closing");
                return Poll::Ready(Ok(()));
            }
            // A head came in time; a new word from the sweep is kept.
            let _ = this
                .watch
                .close
                .compare_exchange(close, 0, Relaxed, Relaxed);
        }
        Poll::Pending
    }
}
