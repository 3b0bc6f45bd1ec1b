//! The data directory holds secrets (every team's private keys, unless sealed under a master key;
//! API key hashes; customers' data; release files), so nothing in it is for other users: its
//! directories are 0700 and its files 0600. The server creates them so, and at start-up tightens
//! anything looser that it finds (saying so), since a directory restored from a backup or made by
//! hand may not be.

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode bits for other users and the group.
const OTHERS: u32 = 0o077;

/// Creates `dir` (and its missing parents) readable by its owner only.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Writes a new file readable by its owner only; fails when it exists.
pub fn write_private_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// Whether the group or other users may read (or enter) `path`.
pub fn readable_by_others(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & OTHERS != 0)
}

/// Takes the group's and other users' permissions from `dir` and everything under it (symbolic
/// links are left alone). Returns what it changed.
pub fn tighten(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut changed = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            // Removed meanwhile (a temporary file): nothing to tighten.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode();
        if mode & OTHERS != 0 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & !OTHERS))?;
            changed.push(path.clone());
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        }
    }
    Ok(changed)
}

/// [`tighten`], logging what was loose.
pub fn tighten_and_warn(dir: &Path) -> io::Result<()> {
    let changed = tighten(dir)?;
    if !changed.is_empty() {
        let shown: Vec<String> = changed
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        tracing::warn!(
            count = changed.len(),
            first = %shown.join(", "),
            "the data directory was readable by other users; took their permissions away"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_permissions_are_tightened_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("data");
        create_private_dir(&root.join("db")).unwrap();
        assert!(!readable_by_others(&root));
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("db/conf"), b"x").unwrap();
        std::fs::set_permissions(root.join("db/conf"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        write_private_file(&root.join("secret"), b"s").unwrap();
        assert!(!readable_by_others(&root.join("secret")));
        assert!(
            write_private_file(&root.join("secret"), b"again").is_err(),
            "never overwritten"
        );
        let mut changed = tighten(&root).unwrap();
        changed.sort();
        assert_eq!(changed, [root.clone(), root.join("db/conf")]);
        assert!(tighten(&root).unwrap().is_empty());
        for path in [root.clone(), root.join("db"), root.join("db/conf")] {
            assert!(!readable_by_others(&path), "{}", path.display());
        }
    }
}
