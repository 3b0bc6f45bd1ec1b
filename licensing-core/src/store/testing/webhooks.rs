//! Webhook events and their deliveries, and client events.

use super::*;

/// A webhook endpoint of `team` wanting `types` (everything when empty).
pub fn endpoint(team: TeamId, types: &[&str], enabled: bool) -> crate::model::WebhookEndpoint {
    crate::model::WebhookEndpoint {
        id: crate::WebhookId::new(),
        team_id: team,
        url: "https://hooks.example.com/in".into(),
        description: None,
        event_types: types.iter().map(|t| (*t).to_owned()).collect(),
        enabled,
        disabled_reason: None,
        failing_since: None,
        alert_email: None,
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        previous_secret: None,
        previous_secret_until: None,
        created_at: t0(),
        updated_at: t0(),
        scopes: crate::model::Scopes::All,
        product_ids: None,
    }
}

pub(super) fn raising(team: TeamId, event_type: &str, resource: &str, id: &str) -> Journal {
    Journal::NONE.with_event(crate::model::WebhookEvent {
        id: crate::EventId::ordered(),
        team_id: team,
        event_type: event_type.into(),
        resource_type: resource.into(),
        resource_id: id.into(),
        created_at: t0(),
        data: serde_json::json!({ "id": id }),
        changed_fields: None,
        product_ids: None,
    })
}

