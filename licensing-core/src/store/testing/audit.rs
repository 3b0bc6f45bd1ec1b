//! The audit log: what a write records, restores, lists and prunes.

use super::*;

/// A journal of one entry about `resource_id`, by `actor`, at `when`.
pub fn audited(
    team: TeamId,
    action: crate::model::Action,
    resource_id: &str,
    actor: crate::model::Actor,
    when: Timestamp,
) -> Journal {
    Journal::audit(AuditEntry {
        id: crate::AuditId::new(),
        team_id: team,
        at: when,
        actor,
        address: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7))),
        action,
        resource_type: action.resource().to_owned(),
        resource_id: resource_id.to_owned(),
        changes: vec![crate::model::FieldChange {
            field: "name".into(),
            old: None,
            new: Some("x".into()),
            secret: false,
            redacted: false,
        }],
        product_ids: None,
    })
}

pub(super) async fn audit_of<S: Store>(store: &S, team: TeamId) -> Vec<AuditEntry> {
    let query = AuditQuery::parse("pageSize=100").unwrap();
    store.list_audit(team, &query).await.unwrap().items
}

/// Entries restored from an archive come back as they were, in their order, each once, in
/// their own team's log.
pub async fn audit_entries_are_restored_as_they_are<S: Store>(store: &S) {
    use crate::model::{Action, Actor};
    let team = team(store, "restored").await;
    let other = self::team(store, "other").await;
    let key = Actor::api_key(ApiKeyId::new(), "back end");
    let entries: Vec<AuditEntry> = (0..3)
        .flat_map(|i| {
            audited(
                team.id,
                Action::LicenseCreated,
                &format!("license-{i}"),
                key.clone(),
                at(i * 60),
            )
            .audit
        })
        .collect();
    store.restore_audit(&entries).await.unwrap();
    // Restoring again replaces, never doubles.
    store.restore_audit(&entries[1..]).await.unwrap();
    let mut listed = audit_of(store, team.id).await;
    listed.reverse();
    assert_eq!(
        listed, entries,
        "oldest first once reversed, each once, as given"
    );
    assert!(audit_of(store, other.id).await.is_empty());
}

