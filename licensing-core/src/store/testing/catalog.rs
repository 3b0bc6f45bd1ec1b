//! Customers, products, branches and releases.

use super::*;

pub async fn customers_are_searched_updated_and_detached_on_delete<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let jane = customer(t.id, "jane@example.com", "Jane Doe", at(1));
    let mut john = customer(t.id, "john@example.org", "John Roe", at(2));
    john.username = Some("jroe".into());
    let ann = customer(t.id, "ann@example.com", "ann smith", at(3));
    for c in [&jane, &john, &ann] {
        store.create_customer(c, &Journal::NONE).await.unwrap();
    }
    // An exact address, in any case, finds its customer only (not one whose address contains
    // it, nor another team's).
    let other = team(store, "B").await;
    let theirs = customer(other.id, "jane@example.com", "Jane B", at(4));
    let longer = customer(t.id, "xjane@example.com", "Not Jane", at(5));
    for c in [&theirs, &longer] {
        store.create_customer(c, &Journal::NONE).await.unwrap();
    }
    let ids = |found: Vec<Customer>| found.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store
            .customers_with_email(t.id, "Jane@Example.COM")
            .await
            .unwrap()),
        vec![jane.id]
    );
    assert!(
        store
            .customers_with_email(t.id, "jane@example")
            .await
            .unwrap()
            .is_empty()
    );
    store
        .delete_customer(t.id, longer.id, &Journal::NONE)
        .await
        .unwrap();
    let q = |s: &str| CustomerListQuery::parse(s).unwrap();
    let found = store
        .list_customers(t.id, &q("search=EXAMPLE.COM"))
        .await
        .unwrap();
    assert_eq!(found.total, 2);
    assert_eq!(
        store
            .list_customers(t.id, &q("search=JROE"))
            .await
            .unwrap()
            .items[0]
            .id,
        john.id
    );
    assert_eq!(
        store
            .list_customers(t.id, &q("search=doe"))
            .await
            .unwrap()
            .items[0]
            .id,
        jane.id
    );
    let by_name: Vec<CustomerId> = store
        .list_customers(t.id, &q("sortColumn=fullName&sortDirection=asc"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(by_name, [ann.id, jane.id, john.id], "case-insensitive");
    assert_eq!(
        store
            .get_customers(t.id, &[john.id, CustomerId::new(), jane.id])
            .await
            .unwrap()
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        [john.id, jane.id]
    );

    let mut renamed = jane.clone();
    renamed.full_name = Some("Jane Q. Doe".into());
    store
        .update_customer(&renamed, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.get_customer(t.id, jane.id).await.unwrap(),
        Some(renamed)
    );

    let mut l = license(t.id, t0());
    l.customer_ids = vec![jane.id, john.id];
    store.create_license(&l, &Journal::NONE).await.unwrap();
    store
        .delete_customer(t.id, jane.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_customer(t.id, jane.id).await.unwrap(), None);
    assert_eq!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .customer_ids,
        [john.id]
    );
    assert!(is_not_found(
        store.delete_customer(t.id, jane.id, &Journal::NONE).await,
        Entity::Customer
    ));
}

