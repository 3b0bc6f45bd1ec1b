//! How records are stored as bytes: every record of the sled store is encoded and decoded here.
//!
//! The records that are many or on the hot path (licenses, device and address records,
//! customers, products, branches, releases, blacklist entries, floating sessions) are stored in a compact
//! binary form: one format byte ([`BINARY_V1`]) then the record in `postcard`, with serde still
//! the model. In it, time stamps are milliseconds as integers, ids 16 bytes, enums small
//! integers and addresses their 4 or 16 bytes (core's types write these forms for serializers
//! that are not human-readable). A device record takes about a third of its JSON size and
//! decodes without parsing text.
//!
//! The other records (teams, audit entries, webhook endpoints, events and deliveries, hourly
//! statistics, API keys, mail, staff accounts and their sessions) stay JSON: they hold free-form
//! JSON values, fields left out when
//! empty or types read by their shape, which a format without field names or types cannot
//! express, and they are few or off the hot path.
//!
//! Reading accepts both forms for every record: JSON starts with `{`, never with the format
//! byte. The store of format 3 held JSON only; the migration to format 4 (`format.rs`) rewrites
//! the binary kinds, and a migration interrupted half way reads as well as a finished one.

use licensing_core::model::{
    ApiKeyRecord, AuditEntry, BlacklistEntry, Branch, Customer, Entitlement, HourlyStats, Hwid,
    IpRecord, License, LicenseSession, OutboxMessage, Policy, Product, Release, StaffSession,
    StaffUser, Team, WebhookDelivery, WebhookEndpoint, WebhookEvent,
};
use licensing_core::store::{StoreError, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The leading byte of a record in the binary form, version 1.
pub(super) const BINARY_V1: u8 = 0x01;

/// How a kind of record is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Encoding {
    /// [`BINARY_V1`] then `postcard`.
    Binary,
    /// JSON.
    Json,
}

/// A kind of record the store keeps, and its encoding.
pub(super) trait Record: Serialize + DeserializeOwned {
    /// How it is written.
    const ENCODING: Encoding;
}

macro_rules! records {
    ($encoding:ident: $($t:ty),+ $(,)?) => {
        $(impl Record for $t {
            const ENCODING: Encoding = Encoding::$encoding;
        })+
    };
}

records!(Binary: License, Hwid, IpRecord, Customer, Product, Branch, Release, BlacklistEntry, LicenseSession);
records!(Json: Team, Entitlement, Policy, licensing_core::model::Integration, licensing_core::model::InboundEvent, licensing_core::model::PaymentLink, AuditEntry, ApiKeyRecord, HourlyStats, OutboxMessage, WebhookEndpoint, WebhookEvent, WebhookDelivery, StaffUser, StaffSession, licensing_core::model::PortalTicket, licensing_core::model::PortalSession);

fn failed(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("{what} a stored record: {e}"))
}

/// The stored bytes of `record`.
pub(super) fn encode<T: Record>(record: &T) -> StoreResult<Vec<u8>> {
    match T::ENCODING {
        Encoding::Binary => {
            postcard::to_extend(record, vec![BINARY_V1]).map_err(|e| failed("encoding", e))
        }
        Encoding::Json => serde_json::to_vec(record).map_err(|e| failed("encoding", e)),
    }
}

/// The record stored as `bytes`, in either form.
pub(super) fn decode<T: Record>(bytes: &[u8]) -> StoreResult<T> {
    match bytes.split_first() {
        Some((&BINARY_V1, rest)) => match postcard::take_from_bytes(rest) {
            Ok((record, [])) => Ok(record),
            Ok((_, extra)) => Err(failed(
                "decoding",
                format!("{} bytes after its end", extra.len()),
            )),
            Err(e) => Err(failed("decoding", e)),
        },
        _ => serde_json::from_slice(bytes).map_err(|e| failed("decoding", e)),
    }
}