pub async fn audit_entries_are_written_with_their_change_only<S: Store>(store: &S) {
    use crate::model::{Action, Actor};
    let team = team(store, "audited").await;
    let other = self::team(store, "other").await;
    let key = Actor::api_key(ApiKeyId::new(), "back end");
    let c = customer(team.id, "a@example.com", "Ann", t0());
    let journal = audited(
        team.id,
        Action::CustomerCreated,
        &c.id.to_string(),
        key.clone(),
        t0(),
    );
    store.create_customer(&c, &journal).await.unwrap();
    let entries = audit_of(store, team.id).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(Some(&entries[0]), journal.audit.first(), "stored as given");
    assert!(
        audit_of(store, other.id).await.is_empty(),
        "another team's log is its own"
    );

    // Failed writes leave no entry.
    let mut bad = license(team.id, t0());
    bad.customer_ids = vec![CustomerId::new()];
    let failed = audited(
        team.id,
        Action::LicenseCreated,
        &bad.id.to_string(),
        key.clone(),
        t0(),
    );
    assert!(store.create_license(&bad, &failed).await.is_err());
    let missing = customer(team.id, "b@example.com", "Bo", t0());
    let failed = audited(
        team.id,
        Action::CustomerUpdated,
        &missing.id.to_string(),
        key.clone(),
        t0(),
    );
    assert!(store.update_customer(&missing, &failed).await.is_err());
    assert!(
        store
            .delete_customer(team.id, missing.id, &failed)
            .await
            .is_err()
    );
    let failed = audited(team.id, Action::LicenseDeleted, "x", key.clone(), t0());
    assert!(
        store
            .delete_license(other.id, LicenseId::new(), &failed)
            .await
            .is_err()
    );
    let l = license(team.id, t0());
    let mail: Vec<OutboxMessage> = (0..3)
        .map(|i| {
            OutboxMessage::new(
                team.id,
                format!("c{i}@example.com"),
                "s".into(),
                "b".into(),
                t0(),
            )
        })
        .collect();
    let failed = audited(
        team.id,
        Action::LicenseCreated,
        &l.id.to_string(),
        key.clone(),
        t0(),
    );
    assert!(matches!(
        store
            .create_license_with_mail(&l, &mail, 2, t0(), &failed)
            .await,
        Err(StoreError::Limit(_))
    ));
    assert_eq!(
        audit_of(store, team.id).await.len(),
        1,
        "no entry of a failed write"
    );

    // Every kind of audited write records its journal.
    let j = |action, id: &str| audited(team.id, action, id, key.clone(), t0());
    let p = product(team.id, "P");
    store
        .create_product(&p, &j(Action::ProductCreated, "p"))
        .await
        .unwrap();
    let mut l = license(team.id, t0());
    l.product_ids = vec![p.id];
    store
        .create_license_with_mail(&l, &mail[..1], 10, t0(), &j(Action::LicenseCreated, "l"))
        .await
        .unwrap();
    l.suspended = true;
    store
        .update_license(&l, &j(Action::LicenseSuspended, "l"))
        .await
        .unwrap();
    let b = branch(team.id, p.id, "beta");
    store
        .create_branch(&b, &j(Action::BranchCreated, "b"))
        .await
        .unwrap();
    store
        .delete_branch(team.id, p.id, b.id, &j(Action::BranchDeleted, "b"))
        .await
        .unwrap();
    let r = release(team.id, p.id, None, "1.0.0", t0());
    store
        .create_release(&r, &j(Action::ReleaseCreated, "r"))
        .await
        .unwrap();
    store
        .update_release(&r, &j(Action::ReleaseUpdated, "r"))
        .await
        .unwrap();
    store
        .delete_release(team.id, r.id, &j(Action::ReleaseDeleted, "r"))
        .await
        .unwrap();
    let entry = BlacklistEntry {
        id: BlacklistId::new(),
        team_id: team.id,
        kind: BlacklistType::Ip,
        value: "192.0.2.1".into(),
        hits: 0,
        created_by_user_id: UserId::ADMIN,
        created_at: t0(),
    };
    store
        .create_blacklist_entry(&entry, &j(Action::BlacklistCreated, "e"))
        .await
        .unwrap();
    store
        .delete_blacklist_entry(team.id, entry.id, &j(Action::BlacklistDeleted, "e"))
        .await
        .unwrap();
    let k = api_key(team.id, "second");
    store
        .create_api_key(&k, &j(Action::ApiKeyCreated, "k"))
        .await
        .unwrap();
    store
        .delete_api_keys(team.id, &[k.id], &j(Action::ApiKeyRevoked, "k"))
        .await
        .unwrap();
    let settings = TeamSettings {
        strict_customers: true,
        ..TeamSettings::default()
    };
    store
        .update_settings(team.id, &settings, t0(), &j(Action::SettingsUpdated, "t"))
        .await
        .unwrap();
    store
        .update_features(
            team.id,
            TeamFeatures { classloader: false },
            t0(),
            &j(Action::FeaturesUpdated, "t"),
        )
        .await
        .unwrap();
    let c2 = Customer {
        full_name: Some("Ann B".into()),
        ..c.clone()
    };
    store
        .update_customer(&c2, &j(Action::CustomerUpdated, "c"))
        .await
        .unwrap();
    store
        .delete_customer(team.id, c.id, &j(Action::CustomerDeleted, "c"))
        .await
        .unwrap();
    store
        .update_product(&p, &j(Action::ProductUpdated, "p"))
        .await
        .unwrap();
    store
        .delete_license(team.id, l.id, &j(Action::LicenseDeleted, "l"))
        .await
        .unwrap();
    store
        .delete_product(team.id, p.id, &j(Action::ProductDeleted, "p"))
        .await
        .unwrap();
    let actions: Vec<Action> = audit_of(store, team.id)
        .await
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(actions.len(), 20, "{actions:?}");
    for action in [
        Action::ProductCreated,
        Action::LicenseCreated,
        Action::LicenseSuspended,
        Action::BranchCreated,
        Action::BranchDeleted,
        Action::ReleaseCreated,
        Action::ReleaseUpdated,
        Action::ReleaseDeleted,
        Action::BlacklistCreated,
        Action::BlacklistDeleted,
        Action::ApiKeyCreated,
        Action::ApiKeyRevoked,
        Action::SettingsUpdated,
        Action::FeaturesUpdated,
        Action::CustomerUpdated,
        Action::CustomerDeleted,
        Action::ProductUpdated,
        Action::LicenseDeleted,
        Action::ProductDeleted,
    ] {
        assert!(
            actions.contains(&action),
            "{action} missing from {actions:?}"
        );
    }

    // Forgetting devices and addresses, and a new team, are audited too.
    let l = license(other.id, t0());
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rules = ActivityRules::new(&other.settings);
    let activity = activity(Some("device-0000001"), 1);
    store
        .record_activity(other.id, l.id, &rules, &activity, t0())
        .await
        .unwrap()
        .unwrap();
    let hwid = store
        .list_hwids(other.id, l.id, &DeviceListQuery::default())
        .await
        .unwrap()
        .items[0]
        .clone();
    let ip = store
        .list_ips(other.id, l.id, &DeviceListQuery::default())
        .await
        .unwrap()
        .items[0]
        .clone();
    let j = |action, id: &str| audited(other.id, action, id, Actor::admin(), t0());
    store
        .set_hwid_forgotten(
            other.id,
            l.id,
            hwid.id,
            true,
            t0(),
            &j(Action::DeviceForgotten, "h"),
        )
        .await
        .unwrap();
    store
        .set_ip_forgotten(
            other.id,
            l.id,
            ip.id,
            true,
            t0(),
            &j(Action::IpForgotten, "i"),
        )
        .await
        .unwrap();
    assert!(
        store
            .set_ip_forgotten(
                other.id,
                l.id,
                IpId::new(),
                true,
                t0(),
                &j(Action::IpForgotten, "?")
            )
            .await
            .is_err()
    );
    let third = Team {
        id: TeamId::new(),
        ..other.clone()
    };
    let first = api_key(third.id, "first");
    let created = audited(
        third.id,
        Action::TeamCreated,
        &third.id.to_string(),
        Actor::admin(),
        t0(),
    );
    store.create_team(&third, &first, &created).await.unwrap();
    let actions: Vec<Action> = audit_of(store, other.id)
        .await
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(actions.len(), 2);
    assert!(actions.contains(&Action::IpForgotten) && actions.contains(&Action::DeviceForgotten));
    assert_eq!(audit_of(store, third.id).await.len(), 1);
}

