use serde::{Deserialize, Serialize};

use super::{Artifact, MetadataItem, ProductRef, RolloutPercent};
use crate::validate::{BranchName, Version};
use crate::{
    BranchId, FileId, LicenseId, LicenseKey, ProductId, ReleaseId, TeamId, Timestamp, UserId,
};

/// Release status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReleaseStatus {
    /// Available to clients.
    Published,
    /// Not yet available (`RELEASE_DRAFT`).
    Draft,
    /// Withdrawn (`RELEASE_ARCHIVED`).
    Archived,
    /// Still available, to be replaced.
    Deprecated,
}

impl ReleaseStatus {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Published => "PUBLISHED",
            Self::Draft => "DRAFT",
            Self::Archived => "ARCHIVED",
            Self::Deprecated => "DEPRECATED",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "PUBLISHED" => Ok(Self::Published),
            "DRAFT" => Ok(Self::Draft),
            "ARCHIVED" => Ok(Self::Archived),
            "DEPRECATED" => Ok(Self::Deprecated),
            _ => Err("must be one of PUBLISHED, DRAFT, ARCHIVED, DEPRECATED".into()),
        }
    }
}

/// A release of a product, optionally on a branch, optionally with a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Release {
    /// Id.
    pub id: ReleaseId,
    /// Version, unique per product and branch.
    pub version: Version,
    /// Status.
    pub status: ReleaseStatus,
    /// Whether this is the latest release of its product and branch.
    pub latest: bool,
    /// The product.
    pub product_id: ProductId,
    /// The branch; `null` for the product's main line.
    pub branch_id: Option<BranchId>,
    /// Owning team.
    pub team_id: TeamId,
    /// The API key (or admin) that created it.
    pub created_by_user_id: UserId,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// Metadata items (at most 20).
    pub metadata: Vec<MetadataItem>,
    /// The release file.
    pub file: Option<ReleaseFile>,
    /// When not empty, only these licenses may use the release.
    #[serde(default)]
    pub allowed_license_ids: Vec<LicenseId>,
    /// (ext) Release notes (Markdown), as the update feeds show them. (The four members below
    /// are last, like a license's: the binary form of older records lacks them, see the sled
    /// store's format 9.)
    #[serde(default)]
    pub notes: Option<String>,
    /// (ext) A critical update: offered to every license at once, past any phased rollout, and
    /// flagged as critical in the feeds that have the notion.
    #[serde(default)]
    pub critical: bool,
    /// (ext) The share of licenses offered it (phased rollout).
    #[serde(default)]
    pub rollout_percent: RolloutPercent,
    /// (ext) Update artifacts, one per platform, architecture and kind.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
}

/// A release as the developer API shows it: with product, branch and allowed licenses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReleaseView {
    /// The release.
    #[serde(flatten)]
    pub release: Release,
    /// `{id, name}` of the product.
    pub product: ProductRef,
    /// `{id, name}` of the branch.
    pub branch: Option<BranchRef>,
    /// The licenses allowed to use it (empty: all).
    pub allowed_licenses: Vec<LicenseRef>,
}

/// `{id, licenseKey}` of a license.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseRef {
    /// Id.
    pub id: LicenseId,
    /// Key.
    pub license_key: LicenseKey,
}

/// A stored release file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReleaseFile {
    /// Id.
    pub id: FileId,
    /// Storage key of the blob.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Original file name.
    pub name: String,
    /// MD5 of the file, lower-case hex.
    pub checksum: String,
    /// Main class of a JAR file.
    pub main_class_name: Option<String>,
    /// Upload time.
    pub created_at: Timestamp,
}

/// A product branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    /// Id.
    pub id: BranchId,
    /// Name, unique per product.
    pub name: BranchName,
    /// The product.
    pub product_id: ProductId,
    /// Owning team.
    pub team_id: TeamId,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// `{id, name}` of a branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BranchRef {
    /// Id.
    pub id: BranchId,
    /// Name.
    pub name: BranchName,
}

impl From<&Branch> for BranchRef {
    fn from(b: &Branch) -> Self {
        Self {
            id: b.id,
            name: b.name.clone(),
        }
    }
}
