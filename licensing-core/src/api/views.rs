//! Answer payloads (`data`) that are not plain records.

use serde::{Deserialize, Serialize};

use crate::model::{
    ApiKeyView, BlacklistEntry, Branch, ClientMetadata, Customer, ExpirationStart, ExpirationType,
    HwidView, IpRecordView, License, Product, Release, ReleaseView,
};
use crate::{CustomerId, HwidId, IpId, LicenseId, LicenseKey, Timestamp};

/// `data.license` of a verify answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VerifyLicense {
    /// IP limit.
    pub ip_limit: Option<u32>,
    /// Hardware-identifier limit.
    pub hwid_limit: Option<u32>,
    /// Expiration type.
    pub expiration_type: ExpirationType,
    /// Expiration start.
    pub expiration_start: ExpirationStart,
    /// Expiration date (after activation, the new one).
    pub expiration_date: Option<Timestamp>,
    /// Expiration days.
    pub expiration_days: Option<u32>,
    /// All metadata, as `{key, value}`.
    pub metadata: Vec<ClientMetadata>,
    /// (ext) The entitlement codes the license grants (its own and its products'), sorted.
    #[serde(default)]
    pub entitlements: Vec<String>,
    /// (ext) When the grace period ends, while the license is in one (expired, within its
    /// policy's `graceDays`); left out otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_until: Option<Timestamp>,
    /// (ext) The license's usage meters with their standing in the current period (`[]`
    /// without meters). Nothing is counted by a verify.
    #[serde(default)]
    pub meters: Vec<crate::model::LicenseMeter>,
}

/// `data.customers[]` of a verify answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VerifyCustomer {
    /// E-mail.
    pub email: Option<String>,
    /// Full name.
    pub full_name: Option<String>,
    /// User name.
    pub username: Option<String>,
    /// Metadata as `{key, value}`.
    pub metadata: Vec<ClientMetadata>,
}

/// `latestRelease` of a product in a verify answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LatestRelease {
    /// Version.
    pub version: String,
    /// Creation time.
    pub created_at: Timestamp,
}

/// `data.products[]` of a verify answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VerifyProduct {
    /// Name.
    pub name: String,
    /// Homepage.
    pub url: Option<String>,
    /// The latest release in the requested branch, the one a download without a version
    /// serves: the release marked latest when it is `PUBLISHED` or `DEPRECATED` (a deprecated
    /// release is still served), else the most recently created `PUBLISHED` one; with no branch
    /// named, among releases without a branch first, else the most recent of every branch's.
    /// Never a `DRAFT` or `ARCHIVED` release.
    pub latest_release: Option<LatestRelease>,
    /// Metadata as `{key, value}`.
    pub metadata: Vec<ClientMetadata>,
}

/// `data` of a successful verify.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VerifyData {
    /// The license.
    pub license: VerifyLicense,
    /// Its customers.
    pub customers: Vec<VerifyCustomer>,
    /// Its products.
    pub products: Vec<VerifyProduct>,
    /// (ext) `false` when the license limits hardware identifiers, the request sent none, and
    /// the team does not require one (`requireHardwareIdentifier: false`): the device limit was
    /// not checked. Left out otherwise.
    #[serde(
        rename = "hardwareIdentifierChecked",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub hardware_identifier_checked: Option<bool>,
}

fn client_metadata(items: &[crate::model::MetadataItem]) -> Vec<ClientMetadata> {
    items.iter().map(ClientMetadata::from).collect()
}

