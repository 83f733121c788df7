//! The header timeout (slowloris, idle keep-alive connections) without a
//! timer per request.
//!
//! Why: hyper's own `header_read_timeout` makes a new boxed `Sleep` each
//! time it starts reading a request head, registers it in tokio's timer
//! wheel under the driver's lock, drops it once the head is parsed, and
//! loops its dispatcher once more, for every request: the largest single
//! cost hyper adds to the allow path (BENCHMARKS.md has the figure).
//!
//! How: each connection has a [`Watch`] its own task writes, without a clock
//! and without a lock: the requests handed to the service (`heads`), the
//! responses finished (`done`, counted when hyper drops the response's
//! body, that is once it has taken the last of it), and whether a write is
//! waiting for the client to read. A connection whose two counts are equal
//! and whose writes are not blocked is waiting for a request head: just
//! accepted, idle between keep-alive requests, or receiving a head slowly.
//! One sweep per listener ([`Watches`]) looks at every connection each
//! quarter of the timeout; a connection seen waiting, with the same count,
//! at five sweeps in a row (four periods: the whole timeout) is told to
//! close and its task woken. The task closes it (drops hyper's connection
//! and its socket) after polling it once more, and only if it is still
//! waiting for the same head, so a head that arrived meanwhile is served.
//! A connection that is answering a request (the service running, reading
//! the request's body, or the response's body being written) is never
//! closed by this timeout.
//!
//! Resolution: a connection is closed between T and 1.25 T after it began
//! to wait for a head (accepted, or its previous response taken in full and
//! written), T being the timeout, later only if the runtime is late to run
//! the sweep or the connection's task; never before T.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::Waker;
use std::time::Duration;
use tokio::time::{Instant, MissedTickBehavior};

mod reporters;
pub(crate) use reporters::{Answer, WatchedIo};

/// Sweeps in a row that must see a connection waiting for the same head
/// before it is closed, after the one that saw it start: the timeout is
/// this many sweep periods.
const PERIODS: u32 = 4;

/// What one connection's task reports for the sweep, and the sweep's word
/// to close it.
#[derive(Default)]
pub(crate) struct Watch {
    /// Requests handed to the service. Written by the connection's task only.
    heads: AtomicU64,
    /// Responses whose body hyper dropped. Written by the connection's task
    /// only (hyper drops the body there).
    done: AtomicU64,
    /// Whether the connection's last write is waiting for the client to read.
    blocked: AtomicBool,
    /// 0, or 1 + `heads` as the sweep saw it when it told the connection to
    /// close.
    close: AtomicU64,
    /// The waker of the task that polls the connection.
    waker: Mutex<Option<Waker>>,
}

impl Watch {
    /// One more request handed to the service.
    pub(crate) fn head(&self) {
        bump(&self.heads);
    }

    /// One more response finished.
    fn done(&self) {
        bump(&self.done);
    }

    /// `heads`, if the connection is waiting for a request head.
    fn waiting(&self) -> Option<u64> {
        let heads = self.heads.load(Relaxed);
        (heads == self.done.load(Relaxed) && !self.blocked.load(Relaxed)).then_some(heads)
    }

    /// Tells the connection to close if it is still waiting for the head
    /// after `heads`, and wakes its task.
    pub(crate) fn close(&self, heads: u64) {
        self.close.store(heads.wrapping_add(1), Relaxed);
        let waker = self.waker.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(waker) = waker.as_ref() {
            waker.wake_by_ref();
        }
    }
}

/// `counter` + 1, by its only writer: a load and a store, not a locked
/// read-modify-write per request.
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Relaxed).wrapping_add(1), Relaxed);
}

/// The watches of one listener's live connections, and what the sweep
/// remembers of each.
pub(crate) struct Watches {
    entries: Mutex<Vec<Entry>>,
}

/// One connection as the sweep knows it.
struct Entry {
    watch: Arc<Watch>,
    /// `heads` when the sweep last saw the connection start waiting.
    seen: u64,
    /// Sweeps since then that saw it still waiting for the same head; `None`
    /// while it is answering a request (or new).
    waited: Option<u32>,
}

impl Watches {
    /// Watches that close connections waiting longer than `timeout` for a
    /// request head, swept by a task that ends when they are dropped.
    pub(crate) fn start(timeout: Duration) -> Arc<Watches> {
        let watches = Arc::new(Watches {
            entries: Mutex::new(Vec::new()),
        });
        let period = (timeout / PERIODS).max(Duration::from_millis(1));
        tokio::spawn(sweep_every(Arc::downgrade(&watches), period));
        watches
    }

    /// The watch of a new connection, swept from now on until the
    /// connection ends.
    pub(crate) fn watch(&self) -> Arc<Watch> {
        let watch = Arc::new(Watch::default());
        let entry = Entry {
            watch: watch.clone(),
            seen: 0,
            waited: None,
        };
        self.lock().push(entry);
        watch
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One sweep: forgets ended connections, counts the sweeps each
    /// waiting one has waited, and tells those that waited the whole
    /// timeout to close.
    fn sweep(&self) {
        self.lock().retain_mut(|entry| {
            // Only this list holds it: the connection has ended.
            if Arc::strong_count(&entry.watch) == 1 {
                return false;
            }
            match (entry.watch.waiting(), entry.waited) {
                (None, _) => entry.waited = None,
                (Some(heads), Some(waited)) if heads == entry.seen => {
                    let waited = waited.saturating_add(1);
                    entry.waited = Some(waited);
                    if waited >= PERIODS {
                        entry.watch.close(heads);
                    }
                }
                // It began waiting since the last sweep (or is new).
                (Some(heads), _) => {
                    entry.seen = heads;
                    entry.waited = Some(0);
                }
            }
            true
        });
    }
}

/// Sweeps `watches` every `period` until they are dropped; a late sweep
/// delays the next ones (a period between sweeps at least).
async fn sweep_every(watches: Weak<Watches>, period: Duration) {
    let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match watches.upgrade() {
            Some(watches) => watches.sweep(),
            None => return,
        }
    }
}

#[cfg(test)]
mod tests;
