//! The kept answers' files: one append-only file per day of claims (`kept/<day>.log` inside the
//! store's directory, the day counted from 1970), found through an index in memory.
//!
//! Answers are written once, read back rarely (a retry) and dropped a day later, all of a day
//! at once: an append to the day's file, a read at a known place and the deletion of a whole
//! file do all of that, where an insert among the records' random keys cost the records' I/O
//! threads about as much as the write it answered (benches/README.md, "A developer write with
//! an idempotency key"). The flusher appends the answers kept during a round after it flushes
//! the records, in one write, and syncs the file before it says the round is durable
//! (`idempotency.rs`, `flusher.rs`).
//!
//! A frame: `length (4) | CRC-32 (4) | name (32) | record`, the length and CRC (both
//! big-endian) covering the name and the record, the record as `idempotency.rs` encodes it.
//! At open every file is read through once to rebuild the index, believing only the frames the
//! caller believes (those whose write's mark is among the records); a frame cut short or
//! failing its CRC ends a file (a crash in the middle of an append) and is cut off.
//!
//! The index keys by the first 8 bytes of a name (a SHA-256 digest): about 50 bytes per answer
//! kept. Two names sharing them are told apart by the names in their frames.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use licensing_core::Timestamp;
use licensing_core::store::{StoreError, StoreResult};

use super::SledResult;
use super::backend;

/// The directory of the kept answers' files, inside the store's.
pub(crate) const DIR: &str = "kept";

/// A frame's length and CRC.
const HEADER: usize = 8;
/// A name's bytes.
pub(super) const NAME: usize = 32;
/// Where a record's claim time is, in a frame after its header: after the name and the
/// fingerprint.
const CREATED_AT: usize = NAME + 32;
/// The longest frame believed when a file is read back (a longer length is a torn header).
const MAX_FRAME: u32 = 256 * 1024 * 1024;

/// The day (since 1970) of `at`.
pub(super) fn day_of(at: Timestamp) -> u32 {
    u32::try_from(at.as_millis().div_euclid(86_400_000).max(0)).unwrap_or(u32::MAX)
}

/// The first 8 bytes of a name (a SHA-256 digest, so as good as random).
fn prefix(name: &[u8]) -> u64 {
    let mut first = [0; 8];
    let n = name.len().min(8);
    first[..n].copy_from_slice(&name[..n]);
    u64::from_be_bytes(first)
}

/// Where one kept answer is: its day's file, the frame's offset and length (after the
/// header), and its claim time (for the purge of the last day, which keeps the later ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Place {
    day: u32,
    len: u32,
    offset: u64,
    created: i64,
}

/// The places of the answers whose names share their first 8 bytes: one almost always.
#[derive(Debug)]
enum Slot {
    One(Place),
    Many(Vec<Place>),
}

impl Slot {
    fn places(&self) -> &[Place] {
        match self {
            Self::One(place) => std::slice::from_ref(place),
            Self::Many(places) => places,
        }
    }

    fn push(&mut self, place: Place) {
        match self {
            Self::One(first) => *self = Self::Many(vec![*first, place]),
            Self::Many(places) => places.push(place),
        }
    }

    /// Removes at most `limit` places for which `purged` holds; how many. `None` when no place
    /// is left.
    fn take(mut self, limit: u64, purged: impl Fn(&Place) -> bool) -> (u64, Option<Self>) {
        match self {
            Self::One(place) if limit > 0 && purged(&place) => (1, None),
            Self::One(_) => (0, Some(self)),
            Self::Many(ref mut places) => {
                let mut taken = 0;
                places.retain(|p| {
                    let take = taken < limit && purged(p);
                    taken += u64::from(take);
                    !take
                });
                match places.len() {
                    0 => (taken, None),
                    1 => (taken, Some(Self::One(places[0]))),
                    _ => (taken, Some(self)),
                }
            }
        }
    }
}

