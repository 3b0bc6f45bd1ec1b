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
//! - **At most `max_connections_per_address` open from one client address** (IPv6: one /56, the
//!   block a home or office line is given), so that one address cannot take every connection; a
//!   connection past it is answered 429 and closed. Trusted proxies are exempt: their
//!   connections carry many clients, and the proxy is where those are limited.
//! - **A reserve for light clients.** The last eighth of `max_connections` (at most 512) is kept
//!   for addresses that hold at most one connection: once fewer connections than that are free,
//!   an address with two or more open is refused like one past its maximum. A few addresses
//!   holding many slow connections each then fill the rest, never the reserve, and a client
//!   that opens one or two connections (a desktop application, a health check) still gets in.
//! - **Stop**: when `shutdown` completes, the listener closes, idle connections close, and
//!   requests in flight (downloads included) finish, for at most `shutdown_timeout`.
//! - **Errors of the HTTP layer itself** carry the JSON envelope like every other answer: hyper's
//!   own 400 (malformed head), 414 (URI too long) and 431 (head too large) are rewritten on their
//!   way out, and a request head cut off by the header timeout is answered 408 (an idle
//!   keep-alive connection that times out is closed silently).
//! - **The client address** is decided here, once per request ([`crate::client_addr`]), and
//!   travels with the request as an extension; the access log records it.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use licensing_core::ApiError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot};
use tokio::time::{Instant, Sleep};
use tower_service::Service;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use crate::client_addr::TrustedProxies;

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
    /// Connections open at once from one client address (IPv6: one /56); more are refused.
    /// Trusted proxies are exempt.
    pub max_connections_per_address: usize,
    /// Time for a request line and headers (and the idle time of a keep-alive connection).
    pub header_timeout: Duration,
    /// Time for a whole request body, from the end of its head.
    pub body_timeout: Duration,
    /// Time a write to the client may make no progress.
    pub send_timeout: Duration,
    /// Time requests in flight get to finish after a stop is asked for.
    pub shutdown_timeout: Duration,
}

/// The client address of a request, as a request extension.
/// Open connections per client address.
struct PerAddress {
    cap: usize,
    open: Mutex<HashMap<u128, usize>>,
}

/// One open connection of an address; closing it frees the slot.
struct AddressSlot {
    owner: Arc<PerAddress>,
    key: u128,
}

/// Connections an address may hold when it opens one in the reserve (see the module docs).
const RESERVE_PER_ADDRESS: usize = 1;

/// The part of `max_connections` kept for light clients.
fn reserve_of(max_connections: usize) -> usize {
    (max_connections / 8).min(512)
}

/// The key connections are counted under: an IPv4 address, or an IPv6 address's /56.
fn address_group(ip: IpAddr) -> u128 {
    match ip.to_canonical() {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6) & !((1u128 << 72) - 1),
    }
}

