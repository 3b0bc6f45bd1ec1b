use serde::{Deserialize, Serialize};

use super::{MetadataItem, UpdateFeed};
use crate::validate::HttpUrl;
use crate::{EntitlementId, ProductId, TeamId, Timestamp, UserId};

/// A product that licenses grant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Product {
    /// Id.
    pub id: ProductId,
    /// Name, 1 to 255 characters.
    pub name: String,
    /// Homepage.
    pub url: Option<HttpUrl>,
    /// Metadata items.
    pub metadata: Vec<MetadataItem>,
    /// Owning team.
    pub team_id: TeamId,
    /// The API key (or admin) that created it.
    pub created_by_user_id: UserId,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// (ext) Entitlements every license of the product grants. (Last, like a license's: the
    /// binary form of older records lacks it, see the sled store's format 6.)
    #[serde(default)]
    pub entitlement_ids: Vec<EntitlementId>,
    /// (ext) The minisign public key that must verify every Tauri signature uploaded with an
    /// artifact (base64 of the two-line public-key text, as Tauri's `pubkey` setting takes it).
    /// (This member and the three below are last: format 9 of the sled store appended them.)
    #[serde(default)]
    pub updater_public_key: Option<String>,
    /// (ext) The Ed25519 public key (base64 of 32 bytes, Sparkle's `SUPublicEDKey`) that must
    /// verify every `edSignature` uploaded with an artifact.
    #[serde(default)]
    pub sparkle_public_key: Option<String>,
    /// (ext) Whether the server signs each uploaded artifact with the team's active signing key
    /// (minisign for Tauri, Ed25519 for Sparkle).
    #[serde(default)]
    pub sign_updates: bool,
    /// (ext) Who may read the product's update feeds.
    #[serde(default)]
    pub update_feed: UpdateFeed,
}

/// `{id, name}` of a product, as release answers show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProductRef {
    /// Id.
    pub id: ProductId,
    /// Name.
    pub name: String,
}

impl From<&Product> for ProductRef {
    fn from(p: &Product) -> Self {
        Self {
            id: p.id,
            name: p.name.clone(),
        }
    }
}
