//! Request bodies and query strings, parsed into validated values.
//!
//! Each body is deserialized leniently as to values (ids, enums and dates as text, numbers as
//! signed integers) and strictly as to shape (unknown members are rejected, naming them), then
//! validated field by field so that one answer lists every problem.

mod audit;
mod bulk;
mod client;
mod customer;
mod entitlement;
mod integration;
mod license;
mod list;
mod meters;
mod policy;
mod product;
mod release;
mod request_log;
mod team;
mod updates;
mod usage;
mod webhook;

pub use audit::{ActorFilter, AuditQuery};
pub use bulk::{BulkAction, BulkLicenseBody, MAX_BULK_LICENSES};
pub use client::{
    ClassloaderQuery, ClientBody, SessionEndBody, USAGE_CLOCK_SKEW_MS, UsageBody, UsageEvent,
    UsageRequest,
};
pub use customer::{CustomerBody, CustomerInput, PortalSessionBody};
pub use entitlement::{EntitlementBody, EntitlementInput};
pub use integration::{InboundQuery, IntegrationBody, IntegrationInput, RawMatch, RuleBody};
pub use license::{
    ExpirationAsk, ExtendBody, LicenseCreate, LicenseUpdate, MAX_EXTENSION_DAYS, NewLicense,
    SuspendBody,
};
pub use list::{
    CustomerListQuery, CustomerSort, DeviceListQuery, DeviceSort, EntitlementFilter,
    EntitlementListQuery, EntitlementSort, ExpiresWithin, ExpiryFilter, LicenseFilter,
    LicenseListQuery, LicenseSort, ListQuery, Paging, PolicyListQuery, PolicySort, ProductFilter,
    ProductListQuery, ProductSort, ReleaseFilter, ReleaseListQuery, ReleaseSort, SortDirection,
    parse_no_query,
};
pub use meters::RawMeter;
pub use policy::{DetachQuery, PolicyBody, PolicyInput, RawResets};
pub use product::{BranchBody, ProductBody, ProductInput};
pub use release::{FeedChange, MAX_NOTES, ReleaseData, ReleaseInput, ReleaseMode};
pub use request_log::RequestLogQuery;
pub use team::{
    AdminTeamBody, ApiKeyBody, ApiKeyInput, BlacklistBody, BlacklistInput, FeaturesBody,
    ForgottenBody, PasswordLinkBody, SettingsBody, StaffBody,
};
pub use updates::{ArtifactParts, FeedTokenBody, LatestQuery, channel_of, refuse_key_in_query};
pub use usage::{AdjustUsageBody, MAX_USAGE_DELTA, MAX_USAGE_REASON, ResetUsageBody};
pub use webhook::{WebhookBody, WebhookInput, parse_delivery_query, parse_paging_query};

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{ApiError, ValidationErrors, Validator};
use crate::ids::parse_uuid;
use crate::model::MetadataItem;
use crate::time::Timestamp;
use crate::validate::check_length;

/// Largest JSON request body, in bytes.
pub const MAX_JSON_BODY: usize = 1024 * 1024;
/// Most metadata items on one record.
pub const MAX_METADATA_ITEMS: usize = 20;
/// Most ids in one list of a body (`customerIds`, `productIds`, `licenseIds` of licenses).
pub const MAX_IDS: usize = 100;
/// Largest license limit (`ipLimit`, `hwidLimit`).
pub const MAX_LIMIT: i64 = 1_000_000;
/// Longest duration, in days.
pub const MAX_DAYS: i64 = 100_000;

/// Parses a JSON body into `T`, turning every serde error into a 400 that names the member.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.len() > MAX_JSON_BODY {
        return Err(ApiError::payload_too_large(
            "Request body is larger than 1 MiB",
        ));
    }
    check_object(body)?;
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(json_error)?;
    end_of_body(&mut de)?;
    Ok(value)
}

