//! One declaration per operation, for the OpenAPI document, a file per area. The routes
//! themselves are warp filters; the `openapi_routes` integration test checks over HTTP that every
//! declared operation is routed and that every route is declared. A developer operation's
//! security requirement (the API key and its scope) is not declared here: the document takes it
//! from the gate's table, with the operation's scope.

#![allow(dead_code)]

pub(super) mod catalog;
pub(super) mod client;
pub(super) mod entitlements;
pub(super) mod licenses;
pub(super) mod operator;
pub(super) mod releases;
pub(super) mod team;
pub(super) mod webhooks;

use licensing_core::ResultCode;
use licensing_core::api::requests::{
    AdminTeamBody, ApiKeyBody, BlacklistBody, BranchBody, ClientBody, CustomerBody,
    EntitlementBody, ExtendBody, FeaturesBody, ForgottenBody, LicenseCreate, LicenseUpdate,
    ProductBody, SessionEndBody, SettingsBody, StaffBody, WebhookBody,
};
use licensing_core::api::{
    ApiKeyList, AuditPage, BlacklistList, BranchList, CheckoutData, CustomerDeleted, CustomerPage,
    Deleted, DeliveryPage, EntitlementPage, Envelope, ErrorData, HeartbeatData, HwidForgotten,
    HwidPage, IpForgotten, IpPage, LicenseDeleted, LicenseEmailed, LicenseFileBody,
    LicenseFileIssued, LicenseKeyDeleted, LicensePage, ProductPage, ReleasePage, RequestLogPage,
    SessionEndData, SessionPage, SessionStartData, TeamList, VerifyData, WebhookList,
};
use licensing_core::model::ClientEndpoint;
use licensing_core::model::{
    ApiKeyCreated, BlacklistEntry, Branch, Customer, Entitlement, LicenseDetail, LicenseSession,
    Product, PublicKeys, ReleaseView, SigningKey, StaffInvited, Statistics, TeamCreated,
    TeamSettings, TeamView, WebhookDelivery, WebhookView, WebhookWithSecret,
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

/// Declares a set of refusals (each variant one answer with the error envelope) as an enum
/// that the operations list in their `responses`.
macro_rules! refusals {
    ($($(#[$doc:meta])* $name:ident {
        $($(#[$variant_doc:meta])* $variant:ident = $status:literal $description:literal,)*
    })*) => {$(
        $(#[$doc])*
        #[derive(utoipa::IntoResponses)]
        pub(super) enum $name {
            $(
                $(#[$variant_doc])*
                #[response(status = $status, description = $description)]
                $variant(Envelope<Option<ErrorData>>),
            )*
        }
    )*};
}

refusals! {
    /// The refusals every developer operation may answer: a malformed request, a bad API key, the
    /// key's rate limit, a server failure.
    Refused {
        /// A malformed id, body or query parameter.
        Malformed = 400 "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)",
        /// No usable API key.
        Unauthorized = 401 "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key",
        /// The key's rate limit.
        RateLimit = 429 "RATE_LIMIT: too many requests for this API key (`Retry-After`)",
        /// A failure of the server.
        Internal = 500 "INTERNAL_SERVER_ERROR",
    }

    /// The refusals of a request body: too slow, too large.
    BodyRefused {
        /// The body's timeout.
        Timeout = 408 "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)",
        /// The body's size.
        TooLarge = 413 "BAD_REQUEST: the body is over 1 MiB",
    }

    /// The refusals every admin operation may answer: a malformed request, a missing or wrong admin
    /// token, the admin token's rate limit, a server failure.
    AdminRefused {
        /// A malformed request.
        Malformed = 400 "BAD_REQUEST",
        /// No usable admin token.
        Unauthorized = 401 "UNAUTHORIZED: missing or wrong admin token",
        /// The admin token's rate limit.
        RateLimit = 429 "RATE_LIMIT",
        /// A failure of the server.
        Internal = 500 "INTERNAL_SERVER_ERROR",
    }

    /// The refusals of the webhook operations: another team's key or one without the `webhooks`
    /// scope, an unknown endpoint or delivery.
    WebhookRefused {
        /// The key.
        Forbidden = 403 "FORBIDDEN: an API key of another team, or without the webhooks scope",
        /// The endpoint or delivery.
        NotFound = 404 "NOT_FOUND: no such webhook endpoint (or delivery) in this team",
    }
}

/// The refusal of another team's API key.
#[derive(utoipa::IntoResponses)]
#[response(status = 403, description = "FORBIDDEN: an API key of another team")]
pub(super) struct OtherTeam(Envelope<Option<ErrorData>>);

/// The path parameters of the operations on one team, or on one thing of a team. Each field's
/// comment is its description.
mod ids {
    use utoipa::IntoParams;

    /// `{teamId}`.
    #[derive(IntoParams)]
    #[into_params(parameter_in = Path, rename_all = "camelCase")]
    pub(in crate::openapi) struct TeamPath {
        /// The team
        #[param(format = "uuid")]
        team_id: String,
    }

    macro_rules! team_and {
        ($(#[$doc:meta] $name:ident { $field:ident: $description:literal })*) => {$(
            #[$doc]
            #[derive(IntoParams)]
            #[into_params(parameter_in = Path, rename_all = "camelCase")]
            pub(in crate::openapi) struct $name {
                /// The team
                #[param(format = "uuid")]
                team_id: String,
                #[doc = $description]
                #[param(format = "uuid")]
                $field: String,
            }
        )*};
    }

    team_and! {
        /// `{teamId}/…/{licenseId}`.
        LicensePath { license_id: "The license" }
        /// `{teamId}/…/{webhookId}`.
        WebhookPath { webhook_id: "The endpoint" }
        /// `{teamId}/…/{productId}`.
        ProductPath { product_id: "The product" }
        /// `{teamId}/…/{customerId}`.
        CustomerPath { customer_id: "The customer" }
        /// `{teamId}/…/{releaseId}`.
        ReleasePath { release_id: "The release" }
        /// `{teamId}/…/{entitlementId}`.
        EntitlementPath { entitlement_id: "The entitlement" }
    }

    /// `{teamId}/…/{licenseKey}`.
    #[derive(IntoParams)]
    #[into_params(parameter_in = Path, rename_all = "camelCase")]
    pub(in crate::openapi) struct LicenseKeyPath {
        /// The team
        #[param(format = "uuid")]
        team_id: String,
        /// The license key
        #[param(pattern = "^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$")]
        license_key: String,
    }

    /// `{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}`.
    #[derive(IntoParams)]
    #[into_params(parameter_in = Path, rename_all = "camelCase")]
    pub(in crate::openapi) struct DeliveryPath {
        /// The team
        #[param(format = "uuid")]
        team_id: String,
        /// The endpoint
        #[param(format = "uuid")]
        webhook_id: String,
        /// The delivery
        #[param(format = "uuid")]
        delivery_id: String,
    }
}

use ids::{
    CustomerPath, DeliveryPath, EntitlementPath, LicenseKeyPath, LicensePath, ProductPath,
    ReleasePath, TeamPath, WebhookPath,
};

/// An unknown thing of the team, one set per kind.
mod not_found {
    use super::{Envelope, ErrorData};

    macro_rules! not_found {
        ($($name:ident: $code:literal;)*) => {$(
            #[doc = concat!("`", $code, "`.")]
            #[derive(utoipa::IntoResponses)]
            #[response(status = 404, description = $code)]
            pub(in crate::openapi) struct $name(Envelope<Option<ErrorData>>);
        )*};
    }

    not_found! {
        NoLicense: "LICENSE_NOT_FOUND";
        NoProduct: "PRODUCT_NOT_FOUND";
        NoCustomer: "CUSTOMER_NOT_FOUND";
        NoRelease: "RELEASE_NOT_FOUND";
        NoEntitlement: "BAD_REQUEST (no such entitlement of the team)";
    }
}

use not_found::{NoCustomer, NoEntitlement, NoLicense, NoProduct, NoRelease};
