//! Accepting connections: a cap on how many are open at once, timeouts for clients that are slow
//! on purpose, and a graceful stop.
//!
//! warp's own `serve` has none of these, so the server runs its filter under this accept loop.
//! It speaks HTTP/1.1 only: that is what TLS-terminating proxies speak to the servers behind
//! them, and hyper's HTTP/2 (prior knowledge) has no time limit on a connection's first bytes.
//!
//! - **At most `max_connections` open.** Past that the loop stops accepting, and new connections
//!   wait in the kernel's backlog until one closes; nothing already open is disturbed.
//! - **Request heads** (the request line and headers) must arrive within `header_timeout`. hyper
//!   starts that clock when it waits for a head, so it is also the idle limit of a keep-alive
//!   connection.
//! - **Request bodies** must arrive whole within `body_timeout` of the head; a body still
//!   incomplete then fails the request with 408.
//! - **Answers**: a write that makes no progress for `send_timeout` (a client that stopped
//!   reading) closes the connection.
//! - **Stop**: when `shutdown` completes, the listener closes, idle connections close, and
//!   requests in flight (downloads included) finish, for at most `shutdown_timeout`.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower_service::Service;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

/// Bytes of an answer hyper queues ahead of a slow client (hyper's default is about 400 KiB):
/// two 64 KiB download frames. Measured on the load benchmark's 10 MiB downloads: 64 KiB gives
/// 69% of AES-GCM, 128 KiB 70 to 78%, 256 KiB 78%, while a stalled download's memory grows with
/// it (about 210 KiB at 64 KiB, 310 KiB at 128 KiB). It also caps a request head.
const MAX_BUFFERED: usize = 128 * 1024;

/// Limits on connections and on how long a client may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Time for a request line and headers (and the idle time of a keep-alive connection).
    pub header_timeout: Duration,
    /// Time for a whole request body, from the end of its head.
    pub body_timeout: Duration,
    /// Time a write to the client may make no progress.
    pub send_timeout: Duration,
    /// Time requests in flight get to finish after a stop is asked for.
    pub shutdown_timeout: Duration,
}

/// The peer address of a request's connection, as a request extension.
#[derive(Debug, Clone, Copy)]
struct PeerAddr(SocketAddr);

/// The address of the connection's peer (the proxy, when there is one).
pub(crate) fn peer_addr() -> impl Filter<Extract = (Option<SocketAddr>,), Error = Infallible> + Clone
{
    warp::ext::optional::<PeerAddr>().map(|peer: Option<PeerAddr>| peer.map(|PeerAddr(a)| a))
}

/// Whether an error (from reading a request body) is the body timeout.
pub(crate) fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyTimeout>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// Serves `filter` on `listener` within `limits` until `shutdown` completes and the requests in
/// flight have finished (or `limits.shutdown_timeout` has passed).
pub(crate) async fn serve(
    listener: TcpListener,
    filter: BoxedFilter<(Response,)>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a moment rather than spin, and go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = warp::service(filter.clone());
        let body_timeout = limits.body_timeout;
        let handler = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut service = service.clone();
            let deadline = Instant::now() + body_timeout;
            let mut request = request.map(|body| DeadlineBody::new(body, deadline));
            request.extensions_mut().insert(PeerAddr(peer));
            service.call(request)
        });
        let io = TokioIo::new(SendTimeout::new(stream, limits.send_timeout));
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .max_buf_size(MAX_BUFFERED)
            .serve_connection(io, handler);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, %peer, "connection closed with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(limits.shutdown_timeout) => {
            tracing::warn!(
                timeout = ?limits.shutdown_timeout,
                "requests still in flight at the end of the shutdown timeout are cut off"
            );
        }
    }
}

/// The request body did not arrive within the body timeout.
#[derive(Debug)]
struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimeout {}

pin_project_lite::pin_project! {
    /// A request body that fails with [`BodyTimeout`] once its deadline passes.
    struct DeadlineBody {
        #[pin]
        inner: Incoming,
        #[pin]
        deadline: Sleep,
    }
}

impl DeadlineBody {
    fn new(inner: Incoming, deadline: Instant) -> Self {
        Self {
            inner,
            deadline: tokio::time::sleep_until(deadline),
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        ready!(this.deadline.poll(cx));
        Poll::Ready(Some(Err(Box::new(BodyTimeout))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A TCP stream whose writes fail with `TimedOut` after `limit` without progress.
struct SendTimeout {
    stream: TcpStream,
    limit: Duration,
    /// Started when a write is first pending; boxed so the stream stays `Unpin` (and only a
    /// stalled write allocates).
    stalled: Option<Pin<Box<Sleep>>>,
}

impl SendTimeout {
    fn new(stream: TcpStream, limit: Duration) -> Self {
        Self {
            stream,
            limit,
            stalled: None,
        }
    }

    /// Runs a write-side poll, timing how long it stays pending.
    fn timed<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match poll(Pin::new(&mut self.stream), cx) {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let limit = self.limit;
                let stalled = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match stalled.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client stopped reading the answer",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl AsyncRead for SendTimeout {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for SendTimeout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .timed(cx, |stream, cx| stream.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .timed(cx, |stream, cx| stream.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().timed(cx, AsyncWrite::poll_flush)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().timed(cx, AsyncWrite::poll_shutdown)
    }
}
