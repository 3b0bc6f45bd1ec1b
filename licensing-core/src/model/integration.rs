//! (ext) Payment integrations (protocol.md section 7, "Payments → licenses"): a team's settings
//! per provider (its webhook secrets and API key, sealed; its rules mapping what is bought to a
//! policy), the events received from it, and the links from a provider's subscription or
//! payment to the license it made.
//!
//! Exactly once: an event's effect is written with its [`Inbound`] mark (see
//! [`Journal::inbound`](crate::store::Journal)): in the same atomic step the store records the
//! event as applied, refusing one applied before ([`DUPLICATE_EVENT`]), and creates or advances
//! the links of its subscription or payment, refusing a second license for one
//! ([`ALREADY_LINKED`]) and an event older than the last applied to it ([`OLDER_EVENT`]).

use serde::{Deserialize, Serialize};

use crate::crypto::inbound::Provider;
use crate::payments::PaymentEvent;
use crate::{InboundId, LicenseId, PolicyId, ProductId, RuleId, TeamId, Timestamp};

/// The most rules one integration has.
pub const MAX_RULES: usize = 100;

/// How long received events (and the marks of those applied) are kept: 90 days.
pub const INBOUND_KEPT_MS: i64 = 90 * 24 * 60 * 60 * 1000;

/// How long a replaced webhook secret is still accepted: 24 hours (Stripe's longest roll).
pub const PREVIOUS_SECRET_MS: i64 = 24 * 60 * 60 * 1000;

/// The largest payload stored with an event (and accepted at an inbox): 512 KiB.
pub const MAX_INBOUND_BODY: usize = 512 * 1024;

/// The field of the [`StoreError::Conflict`](crate::store::StoreError) an event applied before
/// is refused with.
pub const DUPLICATE_EVENT: &str = "eventId";

/// The field of the conflict a second license for one subscription or payment is refused with.
pub const ALREADY_LINKED: &str = "subscriptionId";

/// The field of the conflict an event older than the last applied to its subscription is
/// refused with.
pub const OLDER_EVENT: &str = "occurredAt";

/// A team's integration with one provider.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Integration {
    /// The team.
    pub team_id: TeamId,
    /// The provider.
    pub provider: Provider,
    /// Whether its events are applied (a disabled one answers `received: false`).
    pub enabled: bool,
    /// The webhook signing secret, sealed under the master key when there is one.
    pub webhook_secret: String,
    /// The secret before the last change, still accepted until `previous_secret_until`.
    pub previous_secret: Option<String>,
    /// When the previous secret stops being accepted.
    pub previous_secret_until: Option<Timestamp>,
    /// The provider's API key (to read what a payload lacks), sealed like the secret.
    pub api_key: Option<String>,
    /// Its rules, in the order they were made.
    pub rules: Vec<PriceRule>,
    /// When it was set up.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl std::fmt::Debug for Integration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Integration")
            .field("team_id", &self.team_id)
            .field("provider", &self.provider)
            .field("enabled", &self.enabled)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl Integration {
    /// The stored secrets that verify a delivery at `now`: the secret, and the previous one
    /// while it is still accepted.
    pub fn secrets(&self, now: Timestamp) -> impl Iterator<Item = &str> {
        let previous = match (&self.previous_secret, self.previous_secret_until) {
            (Some(p), Some(until)) if now < until => Some(p.as_str()),
            _ => None,
        };
        std::iter::once(self.webhook_secret.as_str()).chain(previous)
    }

    /// The rule for what `event` bought: the first whose price (or variant) is among its
    /// prices, else the first whose product is among its products.
    pub fn rule_for(&self, event: &PaymentEvent) -> Option<&PriceRule> {
        let by_price = self.rules.iter().find(|r| match &r.matches {
            RuleMatch::PriceId(id) | RuleMatch::VariantId(id) => event.prices.contains(id),
            RuleMatch::ProductId(_) => false,
        });
        by_price.or_else(|| {
            self.rules.iter().find(|r| match &r.matches {
                RuleMatch::ProductId(id) => event.products.contains(id),
                _ => false,
            })
        })
    }

    /// A rule by id.
    pub fn rule(&self, id: RuleId) -> Option<&PriceRule> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// The path its provider posts events to.
    pub fn webhook_path(&self) -> String {
        inbox_path(self.provider, self.team_id)
    }
}

/// What an integration's secrets are bound to when sealed under the master key.
pub fn secret_purpose(team: TeamId, provider: Provider) -> String {
    format!("payments {provider} {team}")
}

/// The path `provider`'s events for `team` are posted to (Lukittu's address for Stripe).
pub fn inbox_path(provider: Provider, team: TeamId) -> String {
    format!("/api/v1/integrations/{provider}?teamId={team}")
}

/// The last 4 characters of a secret, as answers show it (`…abcd`).
pub fn last_four(secret: &str) -> String {
    let tail: String = {
        let chars: Vec<char> = secret.chars().collect();
        chars[chars.len().saturating_sub(4)..].iter().collect()
    };
    format!("…{tail}")
}

/// What a rule matches: one provider id, compared as a string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum RuleMatch {
    /// A price (Stripe `price_…`, Paddle `pri_…`).
    PriceId(String),
    /// A product (Stripe `prod_…`, Paddle `pro_…`, a Lemon Squeezy product's number).
    ProductId(String),
    /// A Lemon Squeezy variant (`first_order_item.variant_id`).
    VariantId(String),
}

