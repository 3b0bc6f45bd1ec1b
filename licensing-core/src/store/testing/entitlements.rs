//! Entitlements: unique codes per team, updates that keep the code, deletes that detach.

use super::*;

fn entitlement(team: TeamId, code: &str, at_minutes: u32) -> Entitlement {
    Entitlement {
        id: crate::EntitlementId::new(),
        name: format!("{code} feature"),
        code: code.into(),
        metadata: Vec::new(),
        team_id: team,
        created_at: at(at_minutes),
        updated_at: at(at_minutes),
    }
}

pub async fn entitlements_have_unique_codes_and_deleting_detaches_them<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let export = entitlement(t.id, "EXPORT", 1);
    let sso = entitlement(t.id, "SSO", 2);
    for e in [&export, &sso] {
        store.create_entitlement(e, &Journal::NONE).await.unwrap();
    }
    // The code is taken in this team, free in another.
    assert!(matches!(
        store
            .create_entitlement(&entitlement(t.id, "EXPORT", 3), &Journal::NONE)
            .await,
        Err(StoreError::Conflict { field: "code", .. })
    ));
    let theirs = entitlement(other.id, "EXPORT", 3);
    store
        .create_entitlement(&theirs, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.list_entitlements(t.id).await.unwrap(),
        vec![export.clone(), sso.clone()]
    );
    assert_eq!(
        store.get_entitlement(other.id, export.id).await.unwrap(),
        None
    );
    assert_eq!(
        store.get_entitlement(t.id, export.id).await.unwrap(),
        Some(export.clone())
    );

    // An update keeps the stored code.
    let mut renamed = export.clone();
    renamed.name = "Export to PDF".into();
    renamed.code = "CHANGED".into();
    renamed.updated_at = at(9);
    store
        .update_entitlement(&renamed, &Journal::NONE)
        .await
        .unwrap();
    let stored = store
        .get_entitlement(t.id, export.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.name.as_str(), stored.code.as_str()),
        ("Export to PDF", "EXPORT")
    );
    let mut foreign = theirs.clone();
    foreign.team_id = t.id;
    assert!(matches!(
        store.update_entitlement(&foreign, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Entitlement))
    ));

    // Deleting detaches it from the team's licenses and products.
    let mut p = product(t.id, "App");
    p.entitlement_ids = vec![export.id, sso.id];
    store.create_product(&p, &Journal::NONE).await.unwrap();
    let mut l = license(t.id, t0());
    l.entitlement_ids = vec![sso.id, export.id];
    store.create_license(&l, &Journal::NONE).await.unwrap();
    assert!(matches!(
        store
            .delete_entitlement(other.id, export.id, &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::Entitlement))
    ));
    store
        .delete_entitlement(t.id, export.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.list_entitlements(t.id).await.unwrap(),
        vec![sso.clone()]
    );
    let l = store.get_license(t.id, l.id).await.unwrap().unwrap();
    assert_eq!(l.entitlement_ids, vec![sso.id]);
    let p = store.get_product(t.id, p.id).await.unwrap().unwrap();
    assert_eq!(p.entitlement_ids, vec![sso.id]);
    // The other team's entitlement of the same code is untouched.
    assert_eq!(
        store.list_entitlements(other.id).await.unwrap(),
        vec![theirs]
    );
}