/// The body of an action that takes none: empty (white space alone) or `{}`; anything else is
/// 400, naming the members it does not take, so that a client that meant to send options
/// learns they are not read.
pub fn parse_empty_body(body: &[u8]) -> Result<(), ApiError> {
    /// An object with no members.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Nothing {}
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    parse_json::<Nothing>(body).map(drop)
}

/// Like [`parse_json`] for bodies whose `T` borrows from the input (the client hot path).
pub fn parse_json_borrowed<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    if body.len() > MAX_JSON_BODY {
        return Err(ApiError::payload_too_large(
            "Request body is larger than 1 MiB",
        ));
    }
    check_object(body)?;
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(json_error)?;
    end_of_body(&mut de)?;
    Ok(value)
}

/// Only whitespace may follow the JSON value: `{…} garbage` and `{}{}` are refused, so that
/// what a proxy or a log sees as the body is exactly what was judged.
fn end_of_body(
    de: &mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>,
) -> Result<(), ApiError> {
    de.end().map_err(|e| {
        ApiError::bad_field(
            "body",
            &format!("must hold one JSON value and nothing after it ({e})"),
        )
    })
}

fn check_object(body: &[u8]) -> Result<(), ApiError> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        None => Err(ApiError::bad_field(
            "body",
            "is required: send a JSON object",
        )),
        Some(b'{') => Ok(()),
        Some(_) => Err(ApiError::bad_field("body", "must be a JSON object")),
    }
}

fn json_error(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let inner = e.inner();
    let message = inner.to_string();
    // serde_json appends " at line L column C"; keep it for syntax errors only.
    let message = if inner.is_syntax() || inner.is_eof() {
        format!("is not valid JSON: {message}")
    } else {
        message
            .rsplit_once(" at line ")
            .map_or(message.clone(), |(m, _)| m.to_owned())
    };
    if let Some(name) = unknown_member(&message) {
        // The path already ends with the unknown member.
        let field = if path == "." { name.to_owned() } else { path };
        return ApiError::validation(ValidationErrors::single(
            field,
            format!("is not a known member ({message})"),
        ));
    }
    let field = if path == "." || inner.is_syntax() || inner.is_eof() {
        "body".to_owned()
    } else {
        path
    };
    ApiError::validation(ValidationErrors::single(field, message))
}

fn unknown_member(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(name, _)| name)
}

/// A member of a PUT body: left out (keep the stored value), `null` (clear it), or a value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Patch<T> {
    /// Not in the body.
    #[default]
    Missing,
    /// `null`.
    Null,
    /// A value.
    Value(T),
}

impl<T> Patch<T> {
    /// Whether the member was in the body (as a value or `null`).
    pub fn is_present(&self) -> bool {
        !matches!(self, Patch::Missing)
    }

    /// Whether the member was left out (the SDK then leaves it out of the JSON).
    pub fn is_missing(&self) -> bool {
        matches!(self, Patch::Missing)
    }

    /// The value, if one was given.
    pub fn value(&self) -> Option<&T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<T> From<Option<T>> for Patch<T> {
    /// `Some` sets a value, `None` sends `null` (clears it).
    fn from(value: Option<T>) -> Self {
        value.map_or(Patch::Null, Patch::Value)
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    /// A value as itself, `Null` (and `Missing`, which callers skip) as `null`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Patch::Value(v) => v.serialize(serializer),
            Patch::Null | Patch::Missing => serializer.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            None => Patch::Null,
            Some(v) => Patch::Value(v),
        })
    }
}

/// A metadata item as it arrives (and as the SDK sends it).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RawMetadata {
    /// `key`.
    pub key: String,
    /// `value`.
    pub value: String,
    /// `locked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked: Option<bool>,
}

impl RawMetadata {
    /// An unlocked item.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            locked: None,
        }
    }
}

