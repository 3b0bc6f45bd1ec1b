//! The OpenAPI declarations of the endpoints that are not developer operations: the client API
//! (verify, heartbeat, sessions, the classloader) and the operator's endpoints (the admin API,
//! health, metrics, this document), a file each, with the schemas only the document uses. The
//! developer operations are documented from their declarations in `licensing-core` (see
//! [`super::developer_operations`]). The `openapi_routes` integration test checks over HTTP
//! that every documented operation is routed and that every route is documented.

// The functions below exist for their `#[utoipa::path]` attributes alone, and the schema
// types for their derives.
#![allow(dead_code)]

pub(super) mod client;
pub(super) mod operator;
pub(super) mod updates;

use licensing_core::api::requests::{ClientBody, SessionEndBody};
use licensing_core::api::{
    CheckoutData, Envelope, ErrorData, HeartbeatData, SessionEndData, SessionStartData, VerifyData,
};
use utoipa::ToSchema;

/// The multipart body of release create and update.
#[derive(ToSchema)]
pub(crate) struct ReleaseForm {
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
    /// The refusals of a request body: too slow, too large.
    BodyRefused {
        /// The body's timeout.
        Timeout = 408 "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)",
        /// The body's size.
        TooLarge = 413 "BAD_REQUEST: the body is over 1 MiB",
    }
}

/// The path parameter of the operations on one team. Its field's comment is its description.
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
}

use ids::TeamPath;
