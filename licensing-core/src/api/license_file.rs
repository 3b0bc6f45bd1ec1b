//! (ext) License files (protocol.md section 6): what a file holds, the developer API's request
//! and answer, and checkout's answer. The bytes of the certificate are
//! [`crypto::license_file`](crate::crypto::license_file)'s.

use serde::{Deserialize, Serialize};

use super::requests::{finish, parse_json};
use super::{VerifyCustomer, VerifyData, VerifyLicense, VerifyProduct};
use crate::error::{ApiError, Validator};
use crate::expiry::Expiration;
use crate::model::License;
use crate::validate::HardwareId;
use crate::{LicenseId, LicenseKey, LicenseSessionId, TeamId, Timestamp};

/// The shortest `ttl` of a license file, in seconds (an hour).
pub const MIN_FILE_TTL: u32 = 3_600;
/// The longest `ttl` of a license file, in seconds (ten years).
pub const MAX_FILE_TTL: u32 = 315_360_000;

/// What a license file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LicenseFilePayload {
    /// When and for whom it was issued.
    pub meta: LicenseFileMeta,
    /// The license, its customers and products, as a verify answers them.
    pub data: LicenseFileData,
}

/// `meta` of a license file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseFileMeta {
    /// When it was issued.
    pub issued: Timestamp,
    /// When it stops being valid: the earliest of `issued` + `ttl` and the license's end (its
    /// expiration date; for a duration whose clock has not started, `issued` + its days);
    /// `null` only for a license that never expires, issued without a `ttl`.
    pub expiry: Option<Timestamp>,
    /// Its time to live in seconds; `null`: as long as the license.
    pub ttl: Option<u32>,
    /// The team.
    pub team_id: TeamId,
    /// The machine it is bound to; `null`: any machine.
    pub hardware_identifier: Option<String>,
    /// (checkout of a license with a `sessionLimit`) The floating session the file holds until
    /// its `expiry`: a seat borrowed for offline use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<LicenseSessionId>,
    /// (with `sessionId`) The license's `sessionLimit` when the seat was borrowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_limit: Option<u32>,
}

/// `data` of a license file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LicenseFileData {
    /// The license: a verify's members and its id, key and suspension.
    pub license: LicenseFileLicense,
    /// Its customers.
    pub customers: Vec<VerifyCustomer>,
    /// Its products.
    pub products: Vec<VerifyProduct>,
}

/// `data.license` of a license file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseFileLicense {
    /// Id.
    pub id: LicenseId,
    /// The license key.
    pub key: LicenseKey,
    /// Whether it was suspended when the file was issued.
    pub suspended: bool,
    /// What a verify answers of it (limits, expiration, metadata, entitlements).
    #[serde(flatten)]
    pub terms: VerifyLicense,
}

impl LicenseFilePayload {
    /// The payload of a file of `license`, whose verify data is `data`, issued `issued` for
    /// `ttl` seconds (none: as long as the license), bound to `machine` when given. Its
    /// `expiry` never passes the license's end ([`file_expiry`]).
    pub fn new(
        license: &License,
        data: VerifyData,
        issued: Timestamp,
        ttl: Option<u32>,
        machine: Option<&HardwareId>,
    ) -> Self {
        Self {
            meta: LicenseFileMeta {
                issued,
                expiry: file_expiry(license, data.license.grace_until, issued, ttl),
                ttl,
                team_id: license.team_id,
                hardware_identifier: machine.map(|m| m.as_str().to_owned()),
                session_id: None,
                session_limit: None,
            },
            data: LicenseFileData {
                license: LicenseFileLicense {
                    id: license.id,
                    key: license.license_key,
                    suspended: license.suspended,
                    terms: data.license,
                },
                customers: data.customers,
                products: data.products,
            },
        }
    }
}