/// One day's file, as the index reads it, and the names of the answers in it.
#[derive(Debug)]
struct Day {
    file: Arc<File>,
    names: Vec<u64>,
}

/// Where every kept answer written to the files is, by name.
#[derive(Debug, Default)]
pub(super) struct Index {
    slots: HashMap<u64, Slot>,
    days: BTreeMap<u32, Day>,
}

/// An answer appended to its file, to be noted in the index once it is durable.
#[derive(Debug)]
pub(super) struct Appended {
    name: [u8; NAME],
    place: Place,
    file: Arc<File>,
}

impl Index {
    /// Notes that the answer named `name` is at `place` in `file`.
    fn add(&mut self, name: &[u8], place: Place, file: &Arc<File>) {
        let prefix = prefix(name);
        self.days
            .entry(place.day)
            .or_insert_with(|| Day {
                file: file.clone(),
                names: Vec::new(),
            })
            .names
            .push(prefix);
        match self.slots.get_mut(&prefix) {
            Some(slot) => slot.push(place),
            None => {
                self.slots.insert(prefix, Slot::One(place));
            }
        }
    }

    /// Notes an appended answer: from here claims find it.
    pub(super) fn note(&mut self, appended: &Appended) {
        self.add(&appended.name, appended.place, &appended.file);
    }

    /// Reads the frame at `place`.
    fn read(&self, place: &Place) -> SledResult<Vec<u8>> {
        let day = self.days.get(&place.day).ok_or_else(|| {
            StoreError::backend(format!("kept answers: no file for day {}", place.day))
        })?;
        let mut frame = vec![0; place.len as usize];
        day.file
            .read_exact_at(&mut frame, place.offset + HEADER as u64)?;
        Ok(frame)
    }

    /// The record written last under `name` (`decode` reads it), if any: a name never written
    /// reads nothing.
    pub(super) fn find<T>(
        &self,
        name: &[u8],
        decode: impl Fn(&[u8]) -> StoreResult<T>,
    ) -> StoreResult<Option<T>> {
        let Some(slot) = self.slots.get(&prefix(name)) else {
            return Ok(None);
        };
        let mut found: Option<(i64, Vec<u8>)> = None;
        for place in slot.places() {
            if found.as_ref().is_some_and(|(at, _)| *at > place.created) {
                continue;
            }
            let frame = self.read(place)?;
            if frame.get(..NAME) == Some(name) {
                found = Some((place.created, frame));
            }
        }
        found.map(|(_, frame)| decode(&frame[NAME..])).transpose()
    }

    /// How many kept records `counted` holds for (each read from its file).
    pub(super) fn count(&self, counted: impl Fn(&[u8]) -> StoreResult<bool>) -> StoreResult<u64> {
        let mut found = 0;
        for place in self.slots.values().flat_map(Slot::places) {
            if counted(&self.read(place)?[NAME..])? {
                found += 1;
            }
        }
        Ok(found)
    }

    /// Forgets at most `max` answers claimed before `before`: every one of the days before its
    /// day, those of its day claimed earlier. How many, and the days left with none (whose files
    /// can go).
    pub(super) fn purge(&mut self, before: Timestamp, max: u64) -> (u64, Vec<u32>) {
        let last_day = day_of(before);
        let mut purged = 0;
        for (&day, entry) in self.days.range_mut(..=last_day) {
            let whole = day < last_day;
            let mut i = 0;
            while i < entry.names.len() && purged < max {
                let prefix = entry.names[i];
                let of_day = |p: &Place| p.day == day;
                let gone = |p: &Place| of_day(p) && (whole || p.created < before.as_millis());
                let mut left_of_day = false;
                if let Some(slot) = self.slots.remove(&prefix) {
                    let (taken, rest) = slot.take(max - purged, gone);
                    purged += taken;
                    if let Some(rest) = rest {
                        left_of_day = rest.places().iter().any(of_day);
                        self.slots.insert(prefix, rest);
                    }
                }
                if left_of_day {
                    i += 1;
                } else {
                    entry.names.swap_remove(i);
                }
            }
        }
        let emptied: Vec<u32> = self
            .days
            .range(..last_day)
            .filter(|(_, d)| d.names.is_empty())
            .map(|(&day, _)| day)
            .collect();
        for day in &emptied {
            self.days.remove(day);
        }
        (purged, emptied)
    }

