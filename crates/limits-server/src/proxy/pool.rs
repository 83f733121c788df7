//! The connections to the upstream: a stack of idle HTTP/1.1 connections,
//! each a hyper `SendRequest` whose connection task runs on its own.
//!
//! Why not hyper-util's pooled client: per request it checked a pool keyed
//! by scheme and authority out through a oneshot channel, built an absolute
//! URI, boxed the body, and spawned a task to wait for the connection to be
//! ready again. One upstream needs none of that: a request takes the most
//! recently used idle connection (or opens one), and the response body puts
//! it back when it ends, since HTTP/1.1 carries one exchange at a time and a
//! connection is ready for the next request only once the response body has
//! been read to its end.
//!
//! A connection leaves the stack for good when it is closed (by either side
//! or on an error), when its response body is dropped unfinished, and when
//! it has been idle for [`IDLE_TIMEOUT`] (a reaper task looks every
//! [`REAP_EVERY`], so after 60 to 65 s). The time a connection went idle is
//! not read from the clock when it comes back (that would be a clock read
//! per request): it is the reaper's count of its looks then, which tells
//! the idle time to within one period, all the reaper needs ([`stale`]).

use super::upstream::UpstreamError;
use axum::body::Body;
use http::uri::Authority;
use http::{Request, Response};
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

/// How long a connection may sit idle before it is closed.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How often idle connections are looked at.
const REAP_EVERY: Duration = Duration::from_secs(5);

/// [`IDLE_TIMEOUT`] in [`REAP_EVERY`] periods.
const IDLE_LOOKS: u32 = (IDLE_TIMEOUT.as_secs() / REAP_EVERY.as_secs()) as u32;

/// The most idle connections kept; more are closed as they come back.
const MOST_IDLE: usize = 1024;

pub(super) type Sender = SendRequest<Body>;

/// The idle connections to one upstream, and how to open more.
pub(super) struct Pool {
    idle: Mutex<VecDeque<Idle>>,
    /// The host to connect to: an IP address, or a name to resolve.
    host: String,
    port: u16,
    reaping: AtomicBool,
    /// How many times the reaper has looked.
    looks: AtomicU32,
}

struct Idle {
    sender: Sender,
    /// [`Pool::looks`] when it went idle.
    since: u32,
}

/// Whether a connection that went idle at the reaper's look `since` has
/// been idle for [`IDLE_TIMEOUT`] at look `now`: it went idle before look
/// `since + 1`, so at look `now` it has been idle for more than
/// `now - since - 1` periods, and for no more than `now - since`. So it is
/// stale from `now - since > IDLE_LOOKS` on: after 60 to 65 s.
pub(super) fn stale(since: u32, now: u32) -> bool {
    now.wrapping_sub(since) > IDLE_LOOKS
}

impl Pool {
    /// A pool for `authority` (port 80 when it names none).
    pub(super) fn new(authority: &Authority) -> Arc<Pool> {
        let host = authority.host();
        // `[::1]` in a URL, `::1` to a socket.
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        Pool::empty(host.to_string(), authority.port_u16().unwrap_or(80))
    }

    /// A pool to the same upstream as this one, with no connection yet.
    pub(super) fn empty_like(&self) -> Arc<Pool> {
        Pool::empty(self.host.clone(), self.port)
    }

    fn empty(host: String, port: u16) -> Arc<Pool> {
        Arc::new(Pool {
            idle: Mutex::new(VecDeque::new()),
            host,
            port,
            reaping: AtomicBool::new(false),
            looks: AtomicU32::new(0),
        })
    }

    /// Sends `request` on an idle connection, or on a new one. A pooled
    /// connection that closed before the request was written to it (the
    /// upstream hung up while it was idle) is dropped and the request goes
    /// to the next one: hyper hands the request back unsent in that case.
    /// The slow path of [`Pool::start`](super::sending), boxed there.
    pub(super) async fn send(
        self: Arc<Self>,
        mut request: Request<Body>,
    ) -> Result<Response<Returning>, UpstreamError> {
        loop {
            let (mut sender, reused) = match self.take_idle() {
                Some(sender) => (sender, true),
                None => (self.connect().await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let sender = Some(sender);
                    return Ok(response.map(|body| Returning::new(body, sender, &self)));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(UpstreamError::Http(e.into_error())),
                },
            }
        }
    }

