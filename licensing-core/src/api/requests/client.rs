use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::list::Query;
use super::{finish, parse_json_borrowed, present};
use crate::error::{ApiError, Validator};
use crate::model::{
    MAX_REQUESTED_ENTITLEMENTS, MAX_USAGE_BATCH, MAX_USAGE_QUANTITY, usage_event_id,
};
use crate::validate::{
    BranchName, Challenge, DeviceName, DevicePlatform, HardwareId, SessionKeyText, Version,
};
use crate::verify::RequestKind;
use crate::{CustomerId, LicenseKey, LicenseSessionId, ProductId, Timestamp};

/// The body of `verify` and `heartbeat`, validated. The server parses it; clients (the SDK)
/// build and serialize it: members left `None` are left out of the JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"licenseKey": "ABCDE-12345-FGHIJ-67890-KLMNO", "hardwareIdentifier": "3f1c9a7e5b2d4c6f", "productId": "6f9619ff-8b86-4011-b42d-00c04fc964ff", "challenge": "a3f9c1e07b5d42e8", "version": "1.2.0"})))]
#[serde(rename_all = "camelCase")]
pub struct ClientBody {
    /// The license.
    pub license_key: LicenseKey,
    /// The device (required for heartbeat, and for verify when the license limits devices).
    #[serde(rename = "hardwareIdentifier", skip_serializing_if = "Option::is_none")]
    pub hardware_id: Option<HardwareId>,
    /// The customer the client claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub customer_id: Option<CustomerId>,
    /// The product the client runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_id: Option<ProductId>,
    /// The challenge to sign.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub challenge: Option<Challenge>,
    /// The software version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    /// The product branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchName>,
    /// (ext) Entitlement codes the application needs (at most 100): a license that lacks one
    /// is refused with `ENTITLEMENTS_MISSING`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entitlements: Option<Vec<String>>,
    /// (ext) Checkout only: seconds the license file is valid (at least 3,600; left out or
    /// `null`: the team's `checkoutMaxTtl`, which also caps a longer one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u32>,
    /// (ext) Heartbeat only: the floating session the heartbeat extends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<LicenseSessionId>,
    /// (ext) What the device is called (such as its host name), 1 to 100 characters, shown to
    /// the vendor's staff beside the device; `hostname` is an alias. Needs
    /// `hardwareIdentifier`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_name: Option<DeviceName>,
    /// (ext) The device's operating system (such as `windows 11`), 1 to 64 characters. Needs
    /// `hardwareIdentifier`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<DevicePlatform>,
}

/// Which client endpoint a body is for: what it requires and what it takes besides a verify's
/// members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Verify,
    Heartbeat,
    Checkout,
    SessionStart,
    Usage,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawClientBody<'a> {
    #[serde(borrow, default)]
    license_key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    hardware_identifier: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    device_identifier: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    customer_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    product_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    challenge: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    branch: Option<Cow<'a, str>>,
    #[serde(default)]
    entitlements: Option<Vec<String>>,
    #[serde(default)]
    ttl: Option<i64>,
    #[serde(borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    device_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    hostname: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    platform: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    meter: Option<Cow<'a, str>>,
    #[serde(default)]
    quantity: Option<i64>,
    #[serde(borrow, default)]
    event_id: Option<Cow<'a, str>>,
    #[serde(default)]
    events: Option<Vec<RawUsageEvent>>,
}

/// One event of a usage batch as it arrives.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawUsageEvent {
    #[serde(default)]
    meter: Option<String>,
    #[serde(default)]
    quantity: Option<i64>,
    #[serde(default)]
    event_id: Option<String>,
    #[serde(default)]
    at: Option<String>,
}

impl ClientBody {
    /// A body naming only the license.
    pub fn new(license_key: LicenseKey) -> Self {
        Self {
            license_key,
            hardware_id: None,
            customer_id: None,
            product_id: None,
            challenge: None,
            version: None,
            branch: None,
            entitlements: None,
            ttl: None,
            session_id: None,
            device_name: None,
            platform: None,
        }
    }