    /// How many answers, and their frames' bytes after the name.
    pub(super) fn usage(&self) -> (u64, u64) {
        self.slots
            .values()
            .flat_map(Slot::places)
            .fold((0, 0), |(n, bytes), p| {
                (n + 1, bytes + u64::from(p.len) - NAME as u64)
            })
    }
}

/// One answer to write: its name, its claim time and its encoded record.
pub(super) struct Frame<'a> {
    pub(super) name: &'a [u8; NAME],
    pub(super) created: Timestamp,
    pub(super) record: &'a [u8],
}

/// One day's file being appended to.
#[derive(Debug)]
struct DayFile {
    file: Arc<File>,
    /// Where the next frame goes.
    len: u64,
    /// Its size: written through (zeros past `len`), so that an append is a write in place
    /// and its sync writes no metadata.
    allocated: u64,
}

/// How much a file grows at a time: zeros written and synced once, which answers then
/// overwrite. A sync of an append that grew the file also writes its inode (a second write
/// to the disk); of one inside it, the data alone.
const GROW_BY: u64 = 4 << 20;

/// The files being appended to.
#[derive(Debug)]
pub(super) struct Appender {
    dir: PathBuf,
    files: BTreeMap<u32, DayFile>,
    /// Days written since the last sync.
    unsynced: BTreeSet<u32>,
    /// A temporary store's directory, removed with it.
    _temporary: Option<tempfile::TempDir>,
}

fn path_of(dir: &Path, day: u32) -> PathBuf {
    dir.join(format!("{day}.log"))
}

fn sync_dir(dir: &Path) -> StoreResult<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(backend)
}

