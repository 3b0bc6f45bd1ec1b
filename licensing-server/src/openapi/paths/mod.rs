//! One declaration per operation, for the OpenAPI document, a file per area. The routes
//! themselves are warp filters; the `openapi_routes` integration test checks over HTTP that every
//! declared operation is routed and that every route is declared.

#![allow(dead_code)]

pub(super) mod catalog;
pub(super) mod client;
pub(super) mod licenses;
pub(super) mod operator;
pub(super) mod releases;
pub(super) mod team;
pub(super) mod webhooks;

use licensing_core::api::requests::{
    AdminTeamBody, ApiKeyBody, BlacklistBody, BranchBody, ClientBody, CustomerBody, FeaturesBody,
    ForgottenBody, LicenseCreate, LicenseUpdate, ProductBody, SettingsBody, StaffBody, WebhookBody,
};
use licensing_core::api::{
    ApiKeyList, AuditPage, BlacklistList, BranchList, CustomerDeleted, CustomerPage, Deleted,
    DeliveryPage, Envelope, ErrorData, HeartbeatData, HwidForgotten, HwidPage, IpForgotten, IpPage,
    LicenseDeleted, LicenseEmailed, LicenseKeyDeleted, LicensePage, ProductPage, ReleasePage,
    TeamList, VerifyData, WebhookList,
};
use licensing_core::model::{
    ApiKeyCreated, BlacklistEntry, Branch, Customer, LicenseDetail, Product, PublicKeys,
    ReleaseView, StaffInvited, Statistics, TeamCreated, TeamSettings, TeamView, WebhookDelivery,
    WebhookView, WebhookWithSecret,
};
use utoipa::ToSchema;

/// The multipart body of release create and update.
#[derive(ToSchema)]
pub(super) struct ReleaseForm {
    /// The release as JSON: a `ReleaseData` object (see that schema).
    #[schema(value_type = String, content_media_type = "application/json")]
    data: String,
    /// The file: at most 10 MiB, with an extension (`.jar` files get their `Main-Class` read).
    #[schema(value_type = Option<String>, format = Binary)]
    file: Option<Vec<u8>>,
}

/// The encrypted release file of a classloader answer: 64 KiB AES-256-GCM frames, each
/// `u32 BE length | 12-byte nonce | 16-byte tag | ciphertext`.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub(super) struct EncryptedFile(Vec<u8>);

/// `GET /healthz`.
#[derive(ToSchema)]
pub(super) struct Health {
    /// `ok`.
    status: String,
}
