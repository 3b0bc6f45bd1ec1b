//! Typed identifiers: a `LicenseId` cannot be passed where a `TeamId` is expected.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// The text is not a UUID in the 8-4-4-4-12 hexadecimal form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("must be a UUID (8-4-4-4-12 hexadecimal digits)")]
pub struct IdError;

/// Parses the hyphenated 8-4-4-4-12 form only (either case); braced, URN and simple forms are
/// rejected so that an id has exactly one spelling on the wire.
pub fn parse_uuid(text: &str) -> Result<Uuid, IdError> {
    if text.len() != 36 {
        return Err(IdError);
    }
    Uuid::try_parse(text).map_err(|_| IdError)
}

macro_rules! typed_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Uuid);

        #[cfg(feature = "openapi")]
        $crate::string_schema!(
            $name,
            stringify!($name),
            Some(utoipa::openapi::schema::KnownFormat::Uuid),
            None,
            concat!(stringify!($name), ": a UUID"),
            "6f9619ff-8b86-4011-b42d-00c04fc964ff"
        );

        impl $name {
            /// A fresh random (version 4) id.
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }

            /// Wraps an existing UUID.
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// The wrapped UUID.
            pub const fn as_uuid(&self) -> &Uuid {
                &self.0
            }

            /// The 16 bytes of the UUID, for building storage keys.
            pub const fn as_bytes(&self) -> &[u8; 16] {
                self.0.as_bytes()
            }

            /// Parses the 8-4-4-4-12 form.
            pub fn parse(text: &str) -> Result<Self, IdError> {
                parse_uuid(text).map(Self)
            }
        }

        impl AsRef<Uuid> for $name {
            fn as_ref(&self) -> &Uuid {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0.hyphenated())
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                Self(uuid)
            }
        }

        /// In text formats (JSON) the hyphenated string; in binary ones (the sled store's
        /// records) its 16 bytes.
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                if serializer.is_human_readable() {
                    serializer.collect_str(&self.0.hyphenated())
                } else {
                    self.0.as_bytes().serialize(serializer)
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a UUID string")
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::parse(v).map_err(E::custom)
                    }
                }
                if deserializer.is_human_readable() {
                    deserializer.deserialize_str(Visitor)
                } else {
                    <[u8; 16]>::deserialize(deserializer).map(|b| $name(Uuid::from_bytes(b)))
                }
            }
        }
    };
}

typed_id!(
    /// Id of a team, the tenant that owns every other record.
    TeamId
);
typed_id!(
    /// Id of a license.
    LicenseId
);
impl LicenseId {
    /// (ext) The nil id, standing for the license an effect is about to create (see
    /// [`Inbound::bind_license`](crate::model::Inbound::bind_license)).
    pub const PENDING: LicenseId = LicenseId(Uuid::nil());
}

typed_id!(
    /// Id of a customer.
    CustomerId
);
typed_id!(
    /// Id of a product.
    ProductId
);
typed_id!(
    /// Id of an entitlement.
    EntitlementId
);
typed_id!(
    /// (ext) Id of a policy.
    PolicyId
);
typed_id!(
    /// (ext) Id of a payment integration's rule (a price mapped to a policy).
    RuleId
);
typed_id!(
    /// (ext) Id of a payment provider's event as the server received it (one per delivery).
    InboundId
);

impl InboundId {
    /// A fresh time-ordered (version 7) id, so that received events sort by arrival.
    pub fn ordered() -> Self {
        Self(Uuid::now_v7())
    }
}
typed_id!(
    /// (ext) Id of a floating session of a license.
    LicenseSessionId
);
typed_id!(
    /// Id of a release.
    ReleaseId
);
typed_id!(
    /// Id of a release file.
    FileId
);
typed_id!(
    /// (ext) Id of an update artifact of a release.
    ArtifactId
);
typed_id!(
    /// Id of a product branch.
    BranchId
);
typed_id!(
    /// Id of a hardware-identifier record.
    HwidId
);
typed_id!(
    /// Id of an IP-address record.
    IpId
);
typed_id!(
    /// Id of a customer's chat account.
    ChatAccountId
);
typed_id!(
    /// Id of a blacklist entry.
    BlacklistId
);
typed_id!(
    /// Id of a queued e-mail.
    MessageId
);
typed_id!(
    /// Id of an entry of the audit log.
    AuditId
);

impl AuditId {
    /// A fresh time-ordered (version 7) id: ids made by one process sort in the order they were
    /// made, so that entries of the same millisecond keep their order.
    pub fn ordered() -> Self {
        Self(Uuid::now_v7())
    }
}
typed_id!(
    /// Id of a webhook endpoint.
    WebhookId
);
typed_id!(
    /// Id of a webhook event: the `webhook-id` of its deliveries, the same on every attempt.
    EventId
);
typed_id!(
    /// Id of one delivery of an event to one endpoint.
    DeliveryId
);

impl EventId {
    /// A fresh time-ordered (version 7) id, so that events sort in the order they happened.
    pub fn ordered() -> Self {
        Self(Uuid::now_v7())
    }
}

impl DeliveryId {
    /// A fresh time-ordered (version 7) id.
    pub fn ordered() -> Self {
        Self(Uuid::now_v7())
    }
}

typed_id!(
    /// Id of an API key. It is also the `createdByUserId` of what the key creates.
    ApiKeyId
);
typed_id!(
    /// Id of a staff member's account (a person of a vendor's team who uses the dashboard).
    StaffId
);
typed_id!(
    /// Id of the principal that created a record (`createdByUserId`): an API key's id, a staff
    /// account's id, or the admin principal for records made by the operator.
    UserId
);

impl From<ApiKeyId> for UserId {
    fn from(id: ApiKeyId) -> Self {
        Self(id.0)
    }
}

impl From<StaffId> for UserId {
    fn from(id: StaffId) -> Self {
        Self(id.0)
    }
}

impl From<CustomerId> for UserId {
    fn from(id: CustomerId) -> Self {
        Self(id.0)
    }
}

impl UserId {
    /// The principal of operator actions (CLI, admin API): the nil UUID.
    pub const ADMIN: UserId = UserId(Uuid::nil());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_either_case_and_prints_lower_case() {
        let id = LicenseId::parse("6F9619FF-8B86-D011-B42D-00C04FC964FF").unwrap();
        assert_eq!(id.to_string(), "6f9619ff-8b86-d011-b42d-00c04fc964ff");
    }

    #[test]
    fn rejects_other_uuid_spellings_and_garbage() {
        for bad in [
            "6f9619ff8b86d011b42d00c04fc964ff",
            "{6f9619ff-8b86-d011-b42d-00c04fc964ff}",
            "urn:uuid:6f9619ff-8b86-d011-b42d-00c04fc964ff",
            "6f9619ff-8b86-d011-b42d-00c04fc964fg",
            "",
            "not-a-uuid",
        ] {
            assert_eq!(TeamId::parse(bad), Err(IdError), "{bad}");
        }
    }

    #[test]
    fn serde_roundtrip() {
        let id = ProductId::new();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<ProductId>(&json).unwrap(), id);
    }
}
