//! The connections to one memcached: idle ones kept for the next decision,
//! at most a fixed number open at once (a decision waits for one past it).

use crate::meta::{Connection, MetaError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use tokio::sync::{Semaphore, SemaphorePermit};

/// One server's connections.
pub(crate) struct Pool {
    /// `HOST:PORT`, resolved at each connect (a name may move).
    addr: String,
    idle: Mutex<Vec<Connection>>,
    /// One permit per connection in use or idle-and-taken: the cap.
    permits: Semaphore,
    /// Whether the server answered the last exchange with it (true until
    /// one fails).
    answering: AtomicBool,
}

/// A connection lent to one decision. Handed back with
/// [`release`](Lease::release) after a complete exchange; dropped (an
/// error, a timeout, a cancelled future) it is closed, since an answer may
/// still be on its way on it.
pub(crate) struct Lease<'a> {
    pool: &'a Pool,
    connection: Option<Connection>,
    _permit: SemaphorePermit<'a>,
}

impl Pool {
    /// A pool for `addr` of at most `max_connections` connections.
    pub(crate) fn new(addr: String, max_connections: usize) -> Pool {
        Pool {
            addr,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(max_connections.max(1)),
            answering: AtomicBool::new(true),
        }
    }

    /// Whether the server answered the last exchange with it.
    pub(crate) fn answering(&self) -> bool {
        self.answering.load(Ordering::Relaxed)
    }

    /// Records whether the server answered an exchange.
    pub(crate) fn answered(&self, yes: bool) {
        self.answering.store(yes, Ordering::Relaxed);
    }

    /// The server's `HOST:PORT`.
    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    /// An idle connection, or a new one.
    pub(crate) async fn take(&self) -> Result<Lease<'_>, MetaError> {
        let permit = self
            .permits
            .acquire()
            .await
            .expect("the pool never closes its semaphore");
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let connection = match idle {
            Some(connection) => connection,
            None => Connection::open(&self.addr).await?,
        };
        Ok(Lease {
            pool: self,
            connection: Some(connection),
            _permit: permit,
        })
    }
}

impl Lease<'_> {
    /// The connection, for one exchange at a time.
    pub(crate) fn connection(&mut self) -> &mut Connection {
        self.connection
            .as_mut()
            .expect("a lease holds its connection until released")
    }

    /// Hands the connection back for the next decision: every answer on it
    /// has been read.
    pub(crate) fn release(mut self) {
        if let Some(connection) = self.connection.take() {
            let mut idle = self.pool.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.push(connection);
        }
    }
}