/// Whether `bytes` are in the form `T` is written in now (the migration skips those that are).
pub(super) fn is_current<T: Record>(bytes: &[u8]) -> bool {
    (bytes.first() == Some(&BINARY_V1)) == (T::ENCODING == Encoding::Binary)
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use licensing_core::model::{ExpirationStart, ExpirationType, MetadataItem};
    use licensing_core::validate::HardwareId;
    use licensing_core::{HwidId, IpId, LicenseId, LicenseKey, TeamId, Timestamp, UserId};

    use super::*;

    fn hwid() -> Hwid {
        let at = Timestamp::from_millis(1_790_000_000_123);
        Hwid {
            name: None,
            platform: None,
            id: HwidId::new(),
            identifier: HardwareId::parse("a1b2c3d4-e5f6-4711-8899-aabbccddeeff").unwrap(),
            forgotten: false,
            license_id: LicenseId::new(),
            team_id: TeamId::new(),
            last_seen_at: at,
            created_at: at,
            updated_at: at,
        }
    }

    #[test]
    fn binary_records_read_back_and_are_compact() {
        let record = hwid();
        let bytes = encode(&record).unwrap();
        assert_eq!(bytes[0], BINARY_V1);
        assert_eq!(decode::<Hwid>(&bytes).unwrap(), record);
        let json = serde_json::to_vec(&record).unwrap();
        assert!(
            bytes.len() * 2 < json.len(),
            "{} bytes binary against {} as JSON",
            bytes.len(),
            json.len()
        );
        // Ids are their 16 bytes, time stamps integers: no text of either is in the record.
        let date = record.last_seen_at.to_string();
        assert!(!bytes.windows(10).any(|w| w == &date.as_bytes()[..10]));
        let id = record.id.to_string();
        assert!(!bytes.windows(id.len()).any(|w| w == id.as_bytes()));
    }

    #[test]
    fn json_records_of_format_3_still_read() {
        let record = hwid();
        let json = serde_json::to_vec(&record).unwrap();
        assert!(!is_current::<Hwid>(&json));
        assert_eq!(decode::<Hwid>(&json).unwrap(), record);
        assert!(is_current::<Hwid>(&encode(&record).unwrap()));
    }

    #[test]
    fn every_field_of_a_license_and_an_address_survives() {
        let at = Timestamp::from_millis(-62_000_000_000_000);
        let license = License {
            id: LicenseId::new(),
            license_key: LicenseKey::generate(),
            expiration_type: ExpirationType::Duration,
            expiration_start: ExpirationStart::Activation,
            expiration_date: Some(Timestamp::from_millis(253_402_300_799_999)),
            expiration_days: Some(u32::MAX),
            suspended: true,
            ip_limit: Some(0),
            hwid_limit: None,
            metadata: vec![MetadataItem {
                key: "seat".into(),
                value: "ünïcode ✓".into(),
                locked: true,
            }],
            team_id: TeamId::new(),
            created_by_user_id: UserId::new(),
            created_at: at,
            updated_at: at,
            last_active_at: None,
            customer_ids: vec![licensing_core::CustomerId::new()],
            product_ids: vec![],
            entitlement_ids: vec![licensing_core::EntitlementId::new()],
            session_limit: Some(5),
            session_ttl: Some(u32::MAX),
            policy_id: Some(licensing_core::PolicyId::new()),
            overrides: vec![
                licensing_core::model::Term::HwidLimit,
                licensing_core::model::Term::SessionTtl,
            ],
            suspension_reason: Some("chargeback ✓".into()),
            meters: vec![licensing_core::model::Meter {
                code: "EXPORTS".into(),
                limit: Some(u64::MAX),
                period: licensing_core::model::MeterPeriod::Week,
            }],
        };
        assert_eq!(
            decode::<License>(&encode(&license).unwrap()).unwrap(),
            license
        );
        // Format 5 wrote no entitlement ids, format 6 no session members, format 7 no policy
        // members, format 9 no suspension reason, format 11 no meters: their bytes are today's
        // of an empty list, two `None`s, a `None` and an empty list, a `None` and an empty list
        // without the last seven, six, four, two or one zero bytes, which format 12's
        // migration appends.
        let older = License {
            entitlement_ids: Vec::new(),
            session_limit: None,
            session_ttl: None,
            policy_id: None,
            overrides: Vec::new(),
            suspension_reason: None,
            meters: Vec::new(),
            ..license.clone()
        };
        let mut bytes = encode(&older).unwrap();
        assert_eq!(bytes.split_off(bytes.len() - 7), [0, 0, 0, 0, 0, 0, 0]);
        for _ in 0..7 {
            assert!(decode::<License>(&bytes).is_err());
            bytes.push(0);
        }
        assert_eq!(decode::<License>(&bytes).unwrap(), older);
        for address in ["192.0.2.7", "2001:db8::1"] {
            let ip = IpRecord {
                id: IpId::new(),
                address: address.parse::<IpAddr>().unwrap(),
                forgotten: true,
                country: Some("Finland".into()),
                alpha2: Some("FI".into()),
                alpha3: None,
                license_id: license.id,
                team_id: license.team_id,
                last_seen_at: at,
                created_at: at,
                updated_at: at,
            };
            assert_eq!(decode::<IpRecord>(&encode(&ip).unwrap()).unwrap(), ip);
            let session = LicenseSession::start(
                licensing_core::LicenseSessionId::new(),
                &license,
                &hwid().identifier,
                ip.address,
                900,
                at,
            );
            let bytes = encode(&session).unwrap();
            assert_eq!(bytes[0], BINARY_V1);
            assert_eq!(decode::<LicenseSession>(&bytes).unwrap(), session);
        }
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let bytes = encode(&hwid()).unwrap();
        for cut in 0..bytes.len() {
            assert!(decode::<Hwid>(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode::<Hwid>(&[BINARY_V1, 0xff, 0xff, 0xff]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode::<Hwid>(&longer).is_err());
    }
}
