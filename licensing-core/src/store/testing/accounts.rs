//! Teams, API keys, staff accounts and their sessions.

use super::*;

pub async fn teams_are_created_read_listed_and_updated<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    assert_eq!(store.get_team(a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(store.get_team(TeamId::new()).await.unwrap(), None);
    let ids: Vec<TeamId> = store
        .list_teams()
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert!(ids.contains(&a.id) && ids.contains(&b.id));

    let settings = TeamSettings {
        strict_customers: true,
        hwid_timeout: Some(30),
        ..TeamSettings::default()
    };
    let updated = store
        .update_settings(a.id, &settings, at(1), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(updated.settings, settings);
    assert_eq!(
        store.get_team(a.id).await.unwrap().unwrap().settings,
        settings
    );
    let sealed = StoredTeamKeys::Sealed(crate::crypto::SealedTeamKeys {
        key_id: "0011223344556677".into(),
        nonce: "bm9uY2U=".into(),
        sealed: "c2VhbGVk".into(),
    });
    let updated = store
        .update_team_keys(a.id, &sealed, None, at(1))
        .await
        .unwrap();
    assert_eq!(updated.keys, sealed);
    assert_eq!(store.get_team(a.id).await.unwrap().unwrap().keys, sealed);
    assert!(is_not_found(
        store
            .update_team_keys(TeamId::new(), &sealed, None, at(1))
            .await,
        Entity::Team
    ));
    let updated = store
        .update_features(
            a.id,
            TeamFeatures { classloader: false },
            at(2),
            &Journal::NONE,
        )
        .await
        .unwrap();
    assert!(!updated.features.classloader);
    assert!(
        store
            .get_team(b.id)
            .await
            .unwrap()
            .unwrap()
            .features
            .classloader,
        "other team untouched"
    );
    assert!(is_not_found(
        store
            .update_settings(TeamId::new(), &settings, at(3), &Journal::NONE)
            .await,
        Entity::Team
    ));
}

pub async fn api_keys_are_found_by_hash_and_revoked_within_their_team<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let secret = ApiKeySecret::generate();
    let mut key = api_key(a.id, "ci");
    key.hash = secret.hash();
    key.created_at = at(1);
    // A scoped key restricted to a product keeps its scopes and products.
    key.scopes =
        crate::model::Scopes::parse(&["licenses:read".into(), "releases:*".into()]).unwrap();
    key.product_ids = Some(vec![crate::ProductId::new()]);
    key.created_by_user_id = Some(crate::UserId::from(ApiKeyId::new()));
    store.create_api_key(&key, &Journal::NONE).await.unwrap();
    assert_eq!(
        store.find_api_key(&secret.hash()).await.unwrap(),
        Some(key.clone())
    );
    // Uses move `lastUsedAt` forward only, and only within the key's team.
    store
        .record_api_key_use(&[(a.id, key.id, at(5)), (b.id, key.id, at(9))])
        .await
        .unwrap();
    store
        .record_api_key_use(&[(a.id, key.id, at(3)), (a.id, ApiKeyId::new(), at(4))])
        .await
        .unwrap();
    let used = store.find_api_key(&secret.hash()).await.unwrap().unwrap();
    assert_eq!(used.last_used_at, Some(at(5)));
    key.last_used_at = Some(at(5));
    assert_eq!(
        store
            .find_api_key(&ApiKeySecret::generate().hash())
            .await
            .unwrap(),
        None
    );
    let names: Vec<String> = store
        .list_api_keys(a.id)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, ["first", "ci"]);
    assert!(is_not_found(
        store.delete_api_keys(b.id, &[key.id], &Journal::NONE).await,
        Entity::ApiKey
    ));
    // Several at once, those that exist: a key revoked with the keys it made.
    let made_secret = ApiKeySecret::generate();
    let made = ApiKeyRecord {
        hash: made_secret.hash(),
        created_by_user_id: Some(key.id.into()),
        ..api_key(a.id, "made by ci")
    };
    store.create_api_key(&made, &Journal::NONE).await.unwrap();
    assert_eq!(
        store
            .delete_api_keys(a.id, &[key.id, made.id, ApiKeyId::new()], &Journal::NONE)
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.find_api_key(&secret.hash()).await.unwrap(), None);
    assert_eq!(store.find_api_key(&made_secret.hash()).await.unwrap(), None);
    assert!(is_not_found(
        store.delete_api_keys(a.id, &[key.id], &Journal::NONE).await,
        Entity::ApiKey
    ));
}