pub async fn products_delete_with_their_releases_and_branches<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let keep = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&keep, &Journal::NONE).await.unwrap();
    let b = branch(t.id, p.id, "beta");
    store.create_branch(&b, &Journal::NONE).await.unwrap();
    let r1 = release(t.id, p.id, None, "1.0.0", t0());
    let r2 = release(t.id, p.id, Some(b.id), "1.1.0", t0());
    let r3 = release(t.id, keep.id, None, "1.0.0", t0());
    for r in [&r1, &r2, &r3] {
        store.create_release(r, &Journal::NONE).await.unwrap();
    }
    let mut l = license(t.id, t0());
    l.product_ids = vec![p.id, keep.id];
    store.create_license(&l, &Journal::NONE).await.unwrap();

    let mut renamed = p.clone();
    renamed.name = "App 2".into();
    store
        .update_product(&renamed, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.get_products(t.id, &[p.id]).await.unwrap()[0].name,
        "App 2"
    );

    let mut removed: Vec<ReleaseId> = store
        .delete_product(t.id, p.id, &Journal::NONE)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    removed.sort();
    let mut expected = vec![r1.id, r2.id];
    expected.sort();
    assert_eq!(removed, expected);
    assert_eq!(store.get_product(t.id, p.id).await.unwrap(), None);
    assert_eq!(store.get_release(t.id, r1.id).await.unwrap(), None);
    assert!(store.get_release(t.id, r3.id).await.unwrap().is_some());
    assert!(is_not_found(
        store.list_branches(t.id, p.id).await,
        Entity::Product
    ));
    assert_eq!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .product_ids,
        [keep.id]
    );
    let page = store
        .list_products(t.id, &ProductListQuery::parse("sortColumn=name").unwrap())
        .await
        .unwrap();
    assert_eq!(
        page.items.iter().map(|p| p.id).collect::<Vec<_>>(),
        [keep.id]
    );
}

pub async fn branches_have_unique_names_and_delete_their_releases<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let q = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    let beta = branch(t.id, p.id, "beta");
    store.create_branch(&beta, &Journal::NONE).await.unwrap();
    store
        .create_branch(&branch(t.id, p.id, "alpha"), &Journal::NONE)
        .await
        .unwrap();
    assert!(is_conflict(
        store
            .create_branch(&branch(t.id, p.id, "beta"), &Journal::NONE)
            .await,
        "name"
    ));
    store
        .create_branch(&branch(t.id, q.id, "beta"), &Journal::NONE)
        .await
        .unwrap();
    assert!(is_not_found(
        store
            .create_branch(&branch(t.id, ProductId::new(), "x1"), &Journal::NONE)
            .await,
        Entity::Product
    ));
    let names: Vec<String> = store
        .list_branches(t.id, p.id)
        .await
        .unwrap()
        .iter()
        .map(|b| b.name.to_string())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);

    let on_beta = release(t.id, p.id, Some(beta.id), "2.0.0", t0());
    let main = release(t.id, p.id, None, "2.0.0", t0());
    store
        .create_release(&on_beta, &Journal::NONE)
        .await
        .unwrap();
    store.create_release(&main, &Journal::NONE).await.unwrap();
    assert!(
        is_not_found(
            store
                .delete_branch(t.id, q.id, beta.id, &Journal::NONE)
                .await,
            Entity::Branch
        ),
        "wrong product"
    );
    let removed = store
        .delete_branch(t.id, p.id, beta.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        removed.iter().map(|r| r.id).collect::<Vec<_>>(),
        [on_beta.id]
    );
    assert!(store.get_release(t.id, main.id).await.unwrap().is_some());
    assert_eq!(store.list_branches(t.id, p.id).await.unwrap().len(), 1);
}

