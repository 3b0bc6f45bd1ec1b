//! (ext) A release's update artifacts: upload (streamed, hashed as it arrives, its signatures
//! checked against the product's keys or made with the team's), list and delete.
//!
//! An upload arrives as an [`IncomingArtifact`]: whoever reads the request hands its bytes to
//! [`IncomingArtifact::write`] as they arrive, so that a file of any size up to the operator's
//! cap is held on disk, never in memory. The file is committed before the record that points at
//! it and removed again if the record cannot be written; an upload never completed (a refused
//! request, a client gone mid-upload) leaves nothing behind.

pub(crate) use licensing_core::operations::releases::{
    DeleteArtifact, ListArtifacts, UploadArtifact,
};

use blake2::Digest as _;
use licensing_core::api::{ArtifactList, Deleted};
use licensing_core::crypto::updater::{self, Blake2b512, MinisignPublicKey, MinisignSignature};
use licensing_core::model::{Action, Arch, Artifact, ArtifactKind, Platform, Product, Release};
use licensing_core::store::{Entity, ProductStore, ReleaseStore, StoreError};
use licensing_core::{ApiError, ArtifactId, FileId, ResultCode};

use super::{Cx, Run};
use crate::files::{FileError, PendingFile};

/// Longest text part of an artifact's form (a signature is about 400 bytes).
pub(crate) const MAX_TEXT_PART: usize = 8 * 1024;

/// An artifact's form as this server received it.
pub(crate) struct ReceivedArtifact {
    /// Its members.
    pub(crate) input: ArtifactInput,
    /// Its file, on disk.
    pub(crate) file: IncomingArtifact,
}

impl licensing_core::operations::releases::ArtifactForm for ReceivedArtifact {
    fn parts(&self) -> Option<licensing_core::operations::Form<'_>> {
        None
    }
}

/// The text parts of an artifact's form, checked.
#[derive(Clone, Debug)]
pub(crate) struct ArtifactInput {
    /// Operating system.
    pub(crate) platform: Platform,
    /// Architecture.
    pub(crate) arch: Arch,
    /// Kind, when given (else from the file name).
    pub(crate) kind: Option<ArtifactKind>,
    /// The vendor's minisign signature.
    pub(crate) signature: Option<MinisignSignature>,
    /// The vendor's Sparkle signature (base64, checked against the file later).
    pub(crate) ed_signature: Option<String>,
}

impl ArtifactInput {
    /// Checks the text parts of a form (`name`, value), every problem at once.
    pub(crate) fn parse(parts: &[(String, String)]) -> Result<Self, ApiError> {
        let mut v = licensing_core::error::Validator::new();
        let get = |name: &str| {
            parts
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.trim())
                .filter(|t| !t.is_empty())
        };
        let platform = match get("platform") {
            Some(text) => v.check("platform", Platform::parse(text)),
            None => {
                v.push("platform", "is required: one of windows, darwin, linux");
                None
            }
        };
        let arch = match get("arch") {
            Some(text) => v.check("arch", Arch::parse(text)),
            None => {
                v.push(
                    "arch",
                    "is required: one of x86_64, aarch64, i686, armv7, universal",
                );
                None
            }
        };
        let kind = get("kind").and_then(|text| v.check("kind", ArtifactKind::parse(text)));
        let signature =
            get("signature").and_then(|text| v.check("signature", MinisignSignature::parse(text)));
        let ed_signature = get("edSignature").map(str::to_owned);
        v.finish().map_err(ApiError::validation)?;
        match (platform, arch) {
            (Some(platform), Some(arch)) => Ok(Self {
                platform,
                arch,
                kind,
                signature,
                ed_signature,
            }),
            _ => Err(ApiError::internal()),
        }
    }
}

/// An artifact's file on its way in: its bytes in a temporary file, hashed as they arrive.
pub(crate) struct IncomingArtifact {
    pending: PendingFile,
    name: String,
    sha256: sha2::Sha256,
    sha512: sha2::Sha512,
    sha1: sha1::Sha1,
    blake2b: Blake2b512,
}