pub async fn audit_lists_filter_order_page_and_prune<S: Store>(store: &S) {
    use crate::api::requests::ActorFilter;
    use crate::model::{Action, Actor, ActorKind};
    let team = team(store, "audited").await;
    let one = ApiKeyId::new();
    let mut written = Vec::new();
    for i in 0..30u32 {
        let actor = if i % 3 == 0 {
            Actor::admin()
        } else {
            Actor::api_key(one, "one")
        };
        let (action, resource) = if i % 2 == 0 {
            (Action::CustomerCreated, format!("c{i}"))
        } else {
            (Action::ProductCreated, format!("p{i}"))
        };
        let journal = audited(team.id, action, &resource, actor, at(i));
        let e = journal.audit[0].clone();
        if i % 2 == 0 {
            store
                .create_customer(
                    &customer(team.id, &format!("c{i}@example.com"), "C", t0()),
                    &journal,
                )
                .await
                .unwrap();
        } else {
            store
                .create_product(&product(team.id, &format!("P{i}")), &journal)
                .await
                .unwrap();
        }
        written.push(e);
    }
    let list = |raw: &str| {
        let query = AuditQuery::parse(raw).unwrap();
        async move { store.list_audit(team.id, &query).await.unwrap() }
    };
    let page = list("pageSize=10").await;
    assert_eq!(page.total, 30);
    assert!(page.has_next_page);
    let times: Vec<Timestamp> = page.items.iter().map(|e| e.at).collect();
    assert_eq!(times[0], at(29), "newest first");
    assert!(times.windows(2).all(|w| w[0] > w[1]));
    let last = list("pageSize=10&page=3").await;
    assert_eq!(last.items.last().unwrap().at, at(0));
    assert!(!last.has_next_page);
    let oldest = list("pageSize=10&sortDirection=asc").await;
    assert_eq!(oldest.items[0].at, at(0));

    assert_eq!(list("resourceType=customer&pageSize=100").await.total, 15);
    assert_eq!(list("action=product.created&pageSize=100").await.total, 15);
    let by_id = list("resourceId=c4").await;
    assert_eq!(by_id.items.len(), 1);
    assert_eq!(by_id.items[0], written[4]);
    assert_eq!(list("actor=ADMIN&pageSize=100").await.total, 10);
    let query = AuditQuery {
        actor: Some(ActorFilter::Id(*one.as_uuid())),
        ..AuditQuery::default()
    };
    assert_eq!(store.list_audit(team.id, &query).await.unwrap().total, 20);
    let query = AuditQuery {
        actor: Some(ActorFilter::Kind(ActorKind::User)),
        ..AuditQuery::default()
    };
    assert_eq!(store.list_audit(team.id, &query).await.unwrap().total, 0);
    let query = AuditQuery {
        from: Some(at(10)),
        to: Some(at(20)),
        ..AuditQuery::default()
    };
    let window = store.list_audit(team.id, &query).await.unwrap();
    assert_eq!(window.total, 10, "from inclusive, to exclusive");
    assert!(window.items.iter().all(|e| e.at >= at(10) && e.at < at(20)));

    // Pruning removes the oldest first, at most `limit` at a time.
    assert_eq!(store.prune_audit(at(5), 3).await.unwrap(), 3);
    assert_eq!(store.prune_audit(at(5), 100).await.unwrap(), 2);
    assert_eq!(store.prune_audit(at(5), 100).await.unwrap(), 0);
    let left = list("pageSize=100&sortDirection=asc").await;
    assert_eq!(left.total, 25);
    assert_eq!(left.items[0].at, at(5));
}