    /// (ext) What the body calls its device, to record beside the device's record.
    pub fn label(&self) -> crate::model::DeviceLabel {
        crate::model::DeviceLabel {
            name: self.device_name.clone(),
            platform: self.platform.clone(),
        }
    }

    /// Parses and validates a verify (`kind` = `Verify`) or heartbeat body.
    pub fn parse(kind: RequestKind, body: &[u8]) -> Result<Self, ApiError> {
        Self::parse_as(
            if kind == RequestKind::Heartbeat {
                Endpoint::Heartbeat
            } else {
                Endpoint::Verify
            },
            body,
        )
    }

    /// (ext) Parses and validates a checkout body: a verify's with `hardwareIdentifier`
    /// required, and `ttl`.
    pub fn parse_checkout(body: &[u8]) -> Result<Self, ApiError> {
        Self::parse_as(Endpoint::Checkout, body)
    }

    /// (ext) Parses and validates a session start's body: a verify's with
    /// `hardwareIdentifier` required.
    pub fn parse_session_start(body: &[u8]) -> Result<Self, ApiError> {
        Self::parse_as(Endpoint::SessionStart, body)
    }

    fn parse_as(endpoint: Endpoint, body: &[u8]) -> Result<Self, ApiError> {
        let raw: RawClientBody<'_> = parse_json_borrowed(body)?;
        let mut v = Validator::new();
        for (field, given) in [
            ("meter", raw.meter.is_some()),
            ("quantity", raw.quantity.is_some()),
            ("eventId", raw.event_id.is_some()),
            ("events", raw.events.is_some()),
        ] {
            if given {
                v.push(field, "is taken by usage only");
            }
        }
        Self::from_raw(endpoint, raw, v)
    }

    /// The body's members checked (with the problems `v` noted already), then all of them
    /// reported at once.
    fn from_raw(
        endpoint: Endpoint,
        raw: RawClientBody<'_>,
        mut v: Validator,
    ) -> Result<Self, ApiError> {
        let license_key = v.required("licenseKey", raw.license_key, LicenseKey::parse);
        let hardware = one_device_name(raw.hardware_identifier, raw.device_identifier, &mut v);
        let optional_device = matches!(endpoint, Endpoint::Verify | Endpoint::Usage);
        let hardware_id = if optional_device || v.noted("deviceIdentifier") {
            // (A conflict between the two names was recorded: the identifier was sent.)
            v.optional("hardwareIdentifier", hardware, HardwareId::parse)
        } else {
            v.required("hardwareIdentifier", hardware, HardwareId::parse)
                .map(Some)
        };
        let customer_id = v.optional("customerId", raw.customer_id, CustomerId::parse);
        let product_id = v.optional("productId", raw.product_id, ProductId::parse);
        let challenge = v.optional("challenge", raw.challenge, Challenge::parse);
        let version = v.optional("version", raw.version, Version::parse);
        let branch = v.optional("branch", raw.branch, BranchName::parse);
        if let Some(codes) = &raw.entitlements {
            if codes.len() > MAX_REQUESTED_ENTITLEMENTS {
                v.push(
                    "entitlements",
                    format!(
                        "must have at most {MAX_REQUESTED_ENTITLEMENTS} codes (got {})",
                        codes.len()
                    ),
                );
            }
            for (i, code) in codes.iter().enumerate() {
                if !(1..=64).contains(&code.len()) {
                    v.push(
                        format!("entitlements[{i}]"),
                        "must be an entitlement code of 1 to 64 characters",
                    );
                }
            }
        }
        let ttl = match raw.ttl {
            None => None,
            Some(_) if endpoint != Endpoint::Checkout => {
                v.push("ttl", "is taken by checkout only");
                None
            }
            Some(t) => v.check("ttl", checkout_ttl(t)),
        };
        let session_id = match raw.session_id {
            None => None,
            Some(_) if endpoint != Endpoint::Heartbeat => {
                v.push(
                    "sessionId",
                    "is taken by heartbeat only (a session ends at verification/sessions/end)",
                );
                None
            }
            Some(id) => v.check("sessionId", session_id(&id)),
        };
        let device_name = match (raw.device_name, raw.hostname) {
            (Some(n), Some(h)) if n != h => {
                v.push(
                    "hostname",
                    "differs from deviceName, of which it is an alias: send one of them",
                );
                None
            }
            (n, h) => v.optional("deviceName", n.or(h), DeviceName::parse),
        };
        let platform = v.optional("platform", raw.platform, DevicePlatform::parse);
        let labelled = raw_some(&device_name) || raw_some(&platform);
        if labelled && hardware_id.as_ref().is_some_and(Option::is_none) {
            v.push(
                if raw_some(&device_name) {
                    "deviceName"
                } else {
                    "platform"
                },
                "labels a device: send hardwareIdentifier with it",
            );
        }
        finish(v)?;
        Ok(Self {
            device_name: present(device_name)?,
            platform: present(platform)?,
            license_key: present(license_key)?,
            hardware_id: present(hardware_id)?,
            customer_id: present(customer_id)?,
            product_id: present(product_id)?,
            challenge: present(challenge)?,
            version: present(version)?,
            branch: present(branch)?,
            entitlements: raw.entitlements,
            ttl,
            session_id,
        })
    }
}