impl VerifyData {
    /// Builds the answer. `products` pairs each product with the latest published release of the
    /// requested branch.
    pub fn build(
        license: &License,
        customers: &[Customer],
        products: &[(&Product, Option<&Release>)],
    ) -> Self {
        Self {
            license: VerifyLicense {
                ip_limit: license.ip_limit,
                hwid_limit: license.hwid_limit,
                expiration_type: license.expiration_type,
                expiration_start: license.expiration_start,
                expiration_date: license.expiration_date,
                expiration_days: license.expiration_days,
                metadata: client_metadata(&license.metadata),
                entitlements: Vec::new(),
                grace_until: None,
                meters: Vec::new(),
            },
            customers: customers
                .iter()
                .map(|c| VerifyCustomer {
                    email: c.email.as_ref().map(|e| e.as_str().to_owned()),
                    full_name: c.full_name.clone(),
                    username: c.username.clone(),
                    metadata: client_metadata(&c.metadata),
                })
                .collect(),
            products: products
                .iter()
                .map(|(p, latest)| VerifyProduct {
                    name: p.name.clone(),
                    url: p.url.as_ref().map(|u| u.as_str().to_owned()),
                    latest_release: latest.map(|r| LatestRelease {
                        version: r.version.as_str().to_owned(),
                        created_at: r.created_at,
                    }),
                    metadata: client_metadata(&p.metadata),
                })
                .collect(),
            hardware_identifier_checked: None,
        }
    }
}

/// `data.license` of a heartbeat answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatLicense {
    /// IP limit.
    pub ip_limit: Option<u32>,
    /// Hardware-identifier limit.
    pub hwid_limit: Option<u32>,
    /// Expiration type.
    pub expiration_type: ExpirationType,
    /// (ext) The entitlement codes the license grants, sorted.
    #[serde(default)]
    pub entitlements: Vec<String>,
    /// (ext) When the grace period ends, while the license is in one; left out otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_until: Option<Timestamp>,
    /// (ext) The license's usage meters with their standing in the current period (`[]`
    /// without meters).
    #[serde(default)]
    pub meters: Vec<crate::model::LicenseMeter>,
}

/// `data` of a successful heartbeat.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeartbeatData {
    /// The license.
    pub license: HeartbeatLicense,
    /// (ext) The floating session the heartbeat extended (only with a `sessionId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<crate::model::SessionData>,
}

impl HeartbeatData {
    /// Builds the answer, with the codes the license grants.
    pub fn build(license: &License, entitlements: Vec<String>) -> Self {
        Self {
            license: HeartbeatLicense {
                ip_limit: license.ip_limit,
                hwid_limit: license.hwid_limit,
                expiration_type: license.expiration_type,
                entitlements,
                grace_until: None,
                meters: Vec::new(),
            },
            session: None,
        }
    }
}

/// (ext) `data` of a session start: a verify's, and the session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionStartData {
    /// What a verify answers.
    #[serde(flatten)]
    pub verify: VerifyData,
    /// The session: heartbeat with its id within its TTL, end it on exit.
    pub session: crate::model::SessionData,
}

/// (ext) `data` of a session end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionEndData {
    /// The session ended.
    pub session: SessionEnded,
}

/// (ext) A session as its end shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionEnded {
    /// Its id.
    pub id: crate::LicenseSessionId,
    /// When it ended: its seat is free from then on.
    pub ended_at: crate::Timestamp,
}

/// The latest release of a product in `branch` (`None`: releases without a branch), the one
/// rule that verify's `latestRelease` and a download without a version both follow:
/// 1. the release marked latest there, when it may be served (`PUBLISHED` or `DEPRECATED`);
/// 2. else the most recently created `PUBLISHED` release there;
/// 3. else, when no branch was named (`any_branch`), the most recently created of the latest
///    releases of every branch, each found by 1 and 2 (clients written for Lukittu name no
///    branch).
///
/// `releases` are the product's.
pub fn latest_release(
    releases: &[Release],
    branch: Option<crate::BranchId>,
    any_branch: bool,
) -> Option<&Release> {
    use crate::model::ReleaseStatus;
    let of_branch = |branch: Option<crate::BranchId>| {
        let servable = |r: &&Release| {
            r.branch_id == branch
                && matches!(
                    r.status,
                    ReleaseStatus::Published | ReleaseStatus::Deprecated
                )
        };
        releases
            .iter()
            .filter(servable)
            .find(|r| r.latest)
            .or_else(|| {
                releases
                    .iter()
                    .filter(|r| r.branch_id == branch && r.status == ReleaseStatus::Published)
                    .max_by_key(|r| (r.created_at, r.id))
            })
    };
    of_branch(branch).or_else(|| {
        if branch.is_some() || !any_branch {
            return None;
        }
        let mut branches: Vec<crate::BranchId> =
            releases.iter().filter_map(|r| r.branch_id).collect();
        branches.sort_unstable();
        branches.dedup();
        branches
            .into_iter()
            .filter_map(|b| of_branch(Some(b)))
            .max_by_key(|r| (r.created_at, r.id))
    })
}

