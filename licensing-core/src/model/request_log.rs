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
}

impl ClientEndpoint {
    /// Every endpoint, in the order above.
    pub const ALL: [ClientEndpoint; 6] = [
        Self::Verify,
        Self::Heartbeat,
        Self::Classloader,
        Self::Checkout,
        Self::SessionStart,
        Self::SessionEnd,
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
        }
    }

    /// The endpoint of a wire spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

/// One client request that reached a license.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RequestLogEntry {
    /// The license's team.
    pub team_id: TeamId,
    /// The license.
    pub license_id: LicenseId,
    /// When the request was answered.
    pub at: Timestamp,
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

impl RequestLogEntry {
    /// Whether the request was refused.
    pub fn refused(&self) -> bool {
        !self.code.is_success()
    }
}

/// How long request history is kept by default.
pub const REQUEST_LOG_DAYS: u32 = 30;

/// How many entries of one team are kept by default (the oldest go first beyond it).
pub const REQUEST_LOG_PER_TEAM: u64 = 1_000_000;
