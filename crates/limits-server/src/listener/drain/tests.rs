//! The drain tells a watched connection to close when it is shut down (or
//! dropped), wakes the task that polled the connection last, and waits
//! until every watched connection has ended.

mod watch;

use super::{Connection, Drain};
use crate::listener::header_timeout::Watch;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// A connection serving one request: pending until told to close, then
/// ready after `closing` more polls (a request finishing); it counts the
/// times it was told.
struct Conn {
    told: Arc<AtomicUsize>,
    closing: usize,
}

impl Conn {
    fn new(closing: usize) -> (Conn, Arc<AtomicUsize>) {
        let told = Arc::new(AtomicUsize::new(0));
        let conn = Conn {
            told: told.clone(),
            closing,
        };
        (conn, told)
    }
}

impl Future for Conn {
    type Output = Result<(), ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ()>> {
        if self.told.load(Ordering::SeqCst) == 0 {
            return Poll::Pending;
        }
        if self.closing == 0 {
            return Poll::Ready(Ok(()));
        }
        self.closing -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Connection for Conn {
    fn graceful_shutdown(self: Pin<&mut Self>) {
        self.told.fetch_add(1, Ordering::SeqCst);
    }
}

/// A header timeout's watch no sweep looks at: it never says close.
fn unswept() -> Arc<Watch> {
    Arc::new(Watch::default())
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Count>, Waker) {
    let count = Arc::new(Count::default());
    (count.clone(), Waker::from(count))
}

#[tokio::test(flavor = "current_thread")]
async fn shutdown_tells_each_connection_once_and_waits_for_it_to_finish() {
    let drain = Drain::new();
    let mut tasks = Vec::new();
    let mut told = Vec::new();
    for closing in [0, 3, 10] {
        let (conn, t) = Conn::new(closing);
        tasks.push(tokio::spawn(drain.watch(conn, unswept())));
        told.push(t);
    }
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
    assert!(told.iter().all(|t| t.load(Ordering::SeqCst) == 0));
    assert!(tasks.iter().all(|t| !t.is_finished()));
    // Guarded against a hang (a connection never told); not timed.
    tokio::time::timeout(std::time::Duration::from_secs(60), drain.shutdown())
        .await
        .expect("every connection told and ended");
    // The drain ended only once every connection had.
    assert!(tasks.iter().all(|t| t.is_finished()));
    assert!(told.iter().all(|t| t.load(Ordering::SeqCst) == 1));
}

#[tokio::test(flavor = "current_thread")]
async fn a_drain_with_no_connection_left_ends_at_once() {
    let drain = Drain::new();
    let (conn, _) = Conn::new(0);
    drop(drain.watch(conn, unswept()));
    let mut shutdown = pin!(drain.shutdown());
    let waker = Waker::noop();
    assert!(shutdown
        .as_mut()
        .poll(&mut Context::from_waker(waker))
        .is_ready());
}

#[test]
fn the_signal_wakes_the_waker_of_the_latest_poll_and_is_seen_by_it() {
    let drain = Drain::new();
    let (conn, told) = Conn::new(0);
    let mut watched = pin!(drain.watch(conn, unswept()));
    let (first, first_waker) = counting();
    let (second, second_waker) = counting();
    for _ in 0..3 {
        let polled = watched
            .as_mut()
            .poll(&mut Context::from_waker(&first_waker));
        assert!(polled.is_pending());
    }
    // Polled from another task now: that task is the one to wake.
    let polled = watched
        .as_mut()
        .poll(&mut Context::from_waker(&second_waker));
    assert!(polled.is_pending());
    let mut shutdown = pin!(drain.shutdown());
    let noop = Waker::noop();
    assert!(shutdown
        .as_mut()
        .poll(&mut Context::from_waker(noop))
        .is_pending());
    assert_eq!(second.0.load(Ordering::SeqCst), 1, "the latest waker woken");
    assert_eq!(first.0.load(Ordering::SeqCst), 0, "not the one replaced");
    assert_eq!(told.load(Ordering::SeqCst), 0, "told when next polled");
    let polled = watched
        .as_mut()
        .poll(&mut Context::from_waker(&second_waker));
    assert!(polled.is_ready());
    assert_eq!(told.load(Ordering::SeqCst), 1);
}

#[test]
fn polls_with_the_same_waker_see_a_signal_sent_between_them() {
    let drain = Drain::new();
    let (conn, told) = Conn::new(2);
    let mut watched = pin!(drain.watch(conn, unswept()));
    let (woken, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert!(watched.as_mut().poll(&mut cx).is_pending());
    assert!(watched.as_mut().poll(&mut cx).is_pending());
    let mut shutdown = pin!(drain.shutdown());
    assert!(shutdown
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending());
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    // Told on this poll; the request in flight takes two more.
    assert!(watched.as_mut().poll(&mut cx).is_pending());
    assert_eq!(told.load(Ordering::SeqCst), 1);
    assert!(watched.as_mut().poll(&mut cx).is_pending());
    assert!(watched.as_mut().poll(&mut cx).is_ready());
    assert_eq!(told.load(Ordering::SeqCst), 1, "told once");
}

#[test]
fn a_dropped_drain_tells_its_connections_too() {
    let drain = Drain::new();
    let (first, told_first) = Conn::new(0);
    let (second, told_second) = Conn::new(0);
    let mut first = pin!(drain.watch(first, unswept()));
    let (woken, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert!(first.as_mut().poll(&mut cx).is_pending());
    let mut second = pin!(drain.watch(second, unswept()));
    drop(drain);
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    assert!(first.as_mut().poll(&mut cx).is_ready());
    // Never polled before the drop: told on its first poll.
    assert!(second.as_mut().poll(&mut cx).is_ready());
    assert_eq!(told_first.load(Ordering::SeqCst), 1);
    assert_eq!(told_second.load(Ordering::SeqCst), 1);
}