/// (ext) The body of `POST {client}/usage`, validated: a verify's members (the license, the
/// device, the product…) and what to count, one event (`meter`, `quantity`, `eventId`) or a
/// batch (`events`, each with its own `at` for usage reported late).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageBody {
    /// The verify's members.
    pub client: ClientBody,
    /// The events, in order.
    pub events: Vec<UsageEvent>,
    /// Whether the body was a batch (`events`): the answer holds one result per event.
    pub batch: bool,
}

/// (ext) One usage event as a client reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageEvent {
    /// The meter's code.
    pub meter: String,
    /// How much, 1 to 1,000,000.
    pub quantity: u64,
    /// The client's id of the event (1 to 255 visible ASCII characters): a retry within 24
    /// hours answers the first answer and counts nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// (batch) When it was used; left out: now. Not in the future.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
}

/// (ext) `POST {client}/usage` as a client sends it: a verify's members and one event
/// (`meter`, `quantity`, `eventId`) or a batch (`events`). The server parses it as a
/// [`UsageBody`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"licenseKey": "ABCDE-12345-FGHIJ-67890-KLMNO", "hardwareIdentifier": "3f1c9a7e5b2d4c6f", "meter": "EXPORTS", "quantity": 1, "eventId": "export-7f3a91"})))]
#[serde(rename_all = "camelCase")]
pub struct UsageRequest {
    /// The verify's members.
    #[serde(flatten)]
    pub client: ClientBody,
    /// One event: the meter's code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meter: Option<String>,
    /// One event: how much, 1 to 1,000,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantity: Option<u64>,
    /// One event: its id (1 to 255 visible ASCII characters); a retry within 24 hours answers
    /// the first answer and counts nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// A batch (instead of the three above): 1 to 1,000 events, each counted in the period of
    /// its `at`, each answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<UsageEvent>>,
}

/// How far ahead of the server's clock a batch event's `at` may be (clients' clocks drift).
pub const USAGE_CLOCK_SKEW_MS: i64 = 5 * 60_000;

