//! The audit log: who changed what, when, from where, with the fields' old and new values.
//!
//! An entry is written by the store in the same atomic step as the change it describes (see
//! [`Journal`](crate::store::Journal)), so the log never shows a change that was rolled back and
//! never misses one that was answered. Secrets (key material, signing secrets, passwords) never
//! enter it: a secret field appears with `secret: true` and no values.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AuditId, ProductId, TeamId, Timestamp};

/// Who made a change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    /// The kind of principal.
    #[serde(rename = "type")]
    pub kind: ActorKind,
    /// Its id: the API key's or staff user's id; `null` for the operator and the system.
    pub id: Option<uuid::Uuid>,
    /// Its name when it has one (an API key's name, a user's e-mail address).
    pub name: Option<String>,
}

/// The kinds of principals that change records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActorKind {
    /// A developer API key.
    ApiKey,
    /// The operator's admin token.
    Admin,
    /// A staff user of the team.
    User,
    /// The server itself or its command line.
    System,
    /// A customer, through the customer portal (its own licenses only).
    Customer,
    /// A payment provider's integration (its events, applied as operations).
    Integration,
}

impl Actor {
    /// An API key, by id and name.
    pub fn api_key(id: crate::ApiKeyId, name: &str) -> Self {
        Self {
            kind: ActorKind::ApiKey,
            id: Some(*id.as_uuid()),
            name: Some(name.to_owned()),
        }
    }

    /// A staff member, through the dashboard, by account id and e-mail address.
    pub fn user(id: crate::StaffId, email: &str) -> Self {
        Self {
            kind: ActorKind::User,
            id: Some(*id.as_uuid()),
            name: Some(email.to_owned()),
        }
    }

    /// The operator, through the admin API.
    pub fn admin() -> Self {
        Self {
            kind: ActorKind::Admin,
            id: None,
            name: None,
        }
    }

    /// A customer, through the customer portal, by id and e-mail address.
    pub fn customer(id: crate::CustomerId, email: Option<&str>) -> Self {
        Self {
            kind: ActorKind::Customer,
            id: Some(*id.as_uuid()),
            name: email.map(str::to_owned),
        }
    }

    /// A payment provider's integration (`"stripe"`, say).
    pub fn integration(provider: &str) -> Self {
        Self {
            kind: ActorKind::Integration,
            id: None,
            name: Some(provider.to_owned()),
        }
    }

    /// The server or its command line, with what acted (`"command line"`, say).
    pub fn system(what: &str) -> Self {
        Self {
            kind: ActorKind::System,
            id: None,
            name: Some(what.to_owned()),
        }
    }
}

macro_rules! actions {
    ($($(#[$meta:meta])* $variant:ident = $text:literal, $resource:literal;)*) => {
        /// What a change did, named `resource.verb` like the webhook event of the same change.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Action {
            $($(#[$meta])* $variant,)*
        }

        impl Action {
            /// Every action.
            pub const ALL: &'static [Action] = &[$(Action::$variant,)*];

            /// The name, such as `license.updated`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Action::$variant => $text,)*
                }
            }

            /// The type of the resource it changes, such as `license`.
            pub fn resource(self) -> &'static str {
                match self {
                    $(Action::$variant => $resource,)*
                }
            }
        }
    };
}

