//! Release files: on disk under `<data dir>/files/<team>/<file id>` beside the embedded store,
//! or in the store itself ([`Blobs`]) when the store has room for them, so that every instance
//! serves every file.
//!
//! An upload is written to a temporary file first (hashed and capped as it arrives), then
//! stored: on disk it is fsynced, renamed into place and its directory fsynced; in the store it
//! is written whole or not at all. Either way it is never visible half-written and
//! survives a crash once stored. The record that points at a file is written after it, and the
//! file of a replaced or deleted release is removed after its record, so a crash can leave an
//! unreferenced file but never a record without its file. A download reads a file a chunk at a
//! time, never whole.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use licensing_core::crypto::Md5Hasher;
use licensing_core::model::Release;
use licensing_core::{FileId, TeamId};
use tokio::io::AsyncWriteExt;

use crate::store::shared::Blobs;

/// Largest release file in MiB unless the operator says otherwise (the API's 10 MB).
pub const DEFAULT_MAX_FILE_MB: u64 = 10;

/// (ext) Largest update artifact in MiB unless the operator says otherwise (2 GiB).
pub const DEFAULT_MAX_ARTIFACT_MB: u64 = 2048;

/// Where release files live.
#[derive(Clone, Debug)]
pub struct FileStore {
    /// Where uploads wait until they are stored.
    tmp: PathBuf,
    place: Place,
    /// The largest file stored, in bytes.
    max_size: u64,
    /// The largest update artifact stored, in bytes.
    max_artifact: u64,
}

#[derive(Clone)]
enum Place {
    /// Under this directory.
    Dir(PathBuf),
    /// In the store.
    Store(Arc<dyn Blobs>),
}

impl std::fmt::Debug for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Dir(root) => f.debug_tuple("Dir").field(root).finish(),
            Self::Store(_) => f.write_str("Store"),
        }
    }
}

/// Why a file could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file is larger than the store's maximum ([`FileStore::max_size`]).
    #[error("file is larger than the largest allowed")]
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

