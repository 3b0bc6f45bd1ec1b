//! `Idempotency-Key` at the gates (protocol.md section 6): the HTTP adapter of the typed claim
//! every caller has ([`crate::app::once`]).
//!
//! [`guard`] wraps a write of the developer API, the admin API or the dashboard. Without the
//! header it runs the write as it is. With it, it reads the body (whole: the fingerprint covers
//! it; a multipart body by its parts, so that a new boundary matches), computes the request's
//! fingerprint and runs the write under the claim, which keeps the response (its status,
//! content type and body) and answers it again byte for byte, with
//! `Idempotent-Replayed: true`; another request with the key is 422
//! `IDEMPOTENCY_KEY_MISMATCH`, the same one still running 409 `IDEMPOTENCY_KEY_IN_USE` with
//! `Retry-After: 1`.

use std::future::Future;

use bytes::Bytes;
use futures_util::StreamExt as _;
use licensing_core::ApiError;
use licensing_core::api::requests::MAX_JSON_BODY;
use licensing_core::idempotency::{
    self, Fingerprint, IdempotencyKey, IdempotencyOwner, KeptAnswer, MultipartDigest, body_digest,
};
use warp::http::{HeaderValue, Method, header};

use super::{Body, Input, Response, error, read_body};
pub(crate) use crate::app::once::Keyed;
use crate::app::once::{self, Keep};
use crate::state::AppState;

/// The request's key: `None` without the header, 400 for an invalid or repeated one.
pub(crate) fn key_of(headers: &warp::http::HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let mut values = headers.get_all(idempotency::HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ApiError::bad_field(
            idempotency::HEADER,
            "is given more than once: send one key per request",
        ));
    }
    IdempotencyKey::parse(value.as_bytes()).map(Some)
}

/// Runs `write` (a `method` request to `path` with `input`) under its idempotency key, if it
/// has one, for `owner` (see the module documentation).
pub(crate) async fn guard<W, A>(
    state: &AppState,
    owner: IdempotencyOwner,
    method: &Method,
    path: &str,
    input: Input,
    write: W,
) -> Response
where
    W: FnOnce(Input) -> A + Send + 'static,
    A: Future<Output = Response> + Send + 'static,
{
    if !idempotency::is_write(method.as_str()) {
        return write(input).await;
    }
    let key = match key_of(&input.headers) {
        Ok(Some(key)) => key,
        Ok(None) => return write(input).await,
        Err(e) => return error(&e),
    };
    let (input, digest) = match read_whole(state, input).await {
        Ok(read) => read,
        Err(e) => return error(&e),
    };
    let keyed = Keyed {
        owner,
        key,
        fingerprint: Fingerprint::of(method.as_str(), path, &input.query, digest),
    };
    run_once(state, keyed, None, write(input)).await
}

/// Runs `write` once for `keyed` (see [`crate::app::once`]). With `wait`, a claim still
/// running is waited for up to that long before the 409. (The write, a whole page's or
/// operation's future, is moved to the heap first, so that the layers that claim and keep do
/// not each hold a copy of it.)
pub(crate) fn run_once(
    state: &AppState,
    keyed: Keyed,
    wait: Option<std::time::Duration>,
    write: impl Future<Output = Response> + Send + 'static,
) -> impl Future<Output = Response> + Send + '_ {
    once::claimed(&state.store, keyed, wait, Box::pin(write))
}

/// A response, as a claim keeps it: its status, content type, the headers of
/// [`REPLAYED_HEADERS`](idempotency::REPLAYED_HEADERS) and its body; replayed with
/// `Idempotent-Replayed: true`.
impl Keep for Response {
    fn status(&self) -> u16 {
        self.status().as_u16()
    }