impl PerAddress {
    /// A slot for one more connection from `ip`, or `None` when it has its maximum open (or,
    /// when `in_reserve`, more than [`RESERVE_PER_ADDRESS`]).
    fn admit(self: &Arc<Self>, ip: IpAddr, in_reserve: bool) -> Option<AddressSlot> {
        let key = address_group(ip);
        let mut open = self.open.lock().ok()?;
        let count = open.entry(key).or_insert(0);
        let cap = if in_reserve {
            RESERVE_PER_ADDRESS.min(self.cap)
        } else {
            self.cap
        };
        if *count >= cap {
            if *count == 0 {
                open.remove(&key);
            }
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            owner: self.clone(),
            key,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.owner.open.lock()
            && let Some(count) = open.get_mut(&self.key)
        {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// Serves `filter` on `listener` within `limits` until `shutdown` completes and the requests in
/// flight have finished (or `limits.shutdown_timeout` has passed).
pub(crate) async fn serve(
    listener: TcpListener,
    filter: BoxedFilter<(Response,)>,
    limits: ConnectionLimits,
    proxies: TrustedProxies,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let reserve = reserve_of(limits.max_connections);
    let per_address = Arc::new(PerAddress {
        cap: limits.max_connections_per_address.max(1),
        open: Mutex::new(HashMap::new()),
    });
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
        // Answers are written whole; waiting to coalesce them (Nagle) only adds the peer's
        // delayed-ACK time (40 ms on Linux) to requests that arrive in more than one segment.
        stream.set_nodelay(true).ok();
        let in_reserve = permits.available_permits() < reserve;
        let slot = if proxies.trusts(peer.ip()) {
            None
        } else {
            match per_address.admit(peer.ip(), in_reserve) {
                Some(slot) => Some(slot),
                None => {
                    refuse_busy_address(
                        &stream,
                        if in_reserve {
                            RESERVE_PER_ADDRESS
                        } else {
                            limits.max_connections_per_address
                        },
                    );
                    tracing::debug!(%peer, "refused: too many connections from this address");
                    continue;
                }
            }
        };
        let service = warp::service(filter.clone());
        let body_timeout = limits.body_timeout;
        let proxies = proxies.clone();
        let handler = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut service = service.clone();
            let deadline = Instant::now() + body_timeout;
            let mut request = request.map(|body| DeadlineBody::new(body, deadline));
            let client = proxies.client_ip(peer.ip(), request.headers());
            request
                .extensions_mut()
                .insert(crate::http::ClientAddr(client));
            let id = RequestId::of(request.headers());
            let access = AccessLog::start(&request, client, &id);
            let answer = service.call(request);
            async move {
                let mut response = answer.await;
                if let Ok(response) = &mut response {
                    if let Some(access) = access {
                        access.finish(response.status().as_u16());
                    }
                    response.headers_mut().insert(REQUEST_ID, id.0);
                }
                response
            }
        });
        let (give_back, returned) = oneshot::channel();
        let io = TokioIo::new(SendTimeout::new(stream, limits.send_timeout, give_back));
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .max_buf_size(MAX_BUFFERED)
            .serve_connection(io, handler);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                if e.is_timeout()
                    && let Ok(Returned {
                        stream,
                        head_pending: true,
                    }) = returned.await
                {
                    // A head begun but not finished in time: say so before closing.
                    write_raw_error(
                        &stream,
                        &ApiError::request_timeout(
                            "The request line and headers did not arrive in time",
                        ),
                    );
                }
                tracing::debug!(error = %e, %peer, "connection closed with an error");
            }
            drop(slot);
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

/// Answers a connection over its address's maximum with a 429 in the envelope (best effort:
/// the socket's buffer is empty, so the short answer fits), then it is closed.
fn refuse_busy_address(stream: &TcpStream, cap: usize) {
    let error = ApiError::new(
        licensing_core::api::ResultCode::RateLimit,
        format!("Too many connections from your address: at most {cap} may be open at once now"),
    );
    let bytes = crate::http::raw_response(&error, &[("retry-after", "1"), ("connection", "close")]);
    stream.try_write(&bytes).ok();
}

/// Writes an error answer on a connection hyper has let go of (best effort, see above).
fn write_raw_error(stream: &TcpStream, error: &ApiError) {
    stream
        .try_write(&crate::http::raw_response(
            error,
            &[("connection", "close")],
        ))
        .ok();
}

/// The header that names a request: taken from the client (or a proxy in front) when it is a
/// plausible id, made here otherwise, and returned in the answer and the access log, so that a
/// line of a log can be matched with a complaint.
const REQUEST_ID: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("x-request-id");

/// A request's id, as its header value.
struct RequestId(hyper::header::HeaderValue);

impl RequestId {
    /// The client's `X-Request-Id` when it is 1 to 128 letters, digits or `-_.:/+=`; else a new
    /// one: this process's random prefix and a counter (no system call per request).
    fn of(headers: &hyper::HeaderMap) -> Self {
        let given = headers.get(&REQUEST_ID).filter(|v| {
            let b = v.as_bytes();
            (1..=128).contains(&b.len())
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"-_.:/+=".contains(c))
        });
        if let Some(given) = given {
            return Self(given.clone());
        }
        static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let prefix = PREFIX.get_or_init(rand::random);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let text = format!("{prefix:08x}-{n:012x}");
        Self(
            hyper::header::HeaderValue::from_str(&text)
                .unwrap_or_else(|_| hyper::header::HeaderValue::from_static("unknown")),
        )
    }
}

/// One line of the access log (target `access`, level DEBUG), prepared only when that level is
/// on: method, route template, path, status, duration, client address, team and request id.
/// License keys in paths are masked: a key is a credential of the customer's.
struct AccessLog {
    started: Instant,
    method: hyper::Method,
    path: String,
    client: IpAddr,
    request_id: String,
}

impl AccessLog {
    fn start<B>(request: &hyper::Request<B>, client: IpAddr, id: &RequestId) -> Option<Self> {
        tracing::enabled!(target: "access", tracing::Level::DEBUG).then(|| Self {
            started: Instant::now(),
            method: request.method().clone(),
            path: mask_license_keys(request.uri().path()),
            client,
            request_id: String::from_utf8_lossy(id.0.as_bytes()).into_owned(),
        })
    }