impl UsageBody {
    /// Parses and validates a usage body (events' times checked against `now`).
    pub fn parse(body: &[u8], now: Timestamp) -> Result<Self, ApiError> {
        let mut raw: RawClientBody<'_> = parse_json_borrowed(body)?;
        let mut v = Validator::new();
        let single = (raw.meter.take(), raw.quantity.take(), raw.event_id.take());
        let batch = raw.events.take();
        let events = match (single, batch) {
            ((None, None, None), Some(events)) => {
                if events.is_empty() || events.len() > MAX_USAGE_BATCH {
                    v.push(
                        "events",
                        format!(
                            "must hold 1 to {MAX_USAGE_BATCH} events (got {}): send more in several batches",
                            events.len()
                        ),
                    );
                }
                let checked: Vec<Option<UsageEvent>> = events
                    .into_iter()
                    .take(MAX_USAGE_BATCH)
                    .enumerate()
                    .map(|(i, e)| {
                        let at = |m: &str| format!("events[{i}].{m}");
                        let when =
                            e.at.as_deref()
                                .and_then(|t| v.check(&at("at"), event_time(t, now)));
                        usage_event(
                            &mut v,
                            &at,
                            (e.meter.as_deref(), e.quantity, e.event_id.as_deref()),
                        )
                        .map(|ev| UsageEvent { at: when, ..ev })
                    })
                    .collect();
                Some((checked, true))
            }
            ((meter, quantity, event_id), None) => {
                let event = usage_event(
                    &mut v,
                    &|m: &str| m.to_owned(),
                    (meter.as_deref(), quantity, event_id.as_deref()),
                );
                Some((vec![event], false))
            }
            (_, Some(_)) => {
                v.push(
                    "events",
                    "is a batch: send meter, quantity and eventId inside each event, not beside events",
                );
                None
            }
        };
        let client = ClientBody::from_raw(Endpoint::Usage, raw, v)?;
        let (events, batch) = events.unwrap_or_default();
        Ok(Self {
            client,
            events: events.into_iter().flatten().collect(),
            batch,
        })
    }
}

/// One event's members checked, each problem named by `at(member)`.
fn usage_event(
    v: &mut Validator,
    at: &dyn Fn(&str) -> String,
    (meter, quantity, event_id): (Option<&str>, Option<i64>, Option<&str>),
) -> Option<UsageEvent> {
    let meter = v.required(&at("meter"), meter, crate::model::entitlement_code);
    let quantity = match quantity {
        None => {
            v.push(at("quantity"), "is required");
            None
        }
        Some(q) => v.check(
            &at("quantity"),
            u64::try_from(q)
                .ok()
                .filter(|q| (1..=MAX_USAGE_QUANTITY).contains(q))
                .ok_or_else(|| {
                    format!(
                        "must be 1 to {MAX_USAGE_QUANTITY} (got {q}): report more in several events"
                    )
                }),
        ),
    };
    let event_id = event_id.and_then(|id| v.check(&at("eventId"), usage_event_id(id)));
    Some(UsageEvent {
        meter: meter?,
        quantity: quantity?,
        event_id,
        at: None,
    })
}

/// A batch event's time: RFC 3339, not after `now` (give or take the clocks' drift).
fn event_time(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let at = Timestamp::parse(text)
        .map_err(|_| "must be an RFC 3339 time such as 2026-03-18T10:00:00Z".to_owned())?;
    if at.as_millis() > now.as_millis() + USAGE_CLOCK_SKEW_MS {
        return Err(format!(
            "is in the future ({text}): report usage once it happened"
        ));
    }
    Ok(at)
}

/// Whether an optional member was sent and valid.
fn raw_some<T>(checked: &Option<Option<T>>) -> bool {
    matches!(checked, Some(Some(_)))
}

/// The device's identifier from `hardwareIdentifier` and its alias `deviceIdentifier`: either
/// one, or both when they are equal (some clients send both); both with different values is a
/// problem recorded in `v`.
fn one_device_name<T: AsRef<str>>(
    hardware: Option<T>,
    device: Option<T>,
    v: &mut Validator,
) -> Option<T> {
    match (hardware, device) {
        (Some(h), Some(d)) if h.as_ref() != d.as_ref() => {
            v.push(
                "deviceIdentifier",
                "differs from hardwareIdentifier, of which it is an alias: send one of them, or the same value in both",
            );
            None
        }
        (h, d) => h.or(d),
    }
}

