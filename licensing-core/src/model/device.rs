use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::validate::{DeviceName, DevicePlatform, HardwareId};
use crate::{HwidId, IpId, LicenseId, TeamId, Timestamp};

/// Status of a hardware identifier or IP record, computed from the team's timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum RecordStatus {
    /// Seen within the team's timeout (or the team sets none).
    Active,
    /// Not seen within the team's timeout.
    Inactive,
    /// Marked forgotten.
    Forgotten,
}

impl RecordStatus {
    /// `forgotten` when forgotten; `active` when `timeout_minutes` is unset or `last_seen_at` is
    /// within it; else `inactive`.
    pub fn compute(
        forgotten: bool,
        last_seen_at: Timestamp,
        timeout_minutes: Option<u32>,
        now: Timestamp,
    ) -> Self {
        if forgotten {
            Self::Forgotten
        } else if crate::verify::seen_within(last_seen_at, timeout_minutes, now) {
            Self::Active
        } else {
            Self::Inactive
        }
    }
}

/// A hardware identifier that used a license.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Hwid {
    /// Id.
    pub id: HwidId,
    /// The identifier the client sent.
    pub identifier: HardwareId,
    /// Soft-deleted: not counted, not listed unless asked for.
    pub forgotten: bool,
    /// The license.
    pub license_id: LicenseId,
    /// Owning team.
    pub team_id: TeamId,
    /// Last successful request from it.
    pub last_seen_at: Timestamp,
    /// First seen.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// (ext) What the client last called the device (`deviceName`), when it said.
    #[serde(default)]
    pub name: Option<DeviceName>,
    /// (ext) The device's platform as its client last named it, when it said.
    #[serde(default)]
    pub platform: Option<DevicePlatform>,
}

impl Hwid {
    /// (ext) What people read for the device besides its identifier: its name with its platform
    /// in parentheses, whichever of them its client sent; `None` when it sent neither.
    pub fn label(&self) -> Option<String> {
        match (&self.name, &self.platform) {
            (Some(name), Some(platform)) => Some(format!("{name} ({platform})")),
            (Some(name), None) => Some(name.to_string()),
            (None, Some(platform)) => Some(platform.to_string()),
            (None, None) => None,
        }
    }
}

/// (ext) What a client request calls its device: a name people recognise and its platform,
/// each when sent. The hardware identifier stays the device's key; the label is kept beside
/// its record, the latest one sent replacing the one before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceLabel {
    /// `deviceName`.
    pub name: Option<DeviceName>,
    /// `platform`.
    pub platform: Option<DevicePlatform>,
}

impl DeviceLabel {
    /// No label: what a request that sends neither member brings.
    pub const NONE: Self = Self {
        name: None,
        platform: None,
    };

    /// Whether recording this label would change `hwid`'s (a member not sent changes nothing).
    pub fn changes(&self, hwid: &Hwid) -> bool {
        self.name
            .as_ref()
            .is_some_and(|n| hwid.name.as_ref() != Some(n))
            || self
                .platform
                .as_ref()
                .is_some_and(|p| hwid.platform.as_ref() != Some(p))
    }

    /// Records the members sent on `hwid`; `updatedAt` moves when one changes.
    pub fn apply(&self, hwid: &mut Hwid, now: Timestamp) {
        if !self.changes(hwid) {
            return;
        }
        if let Some(name) = &self.name {
            hwid.name = Some(name.clone());
        }
        if let Some(platform) = &self.platform {
            hwid.platform = Some(platform.clone());
        }
        hwid.updated_at = now;
    }
}

/// A hardware identifier with its status, as lists show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HwidView {
    /// The record.
    #[serde(flatten)]
    pub hwid: Hwid,
    /// Computed status.
    pub status: RecordStatus,
}

/// What hardware-identifier and IP records have in common: both belong to a license, can be
/// forgotten, and are listed and counted the same way.
pub trait UsageRecord {
    /// The record's id, for ordering ties.
    fn record_id(&self) -> uuid::Uuid;
    /// The license it belongs to.
    fn license_id(&self) -> LicenseId;
    /// The owning team.
    fn team_id(&self) -> TeamId;
    /// Whether it is forgotten.
    fn forgotten(&self) -> bool;
    /// Last successful request.
    fn last_seen_at(&self) -> Timestamp;
    /// First seen.
    fn created_at(&self) -> Timestamp;
    /// Marks it forgotten or remembered.
    fn set_forgotten(&mut self, forgotten: bool, now: Timestamp);
}

macro_rules! usage_record {
    ($t:ty) => {
        impl UsageRecord for $t {
            fn record_id(&self) -> uuid::Uuid {
                *self.id.as_uuid()
            }
            fn license_id(&self) -> LicenseId {
                self.license_id
            }
            fn team_id(&self) -> TeamId {
                self.team_id
            }
            fn forgotten(&self) -> bool {
                self.forgotten
            }
            fn last_seen_at(&self) -> Timestamp {
                self.last_seen_at
            }
            fn created_at(&self) -> Timestamp {
                self.created_at
            }
            fn set_forgotten(&mut self, forgotten: bool, now: Timestamp) {
                self.forgotten = forgotten;
                self.updated_at = now;
            }
        }
    };
}

usage_record!(Hwid);
usage_record!(IpRecord);

/// An IP address that used a license.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IpRecord {
    /// Id.
    pub id: IpId,
    /// The address.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = "ip"))]
    pub address: IpAddr,
    /// Soft-deleted: not counted, not listed unless asked for.
    pub forgotten: bool,
    /// Country name, when known.
    pub country: Option<String>,
    /// ISO 3166-1 alpha-2, when known.
    pub alpha2: Option<String>,
    /// ISO 3166-1 alpha-3, when known.
    pub alpha3: Option<String>,
    /// The license.
    pub license_id: LicenseId,
    /// Owning team.
    pub team_id: TeamId,
    /// Last successful request from it.
    pub last_seen_at: Timestamp,
    /// First seen.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// An IP record with its status, as lists show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IpRecordView {
    /// The record.
    #[serde(flatten)]
    pub ip: IpRecord,
    /// Computed status.
    pub status: RecordStatus,
}
