//! Licenses: keys, references, updates, deletes and lists.

use super::*;

pub async fn licenses_are_created_and_read_by_id_and_key<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut l = license(t.id, t0());
    l.metadata = vec![MetadataItem {
        key: "tier".into(),
        value: "gold".into(),
        locked: true,
    }];
    store.create_license(&l, &Journal::NONE).await.unwrap();
    assert_eq!(
        store.get_license(t.id, l.id).await.unwrap(),
        Some(l.clone())
    );
    assert_eq!(
        store
            .get_license_by_key(t.id, &l.license_key)
            .await
            .unwrap(),
        Some(l.clone())
    );
    assert_eq!(
        store.get_license(t.id, LicenseId::new()).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .get_license_by_key(t.id, &LicenseKey::generate())
            .await
            .unwrap(),
        None
    );
}

pub async fn license_keys_are_unique_within_a_team_only<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let first = license(a.id, t0());
    store.create_license(&first, &Journal::NONE).await.unwrap();
    let mut same_key = license(a.id, t0());
    same_key.license_key = first.license_key;
    assert!(is_conflict(
        store.create_license(&same_key, &Journal::NONE).await,
        "licenseKey"
    ));
    let mut other_team = license(b.id, t0());
    other_team.license_key = first.license_key;
    store
        .create_license(&other_team, &Journal::NONE)
        .await
        .unwrap();
    // Changing a key to one that is taken is a conflict too; to a free one it is fine.
    let second = license(a.id, t0());
    store.create_license(&second, &Journal::NONE).await.unwrap();
    let mut clash = second.clone();
    clash.license_key = first.license_key;
    assert!(is_conflict(
        store.update_license(&clash, &Journal::NONE).await,
        "licenseKey"
    ));
    let mut fresh = second.clone();
    fresh.license_key = LicenseKey::generate();
    store.update_license(&fresh, &Journal::NONE).await.unwrap();
    assert_eq!(
        store
            .get_license_by_key(a.id, &fresh.license_key)
            .await
            .unwrap()
            .unwrap()
            .id,
        second.id
    );
    assert_eq!(
        store
            .get_license_by_key(a.id, &second.license_key)
            .await
            .unwrap(),
        None
    );
}

/// A key looked up (a store may remember what it named) follows the license's changes: once
/// the key moves to another license, it names that one; once its license is deleted, none.
pub async fn a_key_read_before_names_only_its_license_afterwards<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let by_key = |k: LicenseKey| async move {
        store
            .get_license_by_key(t.id, &k)
            .await
            .unwrap()
            .map(|l| l.id)
    };
    let first = license(t.id, t0());
    store.create_license(&first, &Journal::NONE).await.unwrap();
    let key = first.license_key;
    assert_eq!(by_key(key).await, Some(first.id));
    // The first license takes a new key; the old one names nothing, then the second license.
    let mut renamed = first.clone();
    renamed.license_key = LicenseKey::generate();
    store
        .update_license(&renamed, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(by_key(key).await, None);
    assert_eq!(by_key(renamed.license_key).await, Some(first.id));
    let mut second = license(t.id, t0());
    second.license_key = key;
    store.create_license(&second, &Journal::NONE).await.unwrap();
    assert_eq!(by_key(key).await, Some(second.id));
    assert_eq!(by_key(key).await, Some(second.id));
    // Deleted, it is found by neither.
    store
        .delete_license(t.id, second.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(by_key(key).await, None);
    assert_eq!(by_key(renamed.license_key).await, Some(first.id));
}

pub async fn license_references_must_exist_in_the_same_team<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let foreign_customer = customer(b.id, "x@example.com", "X", t0());
    store
        .create_customer(&foreign_customer, &Journal::NONE)
        .await
        .unwrap();
    let foreign_product = product(b.id, "P");
    store
        .create_product(&foreign_product, &Journal::NONE)
        .await
        .unwrap();
    let mut l = license(a.id, t0());
    l.customer_ids = vec![foreign_customer.id];
    assert!(is_not_found(
        store.create_license(&l, &Journal::NONE).await,
        Entity::Customer
    ));
    l.customer_ids.clear();
    l.product_ids = vec![foreign_product.id];
    assert!(is_not_found(
        store.create_license(&l, &Journal::NONE).await,
        Entity::Product
    ));
    assert_eq!(
        store.get_license(a.id, l.id).await.unwrap(),
        None,
        "nothing stored"
    );
}

