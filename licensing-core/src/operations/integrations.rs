//! (ext) Payment integrations: a team's settings per provider, the rules mapping what is bought
//! to a policy, and the events received (protocol.md section 7, "Payments → licenses").

use crate::api::requests::{InboundQuery, IntegrationBody, RuleBody};
use crate::api::{
    InboundEventView, InboundPage, IntegrationDeleted, IntegrationList, IntegrationView,
    RuleDeleted, RuleList,
};
use crate::crypto::inbound::Provider;
use crate::model::{PriceRule, Resource, Scope};
use crate::store::Page;
use crate::{InboundId, RuleId};

use super::declare;
use super::doc::*;

/// The team's integrations.
pub struct ListIntegrations;

/// The team's integration with a provider.
pub struct GetIntegration(pub Provider);

/// Sets up or changes the team's integration with a provider.
pub struct PutIntegration(pub Provider, pub IntegrationBody);

/// Removes the team's integration with a provider (its received events stay, for the log).
pub struct DeleteIntegration(pub Provider);

/// An integration's rules.
pub struct ListRules(pub Provider);

/// Adds a rule to an integration.
pub struct CreateRule(pub Provider, pub RuleBody);

/// Changes a rule: members left out keep their value.
pub struct UpdateRule(pub Provider, pub RuleId, pub RuleBody);

/// Deletes a rule.
pub struct DeleteRule(pub Provider, pub RuleId);

/// The events received, newest first.
pub struct ListInboundEvents(pub InboundQuery);

/// A received event, with its payload.
pub struct GetInboundEvent(pub InboundId);

/// Applies a received event again (one skipped or failed), as a new delivery.
pub struct ReplayInboundEvent(pub InboundId);

const READ: Option<Scope> = Some(Scope::read(Resource::Integrations));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Integrations));

const PROVIDER: Param = Param::path(
    "provider",
    "stripe, paddle or lemonsqueezy",
    Kind::Pattern("^(stripe|paddle|lemonsqueezy)$"),
);
const RULE_ID: Param = Param::path("ruleId", "The rule", Kind::Uuid);
const EVENT_ID: Param = Param::path(
    "eventId",
    "The received event (its delivery's id)",
    Kind::Uuid,
);
const NO_INTEGRATION: &[Refusal] =
    crate::refusals![(404, "BAD_REQUEST (the integration is not set up)")];
const NO_RULE: &[Refusal] = crate::refusals![(404, "BAD_REQUEST (no such rule)")];
const NO_EVENT: &[Refusal] = crate::refusals![(404, "BAD_REQUEST (no such event)")];

