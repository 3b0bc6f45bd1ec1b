//! The journal of a change: who acts (an API key, a staff member, the operator, the command
//! line) and from where, the audit entry and webhook event a write records in its own atomic
//! step, and the teams whose cached context it changes. (Old entries are pruned by
//! `workers::audit_pruner`.)

use std::net::IpAddr;

use licensing_core::idempotency::KeyedWrite;
use licensing_core::model::{
    Action, Actor, AuditEntry, FieldChange, Inbound, WebhookEvent, changes, products_in,
};
use licensing_core::store::Journal;
use licensing_core::{AuditId, EventId, ProductId, TeamId, Timestamp};
use serde::Serialize;
use serde_json::Value;

/// Who makes a change, and from which address.
#[derive(Clone, Debug)]
pub struct Acting {
    /// The principal.
    pub actor: Actor,
    /// The client's address; `None` on the command line.
    pub address: Option<IpAddr>,
    /// Where the journals it builds note the teams whose client-API context they change, for
    /// whoever performs the operation to drop once it is over; none: no one keeps contexts.
    pub journaled: Option<Journaled>,
    /// (ext) The mark of the payment event whose effect the operation is: the first journal
    /// built takes it (see [`Journal::inbound`]).
    pub inbound: Option<InboundSlot>,
}

/// The mark of a payment event, waiting for the journal of its effect.
#[derive(Clone, Debug, Default)]
pub struct InboundSlot(std::sync::Arc<std::sync::Mutex<Option<Box<Inbound>>>>);

impl InboundSlot {
    /// A slot holding `mark`.
    pub fn holding(mark: Inbound) -> Self {
        Self(std::sync::Arc::new(std::sync::Mutex::new(Some(Box::new(
            mark,
        )))))
    }

    /// The mark, if no journal took it yet; taken.
    pub fn take(&self) -> Option<Box<Inbound>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// The teams whose client-API context (see [`Action::changes_team_context`]) the journals of
/// an operation change, noted as they are built: what the operation's performer drops from
/// its caches once the operation is over, whatever its outcome. No operation invalidates a
/// cache by hand.
#[derive(Clone, Debug, Default)]
pub struct Journaled(std::sync::Arc<std::sync::Mutex<Vec<TeamId>>>);

impl Journaled {
    /// Notes `team`'s context as changed by `action`, when it is.
    fn note(&self, team: TeamId, action: Action) {
        if !action.changes_team_context() {
            return;
        }
        let mut teams = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !teams.contains(&team) {
            teams.push(team);
        }
    }

    /// The teams noted so far, forgotten here.
    pub fn take(&self) -> Vec<TeamId> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

impl Acting {
    /// The operator through the admin API, from `address`.
    pub fn admin(address: IpAddr) -> Self {
        Self {
            actor: Actor::admin(),
            address: Some(address),
            journaled: None,
            inbound: None,
        }
    }

    /// A staff member (signing in, or through the dashboard), from `address`.
    pub fn staff(user: &licensing_core::model::StaffUser, address: Option<IpAddr>) -> Self {
        Self {
            actor: Actor::user(user.id, user.email.as_str()),
            address,
            journaled: None,
            inbound: None,
        }
    }

    /// `actor` (a customer in the portal), from `address`.
    pub(crate) fn new(actor: Actor, address: Option<IpAddr>) -> Self {
        Self {
            actor,
            address,
            journaled: None,
            inbound: None,
        }
    }

    /// The server's command line (or its first start).
    pub fn command_line() -> Self {
        Self {
            actor: Actor::system("command line"),
            address: None,
            journaled: None,
            inbound: None,
        }
    }

    /// The journal of a change to `team` at `now`: its audit entry, and the webhook event of
    /// the same name with `data` built from the changes (the id, then each field's new value, or
    /// its old one for a deletion).
    pub fn journal(
        &self,
        team: TeamId,
        now: Timestamp,
        action: Action,
        resource_id: impl std::fmt::Display,
        changes: Vec<FieldChange>,
    ) -> Journal {
        let resource_id = resource_id.to_string();
        let mut data = serde_json::Map::new();
        data.insert("id".into(), Value::String(resource_id.clone()));
        for c in changes.iter().filter(|c| !c.secret) {
            if let Some(v) = c.new.clone().or_else(|| c.old.clone()) {
                data.insert(c.field.clone(), v);
            }
        }
        let data = Value::Object(data);
        let products = products_in(action.resource(), &data);
        self.journal_with(
            team,
            now,
            action,
            resource_id,
            changes,
            data,
            None,
            products,
        )
    }

