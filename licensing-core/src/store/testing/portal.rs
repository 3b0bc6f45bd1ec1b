//! The customer portal: sign-in tickets spent once, codes with a few tries, sessions, and the
//! budget of devices a customer forgets themselves.

use super::*;
use crate::model::{
    Action, Actor, CodeRedeemed, PortalGrant, PortalMethod, PortalSession, PortalTicket,
    SelfServiceReset, SelfServiceResets, UsageRef,
};

fn ticket(team: TeamId, token: &str, code: Option<&str>, expires_at: Timestamp) -> PortalTicket {
    PortalTicket {
        id: uuid::Uuid::new_v4(),
        team_id: team,
        token_sha256: crate::crypto::sha256_hex(token.as_bytes()),
        code_sha256: code.map(|c| crate::crypto::sha256_hex(c.as_bytes())),
        tries_left: crate::model::PORTAL_CODE_TRIES,
        grant: PortalGrant::Email {
            address: "jane@example.com".into(),
        },
        expires_at,
        created_at: t0(),
    }
}

fn portal_session(team: TeamId, secret: &str, created_at: Timestamp) -> PortalSession {
    PortalSession {
        id_sha256: crate::crypto::sha256_hex(secret.as_bytes()),
        team_id: team,
        grant: PortalGrant::License {
            license_id: LicenseId::new(),
        },
        csrf_token: "csrf".into(),
        method: PortalMethod::LicenseKey,
        created_at,
        last_seen_at: created_at,
    }
}

