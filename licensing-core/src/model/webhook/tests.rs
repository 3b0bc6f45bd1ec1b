use super::*;

fn event(resource: &str) -> WebhookEvent {
    WebhookEvent {
        id: EventId::ordered(),
        team_id: TeamId::from_uuid(uuid::Uuid::nil()),
        event_type: "license.updated".into(),
        resource_type: "license".into(),
        resource_id: resource.into(),
        created_at: Timestamp::from_millis(1_000),
        data: serde_json::json!({"id": resource}),
        changed_fields: Some(vec!["suspended".into()]),
        product_ids: None,
    }
}

#[test]
fn patterns_name_types_resources_or_everything() {
    assert!(event_pattern_valid("license.updated"));
    assert!(event_pattern_valid("customer.*"));
    assert!(event_pattern_valid("*"));
    assert!(!event_pattern_valid("license.exploded"));
    assert!(!event_pattern_valid("team.created"));
    assert!(!event_pattern_valid("webhook.created"));
    assert!(event_pattern_valid("webhook.test"));
    assert!(!event_pattern_valid("nothing.*"));
    assert!(event_pattern_matches("license.*", "license.suspended"));
    assert!(!event_pattern_matches("license.*", "licenses.x"));
    assert!(!event_pattern_matches(
        "device.activated",
        "device.limit_reached"
    ));
}

#[test]
fn the_body_has_the_documented_members() {
    let e = event("a");
    let body: Value = serde_json::from_str(&e.body()).unwrap();
    assert_eq!(body["type"], "license.updated");
    assert_eq!(body["id"], e.id.to_string());
    assert_eq!(body["teamId"], e.team_id.to_string());
    assert_eq!(body["createdAt"], "1970-01-01T00:00:01.000Z");
    assert_eq!(body["data"]["id"], "a");
    assert_eq!(body["changedFields"][0], "suspended");
}

#[test]
fn chains_send_their_first_delivery_only() {
    let endpoint = WebhookId::new();
    let now = Timestamp::from_millis(10_000);
    let (a1, a2, b1) = (event("a"), event("a"), event("b"));
    let d = |e: &WebhookEvent| WebhookDelivery::new(e, endpoint, now);
    let (da1, da2, db1) = (d(&a1), d(&a2), d(&b1));
    let mut later = d(&a1);
    later.next_attempt_at = Some(Timestamp::from_millis(20_000));
    // The chain of "a" waits for its first delivery even when a later one is due.
    let picked = first_of_chains([later.clone(), da2.clone(), db1.clone()], now, 10);
    assert_eq!(picked, vec![db1.clone()]);
    let picked = first_of_chains([da2, da1.clone(), db1.clone()], now, 10);
    assert_eq!(picked.len(), 2);
    assert!(picked.contains(&da1) && picked.contains(&db1));
    assert_eq!(first_of_chains([da1], now, 0), Vec::new());
}

#[test]
fn an_endpoint_failing_long_enough_is_disabled_once() {
    let now = Timestamp::from_millis(0);
    let mut e = WebhookEndpoint {
        id: WebhookId::new(),
        team_id: TeamId::new(),
        url: "https://example.com/hook".into(),
        description: None,
        event_types: vec![],
        enabled: true,
        disabled_reason: None,
        failing_since: None,
        alert_email: None,
        secret: "whsec_x".into(),
        previous_secret: Some("whsec_y".into()),
        previous_secret_until: Some(Timestamp::from_millis(5)),
        created_at: now,
        updated_at: now,
        scopes: Scopes::All,
        product_ids: None,
    };
    assert_eq!(e.signing_secrets(now), vec!["whsec_x", "whsec_y"]);
    assert_eq!(
        e.signing_secrets(Timestamp::from_millis(5)),
        vec!["whsec_x"]
    );
    assert!(!apply_health(&mut e, false, now, 100));
    assert!(!apply_health(
        &mut e,
        false,
        Timestamp::from_millis(99),
        100
    ));
    assert!(apply_health(
        &mut e,
        false,
        Timestamp::from_millis(100),
        100
    ));
    assert!(!e.enabled);
    assert!(!apply_health(
        &mut e,
        false,
        Timestamp::from_millis(200),
        100
    ));
    assert!(!apply_health(
        &mut e,
        true,
        Timestamp::from_millis(300),
        100
    ));
    assert_eq!(e.failing_since, None);
}
