use serde::{Deserialize, Serialize};

/// A key-value pair attached to licenses, customers, products and releases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetadataItem {
    /// 1 to 255 characters, unique within the list.
    pub key: String,
    /// At most 1000 characters.
    pub value: String,
    /// Whether the item is locked from client modification.
    #[serde(default)]
    pub locked: bool,
}

/// A metadata item as the client verify endpoint shows it: only `key` and `value`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClientMetadata {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

impl From<&MetadataItem> for ClientMetadata {
    fn from(item: &MetadataItem) -> Self {
        Self {
            key: item.key.clone(),
            value: item.value.clone(),
        }
    }
}
