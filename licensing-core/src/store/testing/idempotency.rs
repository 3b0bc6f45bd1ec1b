//! Idempotency keys: claimed once, kept, replayed, refused for another request, released,
//! expired and purged, per owner.

use super::*;
use crate::idempotency::{
    ABANDONED_AFTER_MS, Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, KEPT_FOR_MS,
    KeptAnswer,
};

fn ms(at: Timestamp, ms: i64) -> Timestamp {
    Timestamp::from_millis(at.as_millis() + ms)
}

fn answer(body: &str) -> KeptAnswer {
    KeptAnswer {
        status: 201,
        content_type: "application/json".into(),
        headers: vec![
            (
                "location".into(),
                "/dashboard/licenses?notice=created".into(),
            ),
            (
                "content-disposition".into(),
                "attachment; filename=\"A.lic\"".into(),
            ),
        ],
        body: body.as_bytes().to_vec(),
    }
}

/// The first claim runs; while it runs the same request waits and another is refused; its kept
/// answer is replayed byte for byte; a released claim runs again; another owner's key of the
/// same name is its own; a key is kept 24 hours and a running claim counts as abandoned after
/// its time; purging deletes what was claimed before a time, at most as many as asked.
pub async fn idempotency_keys_are_claimed_once_kept_replayed_and_purged<S: Store>(store: &S) {
    let a = IdempotencyOwner::api_key(TeamId::new(), "key-a");
    let b = IdempotencyOwner::api_key(TeamId::new(), "key-a");
    let key = IdempotencyKey::parse(b"order-42").unwrap();
    let (print, other) = (Fingerprint([7; 32]), Fingerprint([8; 32]));
    let t = t0();
    let claim = |owner, print, now| store.claim_idempotency_key(owner, &key, print, now);

    assert_eq!(claim(&a, print, t).await.unwrap(), Claim::Run);
    assert_eq!(claim(&a, print, ms(t, 1)).await.unwrap(), Claim::InUse);
    assert_eq!(claim(&a, other, ms(t, 1)).await.unwrap(), Claim::Mismatch);
    // Another owner's key of the same name.
    assert_eq!(claim(&b, other, ms(t, 1)).await.unwrap(), Claim::Run);
    // A claim is kept by its own fingerprint only.
    store
        .keep_idempotent_answer(&a, &key, other, &answer("wrong"))
        .await
        .unwrap();
    assert_eq!(claim(&a, print, ms(t, 2)).await.unwrap(), Claim::InUse);
    let body = "{\"data\":{\"id\":\"é\"},\"result\":{}}";
    store
        .keep_idempotent_answer(&a, &key, print, &answer(body))
        .await
        .unwrap();
    assert_eq!(
        claim(&a, print, ms(t, 3)).await.unwrap(),
        Claim::Replay(answer(body))
    );
    assert_eq!(claim(&a, other, ms(t, 3)).await.unwrap(), Claim::Mismatch);
    // A kept answer is not released.
    store
        .release_idempotency_key(&a, &key, print)
        .await
        .unwrap();
    assert_eq!(
        claim(&a, print, ms(t, 4)).await.unwrap(),
        Claim::Replay(answer(body))
    );
    // A released claim runs again (a 5xx is not kept), with any request.
    store
        .release_idempotency_key(&b, &key, other)
        .await
        .unwrap();
    assert_eq!(claim(&b, print, ms(t, 5)).await.unwrap(), Claim::Run);
    // An abandoned claim runs again; a kept answer is kept for 24 hours.
    let later = ms(t, 5 + ABANDONED_AFTER_MS);
    assert_eq!(claim(&b, other, later).await.unwrap(), Claim::Run);
    assert_eq!(
        claim(&a, print, ms(t, KEPT_FOR_MS - 1)).await.unwrap(),
        Claim::Replay(answer(body))
    );
    assert_eq!(
        claim(&a, other, ms(t, KEPT_FOR_MS)).await.unwrap(),
        Claim::Run
    );
    store
        .keep_idempotent_answer(&a, &key, other, &answer("again"))
        .await
        .unwrap();
    assert_eq!(
        claim(&a, other, ms(t, KEPT_FOR_MS + 1)).await.unwrap(),
        Claim::Replay(answer("again"))
    );

    // Purging: what was claimed before the time, at most `max` at once.
    let c = IdempotencyOwner::admin();
    for i in 0..5u8 {
        let k = IdempotencyKey::parse(format!("purge-{i}").as_bytes()).unwrap();
        let now = ms(t, i64::from(i) * 1000);
        assert_eq!(
            store
                .claim_idempotency_key(&c, &k, print, now)
                .await
                .unwrap(),
            Claim::Run
        );
        store
            .keep_idempotent_answer(&c, &k, print, &answer("{}"))
            .await
            .unwrap();
    }
    let purged = store.purge_idempotency_keys(ms(t, 2500), 2).await.unwrap();
    assert_eq!(purged, 2);
    let purged = store
        .purge_idempotency_keys(ms(t, 2500), 100)
        .await
        .unwrap();
    assert_eq!(purged, 1, "purge-2 was claimed at 2 s");
    for i in 0..5u8 {
        let k = IdempotencyKey::parse(format!("purge-{i}").as_bytes()).unwrap();
        let found = store
            .claim_idempotency_key(&c, &k, other, ms(t, 10_000))
            .await
            .unwrap();
        let expected = if i < 3 { Claim::Run } else { Claim::Mismatch };
        assert_eq!(found, expected, "purge-{i}");
    }
}

