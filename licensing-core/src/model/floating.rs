//! (ext) Floating sessions: concurrent use of a license. A running copy of an application holds
//! a session while it heartbeats; a license with a `sessionLimit` admits at most that many live
//! sessions at once, wherever they run. A session is live until its `expiresAt` (the last start
//! or heartbeat plus its TTL), unless it was ended or revoked before; an expired session no
//! longer counts even before the server deletes it.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::validate::HardwareId;
use crate::{LicenseId, LicenseSessionId, TeamId, Timestamp};

use super::{License, TeamSettings};

/// A team's session TTL unless it sets one, in seconds.
pub const DEFAULT_SESSION_TTL: u32 = 900;
/// The shortest session TTL, in seconds.
pub const MIN_SESSION_TTL: u32 = 10;
/// The longest session TTL, in seconds (a day).
pub const MAX_SESSION_TTL: u32 = 86_400;

/// A floating session of a license.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseSession {
    /// Id (the client's `sessionId`).
    pub id: LicenseSessionId,
    /// The license.
    pub license_id: LicenseId,
    /// Owning team.
    pub team_id: TeamId,
    /// The device that holds it.
    pub hardware_identifier: HardwareId,
    /// The address it was started or last heartbeated from.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = "ip"))]
    pub ip_address: IpAddr,
    /// Seconds a heartbeat extends it by.
    pub ttl: u32,
    /// When it started.
    pub started_at: Timestamp,
    /// Its last start or heartbeat.
    pub last_seen_at: Timestamp,
    /// When it stops counting unless a heartbeat extends it.
    pub expires_at: Timestamp,
}

impl LicenseSession {
    /// A session of `license` for `hardware_id` at `ip`, started at `now` for `ttl` seconds.
    pub fn start(
        id: LicenseSessionId,
        license: &License,
        hardware_id: &HardwareId,
        ip: IpAddr,
        ttl: u32,
        now: Timestamp,
    ) -> Self {
        Self {
            id,
            license_id: license.id,
            team_id: license.team_id,
            hardware_identifier: hardware_id.clone(),
            ip_address: ip.to_canonical(),
            ttl,
            started_at: now,
            last_seen_at: now,
            expires_at: now.plus_seconds(ttl),
        }
    }

    /// Whether it counts at `now`: it has not expired (an ended or revoked one is gone).
    pub fn is_live(&self, now: Timestamp) -> bool {
        self.expires_at > now
    }

    /// Whether a heartbeat of `hardware_id` at `now` may extend it: it is live and that device's.
    pub fn extendable_by(&self, hardware_id: Option<&HardwareId>, now: Timestamp) -> bool {
        self.is_live(now) && hardware_id == Some(&self.hardware_identifier)
    }

    /// The session after a heartbeat from `ip` at `now` extending it by `ttl` seconds.
    pub fn extended(&self, ip: IpAddr, ttl: u32, now: Timestamp) -> Self {
        Self {
            ip_address: ip.to_canonical(),
            ttl,
            last_seen_at: now,
            expires_at: now.plus_seconds(ttl),
            ..self.clone()
        }
    }

    /// What a client's answer shows of it.
    pub fn answer(&self) -> SessionData {
        SessionData {
            id: self.id,
            expires_at: self.expires_at,
            ttl: self.ttl,
        }
    }
}

/// `data.session` of a session start or a heartbeat with a `sessionId`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionData {
    /// The session's id: the heartbeat's and the end's `sessionId`.
    pub id: LicenseSessionId,
    /// When it stops counting unless a heartbeat extends it.
    pub expires_at: Timestamp,
    /// Seconds each heartbeat extends it by (heartbeat well within it, at a third say).
    pub ttl: u32,
}

/// The TTL of `license`'s sessions: its own `sessionTtl`, else the team's.
pub fn session_ttl(license: &License, settings: &TeamSettings) -> u32 {
    license.session_ttl.unwrap_or(settings.session_ttl)
}

/// What the atomic step of a client request does with sessions, besides the device and
/// address records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionStep {
    /// Nothing.
    #[default]
    None,
    /// Start session `id` of `ttl` seconds, if the license's `sessionLimit` leaves room.
    Start {
        /// The new session's id.
        id: LicenseSessionId,
        /// Its TTL.
        ttl: u32,
    },
    /// Extend session `id` by `ttl` seconds from now, if it is live and the request's device's.
    Extend {
        /// The session's id.
        id: LicenseSessionId,
        /// The TTL.
        ttl: u32,
    },
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn session(now: Timestamp) -> LicenseSession {
        let license = crate::store::testing::license(TeamId::new(), now);
        LicenseSession::start(
            LicenseSessionId::new(),
            &license,
            &HardwareId::parse("machine-0001").unwrap(),
            "::ffff:10.0.0.1".parse().unwrap(),
            60,
            now,
        )
    }

    #[test]
    fn a_session_is_live_until_its_ttl_passes() {
        let now = Timestamp::from_millis(1_000_000);
        let s = session(now);
        assert_eq!(s.ip_address.to_string(), "10.0.0.1");
        assert!(s.is_live(now.plus_seconds(59)));
        assert!(!s.is_live(now.plus_seconds(60)));
        let later = s.extended("10.0.0.2".parse().unwrap(), 30, now.plus_seconds(59));
        assert!(later.is_live(now.plus_seconds(88)));
        assert!(!later.is_live(now.plus_seconds(89)));
        assert_eq!(later.started_at, now);
    }

    #[test]
    fn only_its_own_device_extends_a_live_session() {
        let now = Timestamp::from_millis(1_000_000);
        let s = session(now);
        let own = HardwareId::parse("machine-0001").unwrap();
        let other = HardwareId::parse("machine-0002").unwrap();
        assert!(s.extendable_by(Some(&own), now));
        assert!(!s.extendable_by(Some(&other), now));
        assert!(!s.extendable_by(None, now));
        assert!(!s.extendable_by(Some(&own), now.plus_seconds(60)));
    }
}
