//! The certificate of a license file (protocol.md section 6): a license's verify answer signed
//! with the team's active Ed25519 key and, by default, encrypted under its license key (and
//! machine). The client API's checkout issues one for the machine that asks; the developer API
//! and the dashboard issue them through `IssueLicenseFile`.

use licensing_core::api::{LicenseFilePayload, VerifyData};
use licensing_core::crypto::license_file;
use licensing_core::model::License;
use licensing_core::validate::HardwareId;
use licensing_core::{ApiError, LicenseSessionId, Timestamp};

use crate::runtime::contexts::TeamContext;

/// The certificate of a file of `license` (whose verify answer is `data`) and what it holds:
/// valid for `ttl` seconds (never past the license's end), holding `seat` (a session and the
/// license's `sessionLimit`) when a checkout lent it one.
pub(crate) fn certificate(
    context: &TeamContext,
    license: &License,
    data: VerifyData,
    machine: Option<&HardwareId>,
    (ttl, seat): (Option<u32>, Option<(LicenseSessionId, u32)>),
    encrypt: bool,
    now: Timestamp,
) -> Result<(String, LicenseFilePayload), ApiError> {
    let mut payload = LicenseFilePayload::new(license, data, now, ttl, machine);
    if let Some((session, limit)) = seat {
        payload.meta.session_id = Some(session);
        payload.meta.session_limit = Some(limit);
    }
    let json = serde_json::to_vec(&payload)
        .map_err(|e| ApiError::internal_because("license file payload", e))?;
    let certificate = license_file::issue(
        &context.keys,
        &json,
        license.license_key.as_str(),
        machine.map(HardwareId::as_str),
        encrypt,
    )
    .map_err(|e| ApiError::internal_because("issuing a license file", e))?;
    Ok((certificate, payload))
}
