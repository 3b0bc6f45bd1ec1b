//! (ext) Policies: named plans ("Pro: 3 machines, a year, EXPORT and SYNC") whose terms the
//! licenses on them inherit **live**.
//!
//! A license on a policy keeps its own value of a live term only where it **overrides** it
//! (`License::overrides`); every other live term is the policy's at the moment it is read, so a
//! policy edit changes every license on it at once. Products and entitlements are the union of
//! the license's own and the policy's. Expiration is copied when the license is created and never
//! follows the policy. [`Policies::effective`] is the one place that applies a policy:
//! every reader of a limit, every view and the client API's decision read what it answers.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{ExpirationStart, ExpirationType, License, MetadataItem};
use crate::{EntitlementId, PolicyId, ProductId, TeamId, Timestamp};

/// The most policies a team may define.
pub const MAX_POLICIES: usize = 1_000;

/// The longest grace period, in days.
pub const MAX_GRACE_DAYS: u32 = 365;

/// The most meters a policy (or license) may define.
pub const MAX_METERS: usize = 50;

/// How many devices or addresses a customer may forget themselves, per period (the customer
/// portal's budget).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SelfServiceResets {
    /// Resets allowed per period: 0 to 100.
    pub count: u32,
    /// The period, in days: 1 to 365.
    pub period_days: u32,
}

impl Default for SelfServiceResets {
    fn default() -> Self {
        Self {
            count: 3,
            period_days: 30,
        }
    }
}

/// The calendar period a meter counts in (UTC; weeks start on Monday).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum MeterPeriod {
    /// Never resets.
    None,
    /// A UTC day.
    Day,
    /// A week from Monday.
    Week,
    /// A calendar month.
    Month,
    /// A calendar year.
    Year,
}

impl MeterPeriod {
    /// Every period, with its wire spelling.
    pub const ALL: [(&'static str, Self); 5] = [
        ("none", Self::None),
        ("day", Self::Day),
        ("week", Self::Week),
        ("month", Self::Month),
        ("year", Self::Year),
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("none", |(name, _)| name)
    }
}

/// A metered feature: how much of `code` a license may use per period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Meter {
    /// The meter's code, as an entitlement's (`EXPORTS`).
    pub code: String,
    /// The most a period allows; 0 allows nothing, `null` is unlimited.
    pub limit: Option<u64>,
    /// The period.
    pub period: MeterPeriod,
}

/// A named plan of license terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// Id.
    pub id: PolicyId,
    /// Name, 1 to 255 characters.
    pub name: String,
    /// Products every license on it has (besides its own).
    pub product_ids: Vec<ProductId>,
    /// Entitlements every license on it grants (besides its own and its products').
    pub entitlement_ids: Vec<EntitlementId>,
    /// The expiration a license created on it gets (copied at creation): `NEVER` or
    /// `DURATION`.
    pub expiration_type: ExpirationType,
    /// When a duration starts.
    pub expiration_start: ExpirationStart,
    /// Days of validity for `DURATION`.
    pub expiration_days: Option<u32>,
    /// Maximum hardware identifiers; `null` means unlimited.
    pub hwid_limit: Option<u32>,
    /// Maximum IP addresses; `null` means unlimited.
    pub ip_limit: Option<u32>,
    /// The most floating sessions live at once; `null`: not limited.
    pub session_limit: Option<u32>,
    /// Seconds a session lives without a heartbeat; `null`: the team's `sessionTtl`.
    pub session_ttl: Option<u32>,
    /// Days after `expirationDate` during which clients are still answered `VALID`.
    pub grace_days: u32,
    /// Seconds a license file issued without a `ttl` is valid; `null`: as long as the license.
    pub license_file_ttl: Option<u32>,
    /// What a customer may reset themselves in the portal.
    pub self_service_resets: SelfServiceResets,
    /// Metered features.
    pub meters: Vec<Meter>,
    /// Metadata items.
    pub metadata: Vec<MetadataItem>,
    /// Owning team.
    pub team_id: TeamId,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Policy {
    /// A new policy of `team_id` named `name`, with no terms: no products or entitlements,
    /// never expiring, no limits, no grace, the default self-service resets.
    pub fn new(team_id: TeamId, name: String, now: Timestamp) -> Self {
        Self {
            id: PolicyId::new(),
            name,
            product_ids: Vec::new(),
            entitlement_ids: Vec::new(),
            expiration_type: ExpirationType::Never,
            expiration_start: ExpirationStart::Creation,
            expiration_days: None,
            hwid_limit: None,
            ip_limit: None,
            session_limit: None,
            session_ttl: None,
            grace_days: 0,
            license_file_ttl: None,
            self_service_resets: SelfServiceResets::default(),
            meters: Vec::new(),
            metadata: Vec::new(),
            team_id,
            created_at: now,
            updated_at: now,
        }
    }
}