/// Validates metadata: at most 20 items, keys 1 to 255 characters and unique, values at most
/// 1000 characters.
pub(crate) fn metadata(
    v: &mut Validator,
    field: &str,
    items: Vec<RawMetadata>,
) -> Vec<MetadataItem> {
    if items.len() > MAX_METADATA_ITEMS {
        v.push(
            field,
            format!(
                "must have at most {MAX_METADATA_ITEMS} items (got {})",
                items.len()
            ),
        );
        return Vec::new();
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let ok_key = v
            .check(
                &format!("{field}[{i}].key"),
                check_length(&item.key, 1, 255),
            )
            .is_some();
        if ok_key && !seen.insert(item.key.clone()) {
            v.push(
                format!("{field}[{i}].key"),
                format!("duplicates the key {:?}", item.key),
            );
        }
        v.check(
            &format!("{field}[{i}].value"),
            check_length(&item.value, 0, 1000),
        );
        out.push(MetadataItem {
            key: item.key,
            value: item.value,
            locked: item.locked.unwrap_or(false),
        });
    }
    out
}

/// Parses a list of ids, each named by its index; duplicates are dropped.
pub(crate) fn id_list<Id: From<uuid::Uuid> + PartialEq>(
    v: &mut Validator,
    field: &str,
    raw: &[String],
    max: usize,
) -> Vec<Id> {
    if raw.len() > max {
        v.push(
            field,
            format!("must have at most {max} ids (got {})", raw.len()),
        );
        return Vec::new();
    }
    let mut out: Vec<Id> = Vec::with_capacity(raw.len());
    for (i, text) in raw.iter().enumerate() {
        if let Some(uuid) = v.check(&format!("{field}[{i}]"), parse_uuid(text)) {
            let id = Id::from(uuid);
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}

/// An integer in `min..=max`.
pub(crate) fn int_in(value: i64, min: i64, max: i64) -> Result<u32, String> {
    if value < min || value > max {
        return Err(if value < min {
            format!("must be at least {min} (got {value})")
        } else {
            format!("must be at most {max} (got {value})")
        });
    }
    u32::try_from(value).map_err(|_| format!("must be at most {max}"))
}

/// A date-time strictly after `now`.
pub(crate) fn future_date(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let at = Timestamp::parse(text).map_err(|e| e.to_string())?;
    if at <= now {
        return Err("must be in the future".into());
    }
    Ok(at)
}

/// Parses one of the given upper-case values.
pub(crate) fn one_of<T: Copy>(text: &str, options: &[(&str, T)]) -> Result<T, String> {
    options
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, value)| *value)
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            format!("must be one of {}", names.join(", "))
        })
}

/// Reports `null` where a value is required.
pub(crate) fn not_null<T>(v: &mut Validator, field: &str, patch: Patch<T>) -> Option<T> {
    match patch {
        Patch::Missing => None,
        Patch::Null => {
            v.push(field, "must not be null");
            None
        }
        Patch::Value(x) => Some(x),
    }
}

/// A value the validator accepted. After [`Validator::finish`] succeeded every checked value is
/// present; a `None` here would be a check that failed without saying why, a bug that is
/// answered as 500 rather than a panic.
pub(crate) fn present<T>(value: Option<T>) -> Result<T, ApiError> {
    value.ok_or_else(ApiError::internal)
}

/// A member that `null` clears: `None` when left out, `Some(None)` for `null`, `Some(Some(v))`
/// for a value `check` accepts (a refused one is a problem of `v`, and `None`).
pub(crate) fn clearable<T>(
    v: &mut Validator,
    field: &str,
    patch: Patch<i64>,
    check: impl Fn(i64) -> Result<T, String>,
) -> Option<Option<T>> {
    match patch {
        Patch::Missing => None,
        Patch::Null => Some(None),
        Patch::Value(n) => v.check(field, check(n)).map(Some),
    }
}

/// Turns collected problems into the 400 answer.
pub(crate) fn finish(v: Validator) -> Result<(), ApiError> {
    v.finish().map_err(ApiError::validation)
}

/// Field errors for tests: `(field, message)` pairs.
#[cfg(test)]
pub(crate) fn problems(e: &ApiError) -> Vec<(String, String)> {
    e.field_errors()
        .iter()
        .map(|crate::FieldError { field, message }| (field.clone(), message.clone()))
        .collect()
}
