//! Where the accept loop runs: on the runtime that runs the server, or on
//! one thread per core, each with a current-thread runtime and a listener
//! of its own, as nginx's workers each accept for themselves.
//!
//! Per core, a connection is served to its end on the thread that accepted
//! it, and so are the tasks it starts (the proxy's upstream connections,
//! from a pool made per thread): a request wakes no other thread. What the
//! threads share is what must be counted once: the connection caps (taken
//! at accept and close), the rules and their stores, the metrics. The drain is told to every thread at once and waited for on
//! each.
//!
//! On Linux each thread's listener is a socket of its own on the same
//! address (`SO_REUSEPORT`), so the kernel spreads new connections over the
//! threads by their addresses; a listener handed in ready-made
//! ([`Server::serve_on`](crate::Server::serve_on)), or another system, has
//! one socket shared by every thread, each accepting from it when woken.

use crate::listener::connection_caps::ConnectionCaps;
use crate::listener::{self, Bounds};
use bytes::Bytes;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::{oneshot, watch};
use tower::Service;

/// Which runtimes accept and serve the main listener's connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Runtimes {
    /// The runtime that runs [`Server::serve`](crate::Server::serve): with
    /// tokio's multi-thread runtime, every connection on any of its workers,
    /// handed between them as they steal work.
    #[default]
    Caller,
    /// This many threads, each with a current-thread runtime and a listener
    /// of its own, each serving the connections it accepted. The runtime
    /// that runs the server keeps the rest (the admin listener, the sweeper,
    /// reloads, the Redis connections it opened) and waits for them.
    PerCore(NonZeroUsize),
}

/// The main listener, ready to accept on the runtimes it was made for.
pub(crate) enum Listening {
    /// One listener, served on the runtime that runs the server.
    Caller(TcpListener),
    /// A listener per thread, each registered with that thread's runtime.
    PerCore(Vec<Worker>),
}

/// One thread's runtime and the listener it accepts from.
pub(crate) struct Worker {
    runtime: Runtime,
    listener: TcpListener,
}

impl Listening {
    /// Listens on `addr` for `runtimes`.
    pub(crate) async fn bind(addr: SocketAddr, runtimes: Runtimes) -> io::Result<Listening> {
        match runtimes {
            Runtimes::Caller => Ok(Listening::Caller(TcpListener::bind(addr).await?)),
            Runtimes::PerCore(threads) => workers(sockets_on(addr, threads)?),
        }
    }

    /// `listener`, bound already, for `runtimes`: per core, every thread
    /// accepts from this one socket.
    pub(crate) fn on(listener: TcpListener, runtimes: Runtimes) -> io::Result<Listening> {
        match runtimes {
            Runtimes::Caller => Ok(Listening::Caller(listener)),
            Runtimes::PerCore(threads) => workers(shared(listener.into_std()?, threads)?),
        }
    }

    /// The address listened on.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Listening::Caller(listener) => listener.local_addr(),
            Listening::PerCore(workers) => workers[0].listener.local_addr(),
        }
    }

    /// Serves as [`listener::serve`] does until `shutdown` completes, each
    /// connection by the service `per_thread()` makes for it: called once
    /// for the caller's runtime, once per thread per core. Errs when a
    /// thread cannot be started or ends by a panic.
    pub(crate) async fn serve<F, M, A, B>(
        self,
        mut per_thread: F,
        bounds: Bounds,
        caps: Arc<ConnectionCaps>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), String>
    where
        F: FnMut() -> M,
        M: Fn(SocketAddr) -> A + Send + 'static,
        A: Service<axum::extract::Request, Response = http::Response<B>, Error = Infallible>
            + Clone
            + Send
            + 'static,
        A::Future: Send + 'static,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let workers = match self {
            Listening::Caller(listener) => {
                listener::serve(listener, per_thread(), bounds, caps, shutdown).await;
                return Ok(());
            }
            Listening::PerCore(workers) => workers,
        };
        // Dropped (on an early return too), the sender tells every thread.
        let (stop, stopped) = watch::channel(());
        let mut finished = Vec::with_capacity(workers.len());
        for (i, Worker { runtime, listener }) in workers.into_iter().enumerate() {
            let per_connection = per_thread();
            let caps = Arc::clone(&caps);
            let mut stopped = stopped.clone();
            let (done, waited) = oneshot::channel::<()>();
            std::thread::Builder::new()
                .name(format!("limits-worker-{i}"))
                .spawn(move || {
                    let told = async move {
                        let _ = stopped.changed().await;
                    };
                    runtime.block_on(listener::serve(
                        listener,
                        per_connection,
                        bounds,
                        caps,
                        told,
                    ));
                    // Its tasks (idle upstream connections, the pool's
                    // reaper, the header timeout's sweep) end with it.
                    drop(runtime);
                    let _ = done.send(());
                })
                .map_err(|e| format!("cannot start a worker thread: {e}"))?;
            finished.push(waited);
        }
        shutdown.await;
        let _ = stop.send(());
        for (i, waited) in finished.into_iter().enumerate() {
            waited
                .await
                .map_err(|_| format!("worker thread {i} panicked"))?;
        }
        Ok(())
    }
}

/// A runtime per socket, each socket registered with its own.
fn workers(sockets: Vec<std::net::TcpListener>) -> io::Result<Listening> {
    let mut workers = Vec::with_capacity(sockets.len());
    for socket in sockets {
        socket.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = {
            let _inside = runtime.enter();
            TcpListener::from_std(socket)?
        };
        workers.push(Worker { runtime, listener });
    }
    Ok(Listening::PerCore(workers))
}

/// `threads` sockets listening on `addr`, of which the kernel gives each
/// new connection to one, by its addresses' hash (`SO_REUSEPORT`), with the
/// options tokio's `TcpListener::bind` sets besides (`SO_REUSEADDR`, a
/// backlog of 1024).
#[cfg(target_os = "linux")]
fn sockets_on(addr: SocketAddr, threads: NonZeroUsize) -> io::Result<Vec<std::net::TcpListener>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = |addr: SocketAddr| -> io::Result<std::net::TcpListener> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.bind(&addr.into())?;
        socket.listen(1024)?;
        Ok(socket.into())
    };
    let first = socket(addr)?;
    // Port 0: the others on the port the first was given.
    let addr = first.local_addr()?;
    let mut sockets = vec![first];
    for _ in 1..threads.get() {
        sockets.push(socket(addr)?);
    }
    Ok(sockets)
}

/// Elsewhere one socket, shared: `SO_REUSEPORT`, where it exists, does not
/// spread connections over the sockets everywhere.
#[cfg(not(target_os = "linux"))]
fn sockets_on(addr: SocketAddr, threads: NonZeroUsize) -> io::Result<Vec<std::net::TcpListener>> {
    shared(std::net::TcpListener::bind(addr)?, threads)
}

/// `listener` for `threads` threads: its own descriptor for each, all of
/// one socket, so each thread accepts from the one queue when woken.
fn shared(
    listener: std::net::TcpListener,
    threads: NonZeroUsize,
) -> io::Result<Vec<std::net::TcpListener>> {
    let mut sockets = Vec::with_capacity(threads.get());
    for _ in 1..threads.get() {
        sockets.push(listener.try_clone()?);
    }
    sockets.push(listener);
    Ok(sockets)
}