/// A live term of a license: one a license on a policy inherits unless it sets it itself. (The
/// order is the wire names' alphabetical order, so that sorted lists read sorted.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Term {
    /// `entitlementIds` (a union: the license's own beside the policy's).
    EntitlementIds,
    /// `hwidLimit`.
    HwidLimit,
    /// `ipLimit`.
    IpLimit,
    /// `productIds` (a union: the license's own beside the policy's).
    ProductIds,
    /// `sessionLimit`.
    SessionLimit,
    /// `sessionTtl`.
    SessionTtl,
}

impl Term {
    /// Every live term, with its wire name, sorted.
    pub const ALL: [(&'static str, Self); 6] = [
        ("entitlementIds", Self::EntitlementIds),
        ("hwidLimit", Self::HwidLimit),
        ("ipLimit", Self::IpLimit),
        ("productIds", Self::ProductIds),
        ("sessionLimit", Self::SessionLimit),
        ("sessionTtl", Self::SessionTtl),
    ];

    /// The terms a license overrides by holding a value of its own: the limits. (Products and
    /// entitlements are unions, overridden when the license lists some of its own.)
    pub const SCALARS: [Self; 4] = [
        Self::HwidLimit,
        Self::IpLimit,
        Self::SessionLimit,
        Self::SessionTtl,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("", |(name, _)| name)
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
                format!("must be one of {}", names.join(", "))
            })
    }

    /// Sets the license's own value of a limit term (nothing for the two lists).
    pub fn set_own(self, license: &mut License, value: Option<u32>) {
        match self {
            Self::HwidLimit => license.hwid_limit = value,
            Self::IpLimit => license.ip_limit = value,
            Self::SessionLimit => license.session_limit = value,
            Self::SessionTtl => license.session_ttl = value,
            Self::EntitlementIds | Self::ProductIds => {}
        }
    }

    /// The policy's value of a limit term.
    fn policy_limit(self, policy: &Policy) -> Option<u32> {
        match self {
            Self::HwidLimit => policy.hwid_limit,
            Self::IpLimit => policy.ip_limit,
            Self::SessionLimit => policy.session_limit,
            Self::SessionTtl => policy.session_ttl,
            Self::EntitlementIds | Self::ProductIds => None,
        }
    }
}

/// `own` followed by the ids of `more` it lacks.
fn union<T: Copy + PartialEq>(own: &[T], more: &[T]) -> Vec<T> {
    let mut all = own.to_vec();
    all.extend(more.iter().filter(|id| !own.contains(id)));
    all
}