/// A link is spent by its first redemption and never works after it expires; a code spends
/// its ticket when right, takes a try when wrong, and the last wrong try spends it; another
/// team's id finds nothing. Sessions are stored, touched forward only, listed per team newest
/// first, ended once (the journal then, not after), and pruned with expired tickets.
pub async fn portal_tickets_are_spent_once_and_sessions_end<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let hash = |s: &str| crate::crypto::sha256_hex(s.as_bytes());

    let link = ticket(t.id, "link-token", Some("123456"), at(15));
    store.create_portal_ticket(&link).await.unwrap();
    assert_eq!(
        store
            .redeem_portal_link(&hash("link-token"), at(1))
            .await
            .unwrap()
            .as_ref(),
        Some(&link)
    );
    assert!(
        store
            .redeem_portal_link(&hash("link-token"), at(1))
            .await
            .unwrap()
            .is_none(),
        "a link works once"
    );
    assert_eq!(
        store
            .redeem_portal_code(t.id, link.id, &hash("123456"), at(1))
            .await
            .unwrap(),
        CodeRedeemed::Gone,
        "its code went with it"
    );

    let late = ticket(t.id, "late-token", None, at(15));
    store.create_portal_ticket(&late).await.unwrap();
    assert!(
        store
            .redeem_portal_link(&hash("late-token"), at(15))
            .await
            .unwrap()
            .is_none(),
        "expired"
    );

    let coded = ticket(t.id, "coded-token", Some("654321"), at(15));
    store.create_portal_ticket(&coded).await.unwrap();
    assert_eq!(
        store
            .redeem_portal_code(other.id, coded.id, &hash("654321"), at(1))
            .await
            .unwrap(),
        CodeRedeemed::Gone,
        "another team's id finds nothing"
    );
    assert_eq!(
        store
            .redeem_portal_code(t.id, coded.id, &hash("000000"), at(1))
            .await
            .unwrap(),
        CodeRedeemed::Wrong { tries_left: 4 }
    );
    assert_eq!(
        store
            .redeem_portal_code(t.id, coded.id, &hash("654321"), at(2))
            .await
            .unwrap(),
        CodeRedeemed::Signed(PortalTicket {
            tries_left: 4,
            ..coded.clone()
        })
    );
    assert!(
        store
            .redeem_portal_link(&hash("coded-token"), at(2))
            .await
            .unwrap()
            .is_none(),
        "a code spends the link too"
    );

    let guessed = ticket(t.id, "guessed-token", Some("111111"), at(15));
    store.create_portal_ticket(&guessed).await.unwrap();
    for left in (0..5).rev() {
        assert_eq!(
            store
                .redeem_portal_code(t.id, guessed.id, &hash("999999"), at(1))
                .await
                .unwrap(),
            CodeRedeemed::Wrong { tries_left: left }
        );
    }
    assert_eq!(
        store
            .redeem_portal_code(t.id, guessed.id, &hash("111111"), at(1))
            .await
            .unwrap(),
        CodeRedeemed::Gone,
        "five wrong codes spend it"
    );

    let first = portal_session(t.id, "first", at(1));
    let second = portal_session(t.id, "second", at(2));
    let theirs = portal_session(other.id, "theirs", at(3));
    for s in [&first, &second, &theirs] {
        store
            .create_portal_session(s, &Journal::NONE)
            .await
            .unwrap();
    }
    store
        .touch_portal_session(&first.id_sha256, at(5))
        .await
        .unwrap();
    store
        .touch_portal_session(&first.id_sha256, at(4))
        .await
        .unwrap();
    let read = store
        .get_portal_session(&first.id_sha256)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.last_seen_at, at(5), "touched forward only");
    assert_eq!(read.grant, first.grant);
    let listed = store.list_portal_sessions(t.id).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s.id_sha256.as_str()).collect();
    assert_eq!(ids, [second.id_sha256.as_str(), first.id_sha256.as_str()]);

    let ended = audited(
        t.id,
        Action::PortalSignedOut,
        "session",
        Actor::system("test"),
        at(6),
    );
    assert!(
        !store
            .delete_portal_session(other.id, &first.id_sha256, &ended)
            .await
            .unwrap(),
        "another team cannot end it"
    );
    assert!(
        store
            .delete_portal_session(t.id, &first.id_sha256, &ended)
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_portal_session(t.id, &first.id_sha256, &ended)
            .await
            .unwrap()
    );
    let entries = audit_of(store, t.id).await;
    assert_eq!(
        entries
            .iter()
            .filter(|e| e.action == Action::PortalSignedOut)
            .count(),
        1,
        "the journal of the one that ended it only"
    );
    assert!(
        store
            .get_portal_session(&first.id_sha256)
            .await
            .unwrap()
            .is_none()
    );

    let waiting = ticket(t.id, "waiting-token", None, at(60));
    store.create_portal_ticket(&waiting).await.unwrap();
    let expired = ticket(t.id, "expired-token", None, at(10));
    store.create_portal_ticket(&expired).await.unwrap();
    // The expired ticket, and the sessions begun before minute 3 (the second).
    assert_eq!(store.prune_portal(at(30), at(3)).await.unwrap(), 2);
    assert!(
        store
            .get_portal_session(&theirs.id_sha256)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .redeem_portal_link(&hash("waiting-token"), at(31))
            .await
            .unwrap()
            .is_some()
    );
}