    async fn keep(self) -> Result<(KeptAnswer, Self), ApiError> {
        let (parts, body) = self.into_parts();
        let body = http_body_util::BodyExt::collect(body)
            .await
            .map_err(|e| ApiError::internal_because("reading an answer to keep failed", e))?
            .to_bytes();
        // A secret shown once is not kept for a day to serve retries: the replay says so where
        // it was.
        let kept_body = idempotency::redact_secrets(&body).unwrap_or_else(|| body.to_vec());
        let answer = KeptAnswer {
            status: parts.status.as_u16(),
            content_type: parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
            headers: idempotency::REPLAYED_HEADERS
                .iter()
                .filter_map(|name| {
                    let value = parts.headers.get(*name)?.to_str().ok()?;
                    Some(((*name).to_owned(), value.to_owned()))
                })
                .collect(),
            body: kept_body,
        };
        Ok((answer, Response::from_parts(parts, body.into())))
    }

    fn replay(answer: KeptAnswer) -> Self {
        let mut response = Response::new(answer.body.into());
        *response.status_mut() =
            warp::http::StatusCode::from_u16(answer.status).unwrap_or(warp::http::StatusCode::OK);
        let headers = response.headers_mut();
        if let Ok(value) = HeaderValue::from_str(&answer.content_type)
            && !answer.content_type.is_empty()
        {
            headers.insert(header::CONTENT_TYPE, value);
        }
        for (name, value) in &answer.headers {
            if let (Ok(name), Ok(value)) = (
                header::HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.insert(name, value);
            }
        }
        headers.insert(
            idempotency::REPLAYED_HEADER,
            HeaderValue::from_static("true"),
        );
        response
    }

    fn refused(e: ApiError) -> Self {
        error(&e)
    }
}

/// Reads the whole body (a JSON body: at most 1 MiB; a multipart one: the upload limit and 1
/// MiB for its data), and its digest; the input handed on carries it as one chunk.
async fn read_whole(state: &AppState, input: Input) -> Result<(Input, [u8; 32]), ApiError> {
    let Input {
        query,
        headers,
        body,
    } = input;
    let boundary = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
        .and_then(|v| multer::parse_boundary(v).ok());
    let limit = match boundary {
        Some(_) => usize::try_from(state.files.max_size())
            .unwrap_or(usize::MAX)
            .saturating_add(MAX_JSON_BODY),
        None => MAX_JSON_BODY,
    };
    let bytes = read_body(body, limit).await?;
    let digest = match boundary {
        Some(boundary) => multipart_digest(bytes.clone(), boundary).await?,
        None => body_digest(&bytes),
    };
    let body: Body = Box::pin(futures_util::stream::once(async move { Ok(bytes) }));
    Ok((
        Input {
            query,
            headers,
            body,
        },
        digest,
    ))
}

/// The digest of a multipart body's parts (name, file name and content, in order).
async fn multipart_digest(bytes: Bytes, boundary: String) -> Result<[u8; 32], ApiError> {
    let malformed = |e: multer::Error| crate::http::body_error(&e, "Malformed multipart body");
    let stream =
        futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(bytes) });
    let mut form = multer::Multipart::new(stream, boundary);
    let mut digest = MultipartDigest::default();
    while let Some(mut field) = form.next_field().await.map_err(malformed)? {
        let (name, file) = (
            field.name().map(str::to_owned),
            field.file_name().map(str::to_owned),
        );
        let mut content = Vec::new();
        while let Some(chunk) = field.next().await {
            content.extend_from_slice(&chunk.map_err(malformed)?);
        }
        digest.part(name.as_deref(), file.as_deref(), &content);
    }
    Ok(digest.finish())
}

#[cfg(test)]
mod tests {
    use licensing_core::Timestamp;
    use licensing_core::idempotency::Claim;
    use licensing_core::store::{IdempotencyStore as _, MemoryStore};

    use super::*;
    use crate::app::once::run_claimed;

    fn keyed(owner: &IdempotencyOwner, key: &IdempotencyKey, print: Fingerprint) -> Keyed {
        Keyed {
            owner: owner.clone(),
            key: key.clone(),
            fingerprint: print,
        }
    }