/// A checkout's `ttl`: at least an hour; a longer one than the team allows is cut to its
/// `checkoutMaxTtl` when the file is issued.
fn checkout_ttl(ttl: i64) -> Result<u32, String> {
    if ttl < i64::from(crate::api::MIN_FILE_TTL) {
        return Err(format!(
            "must be at least {} seconds (got {ttl}); leave it out for the longest the team allows",
            crate::api::MIN_FILE_TTL
        ));
    }
    Ok(u32::try_from(ttl).unwrap_or(u32::MAX))
}

fn session_id(text: &str) -> Result<LicenseSessionId, String> {
    LicenseSessionId::parse(text).map_err(|_| "must be a session id (a UUID)".to_owned())
}

/// (ext) The body of `verification/sessions/end`, validated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"licenseKey": "ABCDE-12345-FGHIJ-67890-KLMNO", "sessionId": "0b8f6c1e-3d2a-4f5b-9c7e-1a2b3c4d5e6f"})))]
#[serde(rename_all = "camelCase")]
pub struct SessionEndBody {
    /// The license.
    pub license_key: LicenseKey,
    /// The session to end.
    pub session_id: LicenseSessionId,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSessionEnd<'a> {
    #[serde(borrow, default)]
    license_key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    session_id: Option<Cow<'a, str>>,
}

impl SessionEndBody {
    /// Parses and validates the body.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let raw: RawSessionEnd<'_> = parse_json_borrowed(body)?;
        let mut v = Validator::new();
        let license_key = v.required("licenseKey", raw.license_key, LicenseKey::parse);
        let session_id = v.required("sessionId", raw.session_id, session_id);
        finish(v)?;
        Ok(Self {
            license_key: present(license_key)?,
            session_id: present(session_id)?,
        })
    }
}

/// The query of `classloader`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassloaderQuery {
    /// The license.
    pub license_key: LicenseKey,
    /// The product whose release to serve.
    pub product_id: ProductId,
    /// The encrypted session key, checked later with its own code.
    pub session_key: SessionKeyText,
    /// The device.
    pub hardware_id: HardwareId,
    /// A specific version (else the latest of the branch).
    pub version: Option<Version>,
    /// The branch.
    pub branch: Option<BranchName>,
    /// The customer the client claims.
    pub customer_id: Option<CustomerId>,
}

