//! Release files on disk, under `<data dir>/files/<team>/<file id>`.
//!
//! A file is written to `files/tmp/`, fsynced, renamed into place and its directory fsynced, so
//! it is never visible half-written and survives a crash once stored. The record that points at
//! it is written after the file, and the file of a replaced or deleted release is removed after
//! its record, so a crash can leave an unreferenced file but never a record without its file.

use std::path::{Path, PathBuf};

use licensing_core::crypto::Md5Hasher;
use licensing_core::model::Release;
use licensing_core::{FileId, TeamId};
use tokio::io::AsyncWriteExt;

/// Largest release file: 10 MiB.
pub const MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;

/// Where release files live.
#[derive(Clone, Debug)]
pub struct FileStore {
    root: PathBuf,
}

/// Why a file could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file is larger than [`MAX_FILE_SIZE`].
    #[error("file is larger than 10 MiB")]
    TooLarge,
    /// Reading the upload failed.
    #[error("reading the upload failed: {0}")]
    Upload(String),
    /// The disk failed.
    #[error("file storage failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A stored file: its key, size and MD5.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFile {
    /// Storage key, `<team>/<file id>`.
    pub key: String,
    /// Bytes.
    pub size: u64,
    /// MD5, lower-case hex.
    pub md5: String,
}

/// A file being written: data goes to a temporary file until [`FileStore::commit`].
pub struct PendingFile {
    tmp: PathBuf,
    file: tokio::fs::File,
    size: u64,
    md5: Md5Hasher,
}

impl std::fmt::Debug for PendingFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingFile")
            .field("tmp", &self.tmp)
            .field("size", &self.size)
            .finish()
    }
}

impl FileStore {
    /// The file store under `data_dir`.
    pub fn new(data_dir: &Path) -> std::io::Result<Self> {
        let root = data_dir.join("files");
        crate::datadir::create_private_dir(&root.join("tmp"))?;
        Ok(Self { root })
    }

    /// The path of a stored file.
    pub fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    /// Starts writing a new file.
    pub async fn begin(&self) -> std::io::Result<PendingFile> {
        let tmp = self
            .root
            .join("tmp")
            .join(format!("{}.part", FileId::new()));
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .await?;
        Ok(PendingFile {
            tmp,
            file,
            size: 0,
            md5: Md5Hasher::new(),
        })
    }

    /// Fsyncs the pending file, moves it into place as `<team>/<id>` and fsyncs the directory.
    pub async fn commit(
        &self,
        mut pending: PendingFile,
        team: TeamId,
        id: FileId,
    ) -> Result<StoredFile, FileError> {
        pending.file.flush().await?;
        pending.file.sync_all().await?;
        drop(pending.file);
        let dir = self.root.join(team.to_string());
        tokio::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .await?;
        let key = format!("{team}/{id}");
        tokio::fs::rename(&pending.tmp, self.path(&key)).await?;
        sync_dir(&dir).await?;
        Ok(StoredFile {
            key,
            size: pending.size,
            md5: pending.md5.finish_hex(),
        })
    }

    /// Removes a stored file; a missing file is fine.
    pub async fn remove(&self, key: &str) {
        match tokio::fs::remove_file(self.path(key)).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(error = %e, key, "could not remove a release file"),
        }
    }

    /// Removes the files of deleted releases.
    pub async fn remove_release_files(&self, releases: &[Release]) {
        for file in releases.iter().filter_map(|r| r.file.as_ref()) {
            self.remove(&file.key).await;
        }
    }
}

impl PendingFile {
    /// Appends bytes, failing once the file would exceed [`MAX_FILE_SIZE`].
    pub async fn write(&mut self, data: &[u8]) -> Result<(), FileError> {
        self.size += data.len() as u64;
        if self.size > MAX_FILE_SIZE {
            return Err(FileError::TooLarge);
        }
        self.md5.update(data);
        self.file.write_all(data).await?;
        Ok(())
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Throws the file away.
    pub async fn discard(self) {
        drop(self.file);
        if let Err(e) = tokio::fs::remove_file(&self.tmp).await {
            tracing::warn!(error = %e, path = %self.tmp.display(), "could not remove a temporary upload");
        }
    }
}

async fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        tokio::fs::File::open(dir).await?.sync_all().await?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_are_written_hashed_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path()).unwrap();
        let mut pending = store.begin().await.unwrap();
        pending.write(b"ab").await.unwrap();
        pending.write(b"c").await.unwrap();
        let team = TeamId::new();
        let stored = store.commit(pending, team, FileId::new()).await.unwrap();
        assert_eq!(stored.size, 3);
        assert_eq!(stored.md5, "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(std::fs::read(store.path(&stored.key)).unwrap(), b"abc");
        assert!(
            std::fs::read_dir(dir.path().join("files/tmp"))
                .unwrap()
                .next()
                .is_none(),
            "no temporary left"
        );

        let mut big = store.begin().await.unwrap();
        big.write(&vec![0; MAX_FILE_SIZE as usize]).await.unwrap();
        assert!(matches!(big.write(b"x").await, Err(FileError::TooLarge)));
        big.discard().await;
        store.remove(&stored.key).await;
        assert!(!store.path(&stored.key).exists());
    }
}