declare! {
    ListIntegrations by ids;
    Get "integrations" "list_integrations" READ;
    IntegrationList => 200 "Integrations retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The team's payment integrations (Stripe, Paddle, Lemon Squeezy), their secrets shown by\ntheir last 4 characters, with the address each provider posts to.",
        description: "",
        params: &[],
        body: "",
        success: "The integrations",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetIntegration(provider: Provider) by ids;
    Get "integrations/{provider}" "get_integration" READ;
    IntegrationView => 200 "Integration retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The team's integration with a payment provider: enabled, secrets (last 4 characters), the\nwebhook address to give the provider, and its rules.",
        description: "",
        params: &[PROVIDER],
        body: "",
        success: "The integration",
        refusals: &[REFUSED, OTHER_TEAM, NO_INTEGRATION],
    };

    PutIntegration(provider: Provider) by json IntegrationBody;
    Put "integrations/{provider}" "put_integration" WRITE;
    IntegrationView => 200 "Integration saved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Set up or change the team's integration with a payment provider: `{enabled, webhookSecret,\napiKey?}`. Secrets are sealed under the master key; members left out keep their value. A new\n`webhookSecret` leaves the one it replaces accepted for 24 hours (a rotation).",
        description: "",
        params: &[PROVIDER],
        body: "",
        success: "Saved",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED],
    };

    DeleteIntegration(provider: Provider) by empty;
    Delete "integrations/{provider}" "delete_integration" WRITE;
    IntegrationDeleted => 200 "Integration deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Remove the team's integration with a payment provider: its events are then answered\n`received: false`. Licenses it made stay; received events stay in the log until pruned.",
        description: "",
        params: &[PROVIDER],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_INTEGRATION],
    };

    ListRules(provider: Provider) by ids;
    Get "integrations/{provider}/rules" "list_rules" READ;
    RuleList => 200 "Rules retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) An integration's rules, in the order they are tried (a price or variant match before a\nproduct match).",
        description: "",
        params: &[PROVIDER],
        body: "",
        success: "The rules",
        refusals: &[REFUSED, OTHER_TEAM, NO_INTEGRATION],
    };

    CreateRule(provider: Provider) by json RuleBody;
    Post "integrations/{provider}/rules" "create_rule" WRITE;
    PriceRule => 201 "Rule created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Add a rule: `{match: {priceId | productId | variantId}, policyId, productIds?,\nsendLicenseEmail, onPaymentFailed: keep|suspend, onCancel: periodEnd|now, onRefund:\nsuspend|delete|keep}`. A purchase of what it matches makes a license on the policy.",
        description: "",
        params: &[PROVIDER],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_INTEGRATION, NO_POLICY, NO_PRODUCT],
    };

    UpdateRule(provider: Provider, rule_id: RuleId) by json RuleBody;
    Put "integrations/{provider}/rules/{ruleId}" "update_rule" WRITE;
    PriceRule => 200 "Rule updated";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Change a rule: members left out keep their value. Licenses made already keep what they\nwere made with; later events of their subscriptions follow the rule as it is.",
        description: "",
        params: &[PROVIDER, RULE_ID],
        body: "",
        success: "Updated",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_INTEGRATION, NO_RULE, NO_POLICY, NO_PRODUCT],
    };

    DeleteRule(provider: Provider, rule_id: RuleId) by empty;
    Delete "integrations/{provider}/rules/{ruleId}" "delete_rule" WRITE;
    RuleDeleted => 200 "Rule deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete a rule. Later events of subscriptions it made licenses for follow the defaults\n(keep on a failed payment, end with the period on a cancellation, suspend on a refund).",
        description: "",
        params: &[PROVIDER, RULE_ID],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_INTEGRATION, NO_RULE],
    };

    ListInboundEvents() by query InboundQuery;
    Get "integrations/events" "list_payment_events" READ;
    Page<InboundEventView> => 200 InboundPage: |page| page.into(), "Payment events retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The payment providers' events received, newest first, kept 90 days: `applied`,\n`duplicate` (applied before: nothing changed), `skipped` (with the reason) or `failed` (with the\nerror; the provider retries it).",
        description: "",
        params: &[
            Param::query("provider", "stripe, paddle or lemonsqueezy", Kind::Text),
            Param::query("status", "applied, duplicate, skipped or failed", Kind::Text),
            PAGE,
            PAGE_SIZE,
        ],
        body: "",
        success: "A page of events",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetInboundEvent(event_id: InboundId) by ids;
    Get "integrations/events/{eventId}" "get_payment_event" READ;
    InboundEventView => 200 "Payment event retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) A received payment event, with the payload as it arrived.",
        description: "",
        params: &[EVENT_ID],
        body: "",
        success: "The event",
        refusals: &[REFUSED, OTHER_TEAM, NO_EVENT],
    };

    ReplayInboundEvent(event_id: InboundId) by empty;
    Post "integrations/events/{eventId}/replay" "replay_payment_event" WRITE;
    InboundEventView => 200 "Payment event replayed";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Apply a received event again (after adding the rule it lacked, say), as a new delivery\nwhose outcome is answered: an event applied already is a `duplicate` and changes nothing.",
        description: "",
        params: &[EVENT_ID],
        body: "",
        success: "The new delivery",
        refusals: &[REFUSED, OTHER_TEAM, NO_EVENT, NO_INTEGRATION],
    };
}