/// Events are queued with their write only, fan out to the endpoints that want them, and the
/// deliveries of one endpoint about one resource are claimed in order.
pub async fn webhook_events_fan_out_into_ordered_deliveries<S: Store>(store: &S) {
    use crate::model::{DeliveryStatus, WebhookDelivery};
    let team_a = team(store, "hooked").await;
    let other = team(store, "other hooked").await;
    let all = endpoint(team_a.id, &[], true);
    let mut customers = endpoint(team_a.id, &["customer.*"], true);
    customers.alert_email = Some("ops@example.com".into());
    let off = endpoint(team_a.id, &[], false);
    let foreign = endpoint(other.id, &[], true);
    for e in [&all, &customers, &off, &foreign] {
        store.create_webhook(e, &Journal::NONE).await.unwrap();
    }
    assert_eq!(
        store.list_webhooks(team_a.id).await.unwrap().len(),
        3,
        "a team lists its own endpoints"
    );
    assert_eq!(store.get_webhook(other.id, all.id).await.unwrap(), None);
    let c = customer(team_a.id, "hooked@example.com", "H", t0());
    store
        .create_customer(
            &c,
            &raising(team_a.id, "customer.created", "customer", "c1"),
        )
        .await
        .unwrap();
    // A failed write raises nothing.
    let mut missing = c.clone();
    missing.id = CustomerId::new();
    assert!(
        store
            .update_customer(
                &missing,
                &raising(team_a.id, "customer.updated", "customer", "lost")
            )
            .await
            .is_err()
    );
    let p = product(team_a.id, "Hooked");
    store
        .create_product(&p, &raising(team_a.id, "product.created", "product", "p1"))
        .await
        .unwrap();
    let mut updated = c.clone();
    updated.full_name = Some("H2".into());
    store
        .update_customer(
            &updated,
            &raising(team_a.id, "customer.updated", "customer", "c1"),
        )
        .await
        .unwrap();
    let mut fanned = 0;
    loop {
        let n = store.fan_out_events(at(1), 100).await.unwrap();
        if n == 0 {
            break;
        }
        fanned += n;
    }
    assert!(fanned >= 3);
    let mine = |ds: Vec<WebhookDelivery>| -> Vec<WebhookDelivery> {
        ds.into_iter().filter(|d| d.team_id == team_a.id).collect()
    };
    let claimed = mine(store.claim_deliveries(at(2), 1_000, 100).await.unwrap());
    let of = |ds: &[WebhookDelivery], e: crate::WebhookId| -> Vec<String> {
        let mut types: Vec<String> = ds
            .iter()
            .filter(|d| d.endpoint_id == e)
            .map(|d| d.event_type.clone())
            .collect();
        types.sort();
        types
    };
    // The update of c1 waits behind its creation on each endpoint.
    assert_eq!(
        of(&claimed, all.id),
        vec!["customer.created", "product.created"]
    );
    assert_eq!(of(&claimed, customers.id), vec!["customer.created"]);
    assert!(of(&claimed, off.id).is_empty());
    let body: serde_json::Value = serde_json::from_str(&claimed[0].payload).unwrap();
    assert_eq!(body["teamId"], team_a.id.to_string());
    for mut d in claimed {
        d.status = DeliveryStatus::Succeeded;
        d.next_attempt_at = None;
        store.update_delivery(&d).await.unwrap();
    }
    let claimed = mine(store.claim_deliveries(at(3), 1_000, 100).await.unwrap());
    assert_eq!(of(&claimed, all.id), vec!["customer.updated"]);
    assert_eq!(of(&claimed, customers.id), vec!["customer.updated"]);
    let page = store
        .list_deliveries(team_a.id, all.id, &Default::default())
        .await
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items[0].event_type, "customer.updated", "newest first");
    let one = &page.items[0];
    assert_eq!(
        store
            .get_delivery(team_a.id, all.id, one.id)
            .await
            .unwrap()
            .as_ref(),
        Some(one)
    );
    assert_eq!(
        store.get_delivery(other.id, all.id, one.id).await.unwrap(),
        None
    );
    // Health: failing for the whole window disables the endpoint once.
    let h = store
        .webhook_health(team_a.id, customers.id, false, at(4), 60_000, true)
        .await
        .unwrap()
        .unwrap();
    assert!(!h.disabled_now && h.endpoint.failing_since == Some(at(4)));
    let h = store
        .webhook_health(team_a.id, customers.id, false, at(5), 60_000, true)
        .await
        .unwrap()
        .unwrap();
    assert!(h.disabled_now && !h.endpoint.enabled);
    // Its alert address is told, once, in the same step.
    let alerts: Vec<OutboxMessage> = store
        .due_messages(at(6), 1_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.team_id == team_a.id)
        .collect();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].to, "ops@example.com");
    assert!(alerts[0].body.contains(&customers.url));
    assert!(
        !store
            .get_webhook(team_a.id, customers.id)
            .await
            .unwrap()
            .unwrap()
            .enabled
    );
    assert_eq!(
        store
            .webhook_health(other.id, customers.id, true, at(5), 60_000, true)
            .await
            .unwrap(),
        None
    );
    // A redelivery needs its endpoint; deleting an endpoint deletes its deliveries.
    let again = WebhookDelivery::of_payload(
        team_a.id,
        all.id,
        one.event_id,
        &one.event_type,
        one.resource.clone(),
        one.payload.clone(),
        at(6),
    );
    store.insert_delivery(&again, &Journal::NONE).await.unwrap();
    let mut stray = again.clone();
    stray.id = crate::DeliveryId::ordered();
    stray.endpoint_id = crate::WebhookId::new();
    assert!(matches!(
        store.insert_delivery(&stray, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Webhook))
    ));
    assert!(matches!(
        store.delete_webhook(other.id, all.id, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Webhook))
    ));
    // Finished deliveries are pruned, pending ones kept.
    let before = Timestamp::from_millis(at(3).as_millis() + 1);
    while store.prune_deliveries(before, 10).await.unwrap() > 0 {}
    let left = store
        .list_deliveries(team_a.id, all.id, &Default::default())
        .await
        .unwrap();
    assert!(
        left.items
            .iter()
            .all(|d| d.status == DeliveryStatus::Pending || d.created_at >= before)
    );
    store
        .delete_webhook(team_a.id, all.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_webhook(team_a.id, all.id).await.unwrap(), None);
    assert_eq!(
        store
            .get_delivery(team_a.id, all.id, again.id)
            .await
            .unwrap(),
        None
    );
    let mut gone = customers.clone();
    gone.id = crate::WebhookId::new();
    assert!(matches!(
        store.update_webhook(&gone, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Webhook))
    ));
}