actions! {
    /// A team was created (admin API or command line).
    TeamCreated = "team.created", "team";
    /// The operator changed a team's features.
    FeaturesUpdated = "team.features_updated", "team";
    /// The operator downloaded a backup of the whole server, this team's records among them.
    BackupDownloaded = "team.backup_downloaded", "team";
    /// A license was created.
    LicenseCreated = "license.created", "license";
    /// A license was changed.
    LicenseUpdated = "license.updated", "license";
    /// A license was suspended (possibly with other changes).
    LicenseSuspended = "license.suspended", "license";
    /// A license's suspension was lifted (possibly with other changes).
    LicenseUnsuspended = "license.unsuspended", "license";
    /// A license was deleted.
    LicenseDeleted = "license.deleted", "license";
    /// A license file of a license was issued through the developer API or the dashboard.
    LicenseFileIssued = "license.file_issued", "license";
    /// A license's key was e-mailed to its customers again (from the dashboard or the API).
    LicenseEmailed = "license.emailed", "license";
    /// (ext) A license's usage counter of the current period was adjusted or reset.
    LicenseUsageChanged = "license.usage_changed", "license";
    /// A license's hardware identifier was forgotten.
    DeviceForgotten = "device.forgotten", "device";
    /// A license's forgotten hardware identifier was remembered again.
    DeviceRemembered = "device.remembered", "device";
    /// A license's IP address was forgotten.
    IpForgotten = "ip.forgotten", "ip";
    /// A license's forgotten IP address was remembered again.
    IpRemembered = "ip.remembered", "ip";
    /// A live floating session of a license was revoked: its seat is free at once.
    SessionRevoked = "session.revoked", "session";
    /// A customer was created.
    CustomerCreated = "customer.created", "customer";
    /// A customer was changed.
    CustomerUpdated = "customer.updated", "customer";
    /// A customer was deleted.
    CustomerDeleted = "customer.deleted", "customer";
    /// An entitlement was created.
    EntitlementCreated = "entitlement.created", "entitlement";
    /// An entitlement was changed (its name or metadata).
    EntitlementUpdated = "entitlement.updated", "entitlement";
    /// An entitlement was deleted, and detached from every license and product.
    EntitlementDeleted = "entitlement.deleted", "entitlement";
    /// A policy was created.
    PolicyCreated = "policy.created", "policy";
    /// A policy was changed: every license on it follows.
    PolicyUpdated = "policy.updated", "policy";
    /// A policy was deleted (its licenses, if any, detached with its terms written into them).
    PolicyDeleted = "policy.deleted", "policy";
    /// (ext) A payment integration was set up or changed (its secrets, its rules).
    IntegrationUpdated = "integration.updated", "integration";
    /// (ext) A payment integration was removed.
    IntegrationDeleted = "integration.deleted", "integration";
    /// A product was created.
    ProductCreated = "product.created", "product";
    /// A product was changed.
    ProductUpdated = "product.updated", "product";
    /// A product was deleted, with its branches and releases.
    ProductDeleted = "product.deleted", "product";
    /// A branch was created.
    BranchCreated = "branch.created", "branch";
    /// A branch was deleted, with its releases.
    BranchDeleted = "branch.deleted", "branch";
    /// A release was created.
    ReleaseCreated = "release.created", "release";
    /// A release was changed.
    ReleaseUpdated = "release.updated", "release";
    /// A release's status became `PUBLISHED`.
    ReleasePublished = "release.published", "release";
    /// A release was deleted.
    ReleaseDeleted = "release.deleted", "release";
    /// A blacklist entry was created.
    BlacklistCreated = "blacklist.created", "blacklist";
    /// A blacklist entry was deleted.
    BlacklistDeleted = "blacklist.deleted", "blacklist";
    /// An API key was created.
    ApiKeyCreated = "api_key.created", "api_key";
    /// An API key was revoked.
    ApiKeyRevoked = "api_key.revoked", "api_key";
    /// The team's settings were changed.
    SettingsUpdated = "settings.updated", "settings";
    /// A next signing key was made: listed for applications to ship, signing nothing yet.
    SigningKeyCreated = "signing_key.created", "signing_key";
    /// The team's signing key was rotated (or a next key activated): a new key signs from now
    /// on.
    SigningKeyRotated = "signing_key.rotated", "signing_key";
    /// A former signing key of the team was retired: clients stop trusting it.
    SigningKeyRetired = "signing_key.retired", "signing_key";
    /// A webhook endpoint was created.
    WebhookCreated = "webhook.created", "webhook";
    /// A webhook endpoint was changed (its secret rotated, say).
    WebhookUpdated = "webhook.updated", "webhook";
    /// A webhook endpoint was deleted.
    WebhookDeleted = "webhook.deleted", "webhook";
    /// A test event was queued for an endpoint.
    WebhookTestSent = "webhook.test_sent", "webhook";
    /// A delivery's event was queued for an endpoint again.
    WebhookRedelivered = "webhook.redelivered", "webhook";
    /// A staff account was created (with a set-password link).
    StaffCreated = "staff.created", "staff";
    /// A staff account got a new set-password link (its password forgotten, say).
    StaffLinkIssued = "staff.link_issued", "staff";
    /// A staff member set their password through a link.
    StaffPasswordSet = "staff.password_set", "staff";
    /// A staff account's role was changed.
    StaffUpdated = "staff.updated", "staff";
    /// A staff account was deleted, with its sessions.
    StaffDeleted = "staff.deleted", "staff";
    /// A staff member signed in to the dashboard.
    StaffSignedIn = "staff.signed_in", "staff";
    /// A staff member signed out (of one session, or of every one).
    StaffSignedOut = "staff.signed_out", "staff";
    /// Someone tried to sign in to a staff account with a wrong password or second step.
    StaffSignInFailed = "staff.sign_in_failed", "staff";
    /// (ext) The vendor's site minted a one-use sign-in link to the customer portal.
    PortalLinkCreated = "portal.link_created", "portal";
    /// (ext) A customer signed in to the customer portal.
    PortalSignedIn = "portal.signed_in", "portal";
    /// (ext) A customer signed out of the portal, or staff ended their session.
    PortalSignedOut = "portal.signed_out", "portal";
}