/// A file being written: data goes to a temporary file until [`FileStore::commit`]. Dropped
/// without being committed (a refused upload, a client gone mid-upload), it removes its
/// temporary file.
pub struct PendingFile {
    tmp: PathBuf,
    /// Open until the file is committed.
    file: Option<tokio::fs::File>,
    /// Whether `tmp` was moved into place.
    moved: bool,
    size: u64,
    max_size: u64,
    md5: Md5Hasher,
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        drop(self.file.take());
        if self.moved {
            return;
        }
        match std::fs::remove_file(&self.tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(error = %e, path = %self.tmp.display(), "could not remove a temporary upload");
            }
        }
    }
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
        Ok(Self {
            tmp: root.join("tmp"),
            place: Place::Dir(root),
            max_size: DEFAULT_MAX_FILE_MB * 1024 * 1024,
            max_artifact: DEFAULT_MAX_ARTIFACT_MB * 1024 * 1024,
        })
    }

    /// The file store in the store's `blobs`; uploads wait in `tmp` (created readable by this
    /// user only; the server uses `<data dir>/files/tmp`, as on disk).
    pub fn in_store(blobs: Arc<dyn Blobs>, tmp: &Path) -> std::io::Result<Self> {
        crate::datadir::create_private_dir(tmp)?;
        Ok(Self {
            tmp: tmp.to_path_buf(),
            place: Place::Store(blobs),
            max_size: DEFAULT_MAX_FILE_MB * 1024 * 1024,
            max_artifact: DEFAULT_MAX_ARTIFACT_MB * 1024 * 1024,
        })
    }

    /// Starts writing a new release file (at most [`max_size`](Self::max_size) bytes).
    pub async fn begin(&self) -> std::io::Result<PendingFile> {
        self.begin_capped(self.max_size).await
    }

    /// Starts writing a new update artifact, or a file of an archive being imported (at most
    /// [`max_artifact`](Self::max_artifact) bytes).
    pub async fn begin_artifact(&self) -> std::io::Result<PendingFile> {
        self.begin_capped(self.max_artifact.max(self.max_size))
            .await
    }

    async fn begin_capped(&self, max_size: u64) -> std::io::Result<PendingFile> {
        let tmp = self.tmp.join(format!("{}.part", FileId::new()));
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .await?;
        Ok(PendingFile {
            tmp,
            file: Some(file),
            moved: false,
            size: 0,
            max_size,
            md5: Md5Hasher::new(),
        })
    }

    /// The same store, taking files of at most `mib` MiB.
    #[must_use]
    pub fn with_max_mib(mut self, mib: u64) -> Self {
        self.max_size = mib.saturating_mul(1024 * 1024);
        self
    }

    /// The same store, taking artifacts of at most `mib` MiB.
    #[must_use]
    pub fn with_max_artifact_mib(mut self, mib: u64) -> Self {
        self.max_artifact = mib.saturating_mul(1024 * 1024);
        self
    }

    /// The largest file stored, in bytes.
    pub fn max_size(&self) -> u64 {
        self.max_size
    }

    /// The largest update artifact stored, in bytes.
    pub fn max_artifact(&self) -> u64 {
        self.max_artifact
    }

    /// Stores the pending file as `<team>/<id>`: on disk, fsynced, moved into place and its
    /// directory fsynced; in PostgreSQL, its chunks in one transaction.
    pub async fn commit(
        &self,
        mut pending: PendingFile,
        team: TeamId,
        id: FileId,
    ) -> Result<StoredFile, FileError> {
        pending.finish().await?;
        drop(pending.file.take());
        let key = format!("{team}/{id}");
        match &self.place {
            Place::Dir(root) => {
                let dir = root.join(team.to_string());
                tokio::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&dir)
                    .await?;
                tokio::fs::rename(&pending.tmp, root.join(&key)).await?;
                pending.moved = true;
                sync_dir(&dir).await?;
            }
            // The temporary file goes when `pending` is dropped.
            Place::Store(blobs) => blobs.put(&key, &pending.tmp).await?,
        }
        Ok(StoredFile {
            key,
            size: pending.size,
            md5: std::mem::take(&mut pending.md5).finish_hex(),
        })
    }

    /// Opens a stored file for reading, with its size; `None` when it is missing.
    pub async fn open(&self, key: &str) -> std::io::Result<Option<(FileReader, u64)>> {
        match &self.place {
            Place::Dir(root) => match tokio::fs::File::open(root.join(key)).await {
                Ok(file) => {
                    let len = file.metadata().await?.len();
                    Ok(Some((FileReader::Disk(file), len)))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            },
            Place::Store(blobs) => Ok(blobs.get(key).await?.map(|(len, chunks)| {
                let reader = tokio_util::io::StreamReader::new(chunks);
                (
                    FileReader::Store(std::sync::Mutex::new(Box::pin(reader))),
                    len,
                )
            })),
        }
    }

    /// Opens a stored file for reading from byte `start` on, with its whole size; `None` when
    /// it is missing. On disk the file is read from there; from the store, the bytes before it
    /// are read and dropped, a chunk at a time.
    pub async fn open_at(
        &self,
        key: &str,
        start: u64,
    ) -> std::io::Result<Option<(FileReader, u64)>> {
        let Some((mut reader, len)) = self.open(key).await? else {
            return Ok(None);
        };
        if start > 0 {
            match &mut reader {
                FileReader::Disk(file) => {
                    use tokio::io::AsyncSeekExt as _;
                    file.seek(std::io::SeekFrom::Start(start)).await?;
                }
                FileReader::Store(_) => {
                    let mut skipped = tokio::io::AsyncReadExt::take(&mut reader, start);
                    tokio::io::copy(&mut skipped, &mut tokio::io::sink()).await?;
                }
            }
        }
        Ok(Some((reader, len)))
    }

    /// Reads a whole stored file; `None` when it is missing.
    pub async fn read(&self, key: &str) -> std::io::Result<Option<Vec<u8>>> {
        let Some((mut reader, len)) = self.open(key).await? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(usize::try_from(len.min(self.max_size)).unwrap_or(0));
        tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut out).await?;
        Ok(Some(out))
    }

    /// The keys of every stored file, sorted.
    pub async fn stored_keys(&self) -> std::io::Result<Vec<String>> {
        let mut keys = match &self.place {
            Place::Dir(root) => {
                let mut keys = Vec::new();
                let mut teams = tokio::fs::read_dir(root).await?;
                while let Some(team) = teams.next_entry().await? {
                    let name = team.file_name().to_string_lossy().into_owned();
                    if name == "tmp" || !team.file_type().await?.is_dir() {
                        continue;
                    }
                    let mut files = tokio::fs::read_dir(team.path()).await?;
                    while let Some(file) = files.next_entry().await? {
                        keys.push(format!("{name}/{}", file.file_name().to_string_lossy()));
                    }
                }
                keys
            }
            Place::Store(blobs) => blobs.keys().await?,
        };
        keys.sort();
        Ok(keys)
    }

    /// Removes a stored file; a missing file is fine.
    pub async fn remove(&self, key: &str) {
        match &self.place {
            Place::Dir(root) => match tokio::fs::remove_file(root.join(key)).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(error = %e, key, "could not remove a release file"),
            },
            Place::Store(blobs) => {
                if let Err(e) = blobs.delete(key).await {
                    tracing::warn!(error = %e, key, "could not remove a release file");
                }
            }
        }
    }

    /// Removes the files of deleted releases: each one's file and its artifacts' files.
    pub async fn remove_release_files(&self, releases: &[Release]) {
        for key in releases.iter().flat_map(stored_keys_of) {
            self.remove(key).await;
        }
    }
}

