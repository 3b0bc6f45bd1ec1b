//! Rewriting a closed store into fresh files. sled keeps earlier versions of records in its log
//! until it reclaims their segments, so after private keys are sealed (or re-sealed under a new
//! master key) their earlier form may still be on disk. Copying every record into a new database
//! and removing the old files leaves nothing of it.
//!
//! The copy is made beside the store (`db.compacting`), made durable, and swapped in by two
//! renames (`db` to `db.old`, then the copy to `db`); `db.old` is removed last. A crash at any
//! point is finished by [`finish_compaction`] at the next start: a complete copy is swapped in,
//! a half-made one removed.

use std::path::Path;

use licensing_core::store::{StoreError, StoreResult};

use super::SledResult;
use super::backend;

fn paths(data_dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    (
        data_dir.join("db"),
        data_dir.join("db.compacting"),
        data_dir.join("db.old"),
    )
}

fn sync_dir(dir: &Path) -> StoreResult<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(backend)
}

fn io(e: std::io::Error) -> StoreError {
    backend(e)
}

/// Rewrites the store of `data_dir` (which must not be open) into fresh files.
pub(crate) fn compact(data_dir: &Path) -> SledResult<()> {
    let (db, fresh, old) = paths(data_dir);
    finish_compaction(data_dir)?;
    if fresh.exists() {
        std::fs::remove_dir_all(&fresh).map_err(io)?;
    }
    {
        // The store was closed a moment ago: its lock may not be free yet.
        let source = super::open_db(&sled::Config::new().path(&db), super::REOPEN_LOCK_WAIT)?;
        let copy = super::open_db(&sled::Config::new().path(&fresh), super::REOPEN_LOCK_WAIT)?;
        copy.import(source.export());
        copy.flush()?;
        // The kept answers' files, inside the store's directory, are copied as they are (an
        // append-only file holds nothing stale); a store not opened since its answers had a
        // sled database of their own has that database rewritten alike.
        for files in [super::kept_files::DIR, super::answer_log::LOG_DIR] {
            let log = db.join(files);
            if !log.exists() {
                continue;
            }
            let to = fresh.join(files);
            std::fs::create_dir_all(&to).map_err(io)?;
            for entry in std::fs::read_dir(&log).map_err(io)? {
                let entry = entry.map_err(io)?;
                let copied = to.join(entry.file_name());
                std::fs::copy(entry.path(), &copied).map_err(io)?;
                std::fs::File::open(&copied)
                    .and_then(|f| f.sync_all())
                    .map_err(io)?;
            }
            sync_dir(&to)?;
            sync_dir(&fresh)?;
        }
        let answers = db.join(super::idempotency::ANSWERS_DIR);
        if answers.exists() {
            let source =
                super::open_db(&sled::Config::new().path(&answers), super::REOPEN_LOCK_WAIT)?;
            let copy = super::open_db(
                &sled::Config::new().path(fresh.join(super::idempotency::ANSWERS_DIR)),
                super::REOPEN_LOCK_WAIT,
            )?;
            copy.import(source.export());
            copy.flush()?;
        }
    }
    // The copy is complete and durable: mark it so by the swap.
    std::fs::rename(&db, &old).map_err(io)?;
    sync_dir(data_dir)?;
    std::fs::rename(&fresh, &db).map_err(io)?;
    sync_dir(data_dir)?;
    std::fs::remove_dir_all(&old).map_err(io)?;
    Ok(sync_dir(data_dir)?)
}

/// Finishes a compaction a crash interrupted (see the module documentation).
pub(crate) fn finish_compaction(data_dir: &Path) -> StoreResult<()> {
    let (db, fresh, old) = paths(data_dir);
    if !db.exists() && fresh.exists() && old.exists() {
        // Crashed between the two renames: the copy was complete.
        std::fs::rename(&fresh, &db).map_err(io)?;
        sync_dir(data_dir)?;
    }
    if db.exists() {
        for leftover in [&fresh, &old] {
            if leftover.exists() {
                std::fs::remove_dir_all(leftover).map_err(io)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens a database closed a moment ago (its lock may not be free yet).
    fn reopen(path: impl AsRef<Path>) -> sled::Db {
        let config = sled::Config::new().path(path.as_ref());
        super::super::open_db(&config, super::super::REOPEN_LOCK_WAIT).unwrap()
    }

    #[test]
    fn a_compacted_store_keeps_every_record_and_no_earlier_version() {
        let dir = tempfile::tempdir().unwrap();
        let db_dir = dir.path().join("db");
        {
            let db = sled::open(&db_dir).unwrap();
            let tree = db.open_tree("data").unwrap();
            tree.insert(b"team", b"SECRET-IN-THE-CLEAR".as_slice())
                .unwrap();
            tree.insert(b"team", b"sealed".as_slice()).unwrap();
            tree.insert(b"other", b"kept".as_slice()).unwrap();
            db.flush().unwrap();
            let answers = sled::open(db_dir.join("answers")).unwrap();
            answers
                .insert(b"answer", b"SECRET-IN-THE-CLEAR".as_slice())
                .unwrap();
            answers.insert(b"answer", b"replaced".as_slice()).unwrap();
            answers.flush().unwrap();
            for files in [
                super::super::kept_files::DIR,
                super::super::answer_log::LOG_DIR,
            ] {
                let log = db_dir.join(files);
                std::fs::create_dir(&log).unwrap();
                std::fs::write(log.join("20000.log"), files).unwrap();
            }
        }
        compact(dir.path()).unwrap();
        for files in [
            super::super::kept_files::DIR,
            super::super::answer_log::LOG_DIR,
        ] {
            let log = db_dir.join(files);
            assert_eq!(
                std::fs::read(log.join("20000.log")).unwrap(),
                files.as_bytes()
            );
        }
        let db = reopen(&db_dir);
        let tree = db.open_tree("data").unwrap();
        assert_eq!(tree.get(b"team").unwrap().unwrap().as_ref(), b"sealed");
        assert_eq!(tree.get(b"other").unwrap().unwrap().as_ref(), b"kept");
        drop((tree, db));
        let answers = reopen(db_dir.join("answers"));
        assert_eq!(
            answers.get(b"answer").unwrap().unwrap().as_ref(),
            b"replaced"
        );
        drop(answers);
        let mut found = false;
        for entry in walk(dir.path()) {
            let bytes = std::fs::read(&entry).unwrap();
            found |= bytes.windows(19).any(|w| w == b"SECRET-IN-THE-CLEAR");
        }
        assert!(!found, "the earlier version is gone from the files");
        assert!(!dir.path().join("db.old").exists());
        assert!(!dir.path().join("db.compacting").exists());
    }

    #[test]
    fn a_compaction_cut_between_its_renames_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::open(dir.path().join("db.compacting")).unwrap();
            db.insert(b"k", b"v".as_slice()).unwrap();
            db.flush().unwrap();
        }
        std::fs::create_dir(dir.path().join("db.old")).unwrap();
        finish_compaction(dir.path()).unwrap();
        let db = reopen(dir.path().join("db"));
        assert_eq!(db.get(b"k").unwrap().unwrap().as_ref(), b"v");
        assert!(!dir.path().join("db.old").exists());
    }

    fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