macro_rules! page_type {
    ($(#[$meta:meta])* $name:ident, $member:ident: $item:ty, $wire:literal) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            #[doc = concat!("The items of this page (`", $wire, "`).")]
            #[serde(rename = $wire)]
            pub $member: Vec<$item>,
            /// Items matching the filters, all pages.
            pub total_results: u64,
            /// Whether a next page exists.
            pub has_next_page: bool,
        }

        impl From<crate::store::Page<$item>> for $name {
            fn from(page: crate::store::Page<$item>) -> Self {
                Self {
                    $member: page.items,
                    total_results: page.total,
                    has_next_page: page.has_next_page,
                }
            }
        }
    };
}

page_type!(
    /// `GET {dev}/licenses`.
    LicensePage, licenses: License, "licenses"
);
page_type!(
    /// `GET {dev}/customers`.
    CustomerPage, customers: Customer, "customers"
);
page_type!(
    /// `GET {dev}/releases`.
    ReleasePage, releases: ReleaseView, "releases"
);
page_type!(
    /// `GET {dev}/licenses/id/{id}/hwid`.
    HwidPage, hwids: HwidView, "hwids"
);
page_type!(
    /// `GET {dev}/licenses/id/{id}/ip-address`.
    IpPage, ip_addresses: IpRecordView, "ipAddresses"
);
page_type!(
    /// (ext) `GET {dev}/products`.
    ProductPage, products: Product, "products"
);
page_type!(
    /// (ext) `GET {dev}/entitlements`.
    EntitlementPage, entitlements: crate::model::Entitlement, "entitlements"
);
page_type!(
    /// (ext) `GET {dev}/policies`.
    PolicyPage, policies: crate::model::Policy, "policies"
);
page_type!(
    /// (ext) `GET {dev}/integrations/events`.
    InboundPage, events: InboundEventView, "events"
);
page_type!(
    /// (ext) `GET {dev}/audit-log`.
    AuditPage, entries: crate::model::AuditEntry, "entries"
);

page_type!(
    /// (ext) `GET {dev}/licenses/id/{id}/requests`.
    RequestLogPage, requests: crate::model::RequestLogEntry, "requests"
);

page_type!(
    /// (ext) `GET {dev}/webhooks/{webhookId}/deliveries`.
    DeliveryPage, deliveries: crate::model::WebhookDelivery, "deliveries"
);

/// (ext) `GET {dev}/webhooks`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookList {
    /// The team's endpoints, oldest first.
    pub webhooks: Vec<crate::model::WebhookView>,
}

/// `GET /api/v1/admin/teams`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TeamList {
    /// Every team, oldest first.
    pub teams: Vec<crate::model::TeamView>,
}

/// (ext) `GET {dev}/products/{id}/branches`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BranchList {
    /// All branches of the product.
    pub branches: Vec<Branch>,
}

/// (ext) `GET {dev}/blacklist`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BlacklistList {
    /// All entries.
    pub blacklist: Vec<BlacklistEntry>,
}

/// (ext) `GET {dev}/api-keys`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyList {
    /// All keys of the team, without the keys themselves.
    pub api_keys: Vec<ApiKeyView>,
}

/// `DELETE {dev}/licenses/{licenseKey}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseKeyDeleted {
    /// The key.
    pub license_key: LicenseKey,
    /// Always true.
    pub deleted: bool,
}

/// `DELETE {dev}/licenses/id/{licenseId}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseDeleted {
    /// The id.
    pub license_id: LicenseId,
    /// Always true.
    pub deleted: bool,
}

