use serde::{Deserialize, Serialize};

use super::{Customer, MetadataItem, Product, Term};
use crate::{
    CustomerId, EntitlementId, LicenseId, LicenseKey, PolicyId, ProductId, TeamId, Timestamp,
    UserId,
};

/// How a license's expiration is calculated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExpirationType {
    /// Does not expire.
    Never,
    /// Expires at `expirationDate`.
    Date,
    /// Expires `expirationDays` after the start chosen by `expirationStart`.
    Duration,
}

impl ExpirationType {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Never => "NEVER",
            Self::Date => "DATE",
            Self::Duration => "DURATION",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "NEVER" => Ok(Self::Never),
            "DATE" => Ok(Self::Date),
            "DURATION" => Ok(Self::Duration),
            _ => Err("must be one of NEVER, DATE, DURATION".into()),
        }
    }
}

/// When a `DURATION` license's clock starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExpirationStart {
    /// At creation.
    #[default]
    Creation,
    /// At the first successful client request.
    Activation,
}

/// A license as stored and as list endpoints show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct License {
    /// Id.
    pub id: LicenseId,
    /// The key clients present; unique within the team.
    pub license_key: LicenseKey,
    /// How expiration is calculated.
    pub expiration_type: ExpirationType,
    /// When a duration starts.
    pub expiration_start: ExpirationStart,
    /// When the license expires; `null` for `NEVER` and for `ACTIVATION` licenses not yet used.
    pub expiration_date: Option<Timestamp>,
    /// Days of validity for `DURATION`.
    pub expiration_days: Option<u32>,
    /// Whether clients are refused.
    pub suspended: bool,
    /// Maximum IP addresses; `null` or 0 means unlimited.
    pub ip_limit: Option<u32>,
    /// Maximum hardware identifiers; `null` means unlimited.
    pub hwid_limit: Option<u32>,
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
    /// Last successful client request.
    pub last_active_at: Option<Timestamp>,
    /// Associated customers.
    pub customer_ids: Vec<CustomerId>,
    /// Associated products.
    pub product_ids: Vec<ProductId>,
    /// (ext) Entitlements granted directly (its products grant theirs too). (Last: the binary
    /// form of older records lacks it, see the sled store's format 6.)
    #[serde(default)]
    pub entitlement_ids: Vec<EntitlementId>,
    /// (ext) The most floating sessions live at once; `null`: sessions are not limited. (After
    /// `entitlementIds`, with `sessionTtl`: see the sled store's format 7.)
    #[serde(default)]
    pub session_limit: Option<u32>,
    /// (ext) Seconds a session lives without a heartbeat; `null`: the team's `sessionTtl`.
    #[serde(default)]
    pub session_ttl: Option<u32>,
    /// (ext) The policy whose terms the license inherits; `null`: none. (After `sessionTtl`,
    /// with `overrides`: see the sled store's format 8.)
    #[serde(default)]
    pub policy_id: Option<PolicyId>,
    /// (ext) The live terms the license sets itself instead of inheriting them from its policy,
    /// sorted (`[]` without a policy). As stored, the limits it overrides; as shown, also
    /// `productIds` and `entitlementIds` when it lists its own.
    #[serde(default)]
    pub overrides: Vec<Term>,
    /// (ext) Why the license is suspended, in the vendor's words (1 to 500 characters); `null`
    /// when it is not suspended or no reason was given. Staff see it; the client API never
    /// answers it. (Last: see the sled store's format 10.)
    #[serde(default)]
    pub suspension_reason: Option<String>,
    /// (ext) The license's own usage meters: each wins over its policy's meter of the same
    /// code; the policy's others apply too. (Last: see the sled store's format 12.)
    #[serde(default)]
    pub meters: Vec<super::Meter>,
}

/// The most characters of a license's suspension reason.
pub const MAX_SUSPENSION_REASON: usize = 500;

/// A license with its customers and products: single-license, create and update answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseDetail {
    /// The license.
    #[serde(flatten)]
    pub license: License,
    /// Its customers.
    pub customers: Vec<Customer>,
    /// Its products.
    pub products: Vec<Product>,
}
