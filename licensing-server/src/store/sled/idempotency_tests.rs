//! Tests of `idempotency`.

use super::*;

#[test]
fn records_read_back_as_written() {
    let running = IdempotencyRecord {
        fingerprint: Fingerprint([9; 32]),
        created_at: Timestamp::from_millis(1_764_000_000_000),
        answer: None,
        applied: false,
    };
    assert_eq!(decode(&encode(&running)).unwrap(), running);
    let applied = IdempotencyRecord {
        applied: true,
        ..running.clone()
    };
    assert_eq!(decode(&encode(&applied)).unwrap(), applied);
    let done = IdempotencyRecord {
        answer: Some(KeptAnswer {
            status: 201,
            content_type: "application/json".into(),
            headers: vec![("location".into(), "/dashboard/é".into())],
            body: vec![0, 1, 2, 255],
        }),
        applied: true,
        ..running
    };
    assert_eq!(decode(&encode(&done)).unwrap(), done);
    assert!(decode(&encode(&done)[..40]).is_err());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn answer(body: &str) -> KeptAnswer {
    KeptAnswer {
        status: 201,
        content_type: "application/json".into(),
        headers: Vec::new(),
        body: body.as_bytes().to_vec(),
    }
}

/// A kept answer is durable when keeping it returns: the store dropped without closing
/// (as a crash leaves it) replays it, and a key of yesterday is still found; a purge
/// forgets what was claimed before its time.
#[test]
fn kept_answers_are_durable_at_once_and_purged_by_day() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = IdempotencyOwner::admin();
    let (today, yesterday) = (
        IdempotencyKey::parse(b"today").unwrap(),
        IdempotencyKey::parse(b"yesterday").unwrap(),
    );
    let print = Fingerprint([1; 32]);
    let now = Timestamp::now();
    let earlier = Timestamp::from_millis(now.as_millis() - 20 * 3_600_000);
    let copy = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let store = SledStore::open(dir.path()).expect("open");
        for (k, at) in [(&today, now), (&yesterday, earlier)] {
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, k, print, at)
                    .await
                    .unwrap(),
                Claim::Run
            );
            store
                .keep_idempotent_answer(&owner, k, print, &answer(k.as_str()))
                .await
                .unwrap();
        }
        // What is on disk now, copied while the store is open (no closing flush).
        copy_dir(dir.path(), copy.path());
    });
    runtime().block_on(async {
        let store = SledStore::open(copy.path()).expect("reopen the copy");
        for k in [&today, &yesterday] {
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, k, print, now)
                    .await
                    .unwrap(),
                Claim::Replay(answer(k.as_str())),
                "{}",
                k.as_str()
            );
        }
        let later = Timestamp::from_millis(now.as_millis() - 3_600_000);
        assert_eq!(store.purge_idempotency_keys(later, 100).await.unwrap(), 1);
        assert_eq!(
            store
                .claim_idempotency_key(&owner, &yesterday, print, now)
                .await
                .unwrap(),
            Claim::Run
        );
    });
}

/// At open an answer is believed only where its write's mark is among the records: a
/// crash can make the answers' file durable and not the write (its mark removed here),
/// which leaves the key free; a mark without its answer (the write landed, the answer was
/// lost) is never run again.
#[test]
fn an_answer_is_believed_only_beside_its_mark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = IdempotencyOwner::admin();
    let [kept, unmarked, lost] =
        [b"kept".as_slice(), b"unmarked", b"lost"].map(|k| IdempotencyKey::parse(k).unwrap());
    let (print, other) = (Fingerprint([1; 32]), Fingerprint([2; 32]));
    let now = Timestamp::now();
    runtime().block_on(async {
        let store = SledStore::open(dir.path()).expect("open");
        for k in [&kept, &unmarked] {
            let claim = store.claim_idempotency_key(&owner, k, print, now);
            assert_eq!(claim.await.unwrap(), Claim::Run);
            store
                .keep_idempotent_answer(&owner, k, print, &answer(k.as_str()))
                .await
                .unwrap();
        }
        let tree = &store.inner.tree;
        let marks = tree.scan_prefix([tag::KEPT]).count();
        assert_eq!(marks, 2, "each kept answer has its mark");
        tree.remove(mark_key(now, &name(&owner, &unmarked)))
            .unwrap();
        let keyed = KeyedWrite {
            owner: owner.clone(),
            key: lost.clone(),
            fingerprint: print,
            claimed_at: now,
        };
        tree.insert(
            mark_key(now, &name(&owner, &lost)),
            encode(&keyed.applied()),
        )
        .unwrap();
        tree.flush().unwrap();
    });
    runtime().block_on(async {
        let store = SledStore::open(dir.path()).expect("reopen");
        let claim = |k, print| store.claim_idempotency_key(&owner, k, print, now);
        assert_eq!(
            claim(&kept, print).await.unwrap(),
            Claim::Replay(answer("kept"))
        );
        assert_eq!(claim(&lost, print).await.unwrap(), Claim::AnswerLost);
        assert_eq!(claim(&lost, other).await.unwrap(), Claim::Mismatch);
        assert_eq!(claim(&unmarked, print).await.unwrap(), Claim::Run);
    });
}

