//! The mail outbox and its daily limit.

use super::*;

pub(super) fn message(team: TeamId, to: &str, due: Timestamp) -> OutboxMessage {
    OutboxMessage::new(team, to, "Your license".into(), "KEY".into(), due)
}

pub async fn license_mail_is_queued_with_the_license_and_limited_per_day<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let first = license(t.id, t0());
    let mail = [
        message(t.id, "a@example.com", t0()),
        message(t.id, "b@example.com", t0()),
    ];
    store
        .create_license_with_mail(&first, &mail, 3, t0(), &Journal::NONE)
        .await
        .unwrap();
    assert!(store.get_license(t.id, first.id).await.unwrap().is_some());
    let due = store.due_messages(at(1), 10).await.unwrap();
    assert_eq!(due.len(), 2);

    // Two more would make four today: refused, and the license is not stored either.
    let second = license(t.id, t0());
    let more = [
        message(t.id, "c@example.com", t0()),
        message(t.id, "d@example.com", t0()),
    ];
    assert!(matches!(
        store
            .create_license_with_mail(&second, &more, 3, at(5), &Journal::NONE)
            .await,
        Err(StoreError::Limit(_))
    ));
    assert_eq!(store.get_license(t.id, second.id).await.unwrap(), None);
    assert_eq!(store.due_messages(at(10), 10).await.unwrap().len(), 2);
    // Another team has its own quota; tomorrow this team has a fresh one.
    store
        .create_license_with_mail(
            &license(other.id, t0()),
            &[message(other.id, "x@example.com", t0())],
            3,
            t0(),
            &Journal::NONE,
        )
        .await
        .unwrap();
    store
        .create_license_with_mail(&second, &more, 3, t0().plus_days(1), &Journal::NONE)
        .await
        .unwrap();
    // Messages queued on their own share the quota: one more fits today (day 0 has 2 of 3),
    // two do not, and then nothing is queued.
    let queued_before = store
        .due_messages(t0().plus_days(3), 100)
        .await
        .unwrap()
        .len();
    assert!(matches!(
        store
            .queue_messages(
                t.id,
                &[
                    message(t.id, "e@example.com", t0()),
                    message(t.id, "f@example.com", t0()),
                ],
                3,
                at(20),
            )
            .await,
        Err(StoreError::Limit(_))
    ));
    store
        .queue_messages(t.id, &[message(t.id, "g@example.com", t0())], 3, at(20))
        .await
        .unwrap();
    let due = store.due_messages(t0().plus_days(3), 100).await.unwrap();
    assert_eq!(due.len(), queued_before + 1);
    assert!(due.iter().any(|m| m.to == "g@example.com"));
    assert!(!due.iter().any(|m| m.to == "e@example.com"));
    assert!(is_not_found(
        store
            .queue_messages(crate::TeamId::new(), &[], 3, at(20))
            .await,
        Entity::Team
    ));
    // The usual checks apply.
    let mut dup = license(t.id, t0());
    dup.license_key = first.license_key;
    assert!(is_conflict(
        store
            .create_license_with_mail(&dup, &[], 3, t0().plus_days(2), &Journal::NONE)
            .await,
        "licenseKey"
    ));
}

pub async fn outbox_messages_are_rescheduled_and_removed<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let m = message(t.id, "a@example.com", at(0));
    let later = message(t.id, "b@example.com", at(30));
    store
        .create_license_with_mail(
            &license(t.id, t0()),
            &[later.clone(), m.clone()],
            50,
            t0(),
            &Journal::NONE,
        )
        .await
        .unwrap();
    assert_eq!(
        store.due_messages(at(0), 10).await.unwrap(),
        std::slice::from_ref(&m)
    );
    assert_eq!(
        store.due_messages(at(30), 1).await.unwrap(),
        std::slice::from_ref(&m),
        "soonest first, limited"
    );

    let mut failed = m.clone();
    failed.attempts = 1;
    failed.next_attempt_at = at(5);
    failed.last_error = Some("connection refused".into());
    store.message_failed(&failed).await.unwrap();
    assert!(store.due_messages(at(4), 10).await.unwrap().is_empty());
    assert_eq!(
        store.due_messages(at(5), 10).await.unwrap(),
        [failed.clone()]
    );

    store.message_sent(&failed).await.unwrap();
    assert_eq!(store.due_messages(at(60), 10).await.unwrap(), [later]);
}
