//! `GET {client}/verification/classloader`: the release file, encrypted with the client's session
//! key in 64 KiB frames, streamed from the stored file. A download holds one plaintext frame and
//! one sealed frame in memory, whatever the file's size.

use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use futures_util::Stream;
use licensing_core::api::requests::ClassloaderQuery;
use licensing_core::crypto::SessionKey;
use licensing_core::crypto::frames::{FRAME_OVERHEAD, FRAME_PLAINTEXT, FrameSealer};
use licensing_core::verify::RequestKind;
use licensing_core::{ApiError, ResultCode, TeamId};
use tokio::io::{AsyncRead, ReadBuf};
use warp::Reply;
use warp::http::{HeaderName, HeaderValue, header};

use super::error_answer;
use crate::app::client::{self, Granted, Seen};
use crate::http::{Response, path_param};
use crate::state::AppState;

/// The handler.
pub(super) async fn classloader(
    state: AppState,
    team: String,
    ip: IpAddr,
    query: String,
) -> Response {
    let mut seen = Seen::new(RequestKind::Classloader);
    let outcome = async {
        let team = path_param::<TeamId>("teamId", &team)?;
        let input = ClassloaderQuery::parse(&query)?;
        client::download(&state, team, &input, ip, &mut seen).await
    }
    .await;
    let code = outcome
        .as_ref()
        .map_or_else(ApiError::code, |_| ResultCode::Valid);
    seen.count(
        &state,
        code,
        client::limiter(&state, RequestKind::Classloader),
        ip,
    )
    .await;
    match outcome {
        Ok(granted) => stream(&seen, granted),
        // A GET has no body: the signature covers the query string, which carries the request.
        Err(error) => error_answer(&seen, &error, query.as_bytes()),
    }
}

/// The encrypted file, with the headers that describe it.
fn stream(seen: &Seen, granted: Granted) -> Response {
    let (release, record) = (&granted.release, &granted.record);
    let frames = FrameStream::new(granted.file, &granted.key);
    let mut response = warp::reply::stream(frames).into_response();
    let headers = response.headers_mut();
    let mut put = |name: &'static str, value: HeaderValue| {
        headers.insert(HeaderName::from_static(name), value);
    };
    put("x-file-size", HeaderValue::from(record.size));
    put("x-file-checksum", text_header(&record.checksum));
    put("x-version", text_header(release.version.as_str()));
    if let Some(latest) = &granted.latest {
        put("x-latest-version", text_header(latest.version.as_str()));
    }
    put("x-product-name", text_header(&granted.product_name));
    put(
        "x-release-status",
        HeaderValue::from_static(release.status.as_str()),
    );
    put(
        "x-release-created-at",
        text_header(&release.created_at.to_string()),
    );
    put(
        "x-file-created-at",
        text_header(&record.created_at.to_string()),
    );
    // Records stored before the upload check could hold any text: such a name is left out.
    if let Some(main_class) = record
        .main_class_name
        .as_deref()
        .filter(|c| crate::jar::is_valid_main_class(c))
    {
        put("x-main-class", text_header(main_class));
    }
    put(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    put(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'"),
    );
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(encrypted_len(granted.stored_len)),
    );
    if let Some(rate) = &seen.rate {
        rate.apply(headers);
    }
    response
}

/// A header value for any text: as it is when it is printable ASCII, else percent-encoded UTF-8
/// (so a product named "Café" arrives as `Caf%C3%A9`).
fn text_header(text: &str) -> HeaderValue {
    if text.bytes().all(|b| (0x20..0x7f).contains(&b))
        && let Ok(value) = HeaderValue::from_str(text)
    {
        return value;
    }
    let mut encoded = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~ ".contains(&b) {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    HeaderValue::from_str(&encoded).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The length of the frame stream of `plaintext` bytes.
pub(crate) fn encrypted_len(plaintext: u64) -> u64 {
    let frames = plaintext.div_ceil(FRAME_PLAINTEXT as u64);
    plaintext + frames * FRAME_OVERHEAD as u64
}

/// The encrypted body: reads [`FRAME_PLAINTEXT`] bytes at a time and seals each into a frame.
struct FrameStream {
    file: crate::files::FileReader,
    sealer: FrameSealer,
    plaintext: Box<[u8]>,
    filled: usize,
    done: bool,
}

impl FrameStream {
    fn new(file: crate::files::FileReader, key: &SessionKey) -> Self {
        Self {
            file,
            sealer: FrameSealer::new(key),
            plaintext: vec![0u8; FRAME_PLAINTEXT].into_boxed_slice(),
            filled: 0,
            done: false,
        }
    }
}

impl Stream for FrameStream {
    type Item = Result<Bytes, io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        while !this.done && this.filled < this.plaintext.len() {
            let mut buf = ReadBuf::new(&mut this.plaintext[this.filled..]);
            match Pin::new(&mut this.file).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => {
                    this.done = true;
                    this.filled = 0;
                    tracing::error!(error = %e, "reading a release file failed mid-download");
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Ok(())) => {
                    let n = buf.filled().len();
                    if n == 0 {
                        this.done = true;
                    }
                    this.filled += n;
                }
            }
        }
        if this.filled == 0 {
            return Poll::Ready(None);
        }
        let mut frame = Vec::with_capacity(FRAME_OVERHEAD + this.filled);
        let sealed = this
            .sealer
            .seal_into(&this.plaintext[..this.filled], &mut frame);
        this.filled = 0;
        match sealed {
            Ok(()) => Poll::Ready(Some(Ok(Bytes::from(frame)))),
            Err(e) => {
                this.done = true;
                Poll::Ready(Some(Err(io::Error::other(e.to_string()))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypted_length_counts_each_frame() {
        assert_eq!(encrypted_len(0), 0);
        assert_eq!(encrypted_len(1), 1 + 32);
        assert_eq!(encrypted_len(65_536), 65_536 + 32);
        assert_eq!(encrypted_len(65_537), 65_537 + 64);
        assert_eq!(encrypted_len(10 * 1024 * 1024), 10 * 1024 * 1024 + 160 * 32);
    }

    #[test]
    fn header_text_is_kept_or_percent_encoded() {
        assert_eq!(text_header("My App 2").to_str().unwrap(), "My App 2");
        assert_eq!(text_header("Café").to_str().unwrap(), "Caf%C3%A9");
    }
}