impl IncomingArtifact {
    /// A file named `name` (the client's; any directory part dropped; it needs an extension)
    /// starts arriving.
    pub(crate) async fn begin(cx: &Cx, name: Option<&str>) -> Result<Self, ApiError> {
        let name = super::releases::file_name(name)?;
        let pending = cx
            .state
            .files
            .begin_artifact()
            .await
            .map_err(|e| ApiError::internal_because("upload start", e))?;
        Ok(Self {
            pending,
            name,
            sha256: Default::default(),
            sha512: Default::default(),
            sha1: Default::default(),
            blake2b: Default::default(),
        })
    }

    /// Appends bytes: 413 past the operator's cap.
    pub(crate) async fn write(&mut self, chunk: &[u8]) -> Result<(), ApiError> {
        match self.pending.write(chunk).await {
            Ok(()) => {}
            Err(FileError::TooLarge) => {
                return Err(ApiError::payload_too_large(format!(
                    "The file is larger than {} MiB, the largest artifact this server takes (LICENSING_MAX_ARTIFACT_MB)",
                    self.pending.max_size() / (1024 * 1024)
                )));
            }
            Err(e) => return Err(ApiError::internal_because("upload write", e)),
        }
        self.sha256.update(chunk);
        self.sha512.update(chunk);
        self.sha1.update(chunk);
        self.blake2b.update(chunk);
        Ok(())
    }
}

/// The Sparkle key of a product, when it has one.
fn sparkle_key(product: &Product) -> Result<Option<ed25519_dalek::VerifyingKey>, ApiError> {
    product
        .sparkle_public_key
        .as_deref()
        .map(updater::sparkle_key)
        .transpose()
        .map_err(|e| ApiError::internal_because("the product's Sparkle key", e))
}

