//! `GET {client}/verification/classloader`: the release file, encrypted with the client's session
//! key in 64 KiB frames, streamed from the stored file. A download holds one plaintext frame and
//! one sealed frame in memory, whatever the file's size.

use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use futures_util::Stream;
use licensing_core::api::ResultCode;
use licensing_core::api::requests::ClassloaderQuery;
use licensing_core::crypto::SessionKey;
use licensing_core::crypto::frames::{FRAME_OVERHEAD, FRAME_PLAINTEXT, FrameSealer};
use licensing_core::model::Release;
use licensing_core::store::ProductStore;
use licensing_core::verify::RequestKind;
use licensing_core::{ApiError, TeamId, Timestamp};
use tokio::io::{AsyncRead, ReadBuf};
use warp::Reply;
use warp::http::{HeaderName, HeaderValue, header};

use super::{Exchange, rate_limited, session_key, take_session_key, team_context};
use crate::http::{Response, path_param, store_error};
use crate::services::ratelimit::ip_key;
use crate::services::verification::{self, Request};
use crate::state::AppState;

/// The handler.
pub(super) async fn classloader(
    state: AppState,
    team: String,
    ip: IpAddr,
    query: String,
) -> Response {
    let mut exchange = Exchange::new(RequestKind::Classloader);
    match serve(&state, &team, ip, &query, &mut exchange).await {
        Ok(response) => {
            exchange.count(&state, ResultCode::Valid);
            response
        }
        Err(error) => {
            if exchange.rate.is_none() {
                exchange.rate = match &state.limits.classloader_ip {
                    Some(l) => Some(l.peek(&ip_key(ip)).await),
                    None => None,
                };
            }
            exchange.count(&state, error.code());
            // A GET has no body: the signature covers the query string, which carries the request.
            exchange.error_answer(&error, query.as_bytes())
        }
    }
}

async fn serve(
    state: &AppState,
    team: &str,
    ip: IpAddr,
    query: &str,
    exchange: &mut Exchange,
) -> Result<Response, ApiError> {
    // 1. Team id, query, rate limits (per IP, then per license key), team, feature, session key.
    let team_id = path_param::<TeamId>("teamId", team)?;
    let input = ClassloaderQuery::parse(query)?;
    if let Some(limiter) = &state.limits.classloader_ip {
        let status = limiter.check(&ip_key(ip)).await;
        exchange.rate = Some(status);
        if !status.allowed() {
            return Err(rate_limited(&status));
        }
    }
    if let Some(limiter) = &state.limits.classloader_key {
        let status = limiter.check(&(team_id, input.license_key)).await;
        if exchange
            .rate
            .is_none_or(|r| status.remaining <= r.remaining)
        {
            exchange.rate = Some(status);
        }
        if !status.allowed() {
            return Err(rate_limited(&status));
        }
    }
    let context = team_context(state, team_id).await?;
    exchange.context = Some(context.clone());
    if !context.team.features.classloader {
        return Err(ApiError::forbidden(
            "The classloader feature is off for this team",
        ));
    }
    let key = session_key(state, &context, input.session_key.as_str())?;
    let country = state.geo.country(ip);
    exchange.country = country;
    let request = Request {
        kind: RequestKind::Classloader,
        license_key: &input.license_key,
        hardware_id: Some(&input.hardware_id),
        customer_id: input.customer_id,
        product_id: Some(input.product_id),
        version: input.version.as_ref(),
        branch: input.branch.as_ref(),
        ip,
        country,
    };

    // 2 to 6.
    let now = Timestamp::now();
    let (product, checked) =
        verification::check(&state.store, state.recorders(), &context, &request, now).await;
    exchange.product = product;
    let checked = checked?;
    let release = checked.release.as_ref();
    let release = release.ok_or_else(release_not_found)?;
    let file = release.file.as_ref().ok_or_else(release_not_found)?;
    // The file is opened before anything is recorded, so a missing file records no device. An
    // open file stays readable even if the release is deleted meanwhile.
    let (handle, stored_len) = match state.files.open(&file.key).await {
        Ok(Some(opened)) => opened,
        Ok(None) => {
            tracing::warn!(key = %file.key, "a release's file is missing from the file store");
            return Err(release_not_found());
        }
        Err(e) => return Err(crate::http::internal("opening a release file failed", e)),
    };

    // The session key is taken only now, when the license and the product passed: nobody can
    // fill a team's record of used keys without a license of it.
    take_session_key(state, team_id, &key, now).await?;

    // 7 and 8.
    verification::record(
        &state.store,
        &state.client_events,
        &context,
        state.max_records,
        (&request, &checked),
        now,
    )
    .await?;

    // The answer.
    let product_name = state
        .store
        .get_product(team_id, input.product_id)
        .await
        .map_err(store_error)?
        .map(|p| p.name)
        .unwrap_or_default();
    let latest = checked
        .catalog
        .as_ref()
        .and_then(|(_, releases)| latest_of_branch(releases, release));
    let mut response = warp::reply::stream(FrameStream::new(handle, &key)).into_response();
    let headers = response.headers_mut();
    let mut put = |name: &'static str, value: HeaderValue| {
        headers.insert(HeaderName::from_static(name), value);
    };
    put("x-file-size", HeaderValue::from(file.size));
    put("x-file-checksum", text_header(&file.checksum));
    put("x-version", text_header(release.version.as_str()));
    if let Some(latest) = latest {
        put("x-latest-version", text_header(latest.version.as_str()));
    }
    put("x-product-name", text_header(&product_name));
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
        text_header(&file.created_at.to_string()),
    );
    // Records stored before the upload check could hold any text: such a name is left out.
    if let Some(main_class) = file
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
        HeaderValue::from(encrypted_len(stored_len)),
    );
    if let Some(rate) = &exchange.rate {
        rate.apply(headers);
    }
    Ok(response)
}

fn release_not_found() -> ApiError {
    ApiError::new(ResultCode::ReleaseNotFound, "Release has no file")
}

/// The release marked latest in the served release's product and branch.
fn latest_of_branch<'a>(releases: &'a [Release], served: &Release) -> Option<&'a Release> {
    releases
        .iter()
        .find(|r| r.latest && r.branch_id == served.branch_id)
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
