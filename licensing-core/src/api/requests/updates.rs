//! (ext) Requests of the update feeds: the query every feed reads (lenient: updaters append
//! their own parameters), the generic feed's, and the body of a feed token.

use std::borrow::Cow;

use serde::Deserialize;

use super::list::Query;
use super::{finish, parse_json_borrowed, present};
use crate::LicenseKey;
use crate::error::{ApiError, Validator};
use crate::model::{Arch, Platform};
use crate::validate::{BranchName, HardwareId};

/// The query parameters that would carry a license key: refused on every feed, before anything
/// else, since query strings end up in proxies' and servers' logs.
const KEY_PARAMETERS: &[&str] = &["licenseKey", "key", "license", "license_key"];

/// 400 when the query string carries a license key (`licenseKey`, `key`, `license` or
/// `license_key`, in any case).
pub fn refuse_key_in_query(raw_query: &str) -> Result<(), ApiError> {
    let named = form_urlencoded::parse(raw_query.as_bytes()).find(|(name, _)| {
        KEY_PARAMETERS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(name.as_ref()))
    });
    match named {
        Some((name, _)) => Err(ApiError::bad_field(
            name.as_ref(),
            "is refused: a license key in the query string ends up in logs. Send it as Authorization: License <key> or X-License-Key: <key>, or read the feed under a feed token (POST …/updates/{productId}/token, then …/updates/{productId}/t/{token}/…)",
        )),
        None => Ok(()),
    }
}

/// A channel: `stable` unless given (a branch name, or an updater's own name for the default
/// channel).
pub fn channel_of(raw_query: &str) -> Result<String, ApiError> {
    let mut v = Validator::new();
    let q = Query::parse_lenient(raw_query, &["channel"], &mut v);
    let channel = v
        .optional("channel", q.get("channel"), BranchName::parse)
        .flatten();
    finish(v)?;
    Ok(channel.map_or_else(
        || crate::updates::STABLE.to_owned(),
        BranchName::into_string,
    ))
}

/// The query of the generic feed (`latest`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatestQuery {
    /// The version the application runs (none: the newest release is the answer).
    pub version: Option<semver::Version>,
    /// Only releases with an artifact for this platform.
    pub platform: Option<Platform>,
    /// Only releases with an artifact for this architecture (or `universal`).
    pub arch: Option<Arch>,
    /// The channel.
    pub channel: String,
}

impl LatestQuery {
    /// Parses a raw query string.
    pub fn parse(raw_query: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse_lenient(
            raw_query,
            &["version", "platform", "arch", "channel"],
            &mut v,
        );
        let version = v
            .optional("version", q.get("version"), |t| {
                crate::updates::semantic(t).ok_or("must be a semantic version, such as 1.4.0")
            })
            .flatten();
        let platform = v
            .optional("platform", q.get("platform"), Platform::parse)
            .flatten();
        let arch = v.optional("arch", q.get("arch"), Arch::parse).flatten();
        let channel = v
            .optional("channel", q.get("channel"), BranchName::parse)
            .flatten();
        finish(v)?;
        Ok(Self {
            version,
            platform,
            arch,
            channel: channel.map_or_else(
                || crate::updates::STABLE.to_owned(),
                BranchName::into_string,
            ),
        })
    }
}

/// (ext) The parts of an artifact's upload (`multipart/form-data`), as the API documents them;
/// the server reads them as they arrive.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[allow(dead_code)]
pub struct ArtifactParts {
    /// The file: a name with an extension, at most `LICENSING_MAX_ARTIFACT_MB` (2 GiB unless
    /// set).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Binary))]
    pub file: Vec<u8>,
    /// windows, darwin or linux.
    pub platform: String,
    /// x86_64, aarch64, i686, armv7 or universal.
    pub arch: String,
    /// nupkg, dmg, zip, tar.gz, appimage, msi, exe, deb or rpm (default: from the file name).
    pub kind: Option<String>,
    /// The minisign signature a Tauri build writes (the `.sig` file's content).
    pub signature: Option<String>,
    /// Sparkle's `edSignature` (base64).
    pub ed_signature: Option<String>,
}

/// The body of `POST {client}/updates/{productId}/token`, validated.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"licenseKey": "ABCDE-12345-FGHIJ-67890-KLMNO"})))]
#[serde(rename_all = "camelCase")]
pub struct FeedTokenBody {
    /// The license.
    pub license_key: LicenseKey,
    /// The device, for the blacklist (nothing is recorded).
    #[serde(rename = "hardwareIdentifier", skip_serializing_if = "Option::is_none")]
    pub hardware_id: Option<HardwareId>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawFeedToken<'a> {
    #[serde(borrow, default)]
    license_key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    hardware_identifier: Option<Cow<'a, str>>,
}

impl FeedTokenBody {
    /// Parses and validates the body.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let raw: RawFeedToken<'_> = parse_json_borrowed(body)?;
        let mut v = Validator::new();
        let license_key = v.required("licenseKey", raw.license_key, LicenseKey::parse);
        let hardware_id = v
            .optional(
                "hardwareIdentifier",
                raw.hardware_identifier,
                HardwareId::parse,
            )
            .flatten();
        finish(v)?;
        Ok(Self {
            license_key: present(license_key)?,
            hardware_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_in_the_query_is_refused_by_any_of_its_names() {
        for query in [
            "licenseKey=ABCDE",
            "key=1",
            "channel=beta&LICENSE=x",
            "license_key=1",
        ] {
            let e = refuse_key_in_query(query).unwrap_err();
            assert_eq!(e.status(), 400, "{query}");
        }
        refuse_key_in_query("channel=beta&localVersion=1.0.0&id=App").unwrap();
    }

    #[test]
    fn queries_and_bodies_say_what_is_wrong() {
        assert_eq!(channel_of("").unwrap(), "stable");
        assert_eq!(channel_of("channel=beta&arch=x64").unwrap(), "beta");
        assert!(channel_of("channel=no%20spaces").is_err());
        let q = LatestQuery::parse("version=v1.2.0&platform=linux&arch=x86_64").unwrap();
        assert_eq!(q.version.unwrap().to_string(), "1.2.0");
        assert!(LatestQuery::parse("platform=beos").is_err());
        assert!(LatestQuery::parse("version=latest").is_err());
        let body =
            FeedTokenBody::parse(br#"{"licenseKey":"ABCDE-12345-FGHIJ-67890-KLMNO"}"#).unwrap();
        assert!(body.hardware_id.is_none());
        assert!(FeedTokenBody::parse(b"{}").is_err());
        assert!(FeedTokenBody::parse(br#"{"licenseKey":"x","extra":1}"#).is_err());
    }
}
