//! One wrapper watches a connection for both words that may end it, the
//! drain's and the header timeout's, with one filed waker: whichever
//! speaks wakes the task that polled the connection last (and not an
//! earlier one), and the connection reacts to each on its next poll.

use super::super::{Connection, Drain};
use crate::listener::header_timeout::Watch;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// A connection waiting for a request head: pending until it is told to
/// close, then ended at its next poll; it counts the times it was told.
struct Idle {
    told: Arc<AtomicUsize>,
}

impl Future for Idle {
    type Output = Result<(), ()>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        if self.told.load(SeqCst) == 0 {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    }
}

impl Connection for Idle {
    fn graceful_shutdown(self: Pin<&mut Self>) {
        self.told.fetch_add(1, SeqCst);
    }
}

/// A connection answering a request that never ends by itself, however
/// often it is told to close.
struct Busy;

impl Future for Busy {
    type Output = Result<(), ()>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        Poll::Pending
    }
}

impl Connection for Busy {
    fn graceful_shutdown(self: Pin<&mut Self>) {}
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counting() -> (Arc<Count>, Waker) {
    let count = Arc::new(Count::default());
    (count.clone(), Waker::from(count))
}

fn idle() -> (Idle, Arc<AtomicUsize>) {
    let told = Arc::new(AtomicUsize::new(0));
    (Idle { told: told.clone() }, told)
}

#[test]
fn the_header_timeout_wakes_the_latest_poll_s_waker_too() {
    let drain = Drain::new();
    let head = Arc::new(Watch::default());
    let mut conn = pin!(drain.watch(Busy, head.clone()));
    let (first, first_waker) = counting();
    let (second, second_waker) = counting();
    for waker in [&first_waker, &first_waker, &second_waker, &second_waker] {
        assert!(conn
            .as_mut()
            .poll(&mut Context::from_waker(waker))
            .is_pending());
    }
    head.close(0);
    assert_eq!(second.0.load(SeqCst), 1, "the latest waker woken");
    assert_eq!(first.0.load(SeqCst), 0, "not the one replaced");
    let polled = conn.as_mut().poll(&mut Context::from_waker(&second_waker));
    assert!(
        matches!(polled, Poll::Ready(Ok(()))),
        "closed: still waiting"
    );
}

#[test]
fn the_drain_wakes_the_waker_the_header_timeout_holds() {
    let drain = Drain::new();
    let head = Arc::new(Watch::default());
    let (conn, told) = idle();
    let mut conn = pin!(drain.watch(conn, head.clone()));
    let (first, first_waker) = counting();
    let (second, second_waker) = counting();
    assert!(conn
        .as_mut()
        .poll(&mut Context::from_waker(&first_waker))
        .is_pending());
    assert!(conn
        .as_mut()
        .poll(&mut Context::from_waker(&second_waker))
        .is_pending());
    let mut shutdown = pin!(drain.shutdown());
    assert!(shutdown
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending());
    assert_eq!((first.0.load(SeqCst), second.0.load(SeqCst)), (0, 1));
    let polled = conn.as_mut().poll(&mut Context::from_waker(&second_waker));
    assert!(polled.is_ready());
    assert_eq!(told.load(SeqCst), 1);
}

#[test]
fn a_connection_told_to_drain_still_closes_on_the_header_timeout() {
    let drain = Drain::new();
    let head = Arc::new(Watch::default());
    let mut conn = pin!(drain.watch(Busy, head.clone()));
    let (woken, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert!(conn.as_mut().poll(&mut cx).is_pending());
    drop(drain);
    assert_eq!(woken.0.load(SeqCst), 1);
    // Told to finish its request and close, it has not yet.
    assert!(conn.as_mut().poll(&mut cx).is_pending());
    head.close(0);
    assert_eq!(woken.0.load(SeqCst), 2, "the same waker, still filed");
    assert!(conn.as_mut().poll(&mut cx).is_ready());
}

#[test]
fn a_head_served_in_time_is_not_closed_while_the_drain_waits() {
    let drain = Drain::new();
    let head = Arc::new(Watch::default());
    let mut conn = pin!(drain.watch(Busy, head.clone()));
    let mut cx = Context::from_waker(Waker::noop());
    head.close(0);
    // The head arrived between the sweep and the task's poll.
    head.head();
    assert!(conn.as_mut().poll(&mut cx).is_pending());
    drop(drain);
    assert!(conn.as_mut().poll(&mut cx).is_pending(), "answering still");
}
