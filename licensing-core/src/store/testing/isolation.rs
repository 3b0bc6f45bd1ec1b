//! Nothing of one team reaches another.

use super::*;

pub async fn nothing_crosses_team_boundaries<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let p = product(a.id, "App");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    let c = customer(a.id, "a@example.com", "A", t0());
    store.create_customer(&c, &Journal::NONE).await.unwrap();
    let br = branch(a.id, p.id, "beta");
    store.create_branch(&br, &Journal::NONE).await.unwrap();
    let r = release(a.id, p.id, None, "1.0.0", t0());
    store.create_release(&r, &Journal::NONE).await.unwrap();
    let mut l = license(a.id, t0());
    l.product_ids = vec![p.id];
    l.customer_ids = vec![c.id];
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rec = store
        .record_activity(
            a.id,
            l.id,
            &ActivityRules::new(&a.settings),
            &activity(Some("device-a-00000"), 1),
            at(1),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.license.id, l.id);
    let hwid = store
        .list_hwids(a.id, l.id, &DeviceListQuery::parse("").unwrap())
        .await
        .unwrap()
        .items[0]
        .id;

    // Reads through team B see nothing.
    assert_eq!(store.get_license(b.id, l.id).await.unwrap(), None);
    assert_eq!(
        store
            .get_license_by_key(b.id, &l.license_key)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.get_customer(b.id, c.id).await.unwrap(), None);
    assert!(store.get_customers(b.id, &[c.id]).await.unwrap().is_empty());
    assert_eq!(store.get_product(b.id, p.id).await.unwrap(), None);
    assert!(store.get_products(b.id, &[p.id]).await.unwrap().is_empty());
    assert_eq!(store.get_release(b.id, r.id).await.unwrap(), None);
    let (branches, releases) = store.catalog(b.id, p.id).await.unwrap();
    assert!(branches.is_empty() && releases.is_empty());
    assert_eq!(
        store
            .list_licenses(b.id, &LicenseListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        store
            .list_customers(b.id, &CustomerListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        store
            .list_products(b.id, &ProductListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        store
            .list_releases(b.id, &ReleaseListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert!(is_not_found(
        store.list_branches(b.id, p.id).await,
        Entity::Product
    ));
    assert!(is_not_found(
        store
            .list_hwids(b.id, l.id, &DeviceListQuery::parse("").unwrap())
            .await,
        Entity::License
    ));
    assert_eq!(store.overview(b.id, t0()).await.unwrap().total_licenses, 0);

    // Writes through team B change nothing of team A.
    let mut stolen = l.clone();
    stolen.team_id = b.id;
    stolen.customer_ids.clear();
    stolen.product_ids.clear();
    assert!(is_not_found(
        store.update_license(&stolen, &Journal::NONE).await,
        Entity::License
    ));
    let mut c2 = c.clone();
    c2.team_id = b.id;
    assert!(is_not_found(
        store.update_customer(&c2, &Journal::NONE).await,
        Entity::Customer
    ));
    let mut p2 = p.clone();
    p2.team_id = b.id;
    assert!(is_not_found(
        store.update_product(&p2, &Journal::NONE).await,
        Entity::Product
    ));
    let mut r2 = r.clone();
    r2.team_id = b.id;
    assert!(is_not_found(
        store.update_release(&r2, &Journal::NONE).await,
        Entity::Release
    ));
    assert!(is_not_found(
        store.delete_license(b.id, l.id, &Journal::NONE).await,
        Entity::License
    ));
    assert!(is_not_found(
        store.delete_customer(b.id, c.id, &Journal::NONE).await,
        Entity::Customer
    ));
    assert!(is_not_found(
        store.delete_product(b.id, p.id, &Journal::NONE).await,
        Entity::Product
    ));
    assert!(is_not_found(
        store.delete_release(b.id, r.id, &Journal::NONE).await,
        Entity::Release
    ));
    assert!(is_not_found(
        store.delete_branch(b.id, p.id, br.id, &Journal::NONE).await,
        Entity::Product
    ));
    assert!(is_not_found(
        store
            .set_hwid_forgotten(b.id, l.id, hwid, true, at(2), &Journal::NONE)
            .await,
        Entity::License
    ));
    assert!(is_not_found(
        store
            .record_activity(
                b.id,
                l.id,
                &ActivityRules::new(&b.settings),
                &activity(None, 1),
                at(2)
            )
            .await,
        Entity::License
    ));
    let mut foreign_branch = branch(b.id, p.id, "gamma");
    foreign_branch.team_id = b.id;
    assert!(is_not_found(
        store.create_branch(&foreign_branch, &Journal::NONE).await,
        Entity::Product
    ));
    let mut foreign_release = release(b.id, p.id, None, "2.0.0", t0());
    foreign_release.team_id = b.id;
    assert!(is_not_found(
        store.create_release(&foreign_release, &Journal::NONE).await,
        Entity::Product
    ));

    // And team A's data is intact.
    assert_eq!(
        store
            .get_license(a.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .customer_ids,
        [c.id]
    );
    assert_eq!(store.get_customer(a.id, c.id).await.unwrap(), Some(c));
    assert_eq!(store.get_product(a.id, p.id).await.unwrap(), Some(p));
    assert_eq!(store.get_release(a.id, r.id).await.unwrap(), Some(r));
    assert!(
        !store
            .list_hwids(a.id, l.id, &DeviceListQuery::parse("").unwrap())
            .await
            .unwrap()
            .items[0]
            .forgotten
    );
}