pub async fn releases_check_references_versions_and_the_latest_rule<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let q = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    let beta = branch(t.id, p.id, "beta");
    let q_branch = branch(t.id, q.id, "beta");
    store.create_branch(&beta, &Journal::NONE).await.unwrap();
    store
        .create_branch(&q_branch, &Journal::NONE)
        .await
        .unwrap();

    let mut r1 = release(t.id, p.id, None, "1.0.0", at(1));
    r1.latest = true;
    store.create_release(&r1, &Journal::NONE).await.unwrap();
    let mut r2 = release(t.id, p.id, None, "1.1.0", at(2));
    r2.latest = true;
    let mut rb = release(t.id, p.id, Some(beta.id), "1.0.0", at(3));
    rb.latest = true;
    store.create_release(&rb, &Journal::NONE).await.unwrap();
    store.create_release(&r2, &Journal::NONE).await.unwrap();
    assert!(
        !store
            .get_release(t.id, r1.id)
            .await
            .unwrap()
            .unwrap()
            .latest,
        "only one latest per branch"
    );
    assert!(
        store
            .get_release(t.id, r2.id)
            .await
            .unwrap()
            .unwrap()
            .latest
    );
    assert!(
        store
            .get_release(t.id, rb.id)
            .await
            .unwrap()
            .unwrap()
            .latest,
        "other branch untouched"
    );

    assert!(is_conflict(
        store
            .create_release(&release(t.id, p.id, None, "1.0.0", at(4)), &Journal::NONE)
            .await,
        "version"
    ));
    assert!(is_not_found(
        store
            .create_release(
                &release(t.id, ProductId::new(), None, "9.0.0", at(4)),
                &Journal::NONE
            )
            .await,
        Entity::Product
    ));
    assert!(
        is_not_found(
            store
                .create_release(
                    &release(t.id, p.id, Some(q_branch.id), "9.0.0", at(4)),
                    &Journal::NONE
                )
                .await,
            Entity::Branch
        ),
        "a branch of another product"
    );
    let mut restricted = release(t.id, p.id, None, "9.0.0", at(4));
    restricted.allowed_license_ids = vec![LicenseId::new()];
    assert!(is_not_found(
        store.create_release(&restricted, &Journal::NONE).await,
        Entity::License
    ));

    // Update: making r1 latest again flips r2; changing r1's version to a taken one conflicts.
    let mut r1u = store.get_release(t.id, r1.id).await.unwrap().unwrap();
    r1u.latest = true;
    r1u.status = ReleaseStatus::Deprecated;
    r1u.file = None;
    store.update_release(&r1u, &Journal::NONE).await.unwrap();
    assert!(
        !store
            .get_release(t.id, r2.id)
            .await
            .unwrap()
            .unwrap()
            .latest
    );
    assert_eq!(
        store.get_release(t.id, r1.id).await.unwrap(),
        Some(r1u.clone())
    );
    let mut clash = r1u.clone();
    clash.version = Version::parse("1.1.0").unwrap();
    assert!(is_conflict(
        store.update_release(&clash, &Journal::NONE).await,
        "version"
    ));

    let (branches, releases) = store.catalog(t.id, p.id).await.unwrap();
    assert_eq!(branches.len(), 1);
    assert_eq!(releases.len(), 3);
    let deleted = store
        .delete_release(t.id, r2.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(deleted.id, r2.id);
    assert!(is_not_found(
        store.delete_release(t.id, r2.id, &Journal::NONE).await,
        Entity::Release
    ));
}

pub async fn release_lists_filter_sort_and_page<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let q = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    for i in 0..12u32 {
        let mut r = release(t.id, p.id, None, &format!("1.{i}.0"), at(i));
        r.status = if i % 4 == 0 {
            ReleaseStatus::Draft
        } else {
            ReleaseStatus::Published
        };
        r.latest = i == 5;
        store.create_release(&r, &Journal::NONE).await.unwrap();
    }
    store
        .create_release(
            &release(t.id, q.id, None, "1.0.0-other", at(50)),
            &Journal::NONE,
        )
        .await
        .unwrap();
    let list = |s: String| async move {
        store
            .list_releases(t.id, &ReleaseListQuery::parse(&s).unwrap())
            .await
            .unwrap()
    };
    let all = list(String::new()).await;
    assert_eq!((all.total, all.items.len()), (13, 13));
    let of_p = list(format!("productId={}&pageSize=10", p.id)).await;
    assert_eq!(
        (of_p.total, of_p.items.len(), of_p.has_next_page),
        (12, 10, true)
    );
    assert_eq!(
        list(format!("productId={}&status=DRAFT", p.id)).await.total,
        3
    );
    assert_eq!(
        list("search=1.1".into()).await.total,
        3,
        "1.1.0, 1.10.0, 1.11.0"
    );
    assert_eq!(list("search=OTHER".into()).await.total, 1);
    let latest_first = list(format!("productId={}&sortColumn=latest", p.id)).await;
    assert!(latest_first.items[0].latest);
    let by_version = list(format!(
        "productId={}&sortColumn=version&sortDirection=asc",
        p.id
    ))
    .await;
    assert_eq!(by_version.items[0].version.as_str(), "1.0.0");
}

