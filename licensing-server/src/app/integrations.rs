//! (ext) Payment integrations: a team's settings per provider (secrets sealed under the master
//! key, shown by their last 4 characters), its rules, and the log of the events received (see
//! `billing.rs` for how an event is applied). An integration makes licenses of any product:
//! only a caller that reaches the whole team sees or changes one.

pub(crate) use licensing_core::operations::integrations::{
    CreateRule, DeleteIntegration, DeleteRule, GetInboundEvent, GetIntegration, ListInboundEvents,
    ListIntegrations, ListRules, PutIntegration, ReplayInboundEvent, UpdateRule,
};

use licensing_core::api::{
    InboundEventView, IntegrationDeleted, IntegrationList, IntegrationView, RuleDeleted, RuleList,
};
use licensing_core::crypto::inbound::Provider;
use licensing_core::model::{Action, Integration, MAX_RULES, PREVIOUS_SECRET_MS, PriceRule};
use licensing_core::store::{Entity, Page, PaymentStore, StoreError};
use licensing_core::{ApiError, RuleId, TeamId};

use super::{Cx, Run};

const WHOLE_TEAM: &str = "a payment integration makes licenses of any product of the team";

fn purpose(team: TeamId, provider: Provider) -> String {
    licensing_core::model::secret_purpose(team, provider)
}

use super::billing::open;

fn seal(cx: &Cx, provider: Provider, secret: &str) -> Result<String, ApiError> {
    cx.state
        .keyring
        .seal_secret(&purpose(cx.team, provider), secret)
        .map_err(|e| ApiError::internal_because("sealing an integration's secret", e))
}

/// How `integration` is shown.
fn view(cx: &Cx, integration: &Integration) -> Result<IntegrationView, ApiError> {
    let secret = open(&cx.state, integration, &integration.webhook_secret)?;
    let previous = match &integration.previous_secret {
        Some(stored) => Some(open(&cx.state, integration, stored)?),
        None => None,
    };
    let api_key = match &integration.api_key {
        Some(stored) => Some(open(&cx.state, integration, stored)?),
        None => None,
    };
    Ok(IntegrationView::of(
        integration,
        &secret,
        previous.as_deref().map(String::as_str),
        api_key.as_deref().map(String::as_str),
        cx.now,
    ))
}

/// The team's integration with `provider` (404 when it is not set up).
pub(crate) async fn load(cx: &Cx, provider: Provider) -> Result<Integration, ApiError> {
    cx.state
        .store
        .get_integration(cx.team, provider)
        .await?
        .ok_or_else(|| StoreError::NotFound(Entity::Integration).into())
}

/// Stores `next` (replacing `old`), journaled as the views of both: secrets never reach the
/// audit log or a webhook.
async fn save(cx: &Cx, old: Option<&Integration>, next: &Integration) -> Result<(), ApiError> {
    let before = old.map(|o| view(cx, o)).transpose()?;
    let after = view(cx, next)?;
    let journal = cx.change(
        Action::IntegrationUpdated,
        next.provider,
        before.as_ref(),
        Some(&after),
    );
    cx.state.store.put_integration(next, &journal).await?;
    Ok(())
}

impl Run for ListIntegrations {
    async fn run(self, cx: &Cx) -> Result<IntegrationList, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let all = cx.state.store.list_integrations(cx.team).await?;
        let integrations = all.iter().map(|i| view(cx, i)).collect::<Result<_, _>>()?;
        Ok(IntegrationList { integrations })
    }
}

impl Run for GetIntegration {
    async fn run(self, cx: &Cx) -> Result<IntegrationView, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        view(cx, &load(cx, self.0).await?)
    }
}

impl Run for PutIntegration {
    async fn run(self, cx: &Cx) -> Result<IntegrationView, ApiError> {
        let provider = self.0;
        let input = self.1.check()?;
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let existing = cx.state.store.get_integration(cx.team, provider).await?;
        let mut next = match (&existing, &input.webhook_secret) {
            (Some(existing), _) => existing.clone(),
            (None, Some(_)) => Integration {
                team_id: cx.team,
                provider,
                enabled: true,
                webhook_secret: String::new(),
                previous_secret: None,
                previous_secret_until: None,
                api_key: None,
                rules: Vec::new(),
                created_at: cx.now,
                updated_at: cx.now,
            },
            (None, None) => {
                return Err(ApiError::bad_field(
                    "webhookSecret",
                    "is required to set up the integration: paste the signing secret the provider shows for this endpoint",
                ));
            }
        };
        if let Some(enabled) = input.enabled {
            next.enabled = enabled;
        }
        if let Some(secret) = &input.webhook_secret {
            let replaced = match &existing {
                Some(old) => Some(open(&cx.state, old, &old.webhook_secret)?),
                None => None,
            };
            if replaced.as_deref().map(String::as_str) != Some(secret.as_str()) {
                if let Some(old) = &existing {
                    // A rotation: the replaced secret is still accepted for a day.
                    next.previous_secret = Some(old.webhook_secret.clone());
                    next.previous_secret_until = Some(licensing_core::Timestamp::from_millis(
                        cx.now.as_millis() + PREVIOUS_SECRET_MS,
                    ));
                }
                next.webhook_secret = seal(cx, provider, secret)?;
            }
        }
        if let Some(key) = &input.api_key {
            next.api_key = key.as_deref().map(|k| seal(cx, provider, k)).transpose()?;
        }
        next.updated_at = cx.now;
        save(cx, existing.as_ref(), &next).await?;
        view(cx, &next)
    }
}