impl Appender {
    /// Opens the files in `store_dir`'s (or a temporary) directory, cuts off what a crash left
    /// half-written, and indexes the frames `believe` (given a frame's name) believes.
    pub(super) fn open(
        store_dir: Option<&Path>,
        mut believe: impl FnMut(&[u8]) -> bool,
    ) -> SledResult<(Self, Index)> {
        let (dir, temporary) = match store_dir {
            Some(store_dir) => (store_dir.join(DIR), None),
            None => {
                let temporary = tempfile::Builder::new()
                    .prefix("licensing-kept-answers-")
                    .tempdir()?;
                (temporary.path().to_owned(), Some(temporary))
            }
        };
        if !dir.exists() {
            std::fs::create_dir_all(&dir)?;
            if let Some(parent) = dir.parent() {
                sync_dir(parent)?;
            }
        }
        let mut appender = Self {
            dir,
            files: BTreeMap::new(),
            unsynced: BTreeSet::new(),
            _temporary: temporary,
        };
        let mut index = Index::default();
        for entry in std::fs::read_dir(&appender.dir)? {
            let path = entry?.path();
            let Some(day) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".log"))
                .and_then(|d| d.parse::<u32>().ok())
            else {
                continue;
            };
            let file = Arc::new(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)?,
            );
            let len = read_back(&file, day, &mut index, &mut believe)?;
            let size = file.metadata()?.len();
            if size > len {
                // Past the frames: room made ahead (zeros), or what a crash left half-written.
                let mut next = [0u8; HEADER];
                let n = (size - len).min(HEADER as u64) as usize;
                file.read_exact_at(&mut next[..n], len)?;
                if next != [0; HEADER] {
                    tracing::warn!(file = %path.display(), len, "a half-written kept answer cut off");
                }
                file.set_len(len)?;
                file.sync_all()?;
            }
            index.days.entry(day).or_insert_with(|| Day {
                file: file.clone(),
                names: Vec::new(),
            });
            let day_file = DayFile {
                file,
                len,
                allocated: len,
            };
            appender.files.insert(day, day_file);
        }
        Ok((appender, index))
    }

    /// The file of `day`, created if need be, with room for `bytes` more.
    fn file(&mut self, day: u32, bytes: u64) -> SledResult<&mut DayFile> {
        if !self.files.contains_key(&day) {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path_of(&self.dir, day))?;
            let len = file.metadata()?.len();
            sync_dir(&self.dir)?;
            let day_file = DayFile {
                file: Arc::new(file),
                len,
                allocated: len,
            };
            self.files.insert(day, day_file);
        }
        let day_file = self.files.get_mut(&day).expect("just inserted");
        if day_file.len + bytes > day_file.allocated {
            // Zeros, written and synced (size and blocks) before any answer is written there;
            // a zero length ends the frames when the file is read back.
            let to = (day_file.len + bytes).max(day_file.allocated + GROW_BY);
            let zeros = vec![0u8; 1 << 20];
            let mut at = day_file.allocated;
            while at < to {
                let n = (to - at).min(zeros.len() as u64) as usize;
                day_file.file.write_all_at(&zeros[..n], at)?;
                at += n as u64;
            }
            day_file.file.sync_all()?;
            day_file.allocated = to;
        }
        Ok(day_file)
    }

    /// Appends `frames` to their days' files, one write per day (not yet synced: see
    /// [`Self::sync`]); where each is, for the index, in their order. A failed append leaves
    /// the file's length as it was, so what it wrote is written over.
    pub(super) fn append(&mut self, frames: &[Frame<'_>]) -> SledResult<Vec<Appended>> {
        let mut by_day: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, frame) in frames.iter().enumerate() {
            by_day.entry(day_of(frame.created)).or_default().push(i);
        }
        let mut appended: Vec<Option<Appended>> = frames.iter().map(|_| None).collect();
        for (day, of_day) in by_day {
            let mut buf = Vec::new();
            let mut places = Vec::with_capacity(of_day.len());
            for &i in &of_day {
                let frame = &frames[i];
                let body_len = u32::try_from(NAME + frame.record.len())
                    .ok()
                    .filter(|&n| n <= MAX_FRAME)
                    .ok_or_else(|| StoreError::backend("a kept answer too large to write"))?;
                let mut crc = crc32fast::Hasher::new();
                crc.update(frame.name);
                crc.update(frame.record);
                places.push((i, buf.len() as u64, body_len));
                buf.extend_from_slice(&body_len.to_be_bytes());
                buf.extend_from_slice(&crc.finalize().to_be_bytes());
                buf.extend_from_slice(frame.name);
                buf.extend_from_slice(frame.record);
            }
            let day_file = self.file(day, buf.len() as u64)?;
            day_file.file.write_all_at(&buf, day_file.len)?;
            for (i, at, len) in places {
                appended[i] = Some(Appended {
                    name: *frames[i].name,
                    place: Place {
                        day,
                        len,
                        offset: day_file.len + at,
                        created: frames[i].created.as_millis(),
                    },
                    file: day_file.file.clone(),
                });
            }
            day_file.len += buf.len() as u64;
            self.unsynced.insert(day);
        }
        Ok(appended.into_iter().flatten().collect())
    }

    /// The files appended to since the last sync, taken: [`sync_files`] makes them durable
    /// (and, if it fails, [`Self::unsynced_again`] gives them back).
    pub(super) fn take_unsynced(&mut self) -> Vec<(u32, Arc<File>)> {
        std::mem::take(&mut self.unsynced)
            .into_iter()
            .filter_map(|day| self.files.get(&day).map(|f| (day, f.file.clone())))
            .collect()
    }

    /// Notes `files` as not synced again (their sync failed).
    pub(super) fn unsynced_again(&mut self, files: &[(u32, Arc<File>)]) {
        self.unsynced.extend(
            files
                .iter()
                .map(|(day, _)| *day)
                .filter(|day| self.files.contains_key(day)),
        );
    }

    /// Makes what was appended durable.
    pub(super) fn sync(&mut self) -> StoreResult<()> {
        let files = self.take_unsynced();
        Ok(sync_files(&files).inspect_err(|_| self.unsynced_again(&files))?)
    }

    /// Deletes the files of `days`.
    pub(super) fn remove(&mut self, days: &[u32]) -> StoreResult<()> {
        for day in days {
            self.files.remove(day);
            self.unsynced.remove(day);
            match std::fs::remove_file(path_of(&self.dir, *day)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(backend(e)),
                _ => {}
            }
        }
        if !days.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Bytes the files take (the room made for answers to come included).
    pub(super) fn on_disk(&self) -> u64 {
        self.files.values().map(|f| f.allocated).sum()
    }
}