/// (ext) An artifact of a release, in a place of its platform, architecture and kind.
fn artifact(
    platform: crate::model::Platform,
    kind: crate::model::ArtifactKind,
    name: &str,
) -> crate::model::Artifact {
    crate::model::Artifact {
        id: crate::ArtifactId::new(),
        platform,
        arch: crate::model::Arch::X86_64,
        kind,
        filename: name.into(),
        size: 3,
        sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into(),
        sha512: "ddaf35a193617aba".into(),
        sha1: "a9993e364706816aba3e25717850c26c9cd0d89d".into(),
        signature: None,
        ed_signature: Some("c2ln".into()),
        server_signed: false,
        key: format!("artifacts/{name}"),
        created_at: at(9),
    }
}

pub async fn release_artifacts_take_one_place_each_and_survive_updates<S: Store>(store: &S) {
    use crate::model::{ArtifactKind, Platform};
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    let mut r = release(t.id, p.id, None, "1.0.0", at(1));
    r.notes = Some("Faster *and* smaller".into());
    r.critical = true;
    r.rollout_percent = crate::model::RolloutPercent::new(25).unwrap();
    store.create_release(&r, &Journal::NONE).await.unwrap();

    let full = artifact(
        Platform::Windows,
        ArtifactKind::Nupkg,
        "App-1.0.0-full.nupkg",
    );
    let delta = artifact(
        Platform::Windows,
        ArtifactKind::Nupkg,
        "App-1.0.0-delta.nupkg",
    );
    let image = artifact(Platform::Linux, ArtifactKind::AppImage, "App.AppImage");
    for a in [&full, &delta, &image] {
        store
            .add_artifact(t.id, r.id, a, &Journal::NONE)
            .await
            .unwrap();
    }
    let again = artifact(
        Platform::Windows,
        ArtifactKind::Nupkg,
        "App-1.0.0-full-2.nupkg",
    );
    assert!(matches!(
        store.add_artifact(t.id, r.id, &again, &Journal::NONE).await,
        Err(StoreError::State(_))
    ));
    let stored = store.get_release(t.id, r.id).await.unwrap().unwrap();
    assert_eq!(
        stored.artifacts,
        vec![full.clone(), delta.clone(), image.clone()]
    );
    assert_eq!(stored.notes.as_deref(), Some("Faster *and* smaller"));
    assert!(stored.critical);
    assert_eq!(stored.rollout_percent.get(), 25);

    // An update written from a copy read before an artifact was added keeps the stored ones.
    let mut stale = r.clone();
    stale.status = crate::model::ReleaseStatus::Deprecated;
    store.update_release(&stale, &Journal::NONE).await.unwrap();
    let updated = store.get_release(t.id, r.id).await.unwrap().unwrap();
    assert_eq!(updated.status, crate::model::ReleaseStatus::Deprecated);
    assert_eq!(updated.artifacts.len(), 3);

    // Removed once; another team's path finds neither the release nor the artifact.
    let other = team(store, "B").await;
    assert!(matches!(
        store
            .remove_artifact(other.id, r.id, delta.id, &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::Release))
    ));
    assert_eq!(
        store
            .remove_artifact(t.id, r.id, delta.id, &Journal::NONE)
            .await
            .unwrap(),
        delta
    );
    assert!(matches!(
        store
            .remove_artifact(t.id, r.id, delta.id, &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::Artifact))
    ));
    assert!(matches!(
        store
            .add_artifact(other.id, r.id, &again, &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::Release))
    ));
    let (_, releases) = store.catalog(t.id, p.id).await.unwrap();
    assert_eq!(releases[0].artifacts, vec![full, image]);
}
