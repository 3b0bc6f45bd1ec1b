use serde::{Deserialize, Serialize};

use crate::crypto::{ApiKeyHash, StoredTeamKeys};
use crate::{ApiKeyId, BlacklistId, TeamId, Timestamp, UserId};

/// A team: the tenant every other record belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    /// Id.
    pub id: TeamId,
    /// Name.
    pub name: String,
    /// Verification settings.
    pub settings: TeamSettings,
    /// Feature switches set by the operator.
    pub features: TeamFeatures,
    /// Private key material (never shown).
    pub keys: StoredTeamKeys,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A team's verification settings (`GET`/`PUT {dev}/settings`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamSettings {
    /// A license with customers requires `customerId`.
    pub strict_customers: bool,
    /// A license with products requires `productId`.
    pub strict_products: bool,
    /// A product with releases requires `version`.
    pub strict_releases: bool,
    /// Minutes after which an unseen hardware identifier stops counting; `null`: never.
    pub hwid_timeout: Option<u32>,
    /// Minutes after which an unseen IP address stops counting; `null`: never.
    pub ip_timeout: Option<u32>,
}

/// Features the operator switches per team.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamFeatures {
    /// Release file uploads and classloader downloads.
    pub classloader: bool,
}

impl Default for TeamFeatures {
    fn default() -> Self {
        Self { classloader: true }
    }
}

/// A team as the admin API lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamView {
    /// Id.
    pub id: TeamId,
    /// Name.
    pub name: String,
    /// Features.
    pub features: TeamFeatures,
    /// Creation time.
    pub created_at: Timestamp,
}

impl From<&Team> for TeamView {
    fn from(t: &Team) -> Self {
        Self {
            id: t.id,
            name: t.name.clone(),
            features: t.features,
            created_at: t.created_at,
        }
    }
}

/// The answer to creating a team: its first API key is shown here only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamCreated {
    /// Id.
    pub team_id: TeamId,
    /// The first API key, plaintext, shown once.
    pub api_key: String,
    /// RSA public key, SPKI PEM.
    pub public_key: String,
    /// Ed25519 response-signing key, base64.
    pub signing_key: String,
}

/// `GET {dev}/public-key`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PublicKeys {
    /// RSA public key, SPKI PEM.
    pub public_key: String,
    /// Base64 of the PEM text, as clients embed it.
    pub public_key_base64: String,
    /// Ed25519 response-signing key, base64 of 32 bytes.
    pub signing_key: String,
}

/// What a blacklist entry matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BlacklistType {
    /// An IP address or CIDR range.
    Ip,
    /// A country, alpha-2 or alpha-3.
    Country,
    /// A hardware identifier.
    HardwareIdentifier,
}

/// One blacklist entry with its hit counter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BlacklistEntry {
    /// Id.
    pub id: BlacklistId,
    /// Owning team.
    pub team_id: TeamId,
    /// What it matches.
    #[serde(rename = "type")]
    pub kind: BlacklistType,
    /// The address, range, country code or identifier, normalized.
    pub value: String,
    /// How many requests it refused.
    pub hits: u64,
    /// The API key (or admin) that created it.
    pub created_by_user_id: UserId,
    /// Creation time.
    pub created_at: Timestamp,
}

/// A stored API key: only its hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyRecord {
    /// Id; also the `createdByUserId` of what it creates.
    pub id: ApiKeyId,
    /// Owning team.
    pub team_id: TeamId,
    /// A name to recognize it by.
    pub name: String,
    /// SHA-256 of the key.
    pub hash: ApiKeyHash,
    /// When it stops working.
    pub expires_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
}

impl ApiKeyRecord {
    /// Whether the key still works at `now`.
    pub fn is_usable(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }
}

/// An API key as lists show it: never the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    /// Id.
    pub id: ApiKeyId,
    /// Name.
    pub name: String,
    /// Expiry.
    pub expires_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
}

impl From<&ApiKeyRecord> for ApiKeyView {
    fn from(r: &ApiKeyRecord) -> Self {
        Self {
            id: r.id,
            name: r.name.clone(),
            expires_at: r.expires_at,
            created_at: r.created_at,
        }
    }
}

/// The answer to creating an API key: the key is shown here only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyCreated {
    /// Id.
    pub id: ApiKeyId,
    /// Name.
    pub name: String,
    /// The key, plaintext, shown once.
    pub key: String,
    /// Expiry.
    pub expires_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
}
