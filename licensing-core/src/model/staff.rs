//! Staff roles: what the people of a vendor's team may do in the dashboard. Each role is a fixed
//! set of the API's scopes ([`Scopes`]), so the dashboard and the developer API enforce one set
//! of rules: a support person can do in the browser exactly what a key with the same scopes can
//! do over HTTP. Managing the team's staff accounts is the one thing beyond scopes: owners and
//! admins may (admins not over owners).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::scope::{Resource, Scope, Scopes};
use crate::validate::Email;
use crate::{StaffId, TeamId, Timestamp};

/// A staff member's role in one team.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything, including other owners' accounts.
    Owner,
    /// Everything, including staff accounts other than owners'.
    Admin,
    /// Every resource but the team's settings: licenses, customers, products, releases, the
    /// blacklist, API keys and webhooks; reads the settings, statistics and audit log.
    Developer,
    /// Reads everything; frees seats (forgets devices and addresses) and suspends licenses.
    Support,
    /// Reads everything, changes nothing.
    Viewer,
}

impl Role {
    /// Every role, most powerful first.
    pub const ALL: [Role; 5] = [
        Role::Owner,
        Role::Admin,
        Role::Developer,
        Role::Support,
        Role::Viewer,
    ];

    /// The role's name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Developer => "developer",
            Role::Support => "support",
            Role::Viewer => "viewer",
        }
    }

    /// Parses a role name; the error lists the roles there are.
    pub fn parse(text: &str) -> Result<Role, String> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "is not a role: use one of {}",
                    Self::ALL.map(Role::as_str).join(", ")
                )
            })
    }

    /// The scopes the role grants.
    pub fn scopes(self) -> Scopes {
        let reads = Scope::all().filter(|s| s.access == super::Access::Read);
        match self {
            Role::Owner | Role::Admin => Scopes::All,
            Role::Developer => Scopes::Only(
                reads
                    .chain(
                        Resource::ALL
                            .into_iter()
                            .filter(|r| {
                                r.writable()
                                    && !matches!(r, Resource::Settings | Resource::Integrations)
                            })
                            .map(Scope::write),
                    )
                    .collect(),
            ),
            Role::Support => Scopes::Only(
                reads
                    .chain([
                        Scope::LICENSE_DEVICES,
                        Scope::LICENSE_SUSPEND,
                        Scope::LICENSE_EXTEND,
                        Scope::LICENSE_EMAIL,
                    ])
                    .collect(),
            ),
            Role::Viewer => Scopes::Only(reads.collect::<BTreeSet<_>>()),
        }
    }

    /// Whether someone of this role may create, change or remove the account of someone of role
    /// `other` (or give that role).
    pub fn manages(self, other: Role) -> bool {
        match self {
            Role::Owner => true,
            Role::Admin => other != Role::Owner,
            Role::Developer | Role::Support | Role::Viewer => false,
        }
    }
}

/// A staff member's account. The e-mail address is the login name, unique across the server
/// (in any team) and kept lower-cased.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaffUser {
    /// The account's id.
    pub id: StaffId,
    /// The team it belongs to.
    pub team_id: TeamId,
    /// The login name and where invitations go.
    pub email: Email,
    /// What the account may do.
    pub role: Role,
    /// The password's Argon2id hash (PHC string form); none until the account's owner sets one
    /// through a set-password link.
    pub password_hash: Option<String>,
    /// The one set-password link that is valid, if any.
    pub password_link: Option<PasswordLink>,
    /// When the account was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// The second factor of signing in, when its owner turned it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub two_step: Option<TwoStep>,
    /// The time zone the account's owner reads times in (an IANA name such as
    /// `Europe/Berlin`); none: UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// A new sign-in address asked for and not confirmed yet: it takes effect only when the
    /// link mailed to it is followed, so that nobody takes an address they cannot read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_email: Option<PendingEmail>,
}

/// A change of an account's address waiting for the link mailed to the new address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingEmail {
    /// The new address.
    pub email: Email,
    /// The link's secret and when it stops working (as a set-password link's).
    pub link: PasswordLink,
}

