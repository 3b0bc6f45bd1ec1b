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