impl ClassloaderQuery {
    const KNOWN: &'static [&'static str] = &[
        "licenseKey",
        "productId",
        "sessionKey",
        "hardwareIdentifier",
        "deviceIdentifier",
        "version",
        "branch",
        "customerId",
    ];

    /// Parses a raw (URL-encoded) query string.
    pub fn parse(raw_query: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse_lenient(raw_query, Self::KNOWN, &mut v);
        if v.noted("query") {
            // A query that does not decode names no parameter: what is wrong with it is all
            // there is to say (not that every parameter is missing).
            return Err(finish(v).err().unwrap_or_else(ApiError::internal));
        }
        let hardware = one_device_name(
            q.get("hardwareIdentifier"),
            q.get("deviceIdentifier"),
            &mut v,
        );
        let license_key = v.required("licenseKey", q.get("licenseKey"), LicenseKey::parse);
        let product_id = v.required("productId", q.get("productId"), ProductId::parse);
        let session_key = v.required("sessionKey", q.get("sessionKey"), SessionKeyText::parse);
        let hardware_id = if v.noted("deviceIdentifier") {
            // Both names were sent, with different values: that is the problem, not a
            // missing identifier.
            None
        } else {
            v.required("hardwareIdentifier", hardware, HardwareId::parse)
        };
        let version = v.optional("version", q.get("version"), Version::parse);
        let branch = v.optional("branch", q.get("branch"), BranchName::parse);
        let customer_id = v.optional("customerId", q.get("customerId"), CustomerId::parse);
        finish(v)?;
        Ok(Self {
            license_key: present(license_key)?,
            product_id: present(product_id)?,
            session_key: present(session_key)?,
            hardware_id: present(hardware_id)?,
            version: present(version)?,
            branch: present(branch)?,
            customer_id: present(customer_id)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::problems;
    use super::*;

    const KEY: &str = "ABCDE-12345-FGHIJ-67890-KLMNO";
    const UUID: &str = "6f9619ff-8b86-4011-b42d-00c04fc964ff";

    fn verify(body: &str) -> Result<ClientBody, ApiError> {
        ClientBody::parse(RequestKind::Verify, body.as_bytes())
    }

    #[test]
    fn a_full_verify_body_parses() {
        let body = format!(
            r#"{{"licenseKey":"{KEY}","hardwareIdentifier":"device-0001","customerId":"{UUID}",
               "productId":"{UUID}","challenge":"challenge-123","version":"1.0.0","branch":"main"}}"#
        );
        let b = verify(&body).unwrap();
        assert_eq!(b.license_key.as_str(), KEY);
        assert_eq!(b.hardware_id.unwrap().as_str(), "device-0001");
        assert_eq!(b.branch.unwrap().as_str(), "main");
    }

    #[test]
    fn a_built_body_serializes_to_what_the_parser_reads() {
        let mut body = ClientBody::new(LicenseKey::parse(KEY).unwrap());
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            format!(r#"{{"licenseKey":"{KEY}"}}"#)
        );
        body.hardware_id = Some(HardwareId::parse("device-0001").unwrap());
        body.product_id = Some(ProductId::parse(UUID).unwrap());
        body.challenge = Some(Challenge::parse("challenge-123").unwrap());
        body.branch = Some(BranchName::parse("main").unwrap());
        let json = serde_json::to_vec(&body).unwrap();
        assert!(String::from_utf8_lossy(&json).contains(r#""hardwareIdentifier":"device-0001""#));
        assert_eq!(
            ClientBody::parse(RequestKind::Heartbeat, &json).unwrap(),
            body
        );
    }

    #[test]
    fn a_device_label_round_trips_and_needs_the_device() {
        let mut body = ClientBody::new(LicenseKey::parse(KEY).unwrap());
        body.hardware_id = Some(HardwareId::parse("device-0001").unwrap());
        body.device_name = Some(DeviceName::parse("Ana's laptop").unwrap());
        body.platform = Some(DevicePlatform::parse("windows 11").unwrap());
        let json = serde_json::to_vec(&body).unwrap();
        for kind in [RequestKind::Verify, RequestKind::Heartbeat] {
            assert_eq!(ClientBody::parse(kind, &json).unwrap(), body);
        }
        assert_eq!(
            ClientBody::parse_checkout(&json).unwrap().label().name,
            body.device_name
        );
        let alias = format!(
            r#"{{"licenseKey":"{KEY}","hardwareIdentifier":"device-0001","hostname":"ANA-PC"}}"#
        );
        assert_eq!(
            verify(&alias).unwrap().device_name.unwrap().as_str(),
            "ANA-PC"
        );
        let unbound = format!(r#"{{"licenseKey":"{KEY}","platform":"linux"}}"#);
        assert_eq!(
            problems(&verify(&unbound).unwrap_err()),
            [(
                "platform".into(),
                "labels a device: send hardwareIdentifier with it".into()
            )]
        );
    }

    #[test]
    fn device_identifier_is_an_alias() {
        let body = format!(r#"{{"licenseKey":"{KEY}","deviceIdentifier":"device-0001"}}"#);
        assert_eq!(
            verify(&body).unwrap().hardware_id.unwrap().as_str(),
            "device-0001"
        );
        // Both names with one value (some clients send both): fine, on every endpoint.
        let both = format!(
            r#"{{"licenseKey":"{KEY}","hardwareIdentifier":"device-0001","deviceIdentifier":"device-0001"}}"#
        );
        assert_eq!(
            verify(&both).unwrap().hardware_id.unwrap().as_str(),
            "device-0001"
        );
        let beat = ClientBody::parse(RequestKind::Heartbeat, both.as_bytes()).unwrap();
        assert_eq!(beat.hardware_id.unwrap().as_str(), "device-0001");
        // Two values: refused, naming the alias.
        let differ = both.replacen("device-0001", "device-0002", 1);
        let e = verify(&differ).unwrap_err();
        assert_eq!(problems(&e)[0].0, "deviceIdentifier");
        // A heartbeat (which requires the identifier) names only the conflict.
        let e = ClientBody::parse(RequestKind::Heartbeat, differ.as_bytes()).unwrap_err();
        assert_eq!(problems(&e).len(), 1, "{:?}", problems(&e));
        assert!(
            problems(&e)[0]
                .1
                .contains("differs from hardwareIdentifier")
        );
    }

    #[test]
    fn heartbeat_requires_the_hardware_identifier() {
        let body = format!(r#"{{"licenseKey":"{KEY}"}}"#);
        assert!(verify(&body).is_ok());
        let e = ClientBody::parse(RequestKind::Heartbeat, body.as_bytes()).unwrap_err();
        assert_eq!(
            problems(&e),
            [("hardwareIdentifier".into(), "is required".into())]
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        let cases: &[(&str, &str, &str)] = &[
            (r#"{}"#, "licenseKey", "is required"),
            (
                r#"{"licenseKey":"abc"}"#,
                "licenseKey",
                "must be five groups of five upper-case letters or digits joined by hyphens, such as ABCDE-12345-FGHIJ-67890-KLMNO",
            ),
            (
                r#"{"licenseKey":"KEY","hardwareIdentifier":"short"}"#,
                "hardwareIdentifier",
                "must be 10 to 1000 characters long (got 5)",
            ),
            (
                r#"{"licenseKey":"KEY","hardwareIdentifier":"with space 123"}"#,
                "hardwareIdentifier",
                "must not contain whitespace or control characters",
            ),
            (
                r#"{"licenseKey":"KEY","customerId":"nope"}"#,
                "customerId",
                "must be a UUID (8-4-4-4-12 hexadecimal digits)",
            ),
            (
                r#"{"licenseKey":"KEY","productId":"123"}"#,
                "productId",
                "must be a UUID (8-4-4-4-12 hexadecimal digits)",
            ),
            (
                r#"{"licenseKey":"KEY","challenge":"short"}"#,
                "challenge",
                "must be 10 to 1000 characters long (got 5)",
            ),
            (
                r#"{"licenseKey":"KEY","challenge":"has a space!"}"#,
                "challenge",
                "must not contain whitespace or control characters",
            ),
            (
                r#"{"licenseKey":"KEY","version":"v1"}"#,
                "version",
                "must be 3 to 255 characters long (got 2)",
            ),
            (
                r#"{"licenseKey":"KEY","version":"1.0 beta"}"#,
                "version",
                "must not contain whitespace or control characters",
            ),
            (
                r#"{"licenseKey":"KEY","branch":"x"}"#,
                "branch",
                "must be 2 to 255 characters long (got 1)",
            ),
            (
                r#"{"licenseKey":"KEY","branch":"feat/x"}"#,
                "branch",
                "must contain only letters A-Z and a-z, digits, '_' and '-'",
            ),
        ];
        for (body, field, message) in cases {
            let body = body.replace("\"KEY\"", &format!("\"{KEY}\""));
            let e = verify(&body).unwrap_err();
            assert_eq!(e.status(), 400);
            assert_eq!(
                problems(&e),
                [(field.to_string(), message.to_string())],
                "{body}"
            );
        }
        let long = format!(
            r#"{{"licenseKey":"{KEY}","challenge":"{}"}}"#,
            "c".repeat(1001)
        );
        assert_eq!(
            problems(&verify(&long).unwrap_err()),
            [(
                "challenge".into(),
                "must be 10 to 1000 characters long (got more than 1000)".into()
            )]
        );
    }

    #[test]
    fn all_problems_are_reported_together() {
        let e = verify(r#"{"licenseKey":"x","version":"1","branch":"/"}"#).unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["licenseKey", "version", "branch"]);
        assert!(e.details().starts_with("licenseKey: "));
    }

    #[test]
    fn unknown_members_and_bad_json_are_rejected() {
        let e = verify(&format!(
            r#"{{"licenseKey":"{KEY}","hardwareIdentifer":"x"}}"#
        ))
        .unwrap_err();
        assert_eq!(problems(&e)[0].0, "hardwareIdentifer");
        assert!(problems(&e)[0].1.starts_with("is not a known member"));
        let e = verify(r#"{"licenseKey": 12}"#).unwrap_err();
        assert_eq!(problems(&e)[0].0, "licenseKey");
        assert!(
            problems(&e)[0].1.contains("invalid type"),
            "{:?}",
            problems(&e)
        );
        let e = verify(r#"{"licenseKey":"#).unwrap_err();
        assert_eq!(problems(&e)[0].0, "body");
        assert!(problems(&e)[0].1.starts_with("is not valid JSON"));
        let e = verify("").unwrap_err();
        assert_eq!(
            problems(&e),
            [("body".into(), "is required: send a JSON object".into())]
        );
        let e = verify("[1]").unwrap_err();
        assert_eq!(
            problems(&e),
            [("body".into(), "must be a JSON object".into())]
        );
    }

    #[test]
    fn oversized_bodies_are_413() {
        let body = vec![b' '; super::super::MAX_JSON_BODY + 1];
        assert_eq!(
            verify(std::str::from_utf8(&body).unwrap())
                .unwrap_err()
                .status(),
            413
        );
    }

    #[test]
    fn classloader_query() {
        let session = "ab".repeat(256);
        let q = format!(
            "licenseKey={KEY}&productId={UUID}&sessionKey={session}&deviceIdentifier=device-0001&version=1.0.0"
        );
        let parsed = ClassloaderQuery::parse(&q).unwrap();
        assert_eq!(parsed.hardware_id.as_str(), "device-0001");
        assert_eq!(parsed.version.as_ref().unwrap().as_str(), "1.0.0");

        let e = ClassloaderQuery::parse("").unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            [
                "licenseKey",
                "productId",
                "sessionKey",
                "hardwareIdentifier"
            ]
        );

        // Unknown parameters (tracking ones a client appends) are ignored, and an empty value
        // is no value: `&branch=` is the default branch.
        let lenient = ClassloaderQuery::parse(&format!(
            "{q}&foo=bar&utm_source=x&sessionkey=x&branch=&customerId="
        ))
        .unwrap();
        assert_eq!(lenient, parsed);
        let e = ClassloaderQuery::parse(&q.replace(&session, "")).unwrap_err();
        assert_eq!(
            problems(&e)[0].0,
            "sessionKey",
            "an empty required value is missing"
        );
        // Both names of the device: equal, fine; different, refused.
        let both = ClassloaderQuery::parse(&format!("{q}&hardwareIdentifier=device-0001")).unwrap();
        assert_eq!(both, parsed);
        // Different: that is the one problem (the identifier was sent, it is not missing).
        let e =
            ClassloaderQuery::parse(&format!("{q}&hardwareIdentifier=device-0002")).unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["deviceIdentifier"]);
        // A query that does not decode: that alone, not every parameter "required".
        let e = ClassloaderQuery::parse(&format!("{q}&branch=%zz")).unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["query"]);
        // Only what is missing or malformed is named.
        let e = ClassloaderQuery::parse(&format!(
            "licenseKey={KEY}&productId=nope&sessionKey={session}"
        ))
        .unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["productId", "hardwareIdentifier"]);
        let e = ClassloaderQuery::parse(&format!("{q}&version=2.0.0")).unwrap_err();
        assert_eq!(
            problems(&e),
            [("version".into(), "is given more than once".into())]
        );
        let e = ClassloaderQuery::parse(&q.replace(&session, "short")).unwrap_err();
        assert_eq!(
            problems(&e),
            [(
                "sessionKey".into(),
                "must be 10 to 1000 characters long (got 5)".into()
            )]
        );
    }
}
