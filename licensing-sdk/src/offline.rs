//! Offline grace: the last successful verify answer, kept in a file exactly as it was received,
//! stands in for the server for a while when the server cannot be reached.
//!
//! A cached answer is accepted only when its `X-Signature` verifies over the stored request and
//! response bytes, it was for the same license key and hardware identifier, it says `VALID`, and
//! the server's own (signed) timestamp in it is neither in the future (the clock went back) nor
//! older than the grace period.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use licensing_core::Timestamp;
use licensing_core::api::VerifyData;
use licensing_core::api::requests::ClientBody;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::client::{Exchange, LicenseClient, Verified, check_answer};

/// Where the last answer is kept and how long it may stand in.
#[derive(Clone, Debug)]
pub struct OfflineCache {
    path: PathBuf,
    grace: Duration,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    version: u32,
    request: String,
    response: String,
    signature: String,
    /// The answer's signing key id (absent in caches written before key ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestKeys {
    license_key: String,
    #[serde(default)]
    hardware_identifier: Option<String>,
}

impl OfflineCache {
    /// A cache in `path` accepting answers up to `grace` old.
    pub fn new(path: impl Into<PathBuf>, grace: Duration) -> Self {
        Self {
            path: path.into(),
            grace,
        }
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn store(&self, exchange: &Exchange) -> Result<(), Error> {
        let stored = Stored {
            version: 1,
            request: BASE64.encode(&exchange.request),
            response: BASE64.encode(&exchange.response),
            signature: exchange.signature.clone(),
            kid: exchange.kid.clone(),
        };
        let json = serde_json::to_vec(&stored).map_err(|e| Error::Protocol(e.to_string()))?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, &self.path)?;
        Ok(())
    }

    /// The cached answer for `body`, if it is authentic, for the same license and device, and
    /// within the grace period at `now`.
    pub fn load(
        &self,
        client: &LicenseClient,
        body: &ClientBody,
        now: Timestamp,
    ) -> Result<Option<Verified>, Error> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let Ok(stored) = serde_json::from_slice::<Stored>(&bytes) else {
            return Ok(None);
        };
        let (Ok(request), Ok(response)) = (
            BASE64.decode(&stored.request),
            BASE64.decode(&stored.response),
        ) else {
            return Ok(None);
        };
        let exchange = Exchange {
            request,
            response,
            signature: stored.signature,
            kid: stored.kid,
        };
        // Signature, validity and shape, as for a live answer.
        let Ok((data, result)) = check_answer(client.public_keys(), 200, &exchange) else {
            return Ok(None);
        };
        let Ok(keys) = serde_json::from_slice::<RequestKeys>(&exchange.request) else {
            return Ok(None);
        };
        let same_device =
            keys.hardware_identifier.as_deref() == body.hardware_id.as_ref().map(|h| h.as_str());
        if keys.license_key != body.license_key.as_str() || !same_device {
            return Ok(None);
        }
        let at = result.timestamp;
        let grace_ms = i64::try_from(self.grace.as_millis()).unwrap_or(i64::MAX);
        let age = now.as_millis() - at.as_millis();
        if age < 0 || age > grace_ms {
            return Ok(None);
        }
        let Ok(data) = serde_json::from_value::<VerifyData>(data) else {
            return Ok(None);
        };
        Ok(Some(Verified {
            data,
            result,
            offline: true,
        }))
    }
}

impl LicenseClient {
    /// Verifies online and caches the answer; when the server cannot be reached, answers from
    /// the cache if it holds an acceptable answer (marked `offline`), else the transport error.
    /// Refusals from the server are never overridden by the cache.
    pub async fn verify_with_grace(
        &self,
        body: &ClientBody,
        cache: &OfflineCache,
    ) -> Result<Verified, Error> {
        match self.verify_exchange(body).await {
            Ok((verified, exchange)) => {
                if let Err(e) = cache.store(&exchange) {
                    tracing::warn!(error = %e, path = %cache.path.display(), "could not cache the verify answer");
                }
                Ok(verified)
            }
            Err(e) if e.is_transport() => match cache.load(self, body, Timestamp::now())? {
                Some(cached) => Ok(cached),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }
}
