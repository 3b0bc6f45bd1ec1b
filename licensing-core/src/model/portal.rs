//! (ext) The customer portal's records: how a customer signs in (a one-time ticket: an e-mailed
//! link with its code, or a link a vendor's own site hands to a browser), the session a sign-in
//! makes, and the budget of devices and addresses a customer may forget themselves.
//!
//! Nothing secret is stored in the clear: a ticket keeps the SHA-256 of its link's token and of
//! its code, a session the SHA-256 of its cookie's value.

use serde::{Deserialize, Serialize};

use super::SelfServiceResets;
use crate::{CustomerId, LicenseId, TeamId, Timestamp};

/// How long a sign-in link (and its code) works: 15 minutes.
pub const PORTAL_TICKET_MS: i64 = 15 * 60 * 1000;
/// How many wrong codes a ticket takes before it is spent.
pub const PORTAL_CODE_TRIES: u8 = 5;
/// How long a portal session lasts, however active: 12 hours.
pub const PORTAL_SESSION_MS: i64 = 12 * 60 * 60 * 1000;

/// A way to sign in to a team's portal, as the team's settings name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum PortalSignIn {
    /// A link and a code sent to the customer's e-mail address.
    #[serde(rename = "email")]
    Email,
    /// A license key: the session sees that license only.
    #[serde(rename = "licenseKey")]
    LicenseKey,
}

impl PortalSignIn {
    /// Both ways, the default.
    pub const ALL: [Self; 2] = [Self::Email, Self::LicenseKey];

    /// The name the settings use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::LicenseKey => "licenseKey",
        }
    }
}

/// What a portal session (or the ticket that makes one) lets its customer see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum PortalGrant {
    /// Every license of the team's customers with this address (lower-cased).
    #[serde(rename_all = "camelCase")]
    Email {
        /// The address.
        address: String,
    },
    /// One license, signed in to with its key.
    #[serde(rename_all = "camelCase")]
    License {
        /// The license.
        license_id: LicenseId,
    },
    /// One customer's licenses (or one of them), from a link the vendor's site minted.
    #[serde(rename_all = "camelCase")]
    Customer {
        /// The customer.
        customer_id: CustomerId,
        /// The one license the link was for, if it named one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        license_id: Option<LicenseId>,
    },
}

/// A one-time sign-in ticket: an e-mailed link with its code, or a vendor-minted link. Redeemed
/// once (by its link, or by its code while tries remain), and only until it expires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PortalTicket {
    /// Public id: the code form of the browser that asked for the mail names the ticket by it.
    pub id: uuid::Uuid,
    /// The team.
    pub team_id: TeamId,
    /// SHA-256 (lower-case hex) of the link's token.
    pub token_sha256: String,
    /// SHA-256 (lower-case hex) of the 6-digit code, for an e-mailed ticket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_sha256: Option<String>,
    /// Wrong codes it still takes.
    pub tries_left: u8,
    /// What a session made from it sees.
    pub grant: PortalGrant,
    /// When it stops working.
    pub expires_at: Timestamp,
    /// When it was made.
    pub created_at: Timestamp,
}

/// What redeeming a ticket's code came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeRedeemed {
    /// The code was right: the ticket is spent, and this is it.
    Signed(PortalTicket),
    /// The code was wrong; the ticket takes this many more tries (0: it is spent).
    Wrong {
        /// Tries left.
        tries_left: u8,
    },
    /// No such ticket of the team, or it expired or was spent.
    Gone,
}

/// A signed-in portal session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PortalSession {
    /// SHA-256 (lower-case hex) of the cookie's value.
    pub id_sha256: String,
    /// The team.
    pub team_id: TeamId,
    /// What it sees.
    pub grant: PortalGrant,
    /// The token its forms carry (CSRF).
    pub csrf_token: String,
    /// How it signed in.
    pub method: PortalMethod,
    /// When it began (it ends [`PORTAL_SESSION_MS`] later).
    pub created_at: Timestamp,
    /// When it was last used.
    pub last_seen_at: Timestamp,
}

impl PortalSession {
    /// Whether it has ended by `now`.
    pub fn ended(&self, now: Timestamp) -> bool {
        now.as_millis()
            >= self
                .created_at
                .as_millis()
                .saturating_add(PORTAL_SESSION_MS)
    }

    /// When it ends.
    pub fn ends_at(&self) -> Timestamp {
        Timestamp::from_millis(
            self.created_at
                .as_millis()
                .saturating_add(PORTAL_SESSION_MS),
        )
    }
}

/// How a portal session signed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PortalMethod {
    /// The e-mailed link, clicked.
    EmailLink,
    /// The e-mailed code, typed.
    EmailCode,
    /// A license key.
    LicenseKey,
    /// A link minted by the vendor's site.
    VendorLink,
}

