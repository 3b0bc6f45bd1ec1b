//! (ext) Payment integrations: settings per team and provider; an event's mark written with its
//! effect, once; links refusing a second license and an older event.

use super::*;
use crate::crypto::inbound::Provider;
use crate::model::{
    ALREADY_LINKED, DUPLICATE_EVENT, Inbound, InboundEvent, InboundStatus, Integration, LinkChange,
    OLDER_EVENT, PaymentLink,
};
use crate::{InboundId, LicenseId};

fn integration(team: TeamId, provider: Provider) -> Integration {
    Integration {
        team_id: team,
        provider,
        enabled: true,
        webhook_secret: "whsec_one".into(),
        previous_secret: None,
        previous_secret_until: None,
        api_key: None,
        rules: Vec::new(),
        created_at: at(1),
        updated_at: at(1),
    }
}

fn event(team: TeamId, event_id: &str, status: InboundStatus, received: u32) -> InboundEvent {
    InboundEvent {
        id: InboundId::ordered(),
        team_id: team,
        provider: Provider::Stripe,
        event_id: event_id.into(),
        event_type: "invoice.paid".into(),
        status,
        reason: None,
        received_at: at(received),
        license_id: None,
        payload: "{}".into(),
    }
}

fn link(team: TeamId, subject: &str, license: LicenseId, last: u32) -> PaymentLink {
    PaymentLink {
        team_id: team,
        provider: Provider::Stripe,
        subject: subject.into(),
        license_id: license,
        rule_id: None,
        last_event_at: at(last),
    }
}

