//! The connections to the upstream: a stack of idle HTTP/1.1 connections,
//! each hyper's `SendRequest` with its `Connection` beside it.
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
//! A connection has no task of its own: the request using it drives it
//! ([`Upstream::drive`]), in the task of the client connection that sent the
//! request, while it waits for the response head (`sending`) and while the
//! response body is read ([`Returning`]). So the request, the response head
//! and each body frame pass between hyper's halves within one task, where a
//! connection task of its own would be woken for the request and would wake
//! the client's task for the answer, often on another worker thread. An
//! idle connection is driven by nobody; it is polled once, without a waker,
//! when it comes back (hyper then takes in the end of the exchange, and the
//! last task that drove it is not woken for anything that happens while it
//! is idle) and at each of the reaper's looks (which so finds it closed).
//! One the upstream closed while it was idle is found closed when it is next
//! used: hyper reads before it writes, and hands the request back unsent.
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
use std::future::{poll_fn, Future};
use std::net::{IpAddr, SocketAddr};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::net::TcpStream;

/// How long a connection may sit idle before it is closed.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How often idle connections are looked at.
const REAP_EVERY: Duration = Duration::from_secs(5);

/// [`IDLE_TIMEOUT`] in [`REAP_EVERY`] periods.
const IDLE_LOOKS: u32 = (IDLE_TIMEOUT.as_secs() / REAP_EVERY.as_secs()) as u32;

/// The most idle connections kept; more are closed as they come back.
const MOST_IDLE: usize = 1024;

pub(super) type Sender = SendRequest<Body>;

/// One HTTP/1.1 connection to the upstream: the sender its requests go
/// through, and the connection that writes them and reads the answers,
/// driven by whoever waits on it ([`Upstream::drive`]). Always boxed
/// ([`Open`]): hyper's connection is large, and it moves with every request
/// (out of the pool, into the request's future, into the response body and
/// back), which would copy all of it each time.
pub(super) struct Upstream {
    pub(super) sender: Sender,
    connection: http1::Connection<TokioIo<TcpStream>, Body>,
}

/// An [`Upstream`] as it is held and moved: boxed.
pub(super) type Open = Box<Upstream>;

