//! The graceful drain: on shutdown every connection is told to finish the
//! request it is serving and close (an idle keep-alive connection closes at
//! once), and the listener waits until every connection has ended.
//!
//! Why not hyper-util's `GracefulShutdown`, which does the same: its
//! connection future polls `watch::Receiver::changed` on every poll of the
//! connection, and each such poll spends the task's cooperative budget and
//! takes the notifier's lock to compare the waker it holds, on every
//! request of every path. Here the wait is polled once per connection, which files the task's waker with the
//! channel; later polls read the channel's version (one atomic load), and
//! poll the wait again only when the task's waker is not the one filed.
//!
//! The same wrapper ([`Watched`]) carries the header timeout's word to
//! close (see [`header_timeout`](crate::listener::header_timeout)): one wrapper
//! around the connection's future, not two, and one filed waker for both
//! signals, compared once per poll, filed with both before either is
//! looked at.

use crate::listener::header_timeout::Watch as HeadWatch;
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio::sync::watch;

/// A connection that can be asked to finish its request in flight and close.
pub(crate) trait Connection: Future {
    /// Finish the request being served (if any), then close.
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S, B> Connection for hyper::server::conn::http1::Connection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        hyper::server::conn::http1::Connection::graceful_shutdown(self);
    }
}

/// Tells the connections it watches to close, and waits until they have.
pub(crate) struct Drain {
    tx: watch::Sender<()>,
}

impl Drain {
    /// A drain watching no connection yet.
    pub(crate) fn new() -> Drain {
        let (tx, _) = watch::channel(());
        Drain { tx }
    }

    /// `conn`, told to close when [`shutdown`](Self::shutdown) is called
    /// (or this drain dropped), and ended when `head` says so (see
    /// [`Watched`]); the drain waits for it until it ends.
    pub(crate) fn watch<C: Connection>(
        &self,
        conn: C,
        head: Arc<HeadWatch>,
    ) -> Watched<C, impl Future<Output = ()>> {
        let rx = self.tx.subscribe();
        let mut waiting = rx.clone();
        Watched {
            conn,
            wait: async move {
                // Closed (the drain dropped) counts as told.
                let _ = waiting.changed().await;
            },
            rx,
            told: false,
            head,
            filed: None,
        }
    }

    /// Tells every watched connection to close, then waits until all have
    /// ended.
    pub(crate) async fn shutdown(self) {
        let _ = self.tx.send(());
        self.tx.closed().await;
    }
}

pin_project! {
    /// A connection, the drain's signal and the header timeout's word:
    /// polled as the connection, after telling it to close once the drain
    /// signals; ended (the connection and its socket dropped) once the
    /// header timeout's sweep says so and the connection, polled once more,
    /// is still waiting for the same request head. One wrapper for both,
    /// with one filed waker: a poll compares its waker once (`will_wake`),
    /// not once per signal.
    pub(crate) struct Watched<C, W> {
        #[pin]
        conn: C,
        // Completes when the drain says so; polled to file a waker.
        #[pin]
        wait: W,
        // The drain's version as this connection first saw it (held until
        // the connection ends: the drain waits for every receiver to go).
        rx: watch::Receiver<()>,
        // Whether the connection was told to close.
        told: bool,
        // The header timeout's report and word for this connection.
        head: Arc<HeadWatch>,
        // The waker filed with the drain's channel (until told) and in
        // `head`.
        filed: Option<Waker>,
    }
}

impl<C, W, E> Future for Watched<C, W>
where
    C: Connection<Output = Result<(), E>>,
    W: Future<Output = ()>,
{
    type Output = Result<(), E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        let mut this = self.project();
        // Both signals wake the waker filed last: a poll with another one
        // files it with both before looking at either, so a signal sent
        // after the look wakes this task.
        let refile = !matches!(this.filed, Some(filed) if filed.will_wake(cx.waker()));
        if refile {
            let waker = cx.waker().clone();
            this.head.file(waker.clone());
            *this.filed = Some(waker);
        }
        if !*this.told {
            let signalled = if refile {
                this.wait.poll(cx).is_ready()
            } else {
                // The channel wakes this task when the drain signals: a
                // changed version (or a closed channel) is all to look at.
                !matches!(this.rx.has_changed(), Ok(false))
            };
            if signalled {
                *this.told = true;
                this.conn.as_mut().graceful_shutdown();
            }
        }
        // First the connection: a head that has arrived is served.
        let polled = this.conn.poll(cx);
        if polled.is_pending() && this.head.closing() {
            tracing::debug!("no request head within the header timeout: closing");
            return Poll::Ready(Ok(()));
        }
        polled
    }
}

#[cfg(test)]
mod tests;
