//! The sweep, step by step (no clock): a connection waiting for the same
//! head at five sweeps in a row is told to close, one answering a request
//! or blocked on a write never is, any new head starts the count again, and
//! ended connections are forgotten. The connection's future closes only if
//! it is still waiting for the head the sweep saw.

use super::{Watch, Watches, PERIODS};
use crate::listener::drain::{Connection, Drain};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

fn watches() -> Watches {
    Watches {
        entries: Mutex::new(Vec::new()),
    }
}

/// Whether the sweep has told `watch` to close.
fn told(watch: &Watch) -> bool {
    watch.close.load(Relaxed) != 0
}

#[test]
fn a_connection_waiting_five_sweeps_in_a_row_is_told_to_close() {
    let watches = watches();
    let watch = watches.watch();
    // The first sweep sees it start waiting; four more are the timeout.
    for _ in 0..PERIODS {
        watches.sweep();
        assert!(!told(&watch));
    }
    watches.sweep();
    assert!(told(&watch));
    assert_eq!(watch.close.load(Relaxed), 1, "1 + the head count it saw");
}

#[test]
fn a_connection_answering_a_request_is_never_told_to_close() {
    let watches = watches();
    let watch = watches.watch();
    watch.head();
    for _ in 0..10 * PERIODS {
        watches.sweep();
    }
    assert!(!told(&watch), "the service is running");
    watch.done();
    for _ in 0..PERIODS {
        watches.sweep();
    }
    assert!(!told(&watch), "waiting since the last sweep only");
    watches.sweep();
    assert!(told(&watch));
    assert_eq!(watch.close.load(Relaxed), 2);
}

#[test]
fn a_write_waiting_for_the_client_is_still_answering() {
    let watches = watches();
    let watch = watches.watch();
    watch.blocked.store(true, Relaxed);
    for _ in 0..10 * PERIODS {
        watches.sweep();
    }
    assert!(!told(&watch));
    watch.blocked.store(false, Relaxed);
    for _ in 0..PERIODS {
        watches.sweep();
    }
    assert!(!told(&watch));
    watches.sweep();
    assert!(told(&watch));
}

#[test]
fn a_request_between_two_sweeps_starts_the_count_again() {
    let watches = watches();
    let watch = watches.watch();
    for _ in 0..PERIODS {
        watches.sweep();
        // A whole request between two sweeps: waiting at each sweep, but
        // not for the same head.
        watch.head();
        watch.done();
    }
    for _ in 0..PERIODS {
        watches.sweep();
        assert!(!told(&watch));
    }
    watches.sweep();
    assert!(told(&watch), "waiting for the same head at five sweeps");
}

#[test]
fn ended_connections_are_forgotten_by_the_next_sweep() {
    let watches = watches();
    let kept = watches.watch();
    drop(watches.watch());
    assert_eq!(watches.lock().len(), 2);
    watches.sweep();
    assert_eq!(watches.lock().len(), 1);
    assert!(Arc::ptr_eq(&watches.lock()[0].watch, &kept));
}

/// A hyper connection stand-in that never ends by itself.
struct Pending;

impl Future for Pending {
    type Output = hyper::Result<()>;

    fn poll(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<hyper::Result<()>> {
        Poll::Pending
    }
}

impl Connection for Pending {
    fn graceful_shutdown(self: std::pin::Pin<&mut Self>) {}
}

#[test]
fn the_connection_closes_when_told_while_still_waiting_for_that_head() {
    let watch = Arc::new(Watch::default());
    let drain = Drain::new();
    let mut conn = pin!(drain.watch(Pending, watch.clone()));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(conn.as_mut().poll(&mut cx).is_pending());
    assert!(watch.waker.lock().unwrap().is_some(), "its waker is filed");
    watch.close(0);
    assert!(matches!(conn.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
}

#[test]
fn a_head_that_came_before_the_close_is_served() {
    let watch = Arc::new(Watch::default());
    let drain = Drain::new();
    let mut conn = pin!(drain.watch(Pending, watch.clone()));
    let mut cx = Context::from_waker(Waker::noop());
    watch.close(0);
    // The head arrived between the sweep and the task's poll.
    watch.head();
    assert!(conn.as_mut().poll(&mut cx).is_pending());
    assert_eq!(watch.close.load(Relaxed), 0, "the stale word is cleared");
    watch.done();
    assert!(conn.as_mut().poll(&mut cx).is_pending(), "waiting anew");
    watch.close(1);
    assert!(conn.as_mut().poll(&mut cx).is_ready());
}