impl License {
    /// The license with `policy` applied: each live term it does not override is the policy's,
    /// products and entitlements are the unions, and `overrides` names what it sets itself
    /// (the limits it overrides, and `productIds`/`entitlementIds` when it lists its own). A
    /// license without a policy (or whose policy is not given) is itself.
    pub fn with_policy(&self, policy: Option<&Policy>) -> Cow<'_, License> {
        let Some(policy) = policy.filter(|p| Some(p.id) == self.policy_id) else {
            return Cow::Borrowed(self);
        };
        let mut effective = self.clone();
        for term in Term::SCALARS {
            if !self.overrides.contains(&term) {
                term.set_own(&mut effective, term.policy_limit(policy));
            }
        }
        effective.product_ids = union(&self.product_ids, &policy.product_ids);
        effective.entitlement_ids = union(&self.entitlement_ids, &policy.entitlement_ids);
        effective.meters = super::usage::effective_meters(&self.meters, Some(policy));
        effective.overrides = self.own_terms();
        Cow::Owned(effective)
    }

    /// The live terms the license sets itself, sorted: its overridden limits, and its own
    /// products and entitlements when it lists some.
    pub fn own_terms(&self) -> Vec<Term> {
        let mut terms: Vec<Term> = self
            .overrides
            .iter()
            .copied()
            .filter(|t| Term::SCALARS.contains(t))
            .collect();
        if !self.product_ids.is_empty() {
            terms.push(Term::ProductIds);
        }
        if !self.entitlement_ids.is_empty() {
            terms.push(Term::EntitlementIds);
        }
        terms.sort_unstable();
        terms.dedup();
        terms
    }

    /// The license put on `policy` (or taken off every policy, with `None`), as stored: the
    /// limits named in `overrides` keep the license's values and the others hold the policy's
    /// as of now (what the license falls back to should the policy ever be missing). Taken off a
    /// policy, it keeps the values it had on it, as its own.
    pub fn placed(&self, policy: Option<&Policy>, overrides: &[Term]) -> License {
        let mut next = self.clone();
        match policy {
            None => {
                next.policy_id = None;
                next.overrides = Vec::new();
            }
            Some(policy) => {
                next.policy_id = Some(policy.id);
                let mut kept: Vec<Term> = overrides
                    .iter()
                    .copied()
                    .filter(|t| Term::SCALARS.contains(t))
                    .collect();
                kept.sort_unstable();
                kept.dedup();
                for term in Term::SCALARS {
                    if !kept.contains(&term) {
                        term.set_own(&mut next, term.policy_limit(policy));
                    }
                }
                next.overrides = kept;
            }
        }
        next
    }

    /// The license taken off `policy` with what applied written into it: the limits in effect,
    /// the union of products and entitlements, no policy and no overrides (what deleting a
    /// policy with `detach` does to its licenses).
    pub fn detached(&self, policy: &Policy) -> License {
        let mut next = self.with_policy(Some(policy)).into_owned();
        next.policy_id = None;
        next.overrides = Vec::new();
        next
    }
}

/// When the grace period of a license that expired at `expiration` ends, with `grace_days` of
/// grace; `None` without grace or without a date.
pub fn grace_end(expiration: Option<Timestamp>, grace_days: u32) -> Option<Timestamp> {
    (grace_days > 0)
        .then_some(expiration)
        .flatten()
        .map(|date| date.plus_days(grace_days))
}

/// A team's policies, by id: what applies policies to licenses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policies(Vec<Policy>);

/// No policies (a team that defines none).
pub static NO_POLICIES: Policies = Policies(Vec::new());

impl Policies {
    /// The policies, in any order.
    pub fn new(mut policies: Vec<Policy>) -> Self {
        policies.sort_unstable_by_key(|p| p.id);
        Self(policies)
    }

    /// Policy `id`, when the team has it.
    pub fn get(&self, id: PolicyId) -> Option<&Policy> {
        self.0
            .binary_search_by_key(&id, |p| p.id)
            .ok()
            .map(|i| &self.0[i])
    }

    /// The policy of `license`, when it has one the team has.
    pub fn of(&self, license: &License) -> Option<&Policy> {
        license.policy_id.and_then(|id| self.get(id))
    }

