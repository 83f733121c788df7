//! The upstream timeout without a timer registration per request.
//!
//! `tokio::time::timeout` makes a timer per call: registered in the
//! runtime's timer wheel on its first poll and taken out of it when dropped,
//! each under the driver's lock, and looked at by the driver whenever it
//! parks (about 2k instructions per proxied request, a twentieth of it).
//! A client connection's requests come one at a time, so they can share one
//! timer: each sets it to its own deadline with [`Sleep::reset`], which,
//! for a deadline later than the one the wheel holds (every next request's
//! is), only stores the new deadline in the entry (one compare-and-swap);
//! when the wheel reaches the older deadline it finds the entry not due and
//! files it again under the new one, once per timeout period at most, not
//! per request. The deadline is exactly as `timeout`'s: the timeout from
//! when the request is sent, the exchange polled before the timer, and the
//! same 504 when it passes first.

use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Sets `timer` to go off `timeout` from now; it may be a timer used
/// before. Its owner polls it after the exchange it bounds, as
/// `tokio::time::timeout` does, so an answer ready at the deadline wins.
pub(super) fn set(timer: Pin<&mut Sleep>, timeout: Duration) {
    timer.reset(deadline(timeout));
}

/// Now plus `timeout`, or a deadline about 30 years away if that does not
/// fit (as `tokio::time::timeout` does for a timeout too long to add).
fn deadline(timeout: Duration) -> Instant {
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
    /// The connection's timer, or a new one (to be [`set`]).
    pub(super) fn take(&self) -> Pin<Box<Sleep>> {
        let lent = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        lent.unwrap_or_else(|| Box::pin(tokio::time::sleep_until(Instant::now())))
    }

    /// Gives the timer back for the connection's next request.
    pub(super) fn give_back(&self, timer: Pin<Box<Sleep>>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(timer);
    }
}
