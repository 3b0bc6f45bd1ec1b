//! The `result.code` vocabulary and the one place that maps a code to its HTTP status.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Every value `result.code` can take: the 21 error codes of the specification, `VALID`, and
/// this server's own (ext) codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)] // the names are the documentation: they are the wire values
pub enum ResultCode {
    Valid,
    InternalServerError,
    BadRequest,
    LicenseNotFound,
    IpLimitReached,
    HwidLimitReached,
    ProductNotFound,
    CustomerNotFound,
    LicenseExpired,
    LicenseSuspended,
    TeamNotFound,
    RateLimit,
    HardwareIdentifierBlacklisted,
    CountryBlacklisted,
    IpBlacklisted,
    ReleaseNotFound,
    Forbidden,
    Unauthorized,
    InvalidSessionKey,
    NoAccessToRelease,
    ReleaseArchived,
    ReleaseDraft,
    /// (ext) The license lacks an entitlement the request asked for.
    EntitlementsMissing,
    /// (ext) As many sessions of the license are live as its `sessionLimit` allows.
    SessionLimitReached,
    /// (ext) The session is unknown, ended, revoked or expired.
    SessionNotFound,
    /// (ext) The `Idempotency-Key` was used with another request.
    IdempotencyKeyMismatch,
    /// (ext) The request first sent with this `Idempotency-Key` is still running.
    IdempotencyKeyInUse,
    /// (ext) The team has no signing key of that id.
    SigningKeyNotFound,
    /// (ext) The change conflicts with the state of a record (a second `next` signing key, a
    /// second artifact in one place).
    Conflict,
    /// (ext) The release has no artifact of that id.
    ArtifactNotFound,
    /// (ext) The release was withdrawn (ARCHIVED): its downloads are gone.
    ReleaseYanked,
    /// (ext) The usage would pass the meter's limit for the period: nothing was counted.
    UsageLimitReached,
    /// (ext) The license has no meter of that code.
    MeterNotFound,
}

impl ResultCode {
    /// All codes, `VALID` first, in the order of the specification's table.
    pub const ALL: [ResultCode; 33] = [
        Self::Valid,
        Self::InternalServerError,
        Self::BadRequest,
        Self::LicenseNotFound,
        Self::IpLimitReached,
        Self::HwidLimitReached,
        Self::ProductNotFound,
        Self::CustomerNotFound,
        Self::LicenseExpired,
        Self::LicenseSuspended,
        Self::TeamNotFound,
        Self::RateLimit,
        Self::HardwareIdentifierBlacklisted,
        Self::CountryBlacklisted,
        Self::IpBlacklisted,
        Self::ReleaseNotFound,
        Self::Forbidden,
        Self::Unauthorized,
        Self::InvalidSessionKey,
        Self::NoAccessToRelease,
        Self::ReleaseArchived,
        Self::ReleaseDraft,
        Self::EntitlementsMissing,
        Self::SessionLimitReached,
        Self::SessionNotFound,
        Self::IdempotencyKeyMismatch,
        Self::IdempotencyKeyInUse,
        Self::SigningKeyNotFound,
        Self::Conflict,
        Self::ArtifactNotFound,
        Self::ReleaseYanked,
        Self::UsageLimitReached,
        Self::MeterNotFound,
    ];

    /// The HTTP status that answers this code. `BAD_REQUEST` is also
    /// answered with 404, 405 and 413 in the cases [`ApiError`](crate::ApiError) names; this is
    /// its default.
    pub const fn http_status(self) -> u16 {
        match self {
            Self::Valid => 200,
            Self::BadRequest | Self::InvalidSessionKey => 400,
            Self::Unauthorized => 401,
            Self::Forbidden
            | Self::LicenseSuspended
            | Self::LicenseExpired
            | Self::IpLimitReached
            | Self::HwidLimitReached
            | Self::IpBlacklisted
            | Self::CountryBlacklisted
            | Self::HardwareIdentifierBlacklisted
            | Self::ReleaseArchived
            | Self::ReleaseDraft
            | Self::NoAccessToRelease
            | Self::EntitlementsMissing
            | Self::SessionLimitReached
            | Self::UsageLimitReached => 403,
            Self::TeamNotFound
            | Self::LicenseNotFound
            | Self::CustomerNotFound
            | Self::ProductNotFound
            | Self::ReleaseNotFound
            | Self::SessionNotFound
            | Self::SigningKeyNotFound
            | Self::ArtifactNotFound
            | Self::MeterNotFound => 404,
            Self::IdempotencyKeyInUse | Self::Conflict => 409,
            Self::ReleaseYanked => 410,
            Self::IdempotencyKeyMismatch => 422,
            Self::RateLimit => 429,
            Self::InternalServerError => 500,
        }
    }