impl Upstream {
    /// Moves the connection on as far as it goes now (writing the request
    /// and its body, reading the answer into the response's channels), to
    /// be woken through `cx` when it can go further. `None` once it has
    /// ended (either side closed it, or it failed): what was in flight on
    /// it then has been told so by hyper (an error, or a request handed
    /// back unsent).
    pub(super) fn drive(upstream: &mut Option<Open>, cx: &mut Context<'_>) {
        let Some(open) = upstream else { return };
        if let Poll::Ready(ended) = Pin::new(&mut open.connection).poll(cx) {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "upstream connection ended with an error");
            }
            *upstream = None;
        }
    }

    /// The answer `sent` (hyper's exchange on `upstream`) waits for, once
    /// the connection has been driven: only driving it moves the exchange
    /// on (or ends it, and hyper then answers what was in flight), so the
    /// exchange is asked without a waker. With this task's waker, hyper
    /// would wake the task when the answer comes, while the task is
    /// running already, and it would run once more for nothing.
    pub(super) fn answer<T>(
        upstream: &mut Option<Open>,
        sent: Pin<&mut impl Future<Output = T>>,
        cx: &mut Context<'_>,
    ) -> Poll<T> {
        Upstream::drive(upstream, cx);
        sent.poll(&mut Context::from_waker(Waker::noop()))
    }

    /// [`Upstream::drive`] with no waker: for a connection nobody waits on.
    fn drive_unwatched(upstream: &mut Option<Open>) {
        Upstream::drive(upstream, &mut Context::from_waker(Waker::noop()));
    }
}

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
    upstream: Open,
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
        Arc::new(Pool {
            idle: Mutex::new(VecDeque::new()),
            host: host.to_string(),
            port: authority.port_u16().unwrap_or(80),
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
            let (mut upstream, reused) = match self.take_idle() {
                Some(upstream) => (upstream, true),
                None => (self.connect().await?, false),
            };
            let mut sent = pin!(upstream.sender.try_send_request(request));
            let mut upstream = Some(upstream);
            let answer = poll_fn(|cx| Upstream::answer(&mut upstream, sent.as_mut(), cx)).await;
            match answer {
                Ok(response) => {
                    return Ok(response.map(|body| Returning::new(body, upstream, &self)));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(UpstreamError::Http(e.into_error())),
                },
            }
        }
    }

    /// The most recently used idle connection that is still ready.
    pub(super) fn take_idle(&self) -> Option<Open> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(Idle { upstream, .. }) = idle.pop_back() {
            if upstream.sender.is_ready() {
                return Some(upstream);
            }
        }
        None
    }

    /// Opens a connection (TCP_NODELAY), driven by its first request.
    async fn connect(self: &Arc<Self>) -> Result<Open, UpstreamError> {
        self.start_reaper();
        let stream = self.tcp().await.map_err(UpstreamError::Connect)?;
        stream.set_nodelay(true).map_err(UpstreamError::Connect)?;
        let (sender, connection) = http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(UpstreamError::Http)?;
        Ok(Box::new(Upstream { sender, connection }))
    }

    /// A TCP connection to the upstream: to its address, or to each address
    /// its name resolves to in turn until one accepts.
    async fn tcp(&self) -> std::io::Result<TcpStream> {
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return TcpStream::connect(SocketAddr::new(ip, self.port)).await;
        }
        let mut last = None;
        for addr in tokio::net::lookup_host((self.host.as_str(), self.port)).await? {
            match TcpStream::connect(addr).await {
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

    /// Puts a connection whose exchange is over back on the stack, once
    /// hyper has taken in its end (polled here with no waker, so that the
    /// task that drove it is not woken for it while it is idle). One not
    /// ready yet (the request body is still being sent) is driven by a
    /// task of its own until it is, or until it closes.
    fn give_back(self: &Arc<Self>, upstream: Open) {
        let mut upstream = Some(upstream);
        Upstream::drive_unwatched(&mut upstream);
        let Some(mut upstream) = upstream else { return };
        if upstream.sender.is_ready() {
            self.push(upstream);
            return;
        }
        let pool = Arc::downgrade(self);
        tokio::spawn(async move {
            let ready = poll_fn(|cx| {
                if Pin::new(&mut upstream.connection).poll(cx).is_ready() {
                    return Poll::Ready(false);
                }
                upstream.sender.poll_ready(cx).map(|ready| ready.is_ok())
            });
            if let (Ok(true), Some(pool)) = (
                tokio::time::timeout(IDLE_TIMEOUT, ready).await,
                pool.upgrade(),
            ) {
                pool.give_back(upstream);
            }
        });
    }

    fn push(&self, upstream: Open) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MOST_IDLE {
            let since = self.looks.load(Ordering::Relaxed);
            idle.push_back(Idle { upstream, since });
        }
    }

    /// How many connections are idle now.
    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Closes the connections idle for too long, and those closed already
    /// (polled here, with no waker, to find out).
    pub(super) fn reap(&self) {
        let now = self.looks.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain_mut(|i| {
            if stale(i.since, now) {
                return false;
            }
            let mut cx = Context::from_waker(Waker::noop());
            Pin::new(&mut i.upstream.connection)
                .poll(&mut cx)
                .is_pending()
        });
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

/// A response body from the upstream that drives its connection while it
/// is read, and gives the connection back to the pool when it ends; dropped
/// unfinished, it closes the connection instead (the rest of the body would
/// still be on the wire).
pub(super) struct Returning {
    body: Incoming,
    upstream: Option<Open>,
    pool: Arc<Pool>,
}

impl Returning {
    /// `body`, read from `upstream`, which goes back to `pool` when the
    /// body ends (if it is still open).
    pub(super) fn new(body: Incoming, upstream: Option<Open>, pool: &Arc<Pool>) -> Returning {
        let mut returning = Returning {
            body,
            upstream,
            pool: Arc::clone(pool),
        };
        // An empty body (204, HEAD, Content-Length: 0) may never be polled.
        if returning.body.is_end_stream() {
            returning.ended();
        }
        returning
    }

    fn ended(&mut self) {
        if let Some(upstream) = self.upstream.take() {
            self.pool.give_back(upstream);
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
        // What the connection has read already first (a small body came
        // with the response head); the connection is driven when the body
        // waits for more.
        let polled = match Pin::new(&mut self.body).poll_frame(cx) {
            Poll::Pending if self.upstream.is_some() => {
                Upstream::drive(&mut self.upstream, cx);
                Pin::new(&mut self.body).poll_frame(cx)
            }
            polled => polled,
        };
        match &polled {
            Poll::Ready(Some(Ok(_))) if self.body.is_end_stream() => self.ended(),
            Poll::Ready(None) => self.ended(),
            Poll::Ready(Some(Err(_))) => self.upstream = None,
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
