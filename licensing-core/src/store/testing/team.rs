//! What a team counts and restricts: product restrictions on lists, the blacklist and statistics.

use super::*;

pub async fn product_and_release_lists_keep_to_a_product_restriction<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p1 = product(t.id, "One");
    let p2 = product(t.id, "Two");
    store.create_product(&p1, &Journal::NONE).await.unwrap();
    store.create_product(&p2, &Journal::NONE).await.unwrap();
    for (p, v) in [(&p1, "1.0.0"), (&p2, "1.0.0"), (&p2, "2.0.0")] {
        store
            .create_release(&release(t.id, p.id, None, v, at(1)), &Journal::NONE)
            .await
            .unwrap();
    }
    let mut products = ProductListQuery::parse("").unwrap();
    products.filter.within = Some(vec![p2.id]);
    let page = store.list_products(t.id, &products).await.unwrap();
    assert_eq!((page.total, page.items[0].id), (1, p2.id));
    let mut releases = ReleaseListQuery::parse("").unwrap();
    releases.filter.within_products = Some(vec![p1.id]);
    let page = store.list_releases(t.id, &releases).await.unwrap();
    assert_eq!(page.total, 1);
    assert!(page.items.iter().all(|r| r.product_id == p1.id));
    releases.filter.within_products = Some(Vec::new());
    assert_eq!(store.list_releases(t.id, &releases).await.unwrap().total, 0);
}

pub async fn blacklist_entries_are_unique_and_count_hits<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let entry = |team: TeamId, kind, value: &str| BlacklistEntry {
        id: BlacklistId::new(),
        team_id: team,
        kind,
        value: value.into(),
        hits: 0,
        created_by_user_id: UserId::ADMIN,
        created_at: t0(),
    };
    let ip = entry(t.id, BlacklistType::Ip, "203.0.113.0/24");
    store
        .create_blacklist_entry(&ip, &Journal::NONE)
        .await
        .unwrap();
    store
        .create_blacklist_entry(&entry(t.id, BlacklistType::Country, "FI"), &Journal::NONE)
        .await
        .unwrap();
    assert!(is_conflict(
        store
            .create_blacklist_entry(
                &entry(t.id, BlacklistType::Ip, "203.0.113.0/24"),
                &Journal::NONE
            )
            .await,
        "value"
    ));
    store
        .create_blacklist_entry(
            &entry(other.id, BlacklistType::Ip, "203.0.113.0/24"),
            &Journal::NONE,
        )
        .await
        .unwrap();
    store
        .add_blacklist_hits(t.id, &[(ip.id, 3), (ip.id, 2), (BlacklistId::new(), 9)])
        .await
        .unwrap();
    store
        .add_blacklist_hits(other.id, &[(ip.id, 100)])
        .await
        .unwrap();
    let list = store.list_blacklist(t.id).await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list.iter().find(|e| e.id == ip.id).unwrap().hits, 5);
    assert!(is_not_found(
        store
            .delete_blacklist_entry(other.id, ip.id, &Journal::NONE)
            .await,
        Entity::Blacklist
    ));
    store
        .delete_blacklist_entry(t.id, ip.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.list_blacklist(t.id).await.unwrap().len(), 1);
}

pub async fn statistics_buckets_merge_and_overview_counts<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut b1 = HourlyStats::new(at(0));
    b1.record(RequestType::Verify, true, Some("FI"));
    let mut b2 = HourlyStats::new(at(30));
    b2.record(RequestType::Heartbeat, false, Some("FI"));
    let mut old = HourlyStats::new(t0().plus_days(0).plus(-chrono::TimeDelta::days(40)));
    old.record(RequestType::Download, true, None);
    for b in [&b1, &b2, &old] {
        store.add_hourly(t.id, b).await.unwrap();
    }
    let since = HourlyStats::hour_of(t0()) - 30 * 24;
    let buckets = store.hourly_since(t.id, since).await.unwrap();
    assert_eq!(buckets.len(), 1, "same hour merged, old one excluded");
    assert_eq!((buckets[0].successful, buckets[0].failed), (1, 1));
    assert_eq!(buckets[0].countries.get("FI"), Some(&2));

    let p = product(t.id, "App");
    let q = product(t.id, "Bpp");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    for i in 0..3u32 {
        let mut l = license(t.id, t0());
        l.product_ids = if i == 0 { vec![p.id, q.id] } else { vec![q.id] };
        store.create_license(&l, &Journal::NONE).await.unwrap();
        if i == 0 {
            store
                .record_activity(
                    t.id,
                    l.id,
                    &ActivityRules::new(&t.settings),
                    &activity(None, 1),
                    at(50),
                )
                .await
                .unwrap()
                .unwrap();
        }
    }
    store
        .create_customer(&customer(t.id, "a@example.com", "A", t0()), &Journal::NONE)
        .await
        .unwrap();
    let o = store.overview(t.id, at(0)).await.unwrap();
    assert_eq!(
        (
            o.total_licenses,
            o.total_customers,
            o.total_products,
            o.active_licenses
        ),
        (3, 1, 2, 1)
    );
    assert_eq!(
        store.overview(t.id, at(51)).await.unwrap().active_licenses,
        0
    );
    let top = store.top_products(t.id, 5).await.unwrap();
    assert_eq!(
        top.iter()
            .map(|p| (p.name.as_str(), p.licenses))
            .collect::<Vec<_>>(),
        [("Bpp", 3), ("App", 1)]
    );
}