pub async fn license_updates_replace_and_deletes_cascade<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    let mut l = license(t.id, t0());
    l.product_ids = vec![p.id];
    l.hwid_limit = Some(5);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let mut r = release(t.id, p.id, None, "1.0.0", t0());
    r.allowed_license_ids = vec![l.id];
    store.create_release(&r, &Journal::NONE).await.unwrap();
    for i in 0..3u8 {
        let dev = format!("device-{i:03}-abcdef");
        store
            .record_activity(
                t.id,
                l.id,
                &ActivityRules::new(&t.settings),
                &activity(Some(&dev), i),
                at(1),
            )
            .await
            .unwrap()
            .unwrap();
    }
    let mut changed = store.get_license(t.id, l.id).await.unwrap().unwrap();
    changed.suspended = true;
    changed.updated_at = at(2);
    store
        .update_license(&changed, &Journal::NONE)
        .await
        .unwrap();
    assert!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .suspended
    );

    let missing = license(t.id, t0());
    assert!(is_not_found(
        store.update_license(&missing, &Journal::NONE).await,
        Entity::License
    ));

    let deleted = store
        .delete_license(t.id, l.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(deleted.id, l.id);
    assert_eq!(store.get_license(t.id, l.id).await.unwrap(), None);
    assert!(is_not_found(
        store
            .list_hwids(t.id, l.id, &DeviceListQuery::parse("").unwrap())
            .await,
        Entity::License
    ));
    let r_after = store.get_release(t.id, r.id).await.unwrap().unwrap();
    assert!(
        r_after.allowed_license_ids.is_empty(),
        "removed from the release"
    );
    assert!(is_not_found(
        store.delete_license(t.id, l.id, &Journal::NONE).await,
        Entity::License
    ));
    // A new license with the freed key works, and sees none of the old records.
    let mut again = license(t.id, t0());
    again.license_key = l.license_key;
    store.create_license(&again, &Journal::NONE).await.unwrap();
    let page = store
        .list_hwids(
            t.id,
            again.id,
            &DeviceListQuery::parse("showForgotten=true").unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(page.total, 0);
}

pub async fn license_lists_filter_sort_and_page<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let p1 = product(t.id, "One");
    let p2 = product(t.id, "Two");
    store.create_product(&p1, &Journal::NONE).await.unwrap();
    store.create_product(&p2, &Journal::NONE).await.unwrap();
    let c1 = customer(t.id, "c1@example.com", "C1", t0());
    store.create_customer(&c1, &Journal::NONE).await.unwrap();
    let mut all = Vec::new();
    for i in 0..30u32 {
        let mut l = license(t.id, at(i));
        l.updated_at = at(100 - i);
        if i % 2 == 0 {
            l.product_ids.push(p1.id);
        }
        if i % 3 == 0 {
            l.product_ids.push(p2.id);
        }
        if i % 5 == 0 {
            l.customer_ids.push(c1.id);
            l.metadata.push(MetadataItem {
                key: "tier".into(),
                value: format!("gold-{i}"),
                locked: false,
            });
        }
        store.create_license(&l, &Journal::NONE).await.unwrap();
        all.push(l);
    }
    store
        .create_license(&license(other.id, t0()), &Journal::NONE)
        .await
        .unwrap();

    let q = |s: &str| LicenseListQuery::parse(s).unwrap();
    let page = store.list_licenses(t.id, &q("")).await.unwrap();
    assert_eq!(
        (page.items.len(), page.total, page.has_next_page),
        (25, 30, true)
    );
    assert_eq!(page.items[0].id, all[29].id, "newest first by default");
    let page2 = store.list_licenses(t.id, &q("page=2")).await.unwrap();
    assert_eq!((page2.items.len(), page2.has_next_page), (5, false));
    assert_eq!(page2.items[4].id, all[0].id);
    let beyond = store.list_licenses(t.id, &q("page=9")).await.unwrap();
    assert_eq!(
        (beyond.items.len(), beyond.total, beyond.has_next_page),
        (0, 30, false)
    );

    let asc = store
        .list_licenses(t.id, &q("pageSize=10&sortDirection=asc"))
        .await
        .unwrap();
    assert_eq!(
        asc.items.iter().map(|l| l.id).collect::<Vec<_>>(),
        all[..10].iter().map(|l| l.id).collect::<Vec<_>>()
    );
    let by_update = store
        .list_licenses(
            t.id,
            &q("pageSize=10&sortColumn=updatedAt&sortDirection=asc"),
        )
        .await
        .unwrap();
    assert_eq!(by_update.items[0].id, all[29].id);

    let either = store
        .list_licenses(
            t.id,
            &q(&format!("pageSize=100&productIds={},{}", p1.id, p2.id)),
        )
        .await
        .unwrap();
    assert_eq!(
        either.total,
        (0..30).filter(|i| i % 2 == 0 || i % 3 == 0).count() as u64
    );
    let only_p2 = store
        .list_licenses(t.id, &q(&format!("pageSize=100&productIds={}", p2.id)))
        .await
        .unwrap();
    assert_eq!(only_p2.total, 10);
    let by_customer = store
        .list_licenses(t.id, &q(&format!("customerIds={}", c1.id)))
        .await
        .unwrap();
    assert_eq!(by_customer.total, 6);
    // By what a customer is called: any part of the name, e-mail address or user name, in any
    // case; a second customer's licenses join in; another team's customer of the same name not.
    let c2 = customer(t.id, "second@example.com", "Other C1 Person", t0());
    store.create_customer(&c2, &Journal::NONE).await.unwrap();
    let mut theirs = all[1].clone();
    theirs.customer_ids = vec![c2.id];
    store.update_license(&theirs, &Journal::NONE).await.unwrap();
    let elsewhere = customer(other.id, "c1@example.com", "C1", t0());
    store
        .create_customer(&elsewhere, &Journal::NONE)
        .await
        .unwrap();
    let mut foreign = license(other.id, t0());
    foreign.customer_ids = vec![elsewhere.id];
    store
        .create_license(&foreign, &Journal::NONE)
        .await
        .unwrap();
    for (search, expected) in [("C1@EXAMPLE", 6), ("c1", 7), ("second", 1), ("nobody", 0)] {
        let found = store
            .list_licenses(t.id, &q(&format!("pageSize=100&customerSearch={search}")))
            .await
            .unwrap();
        assert_eq!(found.total, expected, "customerSearch={search}");
        assert!(found.items.iter().all(|l| l.team_id == t.id));
    }
    // With the other filters.
    let found = store
        .list_licenses(
            t.id,
            &q(&format!(
                "pageSize=100&customerSearch=c1&productIds={}",
                p2.id
            )),
        )
        .await
        .unwrap();
    assert_eq!(
        found.total, 2,
        "licenses 0 and 15: the c1 customers' with product two"
    );
    // Each filter holds on its own: a customer the search finds and one of the listed
    // customers, not necessarily the same one.
    theirs.customer_ids = vec![c2.id, c1.id];
    store.update_license(&theirs, &Journal::NONE).await.unwrap();
    let found = store
        .list_licenses(
            t.id,
            &q(&format!("customerSearch=second&customerIds={}", c1.id)),
        )
        .await
        .unwrap();
    assert_eq!(
        found.items.iter().map(|l| l.id).collect::<Vec<_>>(),
        vec![theirs.id]
    );
    theirs.customer_ids.clear();
    store.update_license(&theirs, &Journal::NONE).await.unwrap();
    let by_meta = store
        .list_licenses(t.id, &q("metadataKey=tier&metadataValue=gold-1"))
        .await
        .unwrap();
    assert_eq!(by_meta.total, 2, "gold-10 and gold-15");
    let key_part = &all[7].license_key.as_str()[6..11].to_lowercase();
    let by_key = store
        .list_licenses(t.id, &q(&format!("search={key_part}")))
        .await
        .unwrap();
    assert!(by_key.items.iter().any(|l| l.id == all[7].id));
    assert!(
        by_key
            .items
            .iter()
            .all(|l| l.license_key.as_str().contains(&key_part.to_uppercase()))
    );
}