/// Makes what was written to `files` durable (without the appender's lock, so that appends go
/// on meanwhile).
pub(super) fn sync_files(files: &[(u32, Arc<File>)]) -> SledResult<()> {
    for (_, file) in files {
        file.sync_data()?;
    }
    Ok(())
}

/// Reads `file` (of `day`) through, noting each whole frame `believe` believes in `index`; the
/// length of what it holds whole.
fn read_back(
    file: &Arc<File>,
    day: u32,
    index: &mut Index,
    believe: &mut impl FnMut(&[u8]) -> bool,
) -> StoreResult<u64> {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file.as_ref());
    let mut offset = 0u64;
    let mut header = [0u8; HEADER];
    let mut body = Vec::new();
    loop {
        match reader.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(offset),
            Err(e) => return Err(backend(e)),
        }
        let len = u32::from_be_bytes(header[..4].try_into().expect("4 bytes"));
        let crc = u32::from_be_bytes(header[4..].try_into().expect("4 bytes"));
        if !(CREATED_AT as u32 + 8..=MAX_FRAME).contains(&len) {
            return Ok(offset);
        }
        body.resize(len as usize, 0);
        match reader.read_exact(&mut body) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(offset),
            Err(e) => return Err(backend(e)),
        }
        if crc32fast::hash(&body) != crc {
            return Ok(offset);
        }
        if believe(&body[..NAME]) {
            let created = i64::from_be_bytes(
                body[CREATED_AT..CREATED_AT + 8]
                    .try_into()
                    .expect("8 bytes"),
            );
            let place = Place {
                day,
                len,
                offset,
                created,
            };
            index.add(&body[..NAME], place, file);
        }
        offset += (HEADER as u64) + u64::from(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(created: i64, body: &[u8]) -> Vec<u8> {
        let mut r = vec![7; 32];
        r.extend_from_slice(&created.to_be_bytes());
        r.push(0);
        r.extend_from_slice(body);
        r
    }

    fn read(index: &Index, name: &[u8]) -> Option<Vec<u8>> {
        index.find(name, |r| Ok(r.to_vec())).unwrap()
    }

    fn append(appender: &mut Appender, index: &mut Index, name: &[u8; NAME], at: i64, r: &[u8]) {
        let frame = Frame {
            name,
            created: Timestamp::from_millis(at),
            record: r,
        };
        for appended in appender.append(&[frame]).unwrap() {
            index.note(&appended);
        }
    }

    /// What is appended is found again after reopening, where it is believed; a frame cut in
    /// the middle of its append is cut off, and what is appended next is found after it.
    #[test]
    fn appended_answers_are_read_back_as_believed_and_a_torn_tail_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let at = 1_764_000_000_000;
        let (a, b, c) = ([1u8; NAME], [2u8; NAME], [3u8; NAME]);
        let (ra, rb, rc) = (record(at, b"a"), record(at, b"b"), record(at, b"c"));
        {
            let (mut appender, mut index) = Appender::open(Some(dir.path()), |_| true).unwrap();
            append(&mut appender, &mut index, &c, at, &rc);
            append(&mut appender, &mut index, &a, at, &ra);
            append(&mut appender, &mut index, &b, at, &rb);
            appender.sync().unwrap();
            assert_eq!(read(&index, &a), Some(ra.clone()));
        }
        let path = path_of(&dir.path().join(DIR), day_of(Timestamp::from_millis(at)));
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            GROW_BY,
            "grown ahead"
        );
        let whole = 3 * (HEADER + NAME + ra.len()) as u64;
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(whole - 3).unwrap();
        drop(file);
        let (mut appender, mut index) = Appender::open(Some(dir.path()), |n| n != c).unwrap();
        assert_eq!(read(&index, &a), Some(ra.clone()));
        assert_eq!(read(&index, &b), None, "the torn frame is gone");
        assert_eq!(read(&index, &c), None, "a frame not believed is not found");
        assert_eq!(appender.on_disk(), whole / 3 * 2);
        append(&mut appender, &mut index, &b, at, &rb);
        drop((appender, index));
        let (_, index) = Appender::open(Some(dir.path()), |_| true).unwrap();
        assert_eq!(read(&index, &b), Some(rb));
        assert_eq!(index.usage().0, 3);
    }

    /// Names sharing their first 8 bytes are told apart; of one name written twice the last is
    /// read; the purge takes whole earlier days (and deletes their files) and of the last day
    /// what was claimed before the time, at most `max` at once.
    #[test]
    fn shared_prefixes_rewrites_and_the_purge() {
        let (mut appender, mut index) = Appender::open(None, |_| true).unwrap();
        let day = 86_400_000;
        let t = 20_000 * day + 10_000;
        let yesterday = t - day;
        let (mut a, mut b) = ([1u8; NAME], [1u8; NAME]);
        a[31] = 0xa;
        b[31] = 0xb;
        let c = [3u8; NAME];
        let (old, ra, rb, rc) = (
            record(yesterday, b"old"),
            record(t, b"a"),
            record(t + 2_000, b"b"),
            record(t + 5_000, b"c"),
        );
        append(&mut appender, &mut index, &a, yesterday, &old);
        append(&mut appender, &mut index, &a, t, &ra);
        append(&mut appender, &mut index, &b, t + 2_000, &rb);
        append(&mut appender, &mut index, &c, t + 5_000, &rc);
        assert_eq!(read(&index, &a), Some(ra));
        assert_eq!(read(&index, &b), Some(rb));
        assert_eq!(read(&index, &[0xa; NAME]), None);
        let counted = index.count(|r| Ok(r.ends_with(b"b") || r.ends_with(b"c")));
        assert_eq!(counted.unwrap(), 2);
        let yesterday_file = path_of(&appender.dir, day_of(Timestamp::from_millis(yesterday)));
        assert!(yesterday_file.exists());

        let before = Timestamp::from_millis(t + 1_000);
        let (purged, emptied) = index.purge(before, 1);
        assert_eq!(
            (purged, emptied.as_slice()),
            (1, [day_of(Timestamp::from_millis(yesterday))].as_slice())
        );
        appender.remove(&emptied).unwrap();
        assert!(!yesterday_file.exists());
        let (purged, emptied) = index.purge(before, 100);
        assert_eq!((purged, emptied.len()), (1, 0), "a at t; b and c are later");
        assert_eq!(read(&index, &a), None);
        assert!(read(&index, &b).is_some() && read(&index, &c).is_some());
        assert_eq!(index.usage().0, 2);
        let (purged, _) = index.purge(Timestamp::from_millis(t + day), 100);
        assert_eq!(purged, 2);
        assert!(index.slots.is_empty());
    }
}
