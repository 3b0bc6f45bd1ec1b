//! Policies: stored whole per team, licenses on them follow them, deletes refuse or detach.

use super::*;
use crate::model::{Meter, MeterPeriod, Policies, Term};

pub async fn policies_are_followed_by_their_licenses_and_deleted_or_detached<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let mut pro = policy(t.id, "Pro", at(1));
    pro.hwid_limit = Some(3);
    pro.grace_days = 7;
    pro.meters = vec![Meter {
        code: "EXPORTS".into(),
        limit: Some(100),
        period: MeterPeriod::Month,
    }];
    let basic = policy(t.id, "Basic", at(2));
    for p in [&pro, &basic] {
        store.create_policy(p, &Journal::NONE).await.unwrap();
    }
    let theirs = policy(other.id, "Pro", at(3));
    store.create_policy(&theirs, &Journal::NONE).await.unwrap();
    assert_eq!(
        store.list_policies(t.id).await.unwrap(),
        vec![pro.clone(), basic.clone()]
    );
    assert_eq!(store.get_policy(other.id, pro.id).await.unwrap(), None);
    assert_eq!(
        store.get_policy(t.id, pro.id).await.unwrap(),
        Some(pro.clone())
    );

    // A license on a policy of another team is refused; on its own team's, stored as given.
    let mut foreign = license(t.id, t0());
    foreign.policy_id = Some(theirs.id);
    assert!(matches!(
        store.create_license(&foreign, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Policy))
    ));
    let mut p = product(t.id, "App");
    let e = Entitlement {
        id: crate::EntitlementId::new(),
        name: "Sync".into(),
        code: "SYNC".into(),
        metadata: Vec::new(),
        team_id: t.id,
        created_at: at(1),
        updated_at: at(1),
    };
    store.create_entitlement(&e, &Journal::NONE).await.unwrap();
    p.entitlement_ids = Vec::new();
    store.create_product(&p, &Journal::NONE).await.unwrap();
    pro.product_ids = vec![p.id];
    pro.entitlement_ids = vec![e.id];
    store.update_policy(&pro, &Journal::NONE).await.unwrap();
    let on_pro = license(t.id, t0()).placed(Some(&pro), &[Term::IpLimit]);
    let also = license(t.id, t0()).placed(Some(&pro), &[]);
    for l in [&on_pro, &also] {
        store.create_license(l, &Journal::NONE).await.unwrap();
    }
    assert_eq!(
        store.get_license(t.id, on_pro.id).await.unwrap(),
        Some(on_pro.clone())
    );
    assert_eq!(store.count_policy_licenses(t.id, pro.id).await.unwrap(), 2);
    assert_eq!(
        store.count_policy_licenses(t.id, basic.id).await.unwrap(),
        0
    );
    let mut query = LicenseListQuery::default();
    query.filter.policy_id = Some(pro.id);
    let listed = store.list_licenses(t.id, &query).await.unwrap();
    assert_eq!(listed.total, 2);

    // A policy of another team is neither changed nor deleted through this one.
    let mut moved = theirs.clone();
    moved.team_id = t.id;
    assert!(matches!(
        store.update_policy(&moved, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Policy))
    ));
    assert!(matches!(
        store
            .delete_policy(t.id, theirs.id, true, &Journal::NONE)
            .await,
        Err(StoreError::NotFound(Entity::Policy))
    ));

    // Deleting a product or an entitlement detaches it from policies too.
    store
        .delete_entitlement(t.id, e.id, &Journal::NONE)
        .await
        .unwrap();
    store
        .delete_product(t.id, p.id, &Journal::NONE)
        .await
        .unwrap();
    let pro = store.get_policy(t.id, pro.id).await.unwrap().unwrap();
    assert!(pro.product_ids.is_empty() && pro.entitlement_ids.is_empty());

    // In use: refused, naming the count; nothing changes.
    let refused = store
        .delete_policy(t.id, pro.id, false, &Journal::NONE)
        .await;
    assert!(
        matches!(&refused, Err(StoreError::State(m)) if m.contains("2 licenses")),
        "{refused:?}"
    );
    assert!(store.get_policy(t.id, pro.id).await.unwrap().is_some());

    // Detached: the terms that applied written into each license.
    let mut raised = pro.clone();
    raised.hwid_limit = Some(5);
    store.update_policy(&raised, &Journal::NONE).await.unwrap();
    let detached = store
        .delete_policy(t.id, pro.id, true, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(detached, 2);
    assert_eq!(store.get_policy(t.id, pro.id).await.unwrap(), None);
    let l = store.get_license(t.id, also.id).await.unwrap().unwrap();
    assert_eq!((l.policy_id, l.hwid_limit), (None, Some(5)));
    assert!(l.overrides.is_empty());
    let l = store.get_license(t.id, on_pro.id).await.unwrap().unwrap();
    assert_eq!(
        (l.policy_id, l.hwid_limit, l.ip_limit),
        (None, Some(5), None)
    );
    // An unused policy deletes without detach; the other team's is untouched.
    assert_eq!(
        store
            .delete_policy(t.id, basic.id, false, &Journal::NONE)
            .await
            .unwrap(),
        0
    );
    assert!(store.list_policies(t.id).await.unwrap().is_empty());
    assert_eq!(store.list_policies(other.id).await.unwrap(), vec![theirs]);
}

/// The atomic step decides with the policy's limit, live, and writes the license as stored.
pub async fn activity_decides_with_the_policys_terms<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut plan = policy(t.id, "Two devices", at(1));
    plan.hwid_limit = Some(2);
    store.create_policy(&plan, &Journal::NONE).await.unwrap();
    let l = license(t.id, t0()).placed(Some(&plan), &[]);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let settings = t.settings.clone();
    let record = |device: &'static str, policies: Policies| {
        let settings = settings.clone();
        async move {
            let rules = ActivityRules {
                policies: &policies,
                ..ActivityRules::new(&settings)
            };
            store
                .record_activity(t.id, l.id, &rules, &activity(Some(device), 1), at(5))
                .await
                .unwrap()
        }
    };
    let policies = || Policies::new(vec![plan.clone()]);
    assert!(record("device-0001", policies()).await.is_ok());
    assert!(record("device-0002", policies()).await.is_ok());
    assert!(
        record("device-0003", policies()).await.is_err(),
        "the policy's limit"
    );
    let mut raised = plan.clone();
    raised.hwid_limit = Some(3);
    let recorded = record("device-0003", Policies::new(vec![raised]))
        .await
        .unwrap();
    // The license as stored: no limit of its own written.
    assert_eq!(recorded.license.overrides, Vec::<Term>::new());
    assert_eq!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .hwid_limit,
        Some(2)
    );
}
