//! The graceful drain: on shutdown every connection is told to finish the
//! request it is serving and close (an idle keep-alive connection closes at
//! once), and the listener waits until every connection has ended.
//!
//! Why not hyper-util's `GracefulShutdown`, which did the same: its
//! connection future polls `watch::Receiver::changed` on every poll of the
//! connection, and each such poll spends the task's cooperative budget and
//! takes the notifier's lock to compare the waker it holds: about 330
//! instructions per request on every path, 170 of them in the connection's
//! task (BENCHMARKS.md). Here the wait
//! is polled once per connection, which files the task's waker with the
//! channel; later polls read the channel's version (one atomic load), and
//! poll the wait again only when the task's waker is not the one filed.

use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
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
    /// (or this drain dropped); the drain waits for it until it ends.
    pub(crate) fn watch<C: Connection>(&self, conn: C) -> impl Future<Output = C::Output> {
        let rx = self.tx.subscribe();
        let mut waiting = rx.clone();
        Watched {
            conn,
            wait: async move {
                // Closed (the drain dropped) counts as told.
                let _ = waiting.changed().await;
            },
            rx,
            filed: None,
            told: false,
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
    /// A connection and the drain's signal: polled as the connection, after
    /// telling it to close once the signal is seen.
    struct Watched<C, W> {
        #[pin]
        conn: C,
        // Completes when the drain says so; polled to file a waker.
        #[pin]
        wait: W,
        // The drain's version as this connection first saw it (held until
        // the connection ends: the drain waits for every receiver to go).
        rx: watch::Receiver<()>,
        // The waker `wait` last filed with the channel.
        filed: Option<Waker>,
        // Whether the connection was told to close.
        told: bool,
    }
}

impl<C: Connection, W: Future<Output = ()>> Future for Watched<C, W> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let mut this = self.project();
        if !*this.told {
            let signalled = match this.filed {
                // The channel wakes this task when the drain signals: a
                // changed version (or a closed channel) is all to look at.
                Some(filed) if filed.will_wake(cx.waker()) => {
                    !matches!(this.rx.has_changed(), Ok(false))
                }
                _ => {
                    let ready = this.wait.poll(cx).is_ready();
                    *this.filed = Some(cx.waker().clone());
                    ready
                }
            };
            if signalled {
                *this.told = true;
                *this.filed = None;
                this.conn.as_mut().graceful_shutdown();
            }
        }
        this.conn.poll(cx)
    }
}

#[cfg(test)]
#[path = "drain_tests.rs"]
mod tests;