fn conflict_field<T: std::fmt::Debug>(r: StoreResult<T>) -> &'static str {
    match r {
        Err(StoreError::Conflict { field, .. }) => field,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

pub async fn payment_events_apply_once_with_their_effect_and_links<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;

    // Settings per team and provider.
    let stripe = integration(t.id, Provider::Stripe);
    store
        .put_integration(&stripe, &Journal::NONE)
        .await
        .unwrap();
    let mut paddle = integration(t.id, Provider::Paddle);
    store
        .put_integration(&paddle, &Journal::NONE)
        .await
        .unwrap();
    paddle.enabled = false;
    store
        .put_integration(&paddle, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.list_integrations(t.id).await.unwrap(),
        vec![stripe.clone(), paddle.clone()]
    );
    assert_eq!(
        store
            .get_integration(other.id, Provider::Stripe)
            .await
            .unwrap(),
        None
    );
    assert!(matches!(
        store
            .delete_integration(other.id, Provider::Stripe, &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::Integration))
    ));
    store
        .delete_integration(t.id, Provider::Paddle, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.get_integration(t.id, Provider::Paddle).await.unwrap(),
        None
    );

    // A purchase: the license and the event's mark with its links, in one step.
    let l = license(t.id, t0());
    let first = event(t.id, "evt_1", InboundStatus::Applied, 10);
    let mut journal = Journal::NONE;
    journal.inbound = Some(Box::new(Inbound {
        event: first.clone(),
        links: LinkChange::Create(vec![
            link(t.id, "sub_1", l.id, 5),
            link(t.id, "pi_1", l.id, 5),
        ]),
    }));
    store.create_license(&l, &journal).await.unwrap();
    assert_eq!(
        store
            .inbound_applied(t.id, Provider::Stripe, "evt_1")
            .await
            .unwrap(),
        Some(first.id)
    );
    assert_eq!(
        store
            .inbound_applied(other.id, Provider::Stripe, "evt_1")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .payment_link(t.id, Provider::Stripe, "pi_1")
            .await
            .unwrap(),
        Some(link(t.id, "pi_1", l.id, 5))
    );
    assert_eq!(
        store
            .payment_link(other.id, Provider::Stripe, "sub_1")
            .await
            .unwrap(),
        None
    );

    // The same event again: refused, and its effect with it.
    let again = license(t.id, t0());
    let mut journal = Journal::NONE;
    journal.inbound = Some(Box::new(Inbound {
        event: event(t.id, "evt_1", InboundStatus::Applied, 11),
        links: LinkChange::Create(vec![link(t.id, "sub_1", again.id, 6)]),
    }));
    assert_eq!(
        conflict_field(store.create_license(&again, &journal).await),
        DUPLICATE_EVENT
    );
    assert_eq!(store.get_license(t.id, again.id).await.unwrap(), None);

    // Another event creating a second license for the subscription: refused.
    let mut journal = Journal::NONE;
    journal.inbound = Some(Box::new(Inbound {
        event: event(t.id, "evt_2", InboundStatus::Applied, 12),
        links: LinkChange::Create(vec![link(t.id, "sub_1", again.id, 6)]),
    }));
    assert_eq!(
        conflict_field(store.create_license(&again, &journal).await),
        ALREADY_LINKED
    );
    assert_eq!(store.get_license(t.id, again.id).await.unwrap(), None);
    assert_eq!(
        store
            .inbound_applied(t.id, Provider::Stripe, "evt_2")
            .await
            .unwrap(),
        None
    );

    // A renewal moves the link forward; an older one is refused with its effect.
    let mut renewed = l.clone();
    renewed.suspended = true;
    let mut journal = Journal::NONE;
    journal.inbound = Some(Box::new(Inbound {
        event: event(t.id, "evt_3", InboundStatus::Applied, 13),
        links: LinkChange::Advance {
            subject: "sub_1".into(),
            occurred_at: at(20),
            more: Vec::new(),
        },
    }));
    store.update_license(&renewed, &journal).await.unwrap();
    assert_eq!(
        store
            .payment_link(t.id, Provider::Stripe, "sub_1")
            .await
            .unwrap()
            .unwrap()
            .last_event_at,
        at(20)
    );
    let mut older = renewed.clone();
    older.suspended = false;
    let mut journal = Journal::NONE;
    journal.inbound = Some(Box::new(Inbound {
        event: event(t.id, "evt_4", InboundStatus::Applied, 14),
        links: LinkChange::Advance {
            subject: "sub_1".into(),
            occurred_at: at(15),
            more: Vec::new(),
        },
    }));
    assert_eq!(
        conflict_field(store.update_license(&older, &journal).await),
        OLDER_EVENT
    );
    assert!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .suspended
    );
    // A mark alone (an event whose effect changes nothing else).
    let alone = Inbound {
        event: event(t.id, "evt_5", InboundStatus::Applied, 15),
        links: LinkChange::Advance {
            subject: "sub_1".into(),
            occurred_at: at(20),
            more: vec![link(t.id, "in_2", l.id, 20)],
        },
    };
    store.apply_inbound(&alone).await.unwrap();
    assert_eq!(
        conflict_field(store.apply_inbound(&alone).await),
        DUPLICATE_EVENT
    );
    assert!(
        store
            .payment_link(t.id, Provider::Stripe, "in_2")
            .await
            .unwrap()
            .is_some()
    );

    // Deliveries that applied nothing are logged; lists filter, page newest first, and prune.
    let skipped = event(t.id, "evt_6", InboundStatus::Skipped, 16);
    store.record_inbound(&skipped).await.unwrap();
    store
        .record_inbound(&event(other.id, "evt_6", InboundStatus::Failed, 16))
        .await
        .unwrap();
    let all = store
        .list_inbound(t.id, &InboundQuery::default())
        .await
        .unwrap();
    let ids: Vec<&str> = all.items.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(ids, ["evt_6", "evt_5", "evt_3", "evt_1"]);
    assert_eq!(all.total, 4);
    let only = store
        .list_inbound(
            t.id,
            &InboundQuery {
                status: Some(InboundStatus::Skipped),
                ..InboundQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(only.items, vec![skipped.clone()]);
    assert_eq!(
        store.get_inbound(t.id, skipped.id).await.unwrap(),
        Some(skipped.clone())
    );
    assert_eq!(store.get_inbound(other.id, skipped.id).await.unwrap(), None);
    assert_eq!(store.prune_inbound(at(14)).await.unwrap(), 2);
    assert_eq!(
        store
            .inbound_applied(t.id, Provider::Stripe, "evt_1")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .inbound_applied(t.id, Provider::Stripe, "evt_5")
            .await
            .unwrap(),
        Some(alone.event.id)
    );
}