    fn finish(self, status: u16) {
        tracing::debug!(
            target: "access",
            method = %self.method,
            route = crate::metrics::route_of(&self.path),
            path = self.path,
            status,
            micros = self.started.elapsed().as_micros() as u64,
            client = %self.client,
            team = team_of(&self.path).unwrap_or(""),
            request_id = self.request_id,
        );
    }
}

/// The team a developer or client API path names (`/api/v1/{dev|client}/teams/{teamId}/…`).
fn team_of(path: &str) -> Option<&str> {
    let mut segments = path.split('/').skip(1);
    match (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) {
        (Some("api"), Some("v1"), Some("dev" | "client"), Some("teams"), Some(team)) => Some(team),
        _ => None,
    }
}

/// `path` with every segment shaped like a license key (five groups of five letters or digits,
/// in any case) replaced by `{licenseKey}`, and the secret of a set-password link by `{secret}`.
pub(crate) fn mask_license_keys(path: &str) -> String {
    if let Some(rest) = path.strip_prefix("/dashboard/set-password/") {
        let id = rest.split('/').next().unwrap_or_default();
        return format!("/dashboard/set-password/{id}/{{secret}}");
    }
    let looks_like_key = |segment: &str| {
        segment.len() == 29
            && segment.split('-').count() == 5
            && segment
                .split('-')
                .all(|g| g.len() == 5 && g.bytes().all(|b| b.is_ascii_alphanumeric()))
    };
    path.split('/')
        .map(|segment| {
            if looks_like_key(segment) {
                "{licenseKey}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

pin_project_lite::pin_project! {
    /// A request body that fails with [`BodyTimeout`](crate::http::BodyTimeout) once its deadline passes.
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
        Poll::Ready(Some(Err(Box::new(crate::http::BodyTimeout))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What a connection's stream gives back when hyper drops it: the socket, and whether part of a
/// request head had arrived since the last answer was written.
struct Returned {
    stream: TcpStream,
    head_pending: bool,
}

/// A connection's TCP stream as hyper sees it:
/// - writes fail with `TimedOut` after `limit` without progress;
/// - hyper's automatic error answers (a bare head with `content-length: 0`) are rewritten into the
///   JSON envelope;
/// - when hyper drops it, the socket goes back to the connection task, which may still answer a
///   header timeout.
struct SendTimeout {
    /// Always `Some` until dropped.
    stream: Option<TcpStream>,
    limit: Duration,
    /// Started when a write is first pending; boxed so the stream stays `Unpin` (and only a
    /// stalled write allocates).
    stalled: Option<Pin<Box<Sleep>>>,
    /// Bytes were read since the last write: a request head may be half way.
    head_pending: bool,
    /// A rewritten answer being written, and how much of it is written.
    rewritten: Option<(Vec<u8>, usize)>,
    give_back: Option<oneshot::Sender<Returned>>,
}

impl SendTimeout {
    fn new(stream: TcpStream, limit: Duration, give_back: oneshot::Sender<Returned>) -> Self {
        Self {
            stream: Some(stream),
            limit,
            stalled: None,
            head_pending: false,
            rewritten: None,
            give_back: Some(give_back),
        }
    }

    fn stream(&mut self) -> io::Result<Pin<&mut TcpStream>> {
        self.stream
            .as_mut()
            .map(Pin::new)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }

    /// Runs a write-side poll, timing how long it stays pending.
    fn timed<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let stream = match self.stream() {
            Ok(stream) => stream,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match poll(stream, cx) {
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

    /// Writes `buf`, or its rewrite when it is one of hyper's automatic error answers.
    fn write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.rewritten.is_none()
            && self.head_pending
            && let Some(answer) = rewrite_automatic_error(buf)
        {
            self.rewritten = Some((answer, 0));
        }
        let Some((answer, written)) = self.rewritten.take() else {
            let result = ready!(self.timed(cx, |stream, cx| stream.poll_write(cx, buf)));
            self.head_pending = false;
            return Poll::Ready(result);
        };
        let mut written = written;
        while written < answer.len() {
            let rest = &answer[written..];
            match self.timed(cx, |stream, cx| stream.poll_write(cx, rest)) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    self.rewritten = Some((answer, written));
                    return Poll::Pending;
                }
            }
        }
        self.head_pending = false;
        // hyper's buffer counts as written: the rewrite took its place.
        Poll::Ready(Ok(buf.len()))
    }
}

impl Drop for SendTimeout {
    fn drop(&mut self) {
        if let (Some(stream), Some(give_back)) = (self.stream.take(), self.give_back.take()) {
            give_back
                .send(Returned {
                    stream,
                    head_pending: self.head_pending,
                })
                .ok();
        }
    }
}

/// hyper answers a request head it cannot parse itself, with a bare head (`HTTP/1.1 400`, `414`
/// or `431`, `content-length: 0`). This returns the same answer with the JSON envelope as its
/// body, or `None` for anything else.
fn rewrite_automatic_error(buf: &[u8]) -> Option<Vec<u8>> {
    let head = std::str::from_utf8(buf).ok()?;
    let head = head.strip_suffix("\r\n\r\n")?;
    let (status_line, headers) = head.split_once("\r\n")?;
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))?
        .get(..3)?;
    let error = match status {
        "400" => ApiError::bad_request(
            "The request line or headers are malformed: send an HTTP/1.1 request",
        ),
        "414" => {
            ApiError::uri_too_long("The request URI is too long: send a shorter path and query")
        }
        "431" => ApiError::headers_too_large(
            "The request line and headers are too large: send fewer or shorter headers",
        ),
        _ => return None,
    };
    let lines: Vec<&str> = headers.split("\r\n").collect();
    if !lines
        .iter()
        .any(|l| l.eq_ignore_ascii_case("content-length: 0"))
    {
        return None;
    }
    let body = crate::http::error_body(&error);
    let mut out = format!("{status_line}\r\n");
    for line in lines
        .iter()
        .filter(|l| !l.to_ascii_lowercase().starts_with("content-length:"))
    {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str(&format!(
        "content-type: application/json\r\nx-content-type-options: nosniff\r\ncontent-length: {}\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

impl AsyncRead for SendTimeout {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let stream = match this.stream() {
            Ok(stream) => stream,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let result = ready!(stream.poll_read(cx, buf));
        if buf.filled().len() > before {
            this.head_pending = true;
        }
        Poll::Ready(result)
    }
}

impl AsyncWrite for SendTimeout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut filled = bufs.iter().filter(|b| !b.is_empty());
        let first = filled.next().map_or(&[][..], |b| &b[..]);
        // An automatic error answer is a bare head, one buffer: only then is it looked at (a
        // head and its body go out in one write, one segment).
        if this.rewritten.is_some() || (this.head_pending && filled.next().is_none()) {
            return this.write(cx, first);
        }
        let result = ready!(this.timed(cx, |stream, cx| stream.poll_write_vectored(cx, bufs)));
        this.head_pending = false;
        Poll::Ready(result)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(TcpStream::is_write_vectored)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().timed(cx, AsyncWrite::poll_flush)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().timed(cx, AsyncWrite::poll_shutdown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_connections_count_per_56_and_ipv4_per_address() {
        let group = |ip: &str| address_group(ip.parse().unwrap());
        // One home line (a /56) is one group, whichever of its 256 /64s a device uses.
        assert_eq!(
            group("2001:db8:1:ab00::1"),
            group("2001:db8:1:abff:ffff::9")
        );
        assert_ne!(group("2001:db8:1:ab00::1"), group("2001:db8:1:ac00::1"));
        assert_ne!(group("198.51.100.1"), group("198.51.100.2"));
        assert_eq!(group("::ffff:198.51.100.1"), group("198.51.100.1"));
    }

    #[test]
    fn the_reserve_admits_light_addresses_only() {
        let per = Arc::new(PerAddress {
            cap: 8,
            open: Mutex::new(HashMap::new()),
        });
        let heavy: IpAddr = "203.0.113.1".parse().unwrap();
        let light: IpAddr = "203.0.113.2".parse().unwrap();
        let held: Vec<AddressSlot> = (0..3).map(|_| per.admit(heavy, false).unwrap()).collect();
        assert!(
            per.admit(heavy, true).is_none(),
            "three open: not in the reserve"
        );
        let first = per.admit(light, true).expect("a light address gets in");
        assert!(
            per.admit(light, true).is_none(),
            "one is its share of the reserve"
        );
        drop(first);
        assert!(per.admit(light, true).is_some());
        drop(held);
        assert_eq!(reserve_of(4096), 512);
        assert_eq!(reserve_of(24), 3);
    }

    #[test]
    fn license_keys_are_masked_in_logged_paths() {
        let team = "6f9619ff-8b86-4011-b42d-00c04fc964ff";
        assert_eq!(
            mask_license_keys(&format!(
                "/api/v1/dev/teams/{team}/licenses/ABCDE-12345-FGHIJ-67890-KLMNO"
            )),
            format!("/api/v1/dev/teams/{team}/licenses/{{licenseKey}}")
        );
        // In any case, as a mistyped key would be.
        assert_eq!(
            mask_license_keys("/x/abcde-12345-fghij-67890-klmno"),
            "/x/{licenseKey}"
        );
        // A set-password link's secret signs its holder in: never logged.
        assert_eq!(
            mask_license_keys(&format!("/dashboard/set-password/{team}/s3cr3t-value")),
            format!("/dashboard/set-password/{team}/{{secret}}")
        );
        assert_eq!(mask_license_keys("/healthz"), "/healthz");
        assert_eq!(
            mask_license_keys(&format!("/api/v1/dev/teams/{team}/licenses")),
            format!("/api/v1/dev/teams/{team}/licenses")
        );
    }

    #[test]
    fn only_hypers_bare_error_heads_are_rewritten() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 10:00:00 GMT\r\n\r\n";
        let rewritten = String::from_utf8(rewrite_automatic_error(head).unwrap()).unwrap();
        assert!(rewritten.starts_with("HTTP/1.1 431 "));
        assert!(rewritten.contains("\r\ndate: Mon, 23 Nov 2026 10:00:00 GMT\r\n"));
        assert!(rewritten.contains("content-type: application/json"));
        let body = rewritten.split("\r\n\r\n").nth(1).unwrap();
        let length: usize = rewritten
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
        assert!(body.contains("\"BAD_REQUEST\""));
        // Our own answers (with a body) and other statuses pass untouched.
        assert!(
            rewrite_automatic_error(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 52\r\n\r\n")
                .is_none()
        );
        assert!(rewrite_automatic_error(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(rewrite_automatic_error(b"{\"data\":null}").is_none());
    }
}