    /// The wire spelling, such as `HWID_LIMIT_REACHED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Valid => "VALID",
            Self::InternalServerError => "INTERNAL_SERVER_ERROR",
            Self::BadRequest => "BAD_REQUEST",
            Self::LicenseNotFound => "LICENSE_NOT_FOUND",
            Self::IpLimitReached => "IP_LIMIT_REACHED",
            Self::HwidLimitReached => "HWID_LIMIT_REACHED",
            Self::ProductNotFound => "PRODUCT_NOT_FOUND",
            Self::CustomerNotFound => "CUSTOMER_NOT_FOUND",
            Self::LicenseExpired => "LICENSE_EXPIRED",
            Self::LicenseSuspended => "LICENSE_SUSPENDED",
            Self::TeamNotFound => "TEAM_NOT_FOUND",
            Self::RateLimit => "RATE_LIMIT",
            Self::HardwareIdentifierBlacklisted => "HARDWARE_IDENTIFIER_BLACKLISTED",
            Self::CountryBlacklisted => "COUNTRY_BLACKLISTED",
            Self::IpBlacklisted => "IP_BLACKLISTED",
            Self::ReleaseNotFound => "RELEASE_NOT_FOUND",
            Self::Forbidden => "FORBIDDEN",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::InvalidSessionKey => "INVALID_SESSION_KEY",
            Self::NoAccessToRelease => "NO_ACCESS_TO_RELEASE",
            Self::ReleaseArchived => "RELEASE_ARCHIVED",
            Self::ReleaseDraft => "RELEASE_DRAFT",
            Self::EntitlementsMissing => "ENTITLEMENTS_MISSING",
            Self::SessionLimitReached => "SESSION_LIMIT_REACHED",
            Self::SessionNotFound => "SESSION_NOT_FOUND",
            Self::IdempotencyKeyMismatch => "IDEMPOTENCY_KEY_MISMATCH",
            Self::IdempotencyKeyInUse => "IDEMPOTENCY_KEY_IN_USE",
            Self::SigningKeyNotFound => "SIGNING_KEY_NOT_FOUND",
            Self::Conflict => "CONFLICT",
            Self::ArtifactNotFound => "ARTIFACT_NOT_FOUND",
            Self::ReleaseYanked => "RELEASE_YANKED",
            Self::UsageLimitReached => "USAGE_LIMIT_REACHED",
            Self::MeterNotFound => "METER_NOT_FOUND",
        }
    }

    /// Whether this code reports success.
    pub const fn is_success(self) -> bool {
        matches!(self, Self::Valid)
    }
}

impl fmt::Display for ResultCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_spelling_matches_as_str_for_every_code() {
        for code in ResultCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ResultCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn statuses_follow_the_protocol_table() {
        use ResultCode::*;
        let expected = [
            (Valid, 200),
            (InternalServerError, 500),
            (BadRequest, 400),
            (LicenseNotFound, 404),
            (IpLimitReached, 403),
            (HwidLimitReached, 403),
            (ProductNotFound, 404),
            (CustomerNotFound, 404),
            (LicenseExpired, 403),
            (LicenseSuspended, 403),
            (TeamNotFound, 404),
            (RateLimit, 429),
            (HardwareIdentifierBlacklisted, 403),
            (CountryBlacklisted, 403),
            (IpBlacklisted, 403),
            (ReleaseNotFound, 404),
            (Forbidden, 403),
            (Unauthorized, 401),
            (InvalidSessionKey, 400),
            (NoAccessToRelease, 403),
            (ReleaseArchived, 403),
            (ReleaseDraft, 403),
            (EntitlementsMissing, 403),
            (SessionLimitReached, 403),
            (SessionNotFound, 404),
            (IdempotencyKeyMismatch, 422),
            (IdempotencyKeyInUse, 409),
            (SigningKeyNotFound, 404),
            (Conflict, 409),
            (ArtifactNotFound, 404),
            (ReleaseYanked, 410),
            (UsageLimitReached, 403),
            (MeterNotFound, 404),
        ];
        assert_eq!(expected.len(), ResultCode::ALL.len());
        for (code, status) in expected {
            assert_eq!(code.http_status(), status, "{code}");
        }
    }

    #[test]
    fn there_are_twenty_one_error_codes_of_the_specification_eleven_of_ours_and_valid() {
        let errors = ResultCode::ALL.iter().filter(|c| !c.is_success()).count();
        assert_eq!(errors, 32);
    }
}