    /// `license` with its policy applied (see [`License::with_policy`]); itself, borrowed,
    /// when it has none.
    pub fn effective<'a>(&self, license: &'a License) -> Cow<'a, License> {
        match license.policy_id {
            None => Cow::Borrowed(license),
            Some(_) => license.with_policy(self.of(license)),
        }
    }

    /// The grace days of `license`'s policy (0 without one: only policies give grace).
    pub fn grace_days(&self, license: &License) -> u32 {
        self.of(license).map_or(0, |p| p.grace_days)
    }

    /// Whether `license` names a policy this set lacks (made since it was read).
    pub fn lacks_policy_of(&self, license: &License) -> bool {
        license.policy_id.is_some_and(|id| self.get(id).is_none())
    }

    /// The policies.
    pub fn iter(&self) -> impl Iterator<Item = &Policy> {
        self.0.iter()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LicenseId, LicenseKey, UserId};

    fn policy() -> Policy {
        Policy {
            product_ids: vec![ProductId::new()],
            entitlement_ids: vec![EntitlementId::new()],
            expiration_type: ExpirationType::Duration,
            expiration_days: Some(365),
            hwid_limit: Some(3),
            session_limit: Some(2),
            grace_days: 7,
            ..Policy::new(TeamId::new(), "Pro".into(), Timestamp::from_millis(0))
        }
    }

    fn license() -> License {
        License {
            id: LicenseId::new(),
            license_key: LicenseKey::generate(),
            expiration_type: ExpirationType::Never,
            expiration_start: ExpirationStart::Creation,
            expiration_date: None,
            expiration_days: None,
            suspended: false,
            ip_limit: Some(9),
            hwid_limit: Some(9),
            metadata: Vec::new(),
            team_id: TeamId::new(),
            created_by_user_id: UserId::new(),
            created_at: Timestamp::from_millis(0),
            updated_at: Timestamp::from_millis(0),
            last_active_at: None,
            customer_ids: Vec::new(),
            product_ids: Vec::new(),
            entitlement_ids: Vec::new(),
            session_limit: None,
            session_ttl: None,
            policy_id: None,
            overrides: Vec::new(),
            suspension_reason: None,
            meters: Vec::new(),
        }
    }

    #[test]
    fn a_license_inherits_what_it_does_not_override() {
        let mut p = policy();
        let own_product = ProductId::new();
        let mut l = license();
        l.product_ids = vec![own_product];
        let l = l.placed(Some(&p), &[Term::IpLimit]);
        let policies = Policies::new(vec![p.clone()]);
        let e = policies.effective(&l);
        assert_eq!(e.hwid_limit, Some(3));
        assert_eq!(e.ip_limit, Some(9), "overridden");
        assert_eq!(e.session_limit, Some(2));
        assert_eq!(e.product_ids, [own_product, p.product_ids[0]]);
        assert_eq!(e.entitlement_ids, p.entitlement_ids);
        assert_eq!(e.overrides, [Term::IpLimit, Term::ProductIds]);
        // Live: a change of the policy is what the license has.
        p.hwid_limit = Some(5);
        let policies = Policies::new(vec![p.clone()]);
        assert_eq!(policies.effective(&l).hwid_limit, Some(5));
        // Taken off the policy with what applied.
        let d = l.detached(&p);
        assert_eq!(
            (d.policy_id, d.hwid_limit, d.ip_limit),
            (None, Some(5), Some(9))
        );
        assert!(d.overrides.is_empty());
        assert_eq!(d.product_ids.len(), 2);
    }

    #[test]
    fn an_override_of_null_is_unlimited_not_inherited() {
        let p = policy();
        let mut l = license();
        l.hwid_limit = None;
        let l = l.placed(Some(&p), &[Term::HwidLimit]);
        let e = Policies::new(vec![p]).effective(&l).into_owned();
        assert_eq!(e.hwid_limit, None);
        assert_eq!(e.overrides, [Term::HwidLimit]);
    }

    #[test]
    fn a_missing_policy_leaves_the_values_the_license_last_had() {
        let p = policy();
        let l = license().placed(Some(&p), &[]);
        let e = NO_POLICIES.effective(&l);
        assert_eq!((e.hwid_limit, e.session_limit), (Some(3), Some(2)));
        assert!(NO_POLICIES.lacks_policy_of(&l));
    }

    #[test]
    fn terms_parse_and_sort_by_their_wire_names() {
        let names: Vec<&str> = Term::ALL.iter().map(|(n, _)| *n).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        for (name, term) in Term::ALL {
            assert_eq!(Term::parse(name), Ok(term));
            assert_eq!(term.as_str(), name);
        }
        assert!(Term::parse("expirationDays").is_err());
    }

    #[test]
    fn grace_ends_days_after_the_expiry() {
        let at = Timestamp::from_millis(0);
        assert_eq!(grace_end(Some(at), 0), None);
        assert_eq!(grace_end(None, 3), None);
        assert_eq!(grace_end(Some(at), 2), Some(at.plus_days(2)));
    }
}