    /// The most recently used idle connection that is still ready.
    pub(super) fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(Idle { sender, .. }) = idle.pop_back() {
            if sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// Opens a connection (TCP_NODELAY) and starts its task.
    async fn connect(self: &Arc<Self>) -> Result<Sender, UpstreamError> {
        self.start_reaper();
        let stream = self.tcp().await.map_err(UpstreamError::Connect)?;
        stream.set_nodelay(true).map_err(UpstreamError::Connect)?;
        // A request's head (and a small body) copied into one buffer and
        // sent by one `write`, as the listener answers, not a `writev` of a
        // queue of buffers: fewer instructions per request (BENCHMARKS.md,
        // the proxy).
        let (sender, connection) = http1::Builder::new()
            .writev(false)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(UpstreamError::Http)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "upstream connection ended with an error");
            }
        });
        Ok(sender)
    }

    /// A TCP connection to the upstream: to its address, or to each address
    /// its name resolves to in turn until one accepts.
    async fn tcp(&self) -> std::io::Result<tokio::net::TcpStream> {
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return tokio::net::TcpStream::connect(SocketAddr::new(ip, self.port)).await;
        }
        let mut last = None;
        for addr in tokio::net::lookup_host((self.host.as_str(), self.port)).await? {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} resolves to no address", self.host),
            )
        }))
    }

    /// Puts a connection whose exchange is over back on the stack; one not
    /// ready yet (its task has not caught up, or the request body is still
    /// being sent) comes back when it is, or never if it closes first.
    fn give_back(self: &Arc<Self>, mut sender: Sender) {
        if sender.is_ready() {
            self.push(sender);
        } else if !sender.is_closed() {
            let pool = Arc::downgrade(self);
            tokio::spawn(async move {
                let ready = tokio::time::timeout(IDLE_TIMEOUT, sender.ready()).await;
                if let (Ok(Ok(())), Some(pool)) = (ready, pool.upgrade()) {
                    pool.push(sender);
                }
            });
        }
    }

    fn push(&self, sender: Sender) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MOST_IDLE {
            let since = self.looks.load(Ordering::Relaxed);
            idle.push_back(Idle { sender, since });
        }
    }

    /// How many connections are idle now.
    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Closes the connections idle for too long, and those closed already.
    pub(super) fn reap(&self) {
        let now = self.looks.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain(|i| !i.sender.is_closed() && !stale(i.since, now));
    }

    /// Starts the reaper once, with the first connection (so within a
    /// runtime); it ends with the pool.
    fn start_reaper(self: &Arc<Self>) {
        if self.reaping.swap(true, Ordering::Relaxed) {
            return;
        }
        let pool: Weak<Pool> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(REAP_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                match pool.upgrade() {
                    Some(pool) => pool.reap(),
                    None => break,
                }
            }
        });
    }
}

/// A response body from the upstream that gives its connection back to the
/// pool when it ends; dropped unfinished, it closes the connection instead
/// (the rest of the body would still be on the wire).
pub(super) struct Returning {
    body: Incoming,
    back: Option<(Sender, Arc<Pool>)>,
}

impl Returning {
    /// `body`, which gives `sender` back to `pool` when it ends (if there
    /// is a sender to give back).
    pub(super) fn new(body: Incoming, sender: Option<Sender>, pool: &Arc<Pool>) -> Returning {
        let mut returning = Returning {
            body,
            back: sender.map(|sender| (sender, pool.clone())),
        };
        // An empty body (204, HEAD, Content-Length: 0) may never be polled.
        if returning.body.is_end_stream() {
            returning.ended();
        }
        returning
    }

    fn ended(&mut self) {
        if let Some((sender, pool)) = self.back.take() {
            pool.give_back(sender);
        }
    }
}

impl http_body::Body for Returning {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(_))) if self.body.is_end_stream() => self.ended(),
            Poll::Ready(None) => self.ended(),
            Poll::Ready(Some(Err(_))) => self.back = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