/// (ext) `POST {dev}/licenses/bulk`: what was done and what was refused, license by license.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BulkLicenseResult {
    /// The action.
    pub action: crate::api::requests::BulkAction,
    /// The licenses it was done to, in the order given.
    pub done: Vec<LicenseId>,
    /// The licenses it was not done to, each with why (the code and details its own route
    /// would have answered), in the order given.
    pub refused: Vec<BulkRefusal>,
}

/// A license a bulk action was not done to, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BulkRefusal {
    /// The license.
    pub license_id: LicenseId,
    /// What its own route would have answered (`LICENSE_NOT_FOUND`, say).
    pub code: crate::ResultCode,
    /// In words.
    pub details: String,
}

/// (ext) `POST {dev}/customers/{customerId}/portal-sessions`: a one-use link that signs the
/// customer in to the team's customer portal; hand it to their browser (it is not for e-mail).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PortalLink {
    /// The link: opening it signs in at once and shows the customer's licenses.
    #[cfg_attr(
        feature = "openapi",
        schema(
            example = "https://licensing.example.com/portal/7d0c7a52-8e0e-4b5f-a3a6-3f5b7c1d9e20/enter/N2Y3ZDNhOWQ"
        )
    )]
    pub url: String,
    /// When it stops working (15 minutes after it was made).
    pub expires_at: crate::Timestamp,
}

/// `DELETE {dev}/customers/{customerId}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CustomerDeleted {
    /// The id.
    pub customer_id: CustomerId,
    /// Always true.
    pub deleted: bool,
}

/// (ext) `GET {dev}/releases/{releaseId}/artifacts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArtifactList {
    /// The release's artifacts, in upload order.
    pub artifacts: Vec<crate::model::Artifact>,
}

/// (ext) deletes of other resources: `{id, deleted}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Deleted {
    /// The id.
    pub id: uuid::Uuid,
    /// Always true.
    pub deleted: bool,
}

/// (ext) A payment integration as answers show it: its secrets by their last 4 characters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IntegrationView {
    /// `stripe`, `paddle` or `lemonsqueezy`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub provider: crate::crypto::inbound::Provider,
    /// Whether its events are applied.
    pub enabled: bool,
    /// The webhook secret's last 4 characters (`…abcd`).
    pub webhook_secret: String,
    /// The replaced secret's last 4 characters, while it is still accepted.
    pub previous_secret: Option<String>,
    /// Until when the replaced secret is accepted.
    pub previous_secret_until: Option<crate::Timestamp>,
    /// The API key's last 4 characters, if one is set.
    pub api_key: Option<String>,
    /// The address (path on this server) to give the provider.
    pub webhook_path: String,
    /// Its rules.
    pub rules: Vec<crate::model::PriceRule>,
    /// When it was set up.
    pub created_at: crate::Timestamp,
    /// When it last changed.
    pub updated_at: crate::Timestamp,
}

impl IntegrationView {
    /// How `integration` is shown at `now` (`secrets` opened: the last 4 characters of each).
    pub fn of(
        integration: &crate::model::Integration,
        secret: &str,
        previous: Option<&str>,
        api_key: Option<&str>,
        now: crate::Timestamp,
    ) -> Self {
        use crate::model::last_four;
        let previous_live = integration
            .previous_secret_until
            .filter(|until| now < *until);
        Self {
            provider: integration.provider,
            enabled: integration.enabled,
            webhook_secret: last_four(secret),
            previous_secret: previous.filter(|_| previous_live.is_some()).map(last_four),
            previous_secret_until: previous_live,
            api_key: api_key.map(last_four),
            webhook_path: integration.webhook_path(),
            rules: integration.rules.clone(),
            created_at: integration.created_at,
            updated_at: integration.updated_at,
        }
    }
}

/// (ext) `GET {dev}/integrations`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IntegrationList {
    /// The team's integrations, by provider.
    pub integrations: Vec<IntegrationView>,
}

/// (ext) `DELETE {dev}/integrations/{provider}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IntegrationDeleted {
    /// The provider.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub provider: crate::crypto::inbound::Provider,
    /// Always true.
    pub deleted: bool,
}