impl PendingFile {
    /// Appends bytes, failing once the file would exceed the store's maximum.
    pub async fn write(&mut self, data: &[u8]) -> Result<(), FileError> {
        self.size += data.len() as u64;
        if self.size > self.max_size {
            return Err(FileError::TooLarge);
        }
        self.md5.update(data);
        self.open()?.write_all(data).await?;
        Ok(())
    }

    /// The largest this file may grow, in bytes.
    pub fn max_size(&self) -> u64 {
        self.max_size
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Flushes and fsyncs what was written, so that [`path`](Self::path) can be read whole.
    pub async fn finish(&mut self) -> std::io::Result<()> {
        let file = self.open()?;
        file.flush().await?;
        file.sync_all().await
    }

    fn open(&mut self) -> std::io::Result<&mut tokio::fs::File> {
        self.file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the upload was already committed"))
    }

    /// The temporary file (complete after [`finish`](Self::finish)).
    pub fn path(&self) -> &Path {
        &self.tmp
    }
}

/// A stored file being read.
pub enum FileReader {
    /// From disk.
    Disk(tokio::fs::File),
    /// From the store, a chunk at a time. (The mutex only makes the reader `Sync`, as a
    /// response body must be; it is reached through `&mut`, never locked.)
    Store(std::sync::Mutex<std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>>),
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Disk(_) => "FileReader::Disk",
            Self::Store(_) => "FileReader::Store",
        })
    }
}

impl tokio::io::AsyncRead for FileReader {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Disk(file) => std::pin::Pin::new(file).poll_read(cx, buf),
            Self::Store(reader) => match reader.get_mut() {
                Ok(reader) => reader.as_mut().poll_read(cx, buf),
                Err(_) => std::task::Poll::Ready(Err(std::io::Error::other("a reader panicked"))),
            },
        }
    }
}

/// The storage keys of a release's stored files: its file's, then its artifacts'.
pub fn stored_keys_of(release: &Release) -> impl Iterator<Item = &str> {
    release
        .file
        .iter()
        .map(|f| f.key.as_str())
        .chain(release.artifacts.iter().map(|a| a.key.as_str()))
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
        assert_eq!(store.read(&stored.key).await.unwrap().unwrap(), b"abc");
        let no_temporary = || {
            let mut temporaries = std::fs::read_dir(dir.path().join("files/tmp")).unwrap();
            temporaries.next().is_none()
        };
        assert!(no_temporary(), "no temporary left");

        let mut big = store.begin().await.unwrap();
        big.write(&vec![0; 10 * 1024 * 1024]).await.unwrap();
        assert!(matches!(big.write(b"x").await, Err(FileError::TooLarge)));
        drop(big);
        // The operator's cap.
        let small = FileStore::new(dir.path()).unwrap().with_max_mib(1);
        let mut one = small.begin().await.unwrap();
        one.write(&vec![0; 1024 * 1024]).await.unwrap();
        assert!(matches!(one.write(b"x").await, Err(FileError::TooLarge)));
        drop(one);
        assert!(
            no_temporary(),
            "an upload dropped before its commit leaves no temporary file"
        );
        store.remove(&stored.key).await;
        assert!(store.read(&stored.key).await.unwrap().is_none());
    }
}
