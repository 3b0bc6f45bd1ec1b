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

/// (ext) MiB of disk for copies of files kept in the store unless the operator says otherwise.
pub const DEFAULT_FILE_CACHE_MB: u64 = 4096;

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
    /// In the store, with copies on this instance's disk when it keeps them.
    Store(Arc<dyn Blobs>, Option<Arc<DiskCache>>),
}

impl std::fmt::Debug for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Dir(root) => f.debug_tuple("Dir").field(root).finish(),
            Self::Store(_, cache) => f.debug_tuple("Store").field(cache).finish(),
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
            place: Place::Store(blobs, None),
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

    /// The same store, keeping copies of the files it reads from the store (PostgreSQL) in
    /// `dir`, up to `mib` MiB in all (none with 0; a store on disk keeps none). The directory is
    /// emptied first: copies live as long as the process.
    pub fn with_disk_cache(mut self, dir: &Path, mib: u64) -> std::io::Result<Self> {
        if let Place::Store(blobs, _) = &self.place {
            let blobs = Arc::clone(blobs);
            let cache = if mib == 0 {
                None
            } else {
                Some(Arc::new(DiskCache::new(
                    dir,
                    mib.saturating_mul(1024 * 1024),
                )?))
            };
            self.place = Place::Store(blobs, cache);
        }
        Ok(self)
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
            Place::Store(blobs, _) => blobs.put(&key, &pending.tmp).await?,
        }
        Ok(StoredFile {
            key,
            size: pending.size,
            md5: std::mem::take(&mut pending.md5).finish_hex(),
        })
    }

    /// Opens a stored file as it is kept (on disk, or in the store: never through or into this
    /// instance's copies), with its size; `None` when it is missing. For backups and checks.
    pub async fn open(&self, key: &str) -> std::io::Result<Option<(FileReader, u64)>> {
        match &self.place {
            Place::Dir(root) => open_on_disk(&root.join(key), 0).await,
            Place::Store(blobs, _) => from_store(blobs.as_ref(), key, 0).await,
        }
    }

    /// Opens a stored file for a download, from byte `start` on, with its whole size; `None`
    /// when it is missing. Neither place reads the bytes before `start`: a file on disk is read
    /// from there, one in the store from this instance's copy (made first when there is none),
    /// or else from the chunk that holds it.
    pub async fn open_at(
        &self,
        key: &str,
        start: u64,
    ) -> std::io::Result<Option<(FileReader, u64)>> {
        match &self.place {
            Place::Dir(root) => open_on_disk(&root.join(key), start).await,
            Place::Store(blobs, cache) => {
                if let Some(cache) = cache {
                    match cache.open(blobs.as_ref(), key, start).await {
                        Ok(Some(found)) => return Ok(Some(found)),
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, key, "could not copy a release file to the disk cache; reading it from the store");
                        }
                    }
                }
                from_store(blobs.as_ref(), key, start).await
            }
        }
    }

    /// Reads a whole stored file as it is kept; `None` when it is missing.
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
            Place::Store(blobs, _) => blobs.keys().await?,
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
            Place::Store(blobs, cache) => {
                if let Err(e) = blobs.delete(key).await {
                    tracing::warn!(error = %e, key, "could not remove a release file");
                }
                if let Some(cache) = cache {
                    cache.remove(key).await;
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

/// A file in the store, open for reading from byte `start` on, with its whole size; `None`
/// when it is missing.
async fn from_store(
    blobs: &dyn Blobs,
    key: &str,
    start: u64,
) -> std::io::Result<Option<(FileReader, u64)>> {
    Ok(blobs.get(key, start).await?.map(|(len, chunks)| {
        let reader = tokio_util::io::StreamReader::new(chunks);
        (FileReader::Store(std::sync::Mutex::new(reader)), len)
    }))
}

/// A file on disk, open for reading from byte `start` on, with its whole size; `None` when it
/// is missing.
async fn open_on_disk(path: &Path, start: u64) -> std::io::Result<Option<(FileReader, u64)>> {
    match tokio::fs::File::open(path).await {
        Ok(mut file) => {
            let len = file.metadata().await?.len();
            if start > 0 {
                use tokio::io::AsyncSeekExt as _;
                file.seek(std::io::SeekFrom::Start(start)).await?;
            }
            Ok(Some((FileReader::Disk(file), len)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Copies of files kept in the store, on this instance's disk. A file read from the store is
/// copied here whole on its first download and read from disk afterwards, as files beside the
/// embedded store are: a download from the store crosses two connections and is copied several
/// times on its way; one from disk is read once. Files never change under their key, so a copy
/// is never stale; a removed file's copy goes with it (on other instances, a copy of a removed
/// file is never asked for again and goes when room is needed). Past the cache's size the least
/// recently opened copies go. Copies are not synced: the directory is emptied when the process
/// starts.
#[derive(Debug)]
struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
    /// One copy at a time per key: the downloads that arrive meanwhile wait for it.
    fills: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl DiskCache {
    fn new(dir: &Path, max_bytes: u64) -> std::io::Result<Self> {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        crate::datadir::create_private_dir(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            max_bytes,
            fills: std::sync::Mutex::default(),
        })
    }

    /// Where the copy of `key` (`<team>/<file id>`) lives; `None` for any other shape of key.
    fn path_of(&self, key: &str) -> Option<PathBuf> {
        let plain = |part: &str| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        let (team, file) = key.split_once('/')?;
        (plain(team) && plain(file)).then(|| self.dir.join(team).join(file))
    }

    /// The copy of `key` open from byte `start` on, with its size, copied from `blobs` first
    /// when there is none; `None` when the store has no such file, it is larger than the whole
    /// cache, or the key is not a file's.
    async fn open(
        &self,
        blobs: &dyn Blobs,
        key: &str,
        start: u64,
    ) -> std::io::Result<Option<(FileReader, u64)>> {
        let Some(path) = self.path_of(key) else {
            return Ok(None);
        };
        if let Some(found) = self.open_copy(&path, start).await? {
            return Ok(Some(found));
        }
        let fill = {
            let mut fills = self.fills.lock().unwrap_or_else(|e| e.into_inner());
            fills.entry(key.to_owned()).or_default().clone()
        };
        let held = fill.lock().await;
        let copied = match self.open_copy(&path, start).await? {
            Some(found) => Some(found),
            None if self.copy(blobs, key, &path).await? => self.open_copy(&path, start).await?,
            None => None,
        };
        drop(held);
        self.fills
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        Ok(copied)
    }

    /// The copy at `path`, marked as opened now (the eviction's order).
    async fn open_copy(
        &self,
        path: &Path,
        start: u64,
    ) -> std::io::Result<Option<(FileReader, u64)>> {
        let Some((FileReader::Disk(file), len)) = open_on_disk(path, start).await? else {
            return Ok(None);
        };
        let file = file.into_std().await;
        if let Err(e) = file.set_modified(std::time::SystemTime::now()) {
            tracing::debug!(error = %e, "could not mark a cached release file as opened");
        }
        Ok(Some((
            FileReader::Disk(tokio::fs::File::from_std(file)),
            len,
        )))
    }

    /// Copies `key` from `blobs` to `path` (through a temporary file, renamed when whole), then
    /// makes room. Returns whether it was copied.
    async fn copy(&self, blobs: &dyn Blobs, key: &str, path: &Path) -> std::io::Result<bool> {
        use futures_util::StreamExt as _;
        let Some((len, mut chunks)) = blobs.get(key, 0).await? else {
            return Ok(false);
        };
        if len > self.max_bytes {
            return Ok(false);
        }
        let tmp = self.dir.join(format!(".{}.part", FileId::new()));
        let copied = async {
            let mut file = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .await?;
            let mut written = 0u64;
            while let Some(piece) = chunks.next().await {
                let piece = piece?;
                written += piece.len() as u64;
                file.write_all(&piece).await?;
            }
            file.flush().await?;
            if written != len {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("a release file read {written} bytes of {len}"),
                ));
            }
            if let Some(dir) = path.parent() {
                tokio::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .await?;
            }
            tokio::fs::rename(&tmp, path).await
        }
        .await;
        if copied.is_err() {
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        copied?;
        let (dir, max, keep) = (self.dir.clone(), self.max_bytes, path.to_path_buf());
        if let Err(e) = tokio::task::spawn_blocking(move || make_room(&dir, max, &keep))
            .await
            .map_err(std::io::Error::other)
            .and_then(|made| made)
        {
            tracing::warn!(error = %e, "could not make room in the release files' disk cache");
        }
        Ok(true)
    }

    /// Removes the copy of `key`, if any.
    async fn remove(&self, key: &str) {
        let Some(path) = self.path_of(key) else {
            return;
        };
        match tokio::fs::remove_file(&path).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(error = %e, key, "could not remove a cached release file"),
        }
    }
}

/// Removes the least recently opened copies under `dir` (`<team>/<file>`) until they take at
/// most `max` bytes, never `keep`.
fn make_room(dir: &Path, max: u64, keep: &Path) -> std::io::Result<()> {
    let mut copies = Vec::new();
    let mut total = 0u64;
    for team in std::fs::read_dir(dir)? {
        let team = team?;
        if !team.file_type()?.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(team.path())? {
            let file = file?;
            let meta = file.metadata()?;
            total += meta.len();
            copies.push((meta.modified()?, meta.len(), file.path()));
        }
    }
    if total <= max {
        return Ok(());
    }
    copies.sort_by_key(|(opened, _, _)| *opened);
    for (_, len, path) in copies {
        if total <= max {
            break;
        }
        if path == keep {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => total -= len,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => total -= len,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A stored file being read.
pub enum FileReader {
    /// From disk.
    Disk(tokio::fs::File),
    /// From the store, a chunk at a time. (The mutex only makes the reader `Sync`, as a
    /// response body must be; it is reached through `&mut`, never locked.)
    Store(
        std::sync::Mutex<tokio_util::io::StreamReader<crate::store::shared::Chunks, bytes::Bytes>>,
    ),
}

impl FileReader {
    /// The next `length` bytes as a response body, in pieces of up to `chunk` bytes read from
    /// disk, or as the store's own chunks (handed on, not copied).
    pub fn into_body(self, length: u64, chunk: usize) -> FileBody {
        use futures_util::StreamExt as _;
        let pieces = match self {
            Self::Disk(file) => tokio_util::io::ReaderStream::with_capacity(
                tokio::io::AsyncReadExt::take(file, length),
                chunk,
            )
            .boxed(),
            Self::Store(reader) => {
                let (chunks, pending) = match reader.into_inner() {
                    Ok(reader) => reader.into_inner_with_chunk(),
                    Err(poisoned) => poisoned.into_inner().into_inner_with_chunk(),
                };
                let pieces = futures_util::stream::iter(pending.map(Ok)).chain(chunks);
                // Up to `left` more bytes; the store is not asked for a chunk past them.
                futures_util::stream::unfold((pieces, length), |(mut pieces, left)| async move {
                    if left == 0 {
                        return None;
                    }
                    loop {
                        match pieces.next().await? {
                            // An empty piece ends nothing: the next one is asked for.
                            Ok(bytes) if bytes.is_empty() => {}
                            Ok(mut bytes) => {
                                bytes.truncate(usize::try_from(left).unwrap_or(usize::MAX));
                                let left = left - bytes.len() as u64;
                                return Some((Ok(bytes), (pieces, left)));
                            }
                            Err(e) => return Some((Err(e), (pieces, 0))),
                        }
                    }
                })
                .boxed()
            }
        };
        FileBody(std::sync::Mutex::new(pieces))
    }
}

/// A stored file's bytes as a response body. (The mutex only makes it `Sync`, as a response
/// body must be; it is reached through `&mut`, never locked.)
pub struct FileBody(
    std::sync::Mutex<futures_util::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>>,
);

impl futures_util::Stream for FileBody {
    type Item = std::io::Result<bytes::Bytes>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match self.get_mut().0.get_mut() {
            Ok(pieces) => pieces.as_mut().poll_next(cx),
            Err(_) => std::task::Poll::Ready(Some(Err(std::io::Error::other("a body panicked")))),
        }
    }
}

impl std::fmt::Debug for FileBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileBody")
    }
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
                Ok(reader) => std::pin::Pin::new(reader).poll_read(cx, buf),
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

    /// A whole file as a download reads it.
    async fn downloaded(store: &FileStore, key: &str) -> Option<Vec<u8>> {
        use tokio::io::AsyncReadExt as _;
        let (mut reader, _) = store.open_at(key, 0).await.unwrap()?;
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        Some(out)
    }

    async fn stored(store: &FileStore, team: TeamId, bytes: &[u8]) -> String {
        let mut pending = store.begin_artifact().await.unwrap();
        pending.write(bytes).await.unwrap();
        store
            .commit(pending, team, FileId::new())
            .await
            .unwrap()
            .key
    }

    /// Files kept in PostgreSQL are copied to this instance's disk on their first read and
    /// read from the copy afterwards, whole or from any byte; past the cache's size the least
    /// recently opened copy goes; a removed file's copy goes with it; a file larger than the
    /// whole cache, or a store without one, is read from the store, from any byte too; a file
    /// read as kept (a backup, a check) makes no copy.
    #[test]
    fn files_in_the_store_are_read_from_copies_on_disk() {
        use futures_util::TryStreamExt as _;
        use tokio::io::AsyncReadExt as _;
        crate::testing::postgres::on_fresh_database(|url| async move {
            let pg = Arc::new(
                crate::store::postgres::PgStore::connect(&url, 4)
                    .await
                    .unwrap(),
            );
            let dir = tempfile::tempdir().unwrap();
            let cache = dir.path().join("cache");
            let store = FileStore::in_store(pg.clone(), &dir.path().join("tmp"))
                .unwrap()
                .with_disk_cache(&cache, 1)
                .unwrap();
            let team = TeamId::new();
            let bytes = |n: usize, seed: usize| -> Vec<u8> {
                (0..n).map(|i| ((i * 7 + seed) % 251) as u8).collect()
            };

            let first = bytes(600_000, 1);
            let a = stored(&store, team, &first).await;
            assert!(!cache.join(&a).exists(), "no copy before the first read");
            assert_eq!(downloaded(&store, &a).await.unwrap(), first);
            assert!(cache.join(&a).exists(), "copied on the first read");
            // Read from the copy: with the store's rows gone, the bytes are still there.
            pg.delete(&a).await.unwrap();
            let (mut reader, len) = store.open_at(&a, 500_000).await.unwrap().unwrap();
            assert_eq!(len, 600_000);
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, first[500_000..]);

            // A second copy passes the 1 MiB: the least recently opened goes.
            let second = bytes(600_000, 2);
            let b = stored(&store, team, &second).await;
            assert_eq!(downloaded(&store, &b).await.unwrap(), second);
            assert!(cache.join(&b).exists());
            assert!(!cache.join(&a).exists(), "the older copy made room");
            assert!(downloaded(&store, &a).await.is_none());
            store.remove(&b).await;
            assert!(
                !cache.join(&b).exists(),
                "a removed file's copy goes with it"
            );
            assert!(downloaded(&store, &b).await.is_none());

            // Larger than the whole cache: read from the store, from any byte, never copied.
            let large = bytes(1_500_000, 3);
            let c = stored(&store, team, &large).await;
            let (reader, len) = store.open_at(&c, 300_000).await.unwrap().unwrap();
            assert_eq!(len, 1_500_000);
            assert!(matches!(reader, FileReader::Store(_)));
            let body: Vec<bytes::Bytes> = reader
                .into_body(1_000_000, 64 * 1024)
                .try_collect()
                .await
                .unwrap();
            assert_eq!(body.concat(), large[300_000..1_300_000]);
            assert!(!cache.join(&c).exists());

            // A store without a cache reads from the store; a new cache starts empty.
            let plain = FileStore::in_store(pg.clone(), &dir.path().join("tmp"))
                .unwrap()
                .with_disk_cache(&cache, 0)
                .unwrap();
            assert_eq!(downloaded(&plain, &c).await.unwrap(), large);
            assert!(!cache.join(&c).exists());
            // A backup or a check reads the file as kept, and makes no copy.
            let d = stored(&store, team, &first).await;
            assert_eq!(store.read(&d).await.unwrap().unwrap(), first);
            assert!(!cache.join(&d).exists());
            assert_eq!(downloaded(&store, &d).await.unwrap(), first);
            assert!(cache.join(&d).exists());
            let again = FileStore::in_store(pg, &dir.path().join("tmp"))
                .unwrap()
                .with_disk_cache(&cache, 1)
                .unwrap();
            assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
            drop(again);
        });
    }
}
