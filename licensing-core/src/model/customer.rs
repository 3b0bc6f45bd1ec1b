use serde::{Deserialize, Serialize};

use super::MetadataItem;
use crate::validate::{ChatId, Email};
use crate::{ChatAccountId, CustomerId, TeamId, Timestamp, UserId};

/// A customer: someone licenses are issued to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Customer {
    /// Id.
    pub id: CustomerId,
    /// E-mail address.
    pub email: Option<Email>,
    /// Full name.
    pub full_name: Option<String>,
    /// User name.
    pub username: Option<String>,
    /// Metadata items.
    pub metadata: Vec<MetadataItem>,
    /// Postal address.
    pub address: Address,
    /// The associated chat account.
    pub chat_account: Option<ChatAccount>,
    /// Owning team.
    pub team_id: TeamId,
    /// The API key (or admin) that created it.
    pub created_by_user_id: UserId,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A postal address; every part optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Address {
    /// Street and number.
    #[serde(default)]
    pub street: Option<String>,
    /// City.
    #[serde(default)]
    pub city: Option<String>,
    /// State or region.
    #[serde(default)]
    pub state: Option<String>,
    /// Country.
    #[serde(default)]
    pub country: Option<String>,
    /// Postal code.
    #[serde(default)]
    pub postal_code: Option<String>,
}

impl Address {
    /// Whether no part is set.
    pub fn is_empty(&self) -> bool {
        [
            &self.street,
            &self.city,
            &self.state,
            &self.country,
            &self.postal_code,
        ]
        .iter()
        .all(|part| part.is_none())
    }
}

/// A customer's account on the chat service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ChatAccount {
    /// Id.
    pub id: ChatAccountId,
    /// The customer it belongs to.
    pub customer_id: CustomerId,
    /// The chat service's user id.
    pub chat_id: ChatId,
    /// User name on the chat service, when known.
    pub username: Option<String>,
    /// Avatar URL or hash, when known.
    pub avatar: Option<String>,
    /// Display name, when known.
    pub global_name: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}
