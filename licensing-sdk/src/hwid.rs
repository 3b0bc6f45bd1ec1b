//! A stable identifier of this machine, hashed with an application-specific salt so the raw id
//! never leaves the machine and two applications see unrelated identifiers.
//!
//! Sources, first found wins (none needs root):
//! - Linux and other Unixes: `/etc/machine-id`, then `/var/lib/dbus/machine-id` (systemd and
//!   D-Bus write them at installation);
//! - macOS: the platform UUID (`IOPlatformUUID`, read with `ioreg`);
//! - Windows: the registry's `HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid` (read with
//!   `reg query`).
//!
//! **Containers** usually have no machine id, or one baked into the image and so shared by every
//! container made from it. When none is found, [`hardware_id`] falls back to a random id kept in
//! a file in the user's data directory (`$XDG_DATA_HOME/licensing-sdk/device-id`, else
//! `~/.local/share/…`, or `%APPDATA%\licensing-sdk\device-id`): stable as long as that directory
//! is (mount it as a volume), and distinct per container otherwise. Applications that know better
//! (a Kubernetes pod name, a license-server seat) can pass their own identifier instead.

use std::path::{Path, PathBuf};

use licensing_core::validate::HardwareId;
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::Error;

/// The raw machine id, or `None` when the platform has none.
pub fn machine_id() -> Option<String> {
    platform_id().filter(|id| !id.trim().is_empty())
}

#[cfg(target_os = "macos")]
fn platform_id() -> Option<String> {
    let out = std::process::Command::new("ioreg")
        .args(["-rd1", "-c", "IOPlatformExpertDevice"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.contains("IOPlatformUUID"))
        .and_then(|l| l.split('"').nth(3))
        .map(str::to_owned)
}

#[cfg(windows)]
fn platform_id() -> Option<String> {
    let out = std::process::Command::new("reg")
        .args([
            "query",
            r"HKLM\SOFTWARE\Microsoft\Cryptography",
            "/v",
            "MachineGuid",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.contains("MachineGuid"))
        .and_then(|l| l.split_whitespace().last())
        .map(str::to_owned)
}

#[cfg(not(any(target_os = "macos", windows)))]
fn platform_id() -> Option<String> {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
}

/// The identifier to send as `hardwareIdentifier`: 64 hex characters of
/// `SHA-256("licensing-sdk hwid v1\n" + salt + "\n" + machine id)`. `app_salt` should be fixed
/// per application (its name, say).
pub fn hardware_id(app_salt: &str) -> Result<HardwareId, Error> {
    let raw = match machine_id() {
        Some(id) => id,
        None => stored_id(&data_dir().ok_or_else(|| {
            Error::Config(
                "no machine id and no data directory for a stored device id: pass your own \
                 hardware identifier"
                    .into(),
            )
        })?)?,
    };
    Ok(hash(app_salt, &raw))
}

/// The salted hash of a raw id.
pub fn hash(app_salt: &str, raw: &str) -> HardwareId {
    let digest = Sha256::new()
        .chain_update(b"licensing-sdk hwid v1\n")
        .chain_update(app_salt.as_bytes())
        .chain_update(b"\n")
        .chain_update(raw.trim().as_bytes())
        .finalize();
    // 64 hex characters always satisfy the identifier's rules (10 to 1000, no whitespace).
    HardwareId::parse(&hex::encode(digest)).unwrap_or_else(|_| unreachable!())
}

fn data_dir() -> Option<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if cfg!(windows) {
        env("APPDATA")
    } else {
        env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local/share")))
    }
    .map(|d| d.join("licensing-sdk"))
}

/// Reads the stored random device id in `dir`, creating it on first use.
pub fn stored_id(dir: &Path) -> Result<String, Error> {
    let path = dir.join("device-id");
    if let Ok(text) = std::fs::read_to_string(&path)
        && !text.trim().is_empty()
    {
        return Ok(text.trim().to_owned());
    }
    std::fs::create_dir_all(dir)?;
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let id = hex::encode(bytes);
    let tmp = dir.join(format!("device-id.{}.tmp", std::process::id()));
    std::fs::write(&tmp, &id)?;
    std::fs::rename(&tmp, &path)?;
    // Another process may have won the race: whatever is in the file now is the id.
    Ok(std::fs::read_to_string(&path)?.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identifier_is_stable_salted_and_hides_the_raw_id() {
        let a = hash("my-app", "0123456789abcdef");
        assert_eq!(a, hash("my-app", "0123456789abcdef\n"));
        assert_ne!(a, hash("other-app", "0123456789abcdef"));
        assert_eq!(a.as_str().len(), 64);
        assert!(!a.as_str().contains("0123456789abcdef"));
        // On this machine (Linux with systemd) there is a machine id, and the id is stable.
        if machine_id().is_some() {
            assert_eq!(
                hardware_id("my-app").unwrap(),
                hardware_id("my-app").unwrap()
            );
        }
    }

    #[test]
    fn a_stored_id_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = stored_id(dir.path()).unwrap();
        assert_eq!(first.len(), 32);
        assert_eq!(stored_id(dir.path()).unwrap(), first);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(stored_id(other.path()).unwrap(), first);
    }
}