pub(super) fn staff(team: TeamId, email: &str, minutes: u32) -> crate::model::StaffUser {
    crate::model::StaffUser {
        id: crate::StaffId::new(),
        team_id: team,
        email: Email::parse(email).unwrap(),
        role: crate::model::Role::Support,
        password_hash: None,
        password_link: Some(crate::model::PasswordLink {
            secret_sha256: "ab".repeat(32),
            expires_at: at(minutes + 60),
        }),
        created_at: at(minutes),
        updated_at: at(minutes),
        two_step: None,
        time_zone: None,
        pending_email: None,
    }
}

pub(super) fn session(user: &crate::model::StaffUser, id: &str) -> crate::model::StaffSession {
    crate::model::StaffSession {
        id_sha256: id.repeat(64 / id.len()),
        user_id: user.id,
        team_id: user.team_id,
        csrf_token: format!("csrf-{id}"),
        created_at: at(2),
        last_seen_at: at(2),
    }
}

pub async fn staff_accounts_have_addresses_unique_in_their_team_and_sessions_end_with_them<
    S: Store,
>(
    store: &S,
) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let ann = staff(a.id, "ann@example.com", 1);
    let bob = staff(a.id, "bob@example.com", 0);
    store.create_staff(&ann, &Journal::NONE).await.unwrap();
    store.create_staff(&bob, &Journal::NONE).await.unwrap();
    // An address has one account in a team, whatever its case.
    for taken in ["ann@example.com", "ANN@example.com"] {
        let again = staff(a.id, taken, 3);
        assert!(matches!(
            store.create_staff(&again, &Journal::NONE).await,
            Err(StoreError::Conflict { field: "email", .. })
        ));
    }
    // Another team has an account of its own for the same person.
    let ann_in_b = staff(b.id, "Ann@Example.com", 4);
    store.create_staff(&ann_in_b, &Journal::NONE).await.unwrap();
    assert!(is_not_found(
        store
            .create_staff(
                &staff(crate::TeamId::new(), "cy@example.com", 1),
                &Journal::NONE
            )
            .await,
        Entity::Team
    ));
    assert_eq!(store.get_staff(ann.id).await.unwrap(), Some(ann.clone()));
    assert_eq!(
        store.find_staff_by_email("ann@example.com").await.unwrap(),
        [ann.clone(), ann_in_b.clone()],
        "every team's, oldest first"
    );
    assert_eq!(
        store.find_staff_by_email("cy@example.com").await.unwrap(),
        []
    );
    let listed: Vec<_> = store.list_staff(a.id).await.unwrap();
    assert_eq!(listed, [bob.clone(), ann.clone()], "oldest first");
    assert_eq!(
        store.list_staff(b.id).await.unwrap(),
        std::slice::from_ref(&ann_in_b)
    );

    // A change of address frees the old one; taking another account's is a conflict; another
    // team cannot change the account.
    let mut changed = ann.clone();
    changed.email = Email::parse("ann.smith@example.com").unwrap();
    changed.role = crate::model::Role::Admin;
    changed.password_hash = Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into());
    changed.password_link = None;
    changed.updated_at = at(9);
    store.update_staff(&changed, &Journal::NONE).await.unwrap();
    assert_eq!(
        store.get_staff(ann.id).await.unwrap(),
        Some(changed.clone())
    );
    assert_eq!(
        store.find_staff_by_email("ann@example.com").await.unwrap(),
        std::slice::from_ref(&ann_in_b),
        "the other team's account keeps the address"
    );
    assert_eq!(
        store
            .find_staff_by_email("ann.smith@example.com")
            .await
            .unwrap()
            .iter()
            .map(|u| u.id)
            .collect::<Vec<_>>(),
        [ann.id]
    );
    let mut clash = bob.clone();
    clash.email = changed.email.clone();
    assert!(matches!(
        store.update_staff(&clash, &Journal::NONE).await,
        Err(StoreError::Conflict { field: "email", .. })
    ));
    let mut elsewhere = bob.clone();
    elsewhere.team_id = b.id;
    assert!(is_not_found(
        store.update_staff(&elsewhere, &Journal::NONE).await,
        Entity::Staff
    ));
    let cy = staff(a.id, "ann@example.com", 5);
    store.create_staff(&cy, &Journal::NONE).await.unwrap();

    // Sessions: found by their hash, touched forward only, ended one by one or all at once.
    let (one, two, three) = (
        session(&changed, "1"),
        session(&changed, "2"),
        session(&bob, "3"),
    );
    for s in [&one, &two, &three] {
        store.create_session(s, &Journal::NONE).await.unwrap();
    }
    assert!(is_not_found(
        store
            .create_session(
                &session(&staff(a.id, "x@example.com", 1), "4"),
                &Journal::NONE
            )
            .await,
        Entity::Staff
    ));
    assert_eq!(
        store.get_session(&one.id_sha256).await.unwrap(),
        Some(one.clone())
    );
    store.touch_session(&one.id_sha256, at(30)).await.unwrap();
    store.touch_session(&one.id_sha256, at(20)).await.unwrap();
    store.touch_session(&"f".repeat(64), at(20)).await.unwrap();
    assert_eq!(
        store
            .get_session(&one.id_sha256)
            .await
            .unwrap()
            .unwrap()
            .last_seen_at,
        at(30)
    );
    store
        .delete_session(&two.id_sha256, &Journal::NONE)
        .await
        .unwrap();
    store
        .delete_session(&two.id_sha256, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_session(&two.id_sha256).await.unwrap(), None);
    store.create_session(&two, &Journal::NONE).await.unwrap();
    assert_eq!(store.delete_sessions_of(changed.id).await.unwrap(), 2);
    assert_eq!(store.get_session(&one.id_sha256).await.unwrap(), None);
    assert!(store.get_session(&three.id_sha256).await.unwrap().is_some());

    // Deleting an account ends its sessions; only its own team can.
    assert!(is_not_found(
        store.delete_staff(b.id, bob.id, &Journal::NONE).await,
        Entity::Staff
    ));
    store
        .delete_staff(a.id, bob.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_staff(bob.id).await.unwrap(), None);
    assert_eq!(store.get_session(&three.id_sha256).await.unwrap(), None);
    assert_eq!(
        store.find_staff_by_email("bob@example.com").await.unwrap(),
        []
    );

    // Timed-out sessions are purged: idle (last used too long ago) or too old; a session
    // still in time stays.
    let idle = crate::model::StaffSession {
        last_seen_at: at(10),
        created_at: at(9),
        ..session(&changed, "7")
    };
    let old = crate::model::StaffSession {
        last_seen_at: at(50),
        created_at: at(3),
        ..session(&changed, "8")
    };
    let fresh = crate::model::StaffSession {
        last_seen_at: at(50),
        created_at: at(40),
        ..session(&changed, "9")
    };
    for s in [&idle, &old, &fresh] {
        store.create_session(s, &Journal::NONE).await.unwrap();
    }
    assert_eq!(store.delete_stale_sessions(at(20), at(5)).await.unwrap(), 2);
    assert_eq!(store.get_session(&idle.id_sha256).await.unwrap(), None);
    assert_eq!(store.get_session(&old.id_sha256).await.unwrap(), None);
    assert_eq!(
        store.get_session(&fresh.id_sha256).await.unwrap(),
        Some(fresh.clone())
    );
    assert_eq!(store.delete_stale_sessions(at(20), at(5)).await.unwrap(), 0);
    // The account's other index still works: signing out everywhere ends the fresh one only.
    assert_eq!(store.delete_sessions_of(changed.id).await.unwrap(), 1);
    assert_eq!(
        store
            .list_staff(a.id)
            .await
            .unwrap()
            .into_iter()
            .map(|u| u.id)
            .collect::<Vec<_>>(),
        [changed.id, cy.id]
    );
}