    fn answer(status: u16) -> Response {
        crate::http::json(status, &serde_json::json!({"status": status}))
    }

    /// A 2xx or 4xx is kept and replayed as it was; a 5xx or a 429 frees the key, so that the
    /// same request runs again.
    #[tokio::test]
    async fn answers_are_kept_unless_a_retry_may_succeed() {
        let store = MemoryStore::new();
        let owner = IdempotencyOwner::admin();
        let print = Fingerprint([1; 32]);
        let now = Timestamp::now();
        for (status, kept) in [
            (201, true),
            (404, true),
            (429, false),
            (500, false),
            (503, false),
        ] {
            let key = IdempotencyKey::parse(format!("k{status}").as_bytes()).unwrap();
            let claim = store.claim_idempotency_key(&owner, &key, print, now).await;
            assert_eq!(claim.unwrap(), Claim::Run);
            let write = std::future::ready(answer(status));
            let sent = run_claimed(store.clone(), keyed(&owner, &key, print), write).await;
            assert_eq!(sent.status().as_u16(), status);
            let again = store
                .claim_idempotency_key(&owner, &key, print, now)
                .await
                .unwrap();
            match again {
                Claim::Replay(kept_answer) => {
                    assert!(kept, "{status} was kept");
                    assert_eq!(kept_answer.status, status);
                    assert_eq!(kept_answer.content_type, "application/json");
                    let replayed = <Response as Keep>::replay(kept_answer);
                    assert_eq!(replayed.headers()[idempotency::REPLAYED_HEADER], "true");
                    let body = http_body_util::BodyExt::collect(replayed.into_body())
                        .await
                        .unwrap()
                        .to_bytes();
                    assert_eq!(&body[..], format!("{{\"status\":{status}}}").as_bytes());
                }
                Claim::Run => assert!(!kept, "{status} was not kept"),
                other => panic!("{status}: {other:?}"),
            }
        }
    }

    /// A write whose request is dropped half-way (the client went away) runs to its end and
    /// its answer is kept for the retry; a write that panics frees its key.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_runs_to_its_end_when_its_request_is_dropped() {
        let store = MemoryStore::new();
        let owner = IdempotencyOwner::admin();
        let print = Fingerprint([2; 32]);
        let now = Timestamp::now();
        let key = IdempotencyKey::parse(b"dropped").unwrap();
        let claim = store.claim_idempotency_key(&owner, &key, print, now).await;
        assert_eq!(claim.unwrap(), Claim::Run);
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let (go, go_rx) = tokio::sync::oneshot::channel::<()>();
        let write = async move {
            let _ = started_tx.send(());
            let _ = go_rx.await;
            answer(201)
        };
        let request = tokio::spawn(run_claimed(
            store.clone(),
            keyed(&owner, &key, print),
            write,
        ));
        started.await.unwrap();
        request.abort();
        assert!(request.await.unwrap_err().is_cancelled());
        assert_eq!(
            store
                .claim_idempotency_key(&owner, &key, print, now)
                .await
                .unwrap(),
            Claim::InUse,
            "the write still runs"
        );
        go.send(()).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match store.claim_idempotency_key(&owner, &key, print, now).await {
                Ok(Claim::Replay(kept)) => break assert_eq!(kept.status, 201),
                Ok(Claim::InUse) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                other => panic!("the dropped write's answer was not kept: {other:?}"),
            }
        }

        let key = IdempotencyKey::parse(b"panicked").unwrap();
        let claim = store.claim_idempotency_key(&owner, &key, print, now).await;
        assert_eq!(claim.unwrap(), Claim::Run);
        let write = async { panic!("the write failed") };
        let sent: Response = run_claimed(store.clone(), keyed(&owner, &key, print), write).await;
        assert_eq!(sent.status().as_u16(), 500);
        let again = store.claim_idempotency_key(&owner, &key, print, now).await;
        assert_eq!(again.unwrap(), Claim::Run);
    }
}
