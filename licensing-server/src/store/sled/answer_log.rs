//! The kept answers' files of earlier stores: one append-only file per day of claims
//! (`kept-answers/<day>.log` inside the store's directory), written behind the reply and
//! without marks. Kept answers now live in `kept/` beside their writes' marks
//! (`kept_files.rs`, `idempotency.rs`); a store that still has these files has them read once
//! when it opens ([`read_all`]), moved, and removed ([`remove`]).
//!
//! A frame: `length (4) | CRC-32 (4) | name (32) | record`, the length and CRC (both
//! big-endian) covering the name and the record. A frame cut short or failing its CRC ends a
//! file (a crash in the middle of an append).

use std::io::Read as _;
use std::path::Path;

use licensing_core::store::StoreResult;

use super::SledResult;
use super::backend;

/// The directory of the kept answers' files, inside the store's.
pub(crate) const LOG_DIR: &str = "kept-answers";

/// A frame's length and CRC.
const HEADER: usize = 8;
/// A name's bytes.
const NAME: usize = 32;
/// The shortest frame: a name, a fingerprint and a claim time.
const MIN_FRAME: u32 = (NAME + 32 + 8) as u32;
/// The longest frame believed (a longer length is a torn header).
const MAX_FRAME: u32 = 256 * 1024 * 1024;

/// Every whole frame of every file in `store_dir`'s files: `(name, record)`, oldest day first,
/// in the order written (of a name written twice, the later one last).
pub(super) fn read_all(store_dir: &Path) -> SledResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let dir = store_dir.join(LOG_DIR);
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut days = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let day = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|d| d.parse::<u32>().ok());
        if let Some(day) = day {
            days.push((day, path));
        }
    }
    days.sort();
    let mut frames = Vec::new();
    for (_, path) in days {
        let file = std::fs::File::open(&path)?;
        read_frames(file, &mut frames)?;
    }
    Ok(frames)
}

/// Reads the whole frames of `file` into `frames`.
fn read_frames(file: std::fs::File, frames: &mut Vec<(Vec<u8>, Vec<u8>)>) -> StoreResult<()> {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; HEADER];
    loop {
        match reader.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(backend(e)),
        }
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if !(MIN_FRAME..=MAX_FRAME).contains(&len) {
            return Ok(());
        }
        let mut body = vec![0; len as usize];
        match reader.read_exact(&mut body) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(backend(e)),
        }
        if crc32fast::hash(&body) != crc {
            return Ok(());
        }
        let record = body.split_off(NAME);
        frames.push((body, record));
    }
}

/// Removes the files (once what they held is durable elsewhere).
pub(super) fn remove(store_dir: &Path) -> SledResult<()> {
    let dir = store_dir.join(LOG_DIR);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
        std::fs::File::open(store_dir).and_then(|d| d.sync_all())?;
    }
    Ok(())
}

/// Appends a frame as earlier stores did (for the tests of the move).
#[cfg(test)]
pub(super) fn write_for_tests(store_dir: &Path, name: &[u8], record: &[u8]) {
    use std::io::Write as _;
    let dir = store_dir.join(LOG_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    let mut body = name.to_vec();
    body.extend_from_slice(record);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("20000.log"))
        .unwrap();
    file.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    file.write_all(&crc32fast::hash(&body).to_be_bytes())
        .unwrap();
    file.write_all(&body).unwrap();
    // A torn frame after it is cut off.
    file.write_all(&[0, 0, 1]).unwrap();
}
