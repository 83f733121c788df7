//! The gRPC listener's connections under the listener's caps: tonic serves
//! whatever stream of connections it is given, so the caps sit in the
//! stream. A connection over a cap is closed as soon as it is accepted and
//! never reaches tonic; one admitted carries its place with it, given back
//! when tonic drops it.

use crate::listener::connection_caps::{ConnectionCaps, Permit};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;
use tonic::codegen::tokio_stream::Stream;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// The accepted connections of `listener` that `caps` admits.
pub(crate) struct CappedIncoming {
    listener: TcpListener,
    caps: Arc<ConnectionCaps>,
    /// After a failed accept (out of descriptors, say): the pause before the
    /// next, so that a full descriptor table does not spin a core.
    pause: Option<Pin<Box<Sleep>>>,
}

impl CappedIncoming {
    /// Accepts on `listener` under `caps`.
    pub(crate) fn new(listener: TcpListener, caps: Arc<ConnectionCaps>) -> CappedIncoming {
        CappedIncoming {
            listener,
            caps,
            pause: None,
        }
    }
}

impl Stream for CappedIncoming {
    type Item = io::Result<CappedStream>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(pause) = self.pause.as_mut() {
                if pause.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.pause = None;
            }
            match self.listener.poll_accept(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => {
                    tracing::warn!(error = %e, "accept failed");
                    self.pause = Some(Box::pin(tokio::time::sleep(Duration::from_millis(50))));
                }
                Poll::Ready(Ok((stream, peer))) => match self.caps.admit(peer) {
                    Ok(permit) => {
                        // An answer goes out in several writes (headers,
                        // message, trailers): with Nagle's algorithm the
                        // later ones wait for the client's delayed
                        // acknowledgement of the first.
                        if let Err(e) = stream.set_nodelay(true) {
                            tracing::debug!(%peer, error = %e, "TCP_NODELAY not set");
                        }
                        return Poll::Ready(Some(Ok(CappedStream {
                            stream,
                            _permit: permit,
                        })));
                    }
                    Err(_) => {
                        // Over a cap: closed before a byte is read (counted).
                        tracing::debug!(%peer, "connection over the cap: closed");
                        drop(stream);
                    }
                },
            }
        }
    }
}

/// An admitted connection and its place under the caps.
pub(crate) struct CappedStream {
    stream: TcpStream,
    _permit: Permit,
}

impl Connected for CappedStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for CappedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for CappedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