/// (ext) Lists sort by expiration date and by last use (those without either last, in both
/// directions), find the licenses expiring within some days and those whose metadata holds a
/// text (an order number), with the table, the candidates and the scan alike.
pub async fn license_lists_sort_by_expiry_and_use_and_find_by_metadata<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let c = customer(t.id, "c@example.com", "C", t0());
    store.create_customer(&c, &Journal::NONE).await.unwrap();
    let now = Timestamp::now();
    let day = 86_400_000;
    let dated = |offset_days: i64, i: u32| {
        let mut l = license(t.id, at(i));
        l.expiration_type = ExpirationType::Date;
        l.expiration_date = Some(Timestamp::from_millis(now.as_millis() + offset_days * day));
        l
    };
    // Created in this order: +40 d, -1 d (expired), +5 d, never, +1 d, not started.
    let mut in_40 = dated(40, 0);
    in_40.last_active_at = Some(at(50));
    let expired = dated(-1, 1);
    let mut in_5 = dated(5, 2);
    in_5.last_active_at = Some(at(70));
    in_5.metadata.push(MetadataItem {
        key: "order".into(),
        value: "ORD-2026-0777".into(),
        locked: false,
    });
    let mut never = license(t.id, at(3));
    never.last_active_at = Some(at(60));
    never.customer_ids.push(c.id);
    let mut in_1 = dated(1, 4);
    in_1.customer_ids.push(c.id);
    let mut unstarted = license(t.id, at(5));
    unstarted.expiration_type = ExpirationType::Duration;
    unstarted.expiration_start = ExpirationStart::Activation;
    unstarted.expiration_days = Some(30);
    for l in [&in_40, &expired, &in_5, &never, &in_1, &unstarted] {
        store.create_license(l, &Journal::NONE).await.unwrap();
    }
    let ids = |query: &str| {
        let query = LicenseListQuery::parse(query).unwrap();
        async move {
            let page = store.list_licenses(t.id, &query).await.unwrap();
            (
                page.items.iter().map(|l| l.id).collect::<Vec<_>>(),
                page.total,
            )
        }
    };
    let (soonest, total) = ids("sortColumn=expirationDate&sortDirection=asc").await;
    assert_eq!(total, 6);
    assert_eq!(soonest[..4], [expired.id, in_1.id, in_5.id, in_40.id]);
    let (latest, _) = ids("sortColumn=expirationDate&sortDirection=desc").await;
    assert_eq!(latest[..4], [in_40.id, in_5.id, in_1.id, expired.id]);
    let mut undated = latest[4..].to_vec();
    undated.sort();
    let mut expected = vec![never.id, unstarted.id];
    expected.sort();
    assert_eq!(undated, expected, "those without a date last either way");
    let (used, _) = ids("sortColumn=lastActiveAt&sortDirection=desc").await;
    assert_eq!(used[..3], [in_5.id, never.id, in_40.id]);
    let (used_asc, _) = ids("sortColumn=lastActiveAt&sortDirection=asc").await;
    assert_eq!(used_asc[..3], [in_40.id, never.id, in_5.id]);
    // With a filter that the table answers, and with candidates from an index.
    let (unsuspended, _) = ids("sortColumn=expirationDate&sortDirection=asc&suspended=false").await;
    assert_eq!(unsuspended[..2], [expired.id, in_1.id]);
    let (customers, total) = ids(&format!(
        "sortColumn=lastActiveAt&sortDirection=desc&customerIds={}",
        c.id
    ))
    .await;
    assert_eq!((customers, total), (vec![never.id, in_1.id], 2));

    // Expiring within a week: not the expired one, not the one in 40 days.
    let (week, total) =
        ids("expiresWithinDays=7&sortColumn=expirationDate&sortDirection=asc").await;
    assert_eq!((week, total), (vec![in_1.id, in_5.id], 2));
    let (month_and_more, _) = ids("expiresWithinDays=41").await;
    assert_eq!(month_and_more.len(), 3);
    // An order number, in any case, in any metadata key; with a sort no index keeps.
    for query in [
        "metadataSearch=ord-2026-0777",
        "metadataSearch=0777&sortColumn=expirationDate",
        "metadataSearch=ORD&expiresWithinDays=10",
    ] {
        assert_eq!(ids(query).await, (vec![in_5.id], 1), "{query}");
    }
    assert_eq!(ids("metadataSearch=ORD-2027").await.1, 0);
}
