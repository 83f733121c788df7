//! The upstream timeout without a timer registration per request.
//!
//! `tokio::time::timeout` makes a timer per call: registered in the
//! runtime's timer wheel on its first poll and taken out of it when dropped,
//! each under the driver's lock, and looked at by the driver whenever it
//! parks.
//! A client connection's requests come one at a time, so they share one
//! timer, and a request does not even set it: it notes its own deadline
//! (the timeout from when it is sent), and the timer is only made to go off
//! *no later* than that. Every next request's deadline is later than the
//! one the timer holds (set for an earlier request), so the timer is left as
//! it is ([`Sleep::reset`], which converts the deadline to the wheel's ticks
//! and compares-and-swaps it into the entry, on every request). When the timer goes off, the deadline of the request waiting
//! then is looked at ([`poll_expired`]): passed, it is the 504; not yet (the
//! timer held an earlier request's deadline), the timer is set to it and
//! waits again, once per timeout period at most. So the 504 comes exactly
//! when `timeout`'s would: the exchange polled before the timer, and never
//! before the request's own deadline.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Whether `deadline` has passed, as far as `timer` (made to go off no
/// later than `deadline` by [`SharedTimer::take`]) tells: ready once it
/// has. When the timer goes off earlier (it held an earlier request's
/// deadline), it is set to `deadline` and waits again. Its owner polls it
/// after the exchange it bounds, as `tokio::time::timeout` does, so an
/// answer ready at the deadline wins.
#[inline]
pub(super) fn poll_expired(
    mut timer: Pin<&mut Sleep>,
    deadline: Instant,
    cx: &mut Context<'_>,
) -> Poll<()> {
    loop {
        ready!(timer.as_mut().poll(cx));
        // The wheel fires a timer no sooner than its deadline, so once set
        // to `deadline` this is true when it goes off again.
        if Instant::now() >= deadline {
            return Poll::Ready(());
        }
        timer.as_mut().reset(deadline);
    }
}

/// Now plus `timeout`, or a deadline about 30 years away if that does not
/// fit (as `tokio::time::timeout` does for a timeout too long to add).
#[inline]
pub(super) fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

/// One client connection's timer, lent to each of its requests in turn: the
/// per-connection service holds it, and a request's future takes it, sets
/// it and gives it back when the upstream has answered (or not). A request
/// dropped before that (its client went away) drops the timer with it, and
/// the next request makes a new one; so does a request that finds the timer
/// lent out, which hyper's one-request-at-a-time HTTP/1 connection never
/// lets happen.
#[derive(Default)]
pub(super) struct SharedTimer(Mutex<Option<Pin<Box<Sleep>>>>);

impl SharedTimer {
    /// The connection's timer, made to go off no later than `deadline`
    /// (left as it is when it does already, the usual case: see the module
    /// docs), or a new one set to `deadline`.
    pub(super) fn take(&self, deadline: Instant) -> Pin<Box<Sleep>> {
        let lent = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        match lent {
            Some(mut timer) => {
                if timer.deadline() > deadline {
                    timer.as_mut().reset(deadline);
                }
                timer
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        }
    }

    /// Gives the timer back for the connection's next request.
    pub(super) fn give_back(&self, timer: Pin<Box<Sleep>>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(timer);
    }
}
