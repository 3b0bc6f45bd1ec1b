//! (ext) The request history of a license: every client request that reached one (verify,
//! heartbeat, classloader, checkout, session start and end), accepted or refused, with its
//! result code and what the client sent. A support desk reads it to answer "why was this
//! customer refused?"; the server writes it behind the answers, in batches.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::{LicenseId, ProductId, ResultCode, TeamId, Timestamp};

/// The client endpoint a request went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClientEndpoint {
    /// `POST …/verify`.
    Verify,
    /// `POST …/heartbeat`.
    Heartbeat,
    /// `GET …/classloader`.
    Classloader,
    /// (ext) `POST …/verification/checkout`.
    Checkout,
    /// (ext) `POST …/verification/sessions/start`.
    SessionStart,
    /// (ext) `POST …/verification/sessions/end`.
    SessionEnd,
    /// (ext) An update feed read, or a feed token minted (`…/updates/{productId}/…`).
    UpdateCheck,
    /// (ext) An update artifact downloaded (`…/updates/{productId}/…/download/…`).
    Download,
    /// (ext) Usage reported (`POST …/usage`).
    Usage,
}

impl ClientEndpoint {
    /// Every endpoint, in the order above.
    pub const ALL: [ClientEndpoint; 9] = [
        Self::Verify,
        Self::Heartbeat,
        Self::Classloader,
        Self::Checkout,
        Self::SessionStart,
        Self::SessionEnd,
        Self::UpdateCheck,
        Self::Download,
        Self::Usage,
    ];

    /// The wire spelling, such as `SESSION_START`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Verify => "VERIFY",
            Self::Heartbeat => "HEARTBEAT",
            Self::Classloader => "CLASSLOADER",
            Self::Checkout => "CHECKOUT",
            Self::SessionStart => "SESSION_START",
            Self::SessionEnd => "SESSION_END",
            Self::UpdateCheck => "UPDATE_CHECK",
            Self::Download => "DOWNLOAD",
            Self::Usage => "USAGE",
        }
    }

    /// The endpoint of a wire spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

/// One client request that reached a license, or several identical ones: requests with the
/// same endpoint, answer, address, device, product and version answered within the same
/// second of writing are kept as one entry, `count` saying how many (a client retrying in a
/// loop fills no history).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RequestLogEntry {
    /// The license's team.
    pub team_id: TeamId,
    /// The license.
    pub license_id: LicenseId,
    /// When the request was answered (the first, of several).
    pub at: Timestamp,
    /// How many identical requests the entry stands for (1 unless `lastAt` is there).
    #[serde(default = "one")]
    pub count: u32,
    /// When the last of several identical requests was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_at: Option<Timestamp>,
    /// The endpoint.
    pub endpoint: ClientEndpoint,
    /// The answer's `result.code`: `VALID`, or why it was refused.
    pub code: ResultCode,
    /// The client's address (behind trusted proxies, the forwarded one).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub ip_address: IpAddr,
    /// The address's country (ISO 3166-1 alpha-2), when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// The hardware identifier the client sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_identifier: Option<String>,
    /// The product the client named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_id: Option<ProductId>,
    /// The software version the client sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

fn one() -> u32 {
    1
}

impl RequestLogEntry {
    /// Whether the request was refused.
    pub fn refused(&self) -> bool {
        !self.code.is_success()
    }

    /// Whether `other` is the same request again (everything but the time and count equal).
    pub fn same_request(&self, other: &RequestLogEntry) -> bool {
        self.team_id == other.team_id
            && self.license_id == other.license_id
            && self.endpoint == other.endpoint
            && self.code == other.code
            && self.ip_address == other.ip_address
            && self.hardware_identifier == other.hardware_identifier
            && self.product_id == other.product_id
            && self.version == other.version
            && self.country == other.country
    }

    /// Counts `other`, the same request again (see [`same_request`](Self::same_request)),
    /// in this entry.
    pub fn absorb(&mut self, other: &RequestLogEntry) {
        self.count = self.count.saturating_add(other.count);
        let last = other.last_at.unwrap_or(other.at);
        self.last_at = Some(self.last_at.map_or(last, |l| l.max(last)));
    }
}

/// How long request history is kept by default.
pub const REQUEST_LOG_DAYS: u32 = 30;

/// How many entries of one team are kept by default (the oldest go first beyond it).
pub const REQUEST_LOG_PER_TEAM: u64 = 1_000_000;

/// How many entries of one license are kept by default (the oldest go first beyond it).
pub const REQUEST_LOG_PER_LICENSE: u64 = 10_000;