/// A customer forgets counted records up to the budget, then is told when it refills; a record
/// forgotten before costs nothing; the journal is written only for a forget; another license's
/// record, or another team's license, is not found; the budget refills as resets age out.
pub async fn self_service_resets_keep_to_their_budget<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let l = license(t.id, t0());
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let l2 = license(t.id, t0());
    store.create_license(&l2, &Journal::NONE).await.unwrap();
    for i in 0..4u8 {
        let dev = format!("device-{i:04}-portal");
        store
            .record_activity(
                t.id,
                l.id,
                &ActivityRules::new(&t.settings),
                &activity(Some(&dev), i + 1),
                at(1),
            )
            .await
            .unwrap()
            .unwrap();
    }
    let all = DeviceListQuery::parse("pageSize=100&showForgotten=true").unwrap();
    let hwids = store.list_hwids(t.id, l.id, &all).await.unwrap().items;
    let ips = store.list_ips(t.id, l.id, &all).await.unwrap().items;
    let budget = SelfServiceResets {
        count: 2,
        period_days: 1,
    };
    let forget = |record: UsageRef, now: Timestamp| {
        let journal = audited(
            t.id,
            Action::DeviceForgotten,
            "device",
            Actor::system("test"),
            now,
        );
        async move {
            store
                .forget_within_budget(t.id, l.id, record, budget, now, &journal)
                .await
        }
    };
    assert_eq!(
        forget(UsageRef::Hwid(hwids[0].id), at(2)).await.unwrap(),
        SelfServiceReset::Forgotten
    );
    assert_eq!(
        forget(UsageRef::Hwid(hwids[0].id), at(3)).await.unwrap(),
        SelfServiceReset::AlreadyForgotten
    );
    assert_eq!(
        forget(UsageRef::Ip(ips[0].id), at(4)).await.unwrap(),
        SelfServiceReset::Forgotten,
        "addresses share the budget"
    );
    let day = 24 * 60;
    assert_eq!(
        forget(UsageRef::Hwid(hwids[1].id), at(5)).await.unwrap(),
        SelfServiceReset::Spent {
            refills_at: Some(at(2 + day))
        }
    );
    let listed = store.list_hwids(t.id, l.id, &all).await.unwrap().items;
    assert!(
        !listed
            .iter()
            .find(|h| h.id == hwids[1].id)
            .unwrap()
            .forgotten,
        "a refused forget changes nothing"
    );
    let journals = audit_of(store, t.id)
        .await
        .into_iter()
        .filter(|e| e.action == Action::DeviceForgotten)
        .count();
    assert_eq!(journals, 2, "one entry per reset spent");
    assert_eq!(
        forget(UsageRef::Hwid(hwids[1].id), at(2 + day))
            .await
            .unwrap(),
        SelfServiceReset::Forgotten,
        "the oldest reset left the period"
    );

    let wrong_license = store
        .forget_within_budget(
            t.id,
            l2.id,
            UsageRef::Hwid(hwids[2].id),
            budget,
            at(10),
            &Journal::NONE,
        )
        .await;
    assert!(is_not_found(wrong_license, Entity::Hwid));
    let wrong_team = store
        .forget_within_budget(
            other.id,
            l.id,
            UsageRef::Hwid(hwids[2].id),
            budget,
            at(10),
            &Journal::NONE,
        )
        .await;
    assert!(is_not_found(wrong_team, Entity::License));
}

/// Ten customers' clicks at once on ten counted devices, against a budget of three: exactly
/// three forgets.
pub fn concurrent_self_service_resets_spend_exactly_the_budget<S: Store, R: BlockOn>(
    store: &S,
    runner: &R,
) {
    const DEVICES: usize = 10;
    let t = runner.block_on(team(store, "A"));
    let l = license(t.id, t0());
    runner
        .block_on(store.create_license(&l, &Journal::NONE))
        .unwrap();
    for i in 0..DEVICES {
        let dev = format!("device-{i:04}-clicks");
        runner
            .block_on(store.record_activity(
                t.id,
                l.id,
                &ActivityRules::new(&t.settings),
                &activity(Some(&dev), 1),
                at(1),
            ))
            .unwrap()
            .unwrap();
    }
    let all = DeviceListQuery::parse("pageSize=100").unwrap();
    let hwids = runner
        .block_on(store.list_hwids(t.id, l.id, &all))
        .unwrap()
        .items;
    let budget = SelfServiceResets {
        count: 3,
        period_days: 30,
    };
    let forgotten = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for h in &hwids {
            let (t, l, forgotten) = (&t, &l, &forgotten);
            scope.spawn(move || {
                let done = runner
                    .block_on(store.forget_within_budget(
                        t.id,
                        l.id,
                        UsageRef::Hwid(h.id),
                        budget,
                        at(2),
                        &Journal::NONE,
                    ))
                    .unwrap();
                if done == SelfServiceReset::Forgotten {
                    forgotten.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(forgotten.into_inner(), 3);
    let counted = runner.block_on(store.list_hwids(t.id, l.id, &all)).unwrap();
    assert_eq!(counted.total, (DEVICES - 3) as u64);
}
