//! (ext) Updates for Rust applications: [`LicenseClient::check_for_update`] reads the product's
//! generic update feed (its answer signed like verify's), and [`LicenseClient::download_update`]
//! fetches the artifact for this platform a chunk at a time into a file, checking its size, its
//! SHA-256 and its minisign signature (the team's signing keys, or a vendor key the application
//! trusts) before it is returned. A download that fails any check is deleted.

use std::path::Path;

use blake2::Digest as _;
use licensing_core::crypto::updater::{Blake2b512, MinisignPublicKey, MinisignSignature};
use licensing_core::model::{Arch, Artifact, Platform};
use licensing_core::{LicenseKey, ProductId, ReleaseId, Timestamp};
use serde::Deserialize;
use tokio::io::AsyncWriteExt as _;

use crate::client::{Exchange, check_answer, signature_of};
use crate::{Error, LicenseClient};

/// A release the feed offers.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    /// The release.
    pub id: ReleaseId,
    /// Its version.
    pub version: String,
    /// The channel asked.
    pub channel: String,
    /// Its notes (Markdown).
    pub notes: Option<String>,
    /// Whether the vendor marked it critical.
    pub critical: bool,
    /// When it was published.
    pub published_at: Timestamp,
    /// Its artifacts for the platform and architecture asked.
    pub artifacts: Vec<UpdateArtifact>,
}

/// An artifact of an [`Update`], with its download address.
#[derive(Clone, Debug, Deserialize)]
pub struct UpdateArtifact {
    /// The artifact: platform, kind, file name, size, digests, signatures.
    #[serde(flatten)]
    pub artifact: Artifact,
    /// Where to download it.
    pub url: String,
}

#[derive(Deserialize)]
struct LatestData {
    release: Update,
}

impl LicenseClient {
    /// Trusts a vendor's own minisign public key (the `pubkey` of a Tauri configuration: base64
    /// of the `.pub` text, or the text) for [`download_update`](Self::download_update): artifacts
    /// signed by the vendor, not by the server.
    pub fn trust_updater_key(mut self, minisign_public_key: &str) -> Result<Self, Error> {
        let key = MinisignPublicKey::parse(minisign_public_key)
            .map_err(|e| Error::Config(format!("updater key {e}")))?;
        self.updater_keys.push(key);
        Ok(self)
    }

    /// Asks the product's update feed for a release newer than `current_version` (a semantic
    /// version) with an artifact for `platform` and `arch`, on the stable channel; `None` when
    /// there is none. The answer must carry a valid `X-Signature` of the team.
    pub async fn check_for_update(
        &self,
        license_key: &LicenseKey,
        product: ProductId,
        current_version: &str,
        platform: Platform,
        arch: Arch,
    ) -> Result<Option<Update>, Error> {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("version", current_version)
            .append_pair("platform", platform.as_str())
            .append_pair("arch", arch.as_str())
            .finish();
        let url = format!(
            "{}/api/v1/client/teams/{}/updates/{product}/latest?{query}",
            self.base, self.team
        );
        let response = self
            .http
            .get(url)
            .header(
                reqwest::header::AUTHORIZATION,
                format!("License {license_key}"),
            )
            .send()
            .await
            .map_err(Error::Transport)?;
        let status = response.status().as_u16();
        if status == 204 {
            return Ok(None);
        }
        let (signature, kid) = signature_of(response.headers());
        let bytes = response.bytes().await.map_err(Error::Transport)?.to_vec();
        let exchange = Exchange {
            request: query.into_bytes(),
            response: bytes,
            signature,
            kid,
        };
        let (data, _) = check_answer(&self.keys, status, &exchange)?;
        let data: LatestData = serde_json::from_value(data)
            .map_err(|e| Error::Protocol(format!("the update feed's data: {e}")))?;
        Ok(Some(data.release))
    }

    /// Downloads `artifact` into the file `to` (created or replaced), a chunk at a time, and
    /// checks it before returning: its size and SHA-256 as the feed gave them, and its minisign
    /// signature, made by one of the team's trusted signing keys (the server signs when the
    /// product's `signUpdates` is on) or by a key given to
    /// [`trust_updater_key`](Self::trust_updater_key). An unsigned artifact, or one that fails a
    /// check, is [`Error::Forged`] and the file is removed.
    pub async fn download_update(
        &self,
        license_key: &LicenseKey,
        artifact: &UpdateArtifact,
        to: &Path,
    ) -> Result<(), Error> {
        let outcome = self.download_checked(license_key, artifact, to).await;
        if outcome.is_err() {
            let _ = tokio::fs::remove_file(to).await;
        }
        outcome
    }

    async fn download_checked(
        &self,
        license_key: &LicenseKey,
        update: &UpdateArtifact,
        to: &Path,
    ) -> Result<(), Error> {
        let artifact = &update.artifact;
        let signature = artifact
            .signature
            .as_deref()
            .ok_or(Error::Forged("the artifact is not signed"))?;
        let signature = MinisignSignature::parse(signature)
            .map_err(|_| Error::Forged("the artifact's signature is not a minisign signature"))?;
        let key = self
            .keys
            .signing_key(None)
            .into_iter()
            .chain(self.keys.also_trusted.iter())
            .map(|k| k.minisign())
            .chain(self.updater_keys.iter().cloned())
            .find(|k| k.key_id() == signature.key_id())
            .ok_or(Error::Forged(
                "the artifact was signed by a key this client does not trust",
            ))?;
        let mut response = self
            .http
            .get(&update.url)
            .header(
                reqwest::header::AUTHORIZATION,
                format!("License {license_key}"),
            )
            .send()
            .await
            .map_err(Error::Transport)?;
        let status = response.status().as_u16();
        if status != 200 {
            // A refusal, signed over the (empty) query string of the download.
            let (signature, kid) = signature_of(response.headers());
            let bytes = response.bytes().await.map_err(Error::Transport)?.to_vec();
            let exchange = Exchange {
                request: Vec::new(),
                response: bytes,
                signature,
                kid,
            };
            check_answer(&self.keys, status, &exchange)?;
            return Err(Error::Protocol(format!(
                "the download answered HTTP {status}"
            )));
        }
        let mut file = tokio::fs::File::create(to).await?;
        let (mut sha256, mut blake2b, mut size) = (sha2::Sha256::new(), Blake2b512::new(), 0u64);
        while let Some(chunk) = response.chunk().await.map_err(Error::Transport)? {
            size += chunk.len() as u64;
            if size > artifact.size {
                return Err(Error::Forged("the download is longer than the artifact"));
            }
            sha2::Digest::update(&mut sha256, &chunk);
            blake2b.update(&chunk);
            file.write_all(&chunk).await?;
        }
        file.flush().await?;
        file.sync_all().await?;
        if size != artifact.size {
            return Err(Error::Forged("the download is shorter than the artifact"));
        }
        if hex::encode(sha2::Digest::finalize(sha256)) != artifact.sha256 {
            return Err(Error::Forged(
                "the download's SHA-256 is not the artifact's",
            ));
        }
        let digest: [u8; 64] = blake2b.finalize().into();
        key.verify(&signature, &digest)
            .map_err(|_| Error::Forged("the artifact's signature does not verify"))?;
        Ok(())
    }
}