/// (ext) `DELETE {dev}/integrations/{provider}/rules/{ruleId}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuleDeleted {
    /// The rule's id.
    pub id: crate::RuleId,
    /// Always true.
    pub deleted: bool,
}

/// (ext) `GET {dev}/integrations/{provider}/rules`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuleList {
    /// The rules, in the order they are tried.
    pub rules: Vec<crate::model::PriceRule>,
}

/// (ext) A received payment event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct InboundEventView {
    /// This delivery's id (what `…/events/{id}/replay` takes).
    pub id: crate::InboundId,
    /// The provider's event id (Lemon Squeezy: SHA-256 of its name, `data.id` and `updated_at`).
    pub event_id: String,
    /// The provider.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub provider: crate::crypto::inbound::Provider,
    /// The provider's event type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// `applied`, `duplicate`, `skipped` or `failed`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: crate::model::InboundStatus,
    /// Why, or what was done.
    pub reason: Option<String>,
    /// When it arrived.
    pub received_at: crate::Timestamp,
    /// The license it made or changed.
    pub license_id: Option<crate::LicenseId>,
    /// The payload as received (`GET …/events/{id}` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
}

impl InboundEventView {
    /// How `event` is shown, with its payload or without.
    pub fn of(event: crate::model::InboundEvent, payload: bool) -> Self {
        Self {
            id: event.id,
            event_id: event.event_id,
            provider: event.provider,
            event_type: event.event_type,
            status: event.status,
            reason: event.reason,
            received_at: event.received_at,
            license_id: event.license_id,
            payload: payload.then_some(event.payload),
        }
    }
}

/// (ext) `DELETE {dev}/policies/{policyId}`: `{id, deleted, detachedLicenses}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PolicyDeleted {
    /// The policy's id.
    pub id: crate::PolicyId,
    /// Always true.
    pub deleted: bool,
    /// How many licenses were taken off it, its terms written into them (`?detach=true`).
    pub detached_licenses: u64,
}

/// `PATCH …/hwid/{hwidId}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HwidForgotten {
    /// The record.
    pub hwid_id: HwidId,
    /// Its new state.
    pub forgotten: bool,
}

/// `PATCH …/ip-address/{ipId}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IpForgotten {
    /// The record.
    pub ip_id: IpId,
    /// Its new state.
    pub forgotten: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn page_members_have_the_wire_names() {
        let page = IpPage {
            ip_addresses: Vec::new(),
            total_results: 0,
            has_next_page: false,
        };
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            json!({"ipAddresses": [], "totalResults": 0, "hasNextPage": false})
        );
        let d = LicenseDeleted {
            license_id: LicenseId::new(),
            deleted: true,
        };
        assert!(serde_json::to_value(&d).unwrap().get("licenseId").is_some());
    }
}

/// (ext) `data` of `POST {dev}/licenses/id/{licenseId}/email`: the e-mails queued, one to each
/// of the license's customers with an address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseEmailed {
    /// How many e-mails were queued.
    pub queued: u32,
    /// To whom.
    pub recipients: Vec<String>,
}

page_type!(
    /// (ext) `GET {dev}/licenses/id/{licenseId}/sessions`: live sessions, newest first.
    SessionPage, sessions: crate::model::LicenseSession, "sessions"
);

/// (ext) One event's result in a usage batch's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageEventResult {
    /// The event's id, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// `VALID` (counted) or `USAGE_LIMIT_REACHED` (nothing counted).
    pub code: crate::ResultCode,
    /// The meter's standing after it.
    #[serde(flatten)]
    pub state: crate::model::MeterState,
}

/// (ext) `data` of a usage batch's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UsageBatchData {
    /// One result per event, in the request's order.
    pub events: Vec<UsageEventResult>,
}

/// (ext) `data` of a usage answer, as documented: one event's meter standing, or a batch's
/// results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum UsageData {
    /// One event: the meter's standing after it.
    One(crate::model::MeterState),
    /// A batch: one result per event.
    Batch(UsageBatchData),
}