/// Fans out every queued event and sends (marks delivered) every delivery of `team`: the
/// types and bodies, in the order of their events.
pub(super) async fn delivered<S: Store>(
    store: &S,
    team: TeamId,
    when: Timestamp,
) -> Vec<(String, serde_json::Value)> {
    use crate::model::WebhookDelivery;
    while store.fan_out_events(when, 100).await.unwrap() > 0 {}
    // One delivery per resource at a time: claim until none is left.
    let mut all: Vec<WebhookDelivery> = Vec::new();
    loop {
        let mut claimed: Vec<WebhookDelivery> = store
            .claim_deliveries(when, 1_000, 100)
            .await
            .unwrap()
            .into_iter()
            .filter(|d| d.team_id == team)
            .collect();
        if claimed.is_empty() {
            break;
        }
        for d in &mut claimed {
            d.status = crate::model::DeliveryStatus::Succeeded;
            d.next_attempt_at = None;
            store.update_delivery(d).await.unwrap();
        }
        all.extend(claimed);
    }
    all.sort_by_key(|d| d.order());
    all.into_iter()
        .map(|d| {
            let body: serde_json::Value = serde_json::from_str(&d.payload).unwrap();
            (d.event_type, body)
        })
        .collect()
}

/// The events of an admitted client request are written in its atomic step (only those the
/// team wants), and a raised event with a mark is queued once per license and mark.
pub async fn client_events_are_written_with_their_records_and_raised_once<S: Store>(store: &S) {
    use crate::model::{ClientEvent, ClientEvents};
    use crate::store::RaisedEvent;
    let t = team(store, "client events").await;
    let all = endpoint(t.id, &[], true);
    store.create_webhook(&all, &Journal::NONE).await.unwrap();
    let mut l = license(t.id, t0());
    l.expiration_type = ExpirationType::Duration;
    l.expiration_start = ExpirationStart::Activation;
    l.expiration_days = Some(7);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let mut rules = ActivityRules::new(&t.settings);
    rules.events = ClientEvents::ALL;
    store
        .record_activity(t.id, l.id, &rules, &activity(Some("device-one"), 1), at(1))
        .await
        .unwrap()
        .unwrap();
    let events = delivered(store, t.id, at(1)).await;
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, vec!["device.activated", "license.activated"]);
    assert_eq!(events[0].1["data"]["identifier"], "device-one");
    assert_eq!(events[0].1["data"]["licenseId"], l.id.to_string());
    assert_eq!(events[1].1["data"]["id"], l.id.to_string());
    assert!(events[1].1["data"]["expirationDate"].is_string());
    // Known records raise nothing; a new device of a team that wants nothing raises nothing.
    store
        .record_activity(t.id, l.id, &rules, &activity(Some("device-one"), 1), at(2))
        .await
        .unwrap()
        .unwrap();
    store
        .record_activity(
            t.id,
            l.id,
            &ActivityRules::new(&t.settings),
            &activity(Some("device-two"), 2),
            at(3),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(delivered(store, t.id, at(3)).await.is_empty());
    // Marks: once per license and value; none for a license that is gone.
    let expired = |mark: i64| RaisedEvent {
        event: ClientEvent::LicenseExpired.event(
            t.id,
            "license",
            l.id,
            serde_json::json!({ "id": l.id }),
            at(4),
        ),
        once: Some((l.id, mark)),
    };
    assert_eq!(store.raise_events(&[expired(5)]).await.unwrap(), 1);
    assert_eq!(
        store.raise_events(&[expired(5), expired(5)]).await.unwrap(),
        0
    );
    assert_eq!(store.raise_events(&[expired(6)]).await.unwrap(), 1);
    let plain = RaisedEvent {
        once: None,
        ..expired(0)
    };
    assert_eq!(store.raise_events(&[plain]).await.unwrap(), 1);
    let types: Vec<String> = delivered(store, t.id, at(5))
        .await
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert_eq!(types.len(), 3);
    assert!(types.iter().all(|t| t == "license.expired"));
    store
        .delete_license(t.id, l.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.raise_events(&[expired(7)]).await.unwrap(), 0);
}