    /// The journal of a change from `old` to `new` (either absent for a creation or a
    /// deletion): its audit entry with each changed field, and the webhook event whose `data`
    /// is the resource as the API renders it (the new one, or the deleted one), with the
    /// changed fields' names for an update.
    pub fn change<T: Serialize>(
        &self,
        team: TeamId,
        now: Timestamp,
        action: Action,
        resource_id: impl std::fmt::Display,
        old: Option<&T>,
        new: Option<&T>,
    ) -> Journal {
        let fields = changes(old, new, &[]);
        let changed = (old.is_some() && new.is_some())
            .then(|| fields.iter().map(|c| c.field.clone()).collect());
        let render = |r: Option<&T>| r.and_then(|r| serde_json::to_value(r).ok());
        let (before, after) = (render(old), render(new));
        // The products before and after: a license moved to other products stays in the sight
        // of the keys of either.
        let products = [&before, &after]
            .into_iter()
            .flatten()
            .filter_map(|r| products_in(action.resource(), r))
            .reduce(|mut all, more| {
                all.extend(
                    more.into_iter()
                        .filter(|p| !all.contains(p))
                        .collect::<Vec<_>>(),
                );
                all
            });
        let data = after.or(before).unwrap_or(Value::Null);
        self.journal_with(
            team,
            now,
            action,
            resource_id.to_string(),
            fields,
            data,
            changed,
            products,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn journal_with(
        &self,
        team: TeamId,
        now: Timestamp,
        action: Action,
        resource_id: String,
        changes: Vec<FieldChange>,
        data: Value,
        changed_fields: Option<Vec<String>>,
        product_ids: Option<Vec<ProductId>>,
    ) -> Journal {
        if let Some(journaled) = &self.journaled {
            journaled.note(team, action);
        }
        let mut journal = Journal::audit(AuditEntry {
            id: AuditId::ordered(),
            team_id: team,
            at: now,
            actor: self.actor.clone(),
            address: self.address,
            action,
            resource_type: action.resource().to_owned(),
            resource_id: resource_id.clone(),
            changes,
            product_ids: product_ids.clone(),
        });
        journal.keyed = claim_in_scope();
        if let Some(mut mark) = self.inbound.as_ref().and_then(InboundSlot::take) {
            if action.resource() == "license"
                && let Ok(license) = resource_id.parse::<licensing_core::LicenseId>()
            {
                mark.bind_license(license);
            }
            journal.inbound = Some(mark);
        }
        if !action.raises_event() {
            return journal;
        }
        journal.with_event(WebhookEvent {
            id: EventId::ordered(),
            team_id: team,
            event_type: action.as_str().to_owned(),
            resource_type: action.resource().to_owned(),
            resource_id,
            created_at: now,
            data,
            changed_fields,
            product_ids,
        })
    }
}

tokio::task_local! {
    /// The idempotency claim the request being served runs under.
    static CLAIM: KeyedWrite;
}

/// Runs `write` under `claim`: every journal built while it runs carries it, so that each
/// write it makes marks the claim applied in its own atomic step (see
/// [`Journal::keyed`](licensing_core::store::Journal)).
pub(crate) async fn under_claim<F: std::future::Future>(claim: KeyedWrite, write: F) -> F::Output {
    CLAIM.scope(claim, write).await
}

/// The claim the current task runs under, if any.
fn claim_in_scope() -> Option<KeyedWrite> {
    CLAIM.try_with(Clone::clone).ok()
}

/// Ties every entry and event of `journal` to `products` (a device's or address's changes,
/// tied to its license's products).
pub fn tied_to(mut journal: Journal, products: &[ProductId]) -> Journal {
    for entry in &mut journal.audit {
        entry.product_ids = Some(products.to_vec());
    }
    for event in &mut journal.events {
        event.product_ids = Some(products.to_vec());
    }
    journal
}