impl Run for UploadArtifact<ReceivedArtifact> {
    async fn run(self, cx: &Cx) -> Result<Artifact, ApiError> {
        let (release_id, ReceivedArtifact { input, file }) = (self.0, self.1);
        let release = cx.write::<Release>(release_id).await?;
        if licensing_core::updates::semantic(release.version.as_str()).is_none() {
            return Err(ApiError::bad_field(
                "releaseId",
                &format!(
                    "is release {}, whose version is not a semantic version (such as 1.4.0 or 2.0.0-beta.1): updaters compare versions that way (Tauri, Sparkle, Velopack and electron-updater alike); give the release such a version first",
                    release.version
                ),
            ));
        }
        let product = cx
            .state
            .store
            .get_product(cx.team, release.product_id)
            .await?
            .ok_or(StoreError::NotFound(Entity::Product))?;
        let IncomingArtifact {
            mut pending,
            name,
            sha256,
            sha512,
            sha1,
            blake2b,
        } = file;
        if pending.size() == 0 {
            return Err(ApiError::bad_field("file", "is empty"));
        }
        let kind = match input.kind.or_else(|| ArtifactKind::from_file_name(&name)) {
            Some(kind) => kind,
            None => {
                return Err(ApiError::bad_field(
                    "kind",
                    &format!(
                        "is required: the file name {name:?} names no kind (give kind, one of {})",
                        ArtifactKind::ALL
                            .iter()
                            .map(|k| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        };
        pending
            .finish()
            .await
            .map_err(|e| ApiError::internal_because("upload flush", e))?;
        let digest: [u8; 64] = blake2b.finalize().into();

        // The vendor's signatures, checked against the product's keys.
        if let (Some(signature), Some(key)) = (&input.signature, &product.updater_public_key) {
            let key = MinisignPublicKey::parse(key)
                .map_err(|e| ApiError::internal_because("the product's updater key", e))?;
            key.verify(signature, &digest)
                .map_err(|e| ApiError::bad_field("signature", &e))?;
        }
        if let (Some(signature), Some(key)) = (&input.ed_signature, sparkle_key(&product)?) {
            let path = pending.path().to_path_buf();
            let signature = signature.clone();
            let checked = tokio::task::spawn_blocking(move || {
                let file = std::io::BufReader::new(std::fs::File::open(path)?);
                updater::sparkle_verify(&key, &signature, file)
            })
            .await
            .map_err(|e| ApiError::internal_because("signature task", e))?
            .map_err(|e| ApiError::internal_because("reading the upload", e))?;
            checked.map_err(|e| ApiError::bad_field("edSignature", &e))?;
        } else if let Some(signature) = &input.ed_signature {
            use base64::Engine as _;
            let decoded = base64::engine::general_purpose::STANDARD.decode(signature.trim());
            if decoded.map_or(true, |b| b.len() != 64) {
                return Err(ApiError::bad_field(
                    "edSignature",
                    "must be base64 of a 64-byte Ed25519 signature, as Sparkle's sign_update prints it",
                ));
            }
        }

        // The server's, where the product asks for them and the vendor gave none.
        let mut server_signed = false;
        let mut signature = input.signature.as_ref().map(MinisignSignature::to_base64);
        let mut ed_signature = input.ed_signature.map(|s| s.trim().to_owned());
        if product.sign_updates && (signature.is_none() || ed_signature.is_none()) {
            let context = super::client::team_context(&cx.state, cx.team).await?;
            if signature.is_none() {
                let comment = updater::trusted_comment(
                    cx.now.as_millis() / 1000,
                    &name,
                    release.version.as_str(),
                );
                signature = Some(context.keys.sign_minisign(&digest, &comment).to_base64());
            }
            if ed_signature.is_none() {
                let path = pending.path().to_path_buf();
                let keys = context.clone();
                let made = tokio::task::spawn_blocking(move || {
                    keys.keys
                        .sign_sparkle(|| Ok(std::io::BufReader::new(std::fs::File::open(&path)?)))
                })
                .await
                .map_err(|e| ApiError::internal_because("signature task", e))?
                .map_err(|e| ApiError::internal_because("signing the upload", e))?;
                ed_signature = Some(made);
            }
            server_signed = true;
        }

        let id = ArtifactId::new();
        let size = pending.size();
        let stored = cx
            .state
            .files
            .commit(pending, cx.team, FileId::from_uuid(*id.as_uuid()))
            .await
            .map_err(|e| ApiError::internal_because("upload commit", e))?;
        let artifact = Artifact {
            id,
            platform: input.platform,
            arch: input.arch,
            kind,
            filename: name,
            size,
            sha256: hex::encode(sha256.finalize()),
            sha512: hex::encode(sha512.finalize()),
            sha1: hex::encode(sha1.finalize()),
            signature,
            ed_signature,
            server_signed,
            key: stored.key,
            created_at: cx.now,
        };
        let mut after = release.clone();
        after.artifacts.push(artifact.clone());
        let journal = cx.change(
            Action::ReleaseUpdated,
            release.id,
            Some(&release),
            Some(&after),
        );
        if let Err(e) = cx
            .state
            .store
            .add_artifact(cx.team, release.id, &artifact, &journal)
            .await
        {
            cx.state.files.remove(&artifact.key).await;
            return Err(e.into());
        }
        Ok(artifact)
    }
}

impl Run for ListArtifacts {
    async fn run(self, cx: &Cx) -> Result<ArtifactList, ApiError> {
        let release = cx.read::<Release>(self.0).await?;
        Ok(ArtifactList {
            artifacts: release.artifacts,
        })
    }
}

impl Run for DeleteArtifact {
    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let release = cx.write::<Release>(self.0).await?;
        let mut after = release.clone();
        after.artifacts.retain(|a| a.id != self.1);
        if after.artifacts.len() == release.artifacts.len() {
            return Err(ApiError::new(
                ResultCode::ArtifactNotFound,
                "Artifact not found: GET releases/{releaseId}/artifacts lists the release's artifacts",
            ));
        }
        let journal = cx.change(
            Action::ReleaseUpdated,
            release.id,
            Some(&release),
            Some(&after),
        );
        let gone = cx
            .state
            .store
            .remove_artifact(cx.team, release.id, self.1, &journal)
            .await?;
        cx.state.files.remove(&gone.key).await;
        Ok(Deleted {
            id: *gone.id.as_uuid(),
            deleted: true,
        })
    }
}