impl RuleMatch {
    /// The id it matches.
    pub fn value(&self) -> &str {
        match self {
            Self::PriceId(v) | Self::ProductId(v) | Self::VariantId(v) => v,
        }
    }

    /// Its member's name (`priceId`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::PriceId(_) => "priceId",
            Self::ProductId(_) => "productId",
            Self::VariantId(_) => "variantId",
        }
    }
}

/// What a failed payment does to the license.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum OnPaymentFailed {
    /// Nothing: the license runs to its date, then the policy's grace.
    #[default]
    Keep,
    /// Suspends it (a later renewal lifts the suspension).
    Suspend,
}

/// What a cancellation does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum OnCancel {
    /// The license ends with the period paid for.
    #[default]
    PeriodEnd,
    /// The license is suspended at once.
    Now,
}

/// What a refund (or a dispute) does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum OnRefund {
    /// Suspends the license.
    #[default]
    Suspend,
    /// Deletes it.
    Delete,
    /// Nothing.
    Keep,
}

/// A rule: what is bought (a price, product or variant) → the license made for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PriceRule {
    /// Id.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub id: RuleId,
    /// What it matches.
    #[serde(rename = "match")]
    pub matches: RuleMatch,
    /// The policy the license is on.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub policy_id: PolicyId,
    /// Products besides the policy's.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub product_ids: Vec<ProductId>,
    /// Whether the key is mailed to the customer (when SMTP is configured).
    pub send_license_email: bool,
    /// What a failed payment does.
    pub on_payment_failed: OnPaymentFailed,
    /// What a cancellation does.
    pub on_cancel: OnCancel,
    /// What a refund or a dispute does.
    pub on_refund: OnRefund,
    /// When it was made.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub created_at: Timestamp,
    /// When it last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub updated_at: Timestamp,
}

/// What became of a received event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum InboundStatus {
    /// Its effect was applied (recorded with it, once).
    Applied,
    /// It had been applied already: nothing changed.
    Duplicate,
    /// It changes nothing (the reason says why); delivered again, it is read again.
    Skipped,
    /// Applying it failed (the reason has the error); the provider retries it.
    Failed,
}

impl InboundStatus {
    /// Every status, with its name.
    pub const ALL: [(&'static str, Self); 4] = [
        ("applied", Self::Applied),
        ("duplicate", Self::Duplicate),
        ("skipped", Self::Skipped),
        ("failed", Self::Failed),
    ];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Duplicate => "duplicate",
            Self::Skipped => "skipped",
            Self::Failed => "failed",
        }
    }
}

/// An event as received: one per delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboundEvent {
    /// This delivery's id.
    pub id: InboundId,
    /// The team.
    pub team_id: TeamId,
    /// The provider.
    pub provider: Provider,
    /// The provider's event id (Lemon Squeezy: the derived one).
    pub event_id: String,
    /// The provider's event type.
    pub event_type: String,
    /// What became of it.
    pub status: InboundStatus,
    /// Why (skipped, failed, duplicate), or what was done (applied).
    pub reason: Option<String>,
    /// When it arrived.
    pub received_at: Timestamp,
    /// The license it made or changed.
    pub license_id: Option<LicenseId>,
    /// The payload as received (UTF-8; at most [`MAX_INBOUND_BODY`] bytes).
    pub payload: String,
}

/// A provider's subscription or payment, and the license made for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentLink {
    /// The team.
    pub team_id: TeamId,
    /// The provider.
    pub provider: Provider,
    /// The subscription's or payment's id (`sub_…`, `txn_…`, an order's number).
    pub subject: String,
    /// The license.
    pub license_id: LicenseId,
    /// The rule the license was made by (`None`: Stripe's product metadata).
    pub rule_id: Option<RuleId>,
    /// When the last event applied to it happened, by the provider's clock.
    pub last_event_at: Timestamp,
}

/// The mark an event's effect is written with (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inbound {
    /// The event, recorded as applied.
    pub event: InboundEvent,
    /// What happens to the links of its subscription or payment.
    pub links: LinkChange,
}

impl Inbound {
    /// The license an effect wrote, filled in where the mark left it to the effect (a license
    /// created by it: the event's `licenseId` unset, its new links on [`LicenseId::PENDING`]).
    pub fn bind_license(&mut self, license: LicenseId) {
        if self.event.license_id.is_none() {
            self.event.license_id = Some(license);
        }
        let links = match &mut self.links {
            LinkChange::None => return,
            LinkChange::Create(links) => links,
            LinkChange::Advance { more, .. } => more,
        };
        for link in links
            .iter_mut()
            .filter(|l| l.license_id == LicenseId::PENDING)
        {
            link.license_id = license;
        }
    }
}

/// What an applied event does to the links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkChange {
    /// Nothing.
    None,
    /// New links (a subscription and its payment, say) to one license: refused with
    /// [`ALREADY_LINKED`] when one of them links already.
    Create(Vec<PaymentLink>),
    /// The link of `subject` moves to `occurred_at` (refused with [`OLDER_EVENT`] when it is
    /// past that already), and `more` are added beside it (another id of the same purchase).
    Advance {
        /// The subject.
        subject: String,
        /// When the event happened.
        occurred_at: Timestamp,
        /// Links added beside it (the same license).
        more: Vec<PaymentLink>,
    },
}