/// Writes to the records of the closed store in `dir` with `write`, durably.
fn write_records(dir: &std::path::Path, write: impl FnOnce(&sled::Tree)) {
    let config = sled::Config::new().path(dir);
    let db = crate::store::sled::open_db(&config, crate::store::sled::REOPEN_LOCK_WAIT)
        .expect("raw open");
    write(&db.open_tree("data").unwrap());
    db.flush().unwrap();
}

/// A store written when kept answers lived among the records with their marks
/// (`J|day|name` holding the answer) has them moved to the files, its marks left.
#[test]
fn answers_kept_with_their_marks_are_moved() {
    let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
        write_records(dir, |tree| {
            tree.insert(mark_key(record.created_at, name), encode(record))
                .unwrap();
        });
    };
    an_older_stores_answer_is_replayed(put, |store| {
        let marks: Vec<_> = store.inner.tree.scan_prefix([tag::KEPT]).collect();
        assert_eq!(marks.len(), 1);
        let mark = decode(&marks[0].as_ref().unwrap().1).unwrap();
        assert!(mark.applied && mark.answer.is_none(), "{mark:?}");
        assert_eq!(store.inner.kept.usage().unwrap().0, 1);
    });
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "lock" {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Writes an answer into a closed store the way an older version kept it (`put`, given the
/// store's directory, the answer's name and its record), opens the store and checks that
/// the answer is replayed; then `after` looks at the open store.
fn an_older_stores_answer_is_replayed(
    put: impl FnOnce(&std::path::Path, &[u8], &IdempotencyRecord),
    after: impl FnOnce(&SledStore),
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(SledStore::open(dir.path()).expect("open"));
    let owner = IdempotencyOwner::admin();
    let k = IdempotencyKey::parse(b"before-the-move").unwrap();
    let record = IdempotencyRecord {
        fingerprint: Fingerprint([2; 32]),
        created_at: Timestamp::from_millis(Timestamp::now().as_millis() - 60_000),
        answer: Some(answer("{\"id\":1}")),
        applied: true,
    };
    put(dir.path(), &name(&owner, &k), &record);
    runtime().block_on(async {
        let store = SledStore::open(dir.path()).expect("reopen");
        assert_eq!(
            store
                .claim_idempotency_key(&owner, &k, record.fingerprint, Timestamp::now())
                .await
                .unwrap(),
            Claim::Replay(answer("{\"id\":1}"))
        );
        after(&store);
    });
    dir
}

/// A store written when kept answers had a sled database of their own (`answers`, keys
/// `day | name`) has them moved among the records when it opens, and the database removed.
#[test]
fn answers_kept_in_their_own_database_are_moved() {
    let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
        let db = sled::open(dir.join(ANSWERS_DIR)).expect("answers db");
        let day = day_of(record.created_at);
        db.insert(key(&[&day.to_be_bytes(), name]), encode(record))
            .unwrap();
        db.flush().unwrap();
    };
    let dir = an_older_stores_answer_is_replayed(put, |_| {});
    assert!(!dir.path().join(ANSWERS_DIR).exists());
}

/// A store written when kept answers were files of their own has them moved among the
/// records when it opens, and the files removed.
#[test]
fn answers_kept_in_files_are_moved() {
    let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
        super::super::answer_log::write_for_tests(dir, name, &encode(record));
    };
    let dir = an_older_stores_answer_is_replayed(put, |_| {});
    assert!(!dir.path().join(super::super::answer_log::LOG_DIR).exists());
}

/// A store written when kept answers lived among the records under their first tag
/// (`Y|name` and its entry by time) has them moved, and replays them.
#[test]
fn answers_kept_among_the_records_are_moved() {
    let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
        write_records(dir, |tree| {
            tree.insert(key(&[&[tag::IDEMPOTENCY], name]), encode(record))
                .unwrap();
            let by_time = key(&[
                &[tag::INDEX, tag::IDEMPOTENCY],
                &super::super::keys::time(record.created_at),
                name,
            ]);
            tree.insert(by_time, Vec::new()).unwrap();
        });
    };
    an_older_stores_answer_is_replayed(put, |store| {
        let tree = &store.inner.tree;
        assert_eq!(tree.scan_prefix([tag::IDEMPOTENCY]).count(), 0);
        assert_eq!(tree.scan_prefix([tag::INDEX, tag::IDEMPOTENCY]).count(), 0);
    });
}