/// When a file of `license` issued at `issued` for `ttl` seconds stops being valid: the earliest
/// of `issued + ttl` and the license's end: `grace_until` while a grace period applies, else
/// [`Expiration::end_for_file`]; `None` only when neither exists.
pub fn file_expiry(
    license: &License,
    grace_until: Option<Timestamp>,
    issued: Timestamp,
    ttl: Option<u32>,
) -> Option<Timestamp> {
    let by_ttl = ttl.map(|t| issued.plus_seconds(t));
    let end = grace_until.or_else(|| Expiration::of(license).end_for_file(issued));
    match (by_ttl, end) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// (ext) `POST {dev}/licenses/id/{licenseId}/file`.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"hardwareIdentifier": "3f1c9a7e5b2d4c6f", "ttl": 2592000, "encrypt": true})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LicenseFileBody {
    /// The machine to bind the file to (10 to 1,000 characters); left out: any machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_identifier: Option<String>,
    /// Seconds the file is valid, 3,600 to 315,360,000; left out or `null`: as long as the
    /// license.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// Whether to encrypt the payload (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypt: Option<bool>,
    /// With `hardwareIdentifier`: record the machine past the license's device limit (default
    /// `false`: a machine the limit leaves no room for is refused with `HWID_LIMIT_REACHED`).
    /// Audited either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_device_limit: Option<bool>,
}

/// A validated [`LicenseFileBody`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LicenseFileRequest {
    /// The machine.
    pub hardware_id: Option<HardwareId>,
    /// Seconds it is valid.
    pub ttl: Option<u32>,
    /// Whether to encrypt.
    pub encrypt: bool,
    /// Whether the machine may pass the device limit.
    pub override_device_limit: bool,
}

/// Checks a file's `ttl`.
pub fn file_ttl(ttl: i64) -> Result<u32, String> {
    u32::try_from(ttl)
        .ok()
        .filter(|t| (MIN_FILE_TTL..=MAX_FILE_TTL).contains(t))
        .ok_or_else(|| {
            format!("must be {MIN_FILE_TTL} to {MAX_FILE_TTL} seconds, or null for as long as the license (got {ttl})")
        })
}

impl LicenseFileBody {
    /// Parses and validates an (optional, may be empty) body.
    pub fn parse(body: &[u8]) -> Result<LicenseFileRequest, ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Self::default().validate();
        }
        parse_json::<Self>(body)?.validate()
    }

    /// Validates.
    pub fn validate(self) -> Result<LicenseFileRequest, ApiError> {
        let mut v = Validator::new();
        let hardware_id = v.optional(
            "hardwareIdentifier",
            self.hardware_identifier.as_deref(),
            HardwareId::parse,
        );
        let ttl = self.ttl.and_then(|t| v.check("ttl", file_ttl(t)));
        let override_device_limit = self.override_device_limit.unwrap_or(false);
        if override_device_limit && self.hardware_identifier.is_none() {
            v.push(
                "overrideDeviceLimit",
                "is for a file bound to a machine: send hardwareIdentifier with it",
            );
        }
        finish(v)?;
        Ok(LicenseFileRequest {
            hardware_id: hardware_id.flatten(),
            ttl,
            encrypt: self.encrypt.unwrap_or(true),
            override_device_limit,
        })
    }
}

/// (ext) The answer of `POST {dev}/licenses/id/{licenseId}/file`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseFileIssued {
    /// The license file (armored text).
    pub certificate: String,
    /// When it was issued.
    pub issued_at: Timestamp,
    /// When it stops being valid (never after the license's end); `null`: never (a license
    /// that never expires, issued without a `ttl`).
    pub expires_at: Option<Timestamp>,
    /// The machine it is bound to; `null`: any.
    pub hardware_identifier: Option<String>,
    /// (ext) Whether the machine was recorded past the license's device limit, as the request
    /// said to (`overrideDeviceLimit`).
    #[serde(default)]
    pub device_limit_overridden: bool,
}

/// `data.licenseFile` of a checkout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CheckedOutFile {
    /// The license file, bound to the machine and encrypted.
    pub certificate: String,
    /// When it was issued.
    pub issued_at: Timestamp,
    /// When it stops being valid: the `ttl` asked, at most the team's `checkoutMaxTtl`, and
    /// never after the license's end (always set).
    pub expires_at: Option<Timestamp>,
    /// (a license with a `sessionLimit`) The session whose seat the file holds until
    /// `expiresAt`; it is listed and may be revoked like any session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<LicenseSessionId>,
}

/// (ext) `data` of a checkout: a verify's, and the license file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CheckoutData {
    /// What a verify answers.
    #[serde(flatten)]
    pub verify: VerifyData,
    /// The file.
    pub license_file: CheckedOutFile,
}