/// Of many concurrent claims of one key with one request, exactly one runs; the others wait.
pub fn concurrent_claims_of_one_key_run_exactly_once<S: Store, R: BlockOn>(store: &S, runner: &R) {
    const CLAIMS: usize = 16;
    let owner = IdempotencyOwner::api_key(TeamId::new(), "concurrent");
    let key = IdempotencyKey::parse(b"same-key").unwrap();
    let print = Fingerprint([3; 32]);
    let runs = std::sync::atomic::AtomicUsize::new(0);
    let waits = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..CLAIMS {
            let (owner, key, runs, waits) = (&owner, &key, &runs, &waits);
            scope.spawn(move || {
                let claim = runner
                    .block_on(store.claim_idempotency_key(owner, key, print, t0()))
                    .unwrap();
                let counter = match claim {
                    Claim::Run => runs,
                    Claim::InUse => waits,
                    other => panic!("unexpected {other:?}"),
                };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
    });
    assert_eq!(runs.into_inner(), 1);
    assert_eq!(waits.into_inner(), CLAIMS - 1);
}

/// A write made under a claim (its journal carries it) marks the claim applied in its own
/// atomic step: if the answer is never kept (the server stopped, or the request failed after
/// writing), the request is not run again ([`Claim::AnswerLost`]), and another request with the
/// key is refused as ever; a write whose step failed marks nothing; once its answer is kept, it
/// is replayed.
pub async fn a_keyed_write_marks_its_claim_applied_in_its_own_step<S: Store>(store: &S) {
    use crate::idempotency::KeyedWrite;
    let t = team(store, "A").await;
    let owner = IdempotencyOwner::api_key(t.id, "key-a");
    let now = t0();
    let keyed = |key: &IdempotencyKey, print| KeyedWrite {
        owner: owner.clone(),
        key: key.clone(),
        fingerprint: print,
        claimed_at: now,
    };
    let (print, other) = (Fingerprint([5; 32]), Fingerprint([6; 32]));

    let lost = IdempotencyKey::parse(b"crashed-before-its-answer").unwrap();
    assert_eq!(
        store
            .claim_idempotency_key(&owner, &lost, print, now)
            .await
            .unwrap(),
        Claim::Run
    );
    let journal = Journal {
        keyed: Some(keyed(&lost, print)),
        ..Journal::NONE
    };
    store
        .create_customer(&customer(t.id, "kept@example.com", "Kept", now), &journal)
        .await
        .unwrap();
    // The answer is never kept: the claim is given up (as after a 5xx, or as a restart
    // forgets what ran).
    store
        .release_idempotency_key(&owner, &lost, print)
        .await
        .unwrap();
    let later = ms(now, ABANDONED_AFTER_MS + 1);
    assert_eq!(
        store
            .claim_idempotency_key(&owner, &lost, print, later)
            .await
            .unwrap(),
        Claim::AnswerLost
    );
    assert_eq!(
        store
            .claim_idempotency_key(&owner, &lost, other, later)
            .await
            .unwrap(),
        Claim::Mismatch
    );

    // A write whose step fails (a reference that does not exist) marks nothing.
    let failed = IdempotencyKey::parse(b"failed-write").unwrap();
    assert_eq!(
        store
            .claim_idempotency_key(&owner, &failed, print, now)
            .await
            .unwrap(),
        Claim::Run
    );
    let mut orphan = license(t.id, now);
    orphan.customer_ids = vec![crate::CustomerId::new()];
    let journal = Journal {
        keyed: Some(keyed(&failed, print)),
        ..Journal::NONE
    };
    assert!(store.create_license(&orphan, &journal).await.is_err());
    store
        .release_idempotency_key(&owner, &failed, print)
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_idempotency_key(&owner, &failed, print, ms(now, 1))
            .await
            .unwrap(),
        Claim::Run
    );

    // Kept after its write: replayed.
    let kept = IdempotencyKey::parse(b"answered").unwrap();
    assert_eq!(
        store
            .claim_idempotency_key(&owner, &kept, print, now)
            .await
            .unwrap(),
        Claim::Run
    );
    let journal = Journal {
        keyed: Some(keyed(&kept, print)),
        ..Journal::NONE
    };
    store
        .create_customer(
            &customer(t.id, "answered@example.com", "Answered", now),
            &journal,
        )
        .await
        .unwrap();
    store
        .keep_idempotent_answer(&owner, &kept, print, &answer("{}"))
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_idempotency_key(&owner, &kept, print, ms(now, 2))
            .await
            .unwrap(),
        Claim::Replay(answer("{}"))
    );
}