impl Run for DeleteIntegration {
    async fn run(self, cx: &Cx) -> Result<IntegrationDeleted, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let existing = load(cx, self.0).await?;
        let before = view(cx, &existing)?;
        let journal = cx.change(
            Action::IntegrationDeleted,
            self.0,
            Some(&before),
            None::<&IntegrationView>,
        );
        cx.state
            .store
            .delete_integration(cx.team, self.0, &journal)
            .await?;
        Ok(IntegrationDeleted {
            provider: self.0,
            deleted: true,
        })
    }
}

impl Run for ListRules {
    async fn run(self, cx: &Cx) -> Result<RuleList, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        Ok(RuleList {
            rules: load(cx, self.0).await?.rules,
        })
    }
}

/// Refuses `rule` when its policy or products are not the team's, or another rule of
/// `integration` matches the same id.
async fn check_rule(cx: &Cx, integration: &Integration, rule: &PriceRule) -> Result<(), ApiError> {
    super::policies::lookup(cx, rule.policy_id).await?;
    super::policies::require_products(cx, &rule.product_ids).await?;
    if let Some(other) = integration
        .rules
        .iter()
        .find(|r| r.id != rule.id && r.matches == rule.matches)
    {
        return Err(ApiError::bad_field(
            &format!("match.{}", rule.matches.name()),
            &format!(
                "is matched by rule {} already: change that rule instead",
                other.id
            ),
        ));
    }
    Ok(())
}

impl Run for CreateRule {
    async fn run(self, cx: &Cx) -> Result<PriceRule, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let existing = load(cx, self.0).await?;
        let rule = self.1.into_rule(RuleId::new(), cx.now)?;
        if existing.rules.len() >= MAX_RULES {
            return Err(ApiError::new(
                licensing_core::ResultCode::RateLimit,
                format!("an integration has at most {MAX_RULES} rules: delete one first"),
            ));
        }
        check_rule(cx, &existing, &rule).await?;
        let mut next = existing.clone();
        next.rules.push(rule.clone());
        next.updated_at = cx.now;
        save(cx, Some(&existing), &next).await?;
        Ok(rule)
    }
}

impl Run for UpdateRule {
    async fn run(self, cx: &Cx) -> Result<PriceRule, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let existing = load(cx, self.0).await?;
        let stored = existing
            .rule(self.1)
            .cloned()
            .ok_or(StoreError::NotFound(Entity::Rule))?;
        let rule = self.2.apply_to(stored, cx.now)?;
        check_rule(cx, &existing, &rule).await?;
        let mut next = existing.clone();
        for r in &mut next.rules {
            if r.id == rule.id {
                *r = rule.clone();
            }
        }
        next.updated_at = cx.now;
        save(cx, Some(&existing), &next).await?;
        Ok(rule)
    }
}

impl Run for DeleteRule {
    async fn run(self, cx: &Cx) -> Result<RuleDeleted, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let existing = load(cx, self.0).await?;
        if existing.rule(self.1).is_none() {
            return Err(StoreError::NotFound(Entity::Rule).into());
        }
        let mut next = existing.clone();
        next.rules.retain(|r| r.id != self.1);
        next.updated_at = cx.now;
        save(cx, Some(&existing), &next).await?;
        Ok(RuleDeleted {
            id: self.1,
            deleted: true,
        })
    }
}

impl Run for ListInboundEvents {
    async fn run(self, cx: &Cx) -> Result<Page<InboundEventView>, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let page = cx.state.store.list_inbound(cx.team, &self.0).await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(|e| InboundEventView::of(e, false))
                .collect(),
            total: page.total,
            has_next_page: page.has_next_page,
        })
    }
}

impl Run for GetInboundEvent {
    async fn run(self, cx: &Cx) -> Result<InboundEventView, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let event = cx
            .state
            .store
            .get_inbound(cx.team, self.0)
            .await?
            .ok_or(StoreError::NotFound(Entity::InboundEvent))?;
        Ok(InboundEventView::of(event, true))
    }
}

impl Run for ReplayInboundEvent {
    async fn run(self, cx: &Cx) -> Result<InboundEventView, ApiError> {
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let event = cx
            .state
            .store
            .get_inbound(cx.team, self.0)
            .await?
            .ok_or(StoreError::NotFound(Entity::InboundEvent))?;
        let integration = load(cx, event.provider).await?;
        let replayed = super::billing::replay(cx, &integration, &event).await?;
        Ok(InboundEventView::of(replayed, false))
    }
}
