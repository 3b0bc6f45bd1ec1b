//! What a store's operations fail with: a record not found, a conflict, a limit, or the
//! backend's own failure (whose cause is logged, never shown to a client); and how each becomes
//! the API's error.

use crate::ApiError;
use crate::code::ResultCode;

/// The kinds of records, for "not found" errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Entity {
    Team,
    License,
    Customer,
    Product,
    Release,
    Branch,
    Hwid,
    Ip,
    ApiKey,
    Blacklist,
    Webhook,
    Delivery,
    Staff,
    SigningKey,
    Entitlement,
    Policy,
    LicenseSession,
    Integration,
    Rule,
    InboundEvent,
    Artifact,
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The record (or a record it references) does not exist in this team.
    #[error("{0:?} not found")]
    NotFound(Entity),
    /// A uniqueness rule would break: the field and what to do.
    #[error("conflict on {field}: {message}")]
    Conflict {
        /// The member of the request at fault.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The change does not fit the record's state (answered as 409 `CONFLICT`): what to do.
    #[error("conflicting state: {0}")]
    State(String),
    /// A quota would be exceeded (answered as 429 `RATE_LIMIT`).
    #[error("limit reached: {0}")]
    Limit(String),
    /// The backend failed (I/O, corruption, a lost connection). Logged, answered as 500.
    #[error("storage backend failure: {0}")]
    Backend(#[source] BackendError),
}

/// What failed in a backend, with the error that caused it when there is one (kept as the
/// error's `source`, so that a log shows the whole chain).
#[derive(Debug)]
pub struct BackendError {
    context: std::borrow::Cow<'static, str>,
    cause: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl BackendError {
    /// `context` failed because of `cause`.
    pub fn new(
        context: impl Into<std::borrow::Cow<'static, str>>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            context: context.into(),
            cause: Some(Box::new(cause)),
        }
    }

    /// A failure described by `message` alone.
    pub fn message(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self {
            context: message.into(),
            cause: None,
        }
    }
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cause {
            Some(cause) => write!(f, "{}: {cause}", self.context),
            None => f.write_str(&self.context),
        }
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl StoreError {
    /// A backend failure described by `message`.
    pub fn backend(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::Backend(BackendError::message(message))
    }

    /// A backend failure: `context` failed because of `cause`.
    pub fn backend_from(
        context: impl Into<std::borrow::Cow<'static, str>>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Backend(BackendError::new(context, cause))
    }
}

impl StoreError {
    /// A conflict on `field`.
    pub fn conflict(field: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict {
            field,
            message: message.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(entity) => match entity {
                Entity::Team => ApiError::new(ResultCode::TeamNotFound, "Team not found"),
                Entity::License => ApiError::new(ResultCode::LicenseNotFound, "License not found"),
                Entity::Customer => {
                    ApiError::new(ResultCode::CustomerNotFound, "Customer not found")
                }
                Entity::Product => ApiError::new(ResultCode::ProductNotFound, "Product not found"),
                Entity::Release => ApiError::new(ResultCode::ReleaseNotFound, "Release not found"),
                Entity::Branch => ApiError::new(ResultCode::ReleaseNotFound, "Branch not found"),
                Entity::Hwid => ApiError::record_not_found("Hardware identifier not found"),
                Entity::Ip => ApiError::record_not_found("IP address not found"),
                Entity::ApiKey => ApiError::record_not_found("API key not found"),
                Entity::Blacklist => ApiError::record_not_found("Blacklist entry not found"),
                Entity::Webhook => ApiError::record_not_found("Webhook endpoint not found"),
                Entity::SigningKey => ApiError::new(
                    ResultCode::SigningKeyNotFound,
                    "Signing key not found: GET public-key lists the team's signing keys (signingKeys[].kid)",
                ),
                Entity::Entitlement => ApiError::record_not_found("Entitlement not found"),
                Entity::Policy => ApiError::record_not_found("Policy not found"),
                Entity::Integration => ApiError::record_not_found(
                    "Integration not found: set it up with PUT integrations/{provider} first",
                ),
                Entity::Rule => ApiError::record_not_found("Rule not found"),
                Entity::InboundEvent => ApiError::record_not_found("Payment event not found"),
                Entity::Artifact => ApiError::new(
                    ResultCode::ArtifactNotFound,
                    "Artifact not found: GET releases/{releaseId}/artifacts lists the release's artifacts",
                ),
                Entity::Delivery => ApiError::record_not_found("Webhook delivery not found"),
                Entity::Staff => ApiError::record_not_found("Staff account not found"),
                Entity::LicenseSession => {
                    ApiError::new(ResultCode::SessionNotFound, "Session not found")
                }
            },
            StoreError::Conflict { field, message } => ApiError::bad_field(field, &message),
            StoreError::State(message) => ApiError::new(ResultCode::Conflict, message),
            StoreError::Limit(message) => ApiError::new(ResultCode::RateLimit, message),
            StoreError::Backend(cause) => ApiError::internal_because("store failure", cause),
        }
    }
}

/// Result of a store operation.
pub type StoreResult<T> = Result<T, StoreError>;