/// An account's second factor: an authenticator app's time-based codes (RFC 6238: SHA-1, six
/// digits, 30-second steps) and one-time recovery codes for when the app is lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TwoStep {
    /// The secret the app shares, in base32 (RFC 4648, without padding).
    pub secret: String,
    /// The time step of the last code accepted: each code signs in once.
    pub last_step: u64,
    /// The SHA-256 (lower-case hex) of each recovery code not used yet.
    pub recovery_codes: Vec<String>,
    /// When it was turned on.
    pub since: Timestamp,
}

/// (admin) A staff account just created, with its one-time set-password link: the answer of
/// `POST /api/v1/admin/teams/{teamId}/users`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StaffInvited {
    /// The account's id.
    pub id: StaffId,
    /// Its team.
    pub team_id: TeamId,
    /// The address it signs in with, lower-cased.
    pub email: String,
    /// Its role.
    pub role: Role,
    /// The set-password link's path on this server (`/dashboard/set-password/{id}/{secret}`):
    /// shown only in this answer, it works once.
    pub set_password_path: String,
    /// When the link stops working.
    pub set_password_expires_at: Timestamp,
}

/// A one-time set-password link: only the SHA-256 of its secret is stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswordLink {
    /// SHA-256 of the link's secret, in lower-case hex.
    pub secret_sha256: String,
    /// When the link stops working.
    pub expires_at: Timestamp,
}

/// A signed-in browser: only the SHA-256 of the session cookie's value is stored, so that a copy
/// of the store signs nobody in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaffSession {
    /// SHA-256 of the cookie's value, in lower-case hex.
    pub id_sha256: String,
    /// The account signed in.
    pub user_id: StaffId,
    /// Its team.
    pub team_id: TeamId,
    /// The token every form of this session carries (CSRF).
    pub csrf_token: String,
    /// When the session began (the absolute time-out counts from here).
    pub created_at: Timestamp,
    /// When it was last used (the idle time-out counts from here).
    pub last_seen_at: Timestamp,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Access;

    #[test]
    fn roles_parse_and_print() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Ok(role));
            assert_eq!(serde_json::to_string(&role).unwrap(), format!("\"{role}\""));
        }
        assert_eq!(
            Role::parse("Owner").unwrap_err(),
            "is not a role: use one of owner, admin, developer, support, viewer"
        );
    }

    #[test]
    fn every_role_reads_everything_and_writes_by_rank() {
        for role in Role::ALL {
            let scopes = role.scopes();
            assert!(
                Scope::all()
                    .filter(|s| s.access == Access::Read)
                    .all(|s| scopes.allows(s)),
                "{role} reads everything"
            );
        }
        let writes = |role: Role| -> Vec<String> {
            Scope::all()
                .filter(|s| s.access != Access::Read && role.scopes().allows(*s))
                .map(Scope::name)
                .collect()
        };
        assert_eq!(
            writes(Role::Owner).len(),
            Scope::all().count() - super::Resource::ALL.len()
        );
        assert_eq!(writes(Role::Admin), writes(Role::Owner));
        let developer = writes(Role::Developer);
        assert!(!developer.contains(&"settings:write".to_owned()));
        assert!(!developer.contains(&"integrations:write".to_owned()));
        assert!(developer.contains(&"api-keys:write".to_owned()));
        assert!(developer.contains(&"licenses:suspend".to_owned()));
        assert_eq!(developer.len(), writes(Role::Owner).len() - 2);
        assert_eq!(
            writes(Role::Support),
            [
                "licenses:devices",
                "licenses:suspend",
                "licenses:extend",
                "licenses:email"
            ]
        );
        assert!(writes(Role::Viewer).is_empty());
    }

    #[test]
    fn owners_and_admins_manage_staff_and_admins_not_owners() {
        assert!(Role::ALL.iter().all(|r| Role::Owner.manages(*r)));
        assert!(!Role::Admin.manages(Role::Owner));
        assert!(Role::Admin.manages(Role::Admin) && Role::Admin.manages(Role::Viewer));
        for role in [Role::Developer, Role::Support, Role::Viewer] {
            assert!(Role::ALL.iter().all(|r| !role.manages(*r)), "{role}");
        }
    }
}