impl PortalMethod {
    /// Its name in the audit log and on the staff's session list.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EmailLink => "e-mail link",
            Self::EmailCode => "e-mail code",
            Self::LicenseKey => "license key",
            Self::VendorLink => "vendor link",
        }
    }
}

/// A license's device or address record that a customer forgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageRef {
    /// A hardware identifier record.
    Hwid(crate::HwidId),
    /// An IP address record.
    Ip(crate::IpId),
}

/// What a customer's forget came to (see
/// [`DeviceStore::forget_within_budget`](crate::store::DeviceStore::forget_within_budget)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelfServiceReset {
    /// Forgotten now: one reset of the budget spent.
    Forgotten,
    /// It was forgotten before: nothing spent, nothing changed.
    AlreadyForgotten,
    /// The budget is spent; another reset is allowed from `refills_at` (never, for a budget of
    /// none).
    Spent {
        /// When the oldest reset of the period leaves it.
        refills_at: Option<Timestamp>,
    },
}

impl SelfServiceResets {
    /// Whether one more reset is allowed at `now`, given the times of earlier ones (any order,
    /// older ones ignored): `Err` with when the budget refills otherwise (`None` for a budget
    /// of none, which never does).
    pub fn admit(&self, earlier: &[Timestamp], now: Timestamp) -> Result<(), Option<Timestamp>> {
        if self.count == 0 {
            return Err(None);
        }
        let window = self.window_ms();
        let since = now.as_millis().saturating_sub(window);
        let mut within: Vec<i64> = earlier
            .iter()
            .map(|t| t.as_millis())
            .filter(|t| *t > since)
            .collect();
        if within.len() < self.count as usize {
            return Ok(());
        }
        within.sort_unstable();
        // The reset whose leaving makes room: the (len - count + 1)-th oldest.
        let leaving = within[within.len() - self.count as usize];
        Err(Some(Timestamp::from_millis(leaving.saturating_add(window))))
    }

    /// The period in milliseconds.
    pub fn window_ms(&self) -> i64 {
        i64::from(self.period_days) * 86_400_000
    }

    /// The times among `earlier` still inside the period at `now` (what a store keeps).
    pub fn kept(&self, earlier: &[Timestamp], now: Timestamp) -> Vec<Timestamp> {
        let since = now.as_millis().saturating_sub(self.window_ms());
        earlier
            .iter()
            .copied()
            .filter(|t| t.as_millis() > since)
            .collect()
    }

    /// Resets used within the period at `now`.
    pub fn used(&self, earlier: &[Timestamp], now: Timestamp) -> u32 {
        u32::try_from(self.kept(earlier, now).len()).unwrap_or(u32::MAX)
    }
}

/// The sign-in ways a team's portal offers unless its settings say otherwise: both.
pub(super) fn default_portal_sign_in() -> Vec<PortalSignIn> {
    PortalSignIn::ALL.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_admits_its_count_per_period_and_says_when_it_refills() {
        let budget = SelfServiceResets {
            count: 2,
            period_days: 1,
        };
        let day = 86_400_000;
        let t = |ms: i64| Timestamp::from_millis(ms);
        assert_eq!(budget.admit(&[], t(10 * day)), Ok(()));
        assert_eq!(budget.admit(&[t(10 * day)], t(10 * day + 1)), Ok(()));
        let used = [t(10 * day + 5), t(10 * day)];
        assert_eq!(
            budget.admit(&used, t(10 * day + 10)),
            Err(Some(t(11 * day)))
        );
        // Once the oldest has left the period, one more.
        assert_eq!(budget.admit(&used, t(11 * day + 1)), Ok(()));
        // Older ones do not count.
        assert_eq!(budget.admit(&[t(0), t(1)], t(10 * day)), Ok(()));
        let none = SelfServiceResets {
            count: 0,
            period_days: 30,
        };
        assert_eq!(none.admit(&[], t(day)), Err(None));
        assert_eq!(budget.used(&used, t(10 * day + 10)), 2);
        assert_eq!(budget.kept(&used, t(11 * day + 1)), vec![t(10 * day + 5)]);
    }

    #[test]
    fn grants_and_sign_in_methods_read_as_written() {
        let grant = PortalGrant::Email {
            address: "jane@example.com".into(),
        };
        let json = serde_json::to_string(&grant).unwrap();
        assert_eq!(json, r#"{"kind":"email","address":"jane@example.com"}"#);
        assert_eq!(serde_json::from_str::<PortalGrant>(&json).unwrap(), grant);
        assert_eq!(
            serde_json::to_string(&PortalSignIn::ALL).unwrap(),
            r#"["email","licenseKey"]"#
        );
    }
}
