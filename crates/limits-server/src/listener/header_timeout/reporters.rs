//! What a connection's task reports to its [`Watch`], and how it closes the
//! connection when told: the service's answer ([`Answer`]) and its body
//! ([`Counted`], which counts the response done when hyper drops it), the
//! socket ([`WatchedIo`], which says when a write waits for the client),
//! and the word to close, which the connection's future (the drain's
//! `Watched`, which also watches the drain's signal) reads after each poll.

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

impl Watch {
    /// Files the waker of the task that polls the connection, for the
    /// sweep to wake when it tells the connection to close. Filed before
    /// [`closing`](Self::closing) is read: a sweep that tells the
    /// connection to close after that read wakes the task.
    pub(crate) fn file(&self, waker: Waker) {
        *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(waker);
    }

    /// Whether the connection, just polled and pending, is to end now: the
    /// sweep told it to close and it is still waiting for the head the
    /// sweep saw it wait for.
    #[inline]
    pub(crate) fn closing(&self) -> bool {
        let close = self.close.load(Relaxed);
        if close == 0 {
            return false;
        }
        if self.waiting() == Some(close.wrapping_sub(1)) {
            return true;
        }
        // A head came in time; a new word from the sweep is kept.
        let _ = self.close.compare_exchange(close, 0, Relaxed, Relaxed);
        false
    }
}
