//! A release's create or update over HTTP: a multipart body of a `data` part (JSON) and an
//! optional `file` part, whose bytes go to the file store as they arrive.

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use licensing_core::ApiError;
use licensing_core::ReleaseId;
use licensing_core::api::requests::{MAX_JSON_BODY, ReleaseData, ReleaseInput, ReleaseMode};
use multer::{Field, Multipart};

use super::{Dev, Input};
use crate::app::artifacts::{
    ArtifactInput, IncomingArtifact, MAX_TEXT_PART, ReceivedArtifact, UploadArtifact,
};
use crate::app::releases::{
    CreateRelease, DRAIN_BUDGET, IncomingFile, Received, UpdateRelease, upload_allowed,
};

/// An operation whose body is a release's multipart form, read as it arrives.
pub(super) trait Upload: licensing_core::operations::DevOperation {
    /// The operation the request asks for: the form's `data` checked (400, 413) and its file
    /// streamed into the file store, before the operation looks anything up.
    fn receive(
        cx: &Dev,
        ids: Self::Ids,
        input: Input,
    ) -> impl std::future::Future<Output = Result<Self, ApiError>> + Send;
}

impl Upload for CreateRelease<Received> {
    async fn receive(cx: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        let (input, file) = read_upload(cx, input, ReleaseMode::Create).await?;
        Ok(Self(Received { input, file }))
    }
}

impl Upload for UploadArtifact<ReceivedArtifact> {
    // The body is read and checked (400, 413) before the release is looked up (404).
    async fn receive(cx: &Dev, (id,): (ReleaseId,), mut input: Input) -> Result<Self, ApiError> {
        if let Err(refused) = upload_allowed(cx).await {
            crate::http::drain(&mut input.body, DRAIN_BUDGET).await;
            return Err(refused);
        }
        let mut form = multipart(input)?;
        let mut texts: Vec<(String, String)> = Vec::new();
        let mut file: Option<IncomingArtifact> = None;
        while let Some(mut part) = form.next_field().await.map_err(malformed)? {
            let name = part.name().unwrap_or_default().to_owned();
            match name.as_str() {
                "file" if file.is_some() => {
                    return Err(ApiError::bad_field("file", "is given more than once"));
                }
                "file" => {
                    let mut incoming = IncomingArtifact::begin(cx, part.file_name()).await?;
                    while let Some(chunk) = part.chunk().await.map_err(malformed)? {
                        if let Err(refused) = incoming.write(&chunk).await {
                            drop(incoming);
                            // What the client still sends is read (up to a bound), so that it
                            // sees the answer rather than a reset connection.
                            let mut drained = 0;
                            while drained < DRAIN_BUDGET {
                                match part.chunk().await {
                                    Ok(Some(c)) => drained += c.len(),
                                    _ => break,
                                }
                            }
                            return Err(refused);
                        }
                    }
                    file = Some(incoming);
                }
                "platform" | "arch" | "kind" | "signature" | "edSignature" => {
                    if texts.iter().any(|(n, _)| *n == name) {
                        return Err(ApiError::bad_field(&name, "is given more than once"));
                    }
                    let text = read_text(&mut part, &name).await?;
                    texts.push((name, text));
                }
                other => {
                    return Err(ApiError::bad_field(
                        if other.is_empty() { "part" } else { other },
                        "is not a known part: send file, platform, arch and optionally kind, signature, edSignature",
                    ));
                }
            }
        }
        let input = ArtifactInput::parse(&texts)?;
        let file = file.ok_or_else(|| {
            ApiError::bad_field(
                "file",
                "is required: a part named file holding the artifact",
            )
        })?;
        Ok(Self(id, ReceivedArtifact { input, file }))
    }
}

impl Upload for UpdateRelease<Received> {
    // The body is read and checked (400, 413) before the release is looked up (404).
    async fn receive(cx: &Dev, (id,): (ReleaseId,), input: Input) -> Result<Self, ApiError> {
        let (input, file) = read_upload(cx, input, ReleaseMode::Update).await?;
        Ok(Self(id, Received { input, file }))
    }
}

/// Reads an upload: the team's upload limit first (429, before anything is stored), then the
/// parts, `data` (required, JSON) and `file` (optional); then the data is checked.
async fn read_upload(
    cx: &Dev,
    mut input: Input,
    mode: ReleaseMode,
) -> Result<(ReleaseInput, Option<IncomingFile>), ApiError> {
    if let Err(refused) = upload_allowed(cx).await {
        // What the client still sends is read, so that it sees the answer rather than a reset
        // connection.
        crate::http::drain(&mut input.body, DRAIN_BUDGET).await;
        return Err(refused);
    }
    let mut form = multipart(input)?;
    let mut data = None;
    let mut file = None;
    while let Some(mut part) = form.next_field().await.map_err(malformed)? {
        match part.name().unwrap_or_default() {
            "data" if data.is_some() => {
                return Err(ApiError::bad_field("data", "is given more than once"));
            }
            "data" => data = Some(read_data(&mut part).await?),
            "file" if file.is_some() => {
                return Err(ApiError::bad_field("file", "is given more than once"));
            }
            "file" => {
                let name = part.file_name().map(str::to_owned);
                let chunks = part.map(|chunk| chunk.map_err(malformed));
                file = Some(IncomingFile::receive(cx, name.as_deref(), chunks).await?);
            }
            other => {
                return Err(ApiError::bad_field(
                    if other.is_empty() { "part" } else { other },
                    "is not a known part: send `data` (JSON) and optionally `file`",
                ));
            }
        }
    }
    let data = data.ok_or_else(|| {
        ApiError::bad_field(
            "data",
            "is required: a part named data holding the release JSON",
        )
    })?;
    Ok((ReleaseData::parse(&data, mode)?, file))
}

/// The multipart reader of an upload's body: 400 without a multipart `Content-Type` and its
/// boundary.
fn multipart(input: Input) -> Result<Multipart<'static>, ApiError> {
    let content_type = input
        .headers
        .get(warp::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::bad_request(
                "Missing header content-type: a release is sent as multipart/form-data",
            )
        })?;
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        ApiError::bad_request(
            "Invalid header content-type: a release is sent as multipart/form-data with a boundary",
        )
    })?;
    Ok(Multipart::new(input.body, boundary))
}

fn malformed(e: multer::Error) -> ApiError {
    crate::http::body_error(&e, "Malformed multipart body")
}

async fn read_data(part: &mut Field<'_>) -> Result<Bytes, ApiError> {
    let mut data = BytesMut::new();
    while let Some(chunk) = part.chunk().await.map_err(malformed)? {
        if data.len() + chunk.len() > MAX_JSON_BODY {
            return Err(ApiError::payload_too_large(
                "The data part is larger than 1 MiB",
            ));
        }
        data.extend_from_slice(&chunk);
    }
    Ok(data.freeze())
}

/// A text part of at most [`MAX_TEXT_PART`] bytes of UTF-8.
async fn read_text(part: &mut Field<'_>, name: &str) -> Result<String, ApiError> {
    let mut data = BytesMut::new();
    while let Some(chunk) = part.chunk().await.map_err(malformed)? {
        if data.len() + chunk.len() > MAX_TEXT_PART {
            return Err(ApiError::bad_field(name, "is longer than 8 KiB"));
        }
        data.extend_from_slice(&chunk);
    }
    String::from_utf8(data.to_vec()).map_err(|_| ApiError::bad_field(name, "is not UTF-8 text"))
}