impl Action {
    /// Whether the change raises a webhook event of its name. Changes of teams (the operator's
    /// business) and of endpoints (an endpoint is not told about endpoints), and sign-ins and
    /// sign-outs (of staff, and of customers in the portal), and a key e-mailed again (nothing
    /// about the license changed), are audited only.
    pub fn raises_event(self) -> bool {
        !matches!(self.resource(), "team" | "webhook" | "portal")
            && !matches!(
                self,
                Action::StaffSignedIn
                    | Action::StaffSignedOut
                    | Action::StaffSignInFailed
                    | Action::LicenseEmailed
            )
    }

    /// Whether the action changes what the client API reads about its team on every request
    /// (the team's settings and features, its keys, its blacklist, what its webhook endpoints
    /// want, its entitlements and products): a server that keeps that in memory drops it after
    /// such a change.
    pub fn changes_team_context(self) -> bool {
        matches!(
            self.resource(),
            "settings"
                | "signing_key"
                | "blacklist"
                | "entitlement"
                | "policy"
                | "product"
                | "branch"
        ) || matches!(
            self,
            Action::FeaturesUpdated
                | Action::WebhookCreated
                | Action::WebhookUpdated
                | Action::WebhookDeleted
        )
    }

    /// The action named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|a| a.as_str() == text)
    }

    /// Every resource type, each once, in the order of [`ALL`](Self::ALL).
    pub fn resources() -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for action in Self::ALL {
            if !out.contains(&action.resource()) {
                out.push(action.resource());
            }
        }
        out
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown action {text:?}")))
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Action {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(Self::ALL.iter().map(|a| a.as_str())))
            .description(Some(
                "What a change did, `resource.verb`, like the webhook event of the same change",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Action {}

/// One field a change touched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// The member's name as the API writes it.
    pub field: String,
    /// The value before (`null` when it was null); absent for a new record and for secrets.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub old: Option<Value>,
    /// The value after (`null` when it is null); absent for a deleted record and for secrets.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub new: Option<Value>,
    /// A secret (key material, a signing secret, a password): it changed, its values are never
    /// recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
    /// The values are withheld from this reader: its API key may not read records of this
    /// kind (it lacks the scope), so it sees that the field changed, not how.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// A member that is present is `Some`, even when it is `null` (absent is `None`, by `default`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl FieldChange {
    /// A secret field that changed.
    pub fn secret(field: &str) -> Self {
        Self {
            field: field.to_owned(),
            old: None,
            new: None,
            secret: true,
            redacted: false,
        }
    }

    /// A field that changed from `old` to `new` (`None`: absent, as in a creation).
    pub fn of(field: &str, old: Option<Value>, new: Option<Value>) -> Self {
        Self {
            field: field.to_owned(),
            old,
            new,
            secret: false,
            redacted: false,
        }
    }
}

/// Members that change with every write and say nothing about it.
const BOOKKEEPING: [&str; 1] = ["updatedAt"];

/// The fields that differ between `old` and `new` (records as the API renders them, compared
/// member by member at the top level), with `old` or `new` absent for a creation or a deletion.
/// Members named in `secrets` appear as secret changes, without values.
pub fn changes<T: Serialize>(
    old: Option<&T>,
    new: Option<&T>,
    secrets: &[&str],
) -> Vec<FieldChange> {
    let object = |v: Option<&T>| match v.map(serde_json::to_value) {
        Some(Ok(Value::Object(map))) => map,
        _ => serde_json::Map::new(),
    };
    let (old, new) = (object(old), object(new));
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        if BOOKKEEPING.contains(&name.as_str()) {
            continue;
        }
        let (before, after) = (old.get(name), new.get(name));
        if before == after {
            continue;
        }
        if secrets.contains(&name.as_str()) {
            out.push(FieldChange::secret(name));
            continue;
        }
        out.push(FieldChange::of(name, before.cloned(), after.cloned()));
    }
    out
}