pub async fn signing_keys_rotate_and_retire_under_the_teams_lock<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let key = |kid: &str, active| SigningKey {
        kid: kid.into(),
        key: format!("{kid}=="),
        created_at: t0(),
        active,
        state: if active {
            SigningKeyState::Active
        } else {
            SigningKeyState::Former
        },
    };
    let sealed = |seed: &str| {
        StoredTeamKeys::Plain(PlainTeamKeys {
            rsa_private_pem: "placeholder".into(),
            ed25519_seed: seed.into(),
        })
    };
    let rotate = |seed: &str, new: &str, current: &str| SigningKeyChange::Rotate {
        keys: sealed(seed),
        new: key(new, true),
        current: key(current, true),
    };
    // A team that never rotated lists its current key as the former one.
    let after = store
        .change_signing_keys(t.id, &rotate("s2", "k2", "k1"), at(1), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(after.signing_keys, vec![key("k1", false), key("k2", true)]);
    assert_eq!(after.keys, sealed("s2"));
    // The caller's view of the current key matters only for the first rotation.
    store
        .change_signing_keys(t.id, &rotate("s3", "k3", "stale"), at(2), &Journal::NONE)
        .await
        .unwrap();
    let stored = store.get_team(t.id).await.unwrap().unwrap();
    assert_eq!(
        stored.signing_keys,
        vec![key("k1", false), key("k2", false), key("k3", true)]
    );
    assert_eq!((stored.keys, stored.updated_at), (sealed("s3"), at(2)));
    let retire = |kid: &str| SigningKeyChange::Retire { kid: kid.into() };
    assert!(matches!(
        store
            .change_signing_keys(t.id, &retire("k3"), at(3), &Journal::NONE)
            .await,
        Err(StoreError::Conflict { field: "kid", .. })
    ));
    assert!(matches!(
        store
            .change_signing_keys(t.id, &retire("k9"), at(3), &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::SigningKey))
    ));
    let other = team(store, "B").await;
    assert!(matches!(
        store
            .change_signing_keys(other.id, &retire("k1"), at(3), &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::SigningKey))
    ));
    let after = store
        .change_signing_keys(t.id, &retire("k1"), at(4), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(after.signing_keys, vec![key("k2", false), key("k3", true)]);
    assert_eq!(
        store.get_team(t.id).await.unwrap().unwrap().signing_keys,
        after.signing_keys
    );

    // In two steps: a next key is listed and kept, signs nothing until activated; one at a
    // time; a rotation waits for it.
    let next = |kid: &str| SigningKey {
        state: SigningKeyState::Next,
        ..key(kid, false)
    };
    let stage = |seed: &str, kid: &str| SigningKeyChange::Stage {
        keys: sealed(seed),
        new: next(kid),
        current: key("stale", true),
    };
    let staged = store
        .change_signing_keys(t.id, &stage("s4", "k4"), at(5), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        staged.signing_keys,
        vec![key("k2", false), key("k3", true), next("k4")]
    );
    assert_eq!(
        (staged.keys.clone(), staged.next_keys.clone()),
        (sealed("s3"), Some(sealed("s4")))
    );
    for refused in [stage("s5", "k5"), rotate("s5", "k5", "k3")] {
        assert!(matches!(
            store
                .change_signing_keys(t.id, &refused, at(6), &Journal::NONE)
                .await,
            Err(StoreError::State(_))
        ));
    }
    let activate = |kid: &str| SigningKeyChange::Activate { kid: kid.into() };
    assert!(matches!(
        store
            .change_signing_keys(t.id, &activate("k2"), at(6), &Journal::NONE)
            .await,
        Err(StoreError::State(_))
    ));
    let active = store
        .change_signing_keys(t.id, &activate("k4"), at(7), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        active.signing_keys,
        vec![key("k2", false), key("k3", false), key("k4", true)]
    );
    assert_eq!((active.keys, active.next_keys), (sealed("s4"), None));
    // A staged key retired takes its private half with it.
    store
        .change_signing_keys(t.id, &stage("s6", "k6"), at(8), &Journal::NONE)
        .await
        .unwrap();
    let retired = store
        .change_signing_keys(t.id, &retire("k6"), at(9), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!((retired.signing_keys.len(), retired.next_keys), (3, None));
    assert_eq!(store.get_team(t.id).await.unwrap().unwrap().next_keys, None);
}
