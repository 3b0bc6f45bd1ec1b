//! Classloader downloads: draw a session secret, send it RSA-OAEP encrypted, and decrypt the
//! frames as they stream in, into any writer. Nothing counts until every frame authenticated and
//! the whole plaintext matches the announced size and MD5.

use std::io::Write;

use licensing_core::crypto::SessionSecret;
use licensing_core::crypto::frames::DecryptingWriter;
use licensing_core::model::ReleaseStatus;
use licensing_core::validate::{BranchName, HardwareId, Version};
use licensing_core::{CustomerId, LicenseKey, ProductId, Timestamp};

use crate::Error;
use crate::client::{Exchange, LicenseClient, check_answer, signature_of};

/// What to download: the classloader query without its session key, which the SDK draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DownloadRequest {
    /// The license.
    pub license_key: LicenseKey,
    /// The product whose release to download.
    pub product_id: ProductId,
    /// This device.
    pub hardware_id: HardwareId,
    /// A specific version; without it, the latest release of the branch.
    pub version: Option<Version>,
    /// The branch (none: releases without a branch).
    pub branch: Option<BranchName>,
    /// The customer, when the team requires it.
    pub customer_id: Option<CustomerId>,
}

impl DownloadRequest {
    /// The latest release of `product` without a branch.
    pub fn new(license_key: LicenseKey, product_id: ProductId, hardware_id: HardwareId) -> Self {
        Self {
            license_key,
            product_id,
            hardware_id,
            version: None,
            branch: None,
            customer_id: None,
        }
    }
}

/// The release a download delivered, from the answer's headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseInfo {
    /// `X-Version`.
    pub version: String,
    /// `X-Latest-Version`: the latest release of the product and branch, if there is one.
    pub latest_version: Option<String>,
    /// `X-Product-Name`, decoded.
    pub product_name: String,
    /// `X-Release-Status`.
    pub status: ReleaseStatus,
    /// `X-Main-Class`, for JAR files.
    pub main_class: Option<String>,
    /// `X-File-Size`: the plaintext size, checked.
    pub size: u64,
    /// `X-File-Checksum`: the plaintext MD5, checked.
    pub checksum: String,
    /// `X-Release-Created-At`.
    pub release_created_at: Option<Timestamp>,
    /// `X-File-Created-At`.
    pub file_created_at: Option<Timestamp>,
}

impl LicenseClient {
    /// Downloads and decrypts a release into `out` as it streams in, and returns what was
    /// delivered. On any error, what was written to `out` must be thrown away.
    pub async fn download<W: Write>(
        &self,
        request: &DownloadRequest,
        out: W,
    ) -> Result<ReleaseInfo, Error> {
        let secret = SessionSecret::generate();
        let session_key = self
            .keys
            .rsa
            .encrypt_session_secret(&secret)
            .map_err(|e| Error::Config(format!("encrypting the session key: {e}")))?;
        let query = query_of(request, &session_key);
        let mut response = self
            .http
            .get(format!("{}?{query}", self.url("classloader")))
            .send()
            .await
            .map_err(Error::Transport)?;
        let status = response.status().as_u16();
        if status != 200 {
            let (signature, kid) = signature_of(response.headers());
            let bytes = response.bytes().await.map_err(Error::Transport)?.to_vec();
            let exchange = Exchange {
                request: query.into_bytes(),
                response: bytes,
                signature,
                kid,
            };
            check_answer(&self.keys, status, &exchange)?;
            return Err(Error::Protocol(format!(
                "HTTP {status} with a success envelope instead of a file"
            )));
        }
        let info = release_info(response.headers())?;
        let mut writer = DecryptingWriter::new(out, &secret.derive_key());
        while let Some(chunk) = response.chunk().await.map_err(Error::Transport)? {
            writer.write_all(&chunk).map_err(|e| {
                // A frame that fails is InvalidData carrying the CryptoError; anything else is
                // the destination writer's own failure.
                if e.kind() == std::io::ErrorKind::InvalidData {
                    Error::Download(licensing_core::crypto::frames::crypto_error_of(&e))
                } else {
                    Error::Io(e)
                }
            })?;
        }
        let (_, decrypted) = writer.finish().map_err(Error::Download)?;
        decrypted
            .verify(info.size, &info.checksum)
            .map_err(Error::Download)?;
        Ok(info)
    }

    /// Downloads a release into memory.
    pub async fn download_to_vec(
        &self,
        request: &DownloadRequest,
    ) -> Result<(ReleaseInfo, Vec<u8>), Error> {
        let mut out = Vec::new();
        let info = self.download(request, &mut out).await?;
        Ok((info, out))
    }
}

fn query_of(request: &DownloadRequest, session_key: &str) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("licenseKey", request.license_key.as_str())
        .append_pair("productId", &request.product_id.to_string())
        .append_pair("sessionKey", session_key)
        .append_pair("hardwareIdentifier", request.hardware_id.as_str());
    if let Some(version) = &request.version {
        query.append_pair("version", version.as_str());
    }
    if let Some(branch) = &request.branch {
        query.append_pair("branch", branch.as_str());
    }
    if let Some(customer) = &request.customer_id {
        query.append_pair("customerId", &customer.to_string());
    }
    query.finish()
}

fn release_info(headers: &reqwest::header::HeaderMap) -> Result<ReleaseInfo, Error> {
    let text = |name: &str| -> Option<String> {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let required = |name: &str| {
        text(name).ok_or_else(|| Error::Protocol(format!("the download has no {name} header")))
    };
    let size = required("x-file-size")?
        .parse::<u64>()
        .map_err(|_| Error::Protocol("X-File-Size is not a number".into()))?;
    let status = match required("x-release-status")?.as_str() {
        "PUBLISHED" => ReleaseStatus::Published,
        "DEPRECATED" => ReleaseStatus::Deprecated,
        "DRAFT" => ReleaseStatus::Draft,
        "ARCHIVED" => ReleaseStatus::Archived,
        other => return Err(Error::Protocol(format!("unknown release status {other}"))),
    };
    Ok(ReleaseInfo {
        version: required("x-version")?,
        latest_version: text("x-latest-version"),
        product_name: percent_decode(&text("x-product-name").unwrap_or_default()),
        status,
        main_class: text("x-main-class"),
        size,
        checksum: required("x-file-checksum")?,
        release_created_at: text("x-release-created-at").and_then(|t| Timestamp::parse(&t).ok()),
        file_created_at: text("x-file-created-at").and_then(|t| Timestamp::parse(&t).ok()),
    })
}

/// Decodes `%XX` escapes (the server escapes product names that are not plain ASCII).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2]))
        {
            out.push(high * 16 + low);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_names_are_percent_decoded() {
        assert_eq!(percent_decode("Caf%C3%A9 App"), "Café App");
        assert_eq!(percent_decode("Plain"), "Plain");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