/// One entry of the audit log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Id.
    pub id: AuditId,
    /// The team whose record changed.
    pub team_id: TeamId,
    /// When.
    pub at: Timestamp,
    /// Who.
    pub actor: Actor,
    /// The client's address (behind trusted proxies, the forwarded one); `null` for changes
    /// made on the server's own command line.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub address: Option<IpAddr>,
    /// What was done.
    pub action: Action,
    /// The type of the record changed (`license`, `customer`, …).
    pub resource_type: String,
    /// The id of the record changed (a license key's license id, an API key's id, the team's id
    /// for settings).
    pub resource_id: String,
    /// The fields that changed.
    pub changes: Vec<FieldChange>,
    /// The products the record belonged to, before or after the change, for records tied to
    /// products (licenses and their devices and addresses, products, branches, releases);
    /// absent for other records (and for entries written before this was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_ids: Option<Vec<ProductId>>,
}

impl AuditEntry {
    /// The entry as a principal with `scopes` and `restriction` may see it: whole, with the
    /// changed fields' values withheld, or not at all (see [`sight`](super::sight)).
    pub fn seen_by(
        mut self,
        scopes: &super::Scopes,
        restriction: &super::ProductRestriction,
    ) -> Option<Self> {
        match super::sight(
            scopes,
            restriction,
            &self.resource_type,
            self.product_ids.as_deref(),
        ) {
            super::Sight::Whole => Some(self),
            super::Sight::Hidden => None,
            super::Sight::Redacted => {
                for change in &mut self.changes {
                    change.old = None;
                    change.new = None;
                    change.redacted = !change.secret;
                }
                Some(self)
            }
        }
    }
}

/// The products a record of type `resource_type` belongs to, read from the record as the API
/// renders it (`productIds` of a license, `productId` of a release or branch, the id of a
/// product); `None` for records not tied to products.
pub fn products_in(resource_type: &str, rendered: &Value) -> Option<Vec<ProductId>> {
    let parse = |v: &Value| v.as_str().and_then(|t| t.parse::<ProductId>().ok());
    match resource_type {
        "license" => Some(
            rendered["productIds"]
                .as_array()
                .map(|ids| ids.iter().filter_map(parse).collect())
                .unwrap_or_default(),
        ),
        "release" | "branch" => Some(parse(&rendered["productId"]).into_iter().collect()),
        "product" => Some(parse(&rendered["id"]).into_iter().collect()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Rec {
        name: &'static str,
        hash: &'static str,
        updated_at: u32,
        note: Option<&'static str>,
    }

    #[test]
    fn changes_list_what_differs_with_secrets_hidden() {
        let old = Rec {
            name: "a",
            hash: "x",
            updated_at: 1,
            note: None,
        };
        let new = Rec {
            name: "b",
            hash: "y",
            updated_at: 2,
            note: None,
        };
        let c = changes(Some(&old), Some(&new), &["hash"]);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0], FieldChange::secret("hash"));
        assert_eq!(c[1].field, "name");
        assert_eq!(c[1].old, Some(Value::from("a")));
        assert_eq!(c[1].new, Some(Value::from("b")));
        let json = serde_json::to_string(&c[0]).unwrap();
        assert_eq!(json, r#"{"field":"hash","secret":true}"#);
    }

    #[test]
    fn a_null_value_survives_a_round_trip_distinct_from_an_absent_one() {
        let c = FieldChange {
            field: "ipTimeout".into(),
            old: Some(Value::Null),
            new: Some(Value::from(60)),
            secret: false,
            redacted: false,
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"field":"ipTimeout","old":null,"new":60}"#);
        assert_eq!(serde_json::from_str::<FieldChange>(&json).unwrap(), c);
        let created: FieldChange = serde_json::from_str(r#"{"field":"x","new":1}"#).unwrap();
        assert_eq!(created.old, None);
    }

    #[test]
    fn a_creation_lists_every_field_as_new() {
        let new = Rec {
            name: "b",
            hash: "y",
            updated_at: 2,
            note: Some("n"),
        };
        let c = changes(None, Some(&new), &["hash"]);
        let fields: Vec<&str> = c.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["hash", "name", "note"]);
        assert!(c.iter().all(|f| f.old.is_none()));
    }

    #[test]
    fn actions_round_trip_and_name_their_resource() {
        for a in Action::ALL {
            assert_eq!(Action::parse(a.as_str()), Some(*a));
            assert!(a.as_str().starts_with(a.resource()), "{a}");
        }
        assert!(Action::resources().contains(&"license"));
    }
}
