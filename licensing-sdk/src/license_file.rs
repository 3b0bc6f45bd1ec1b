//! Offline licensing: a [`LicenseFile`] (from [`LicenseClient::checkout`](crate::LicenseClient::checkout),
//! or issued by the vendor) checked with no network: its signature with a trusted key chosen by
//! its `kid`, its decryption with the license key (and this machine's hardware identifier for a
//! machine file, armored `MACHINE FILE`; machine files issued earlier under `LICENSE FILE` are
//! read too), the license key it names, its expiry, the license's own expiration, and a clock
//! that has not been set back (the latest time seen is kept in a [`Clock`] file the application
//! names).
//!
//! Every refusal is its own [`FileError`], so an application can tell a file for another
//! machine from a forged one, or an expired one from a clock set back.

use std::path::{Path, PathBuf};

use licensing_core::Timestamp;
use licensing_core::api::LicenseFilePayload;
use licensing_core::crypto::TeamPublicKeys;
use licensing_core::crypto::license_file::{self, LicenseFileError};
use licensing_core::validate::HardwareId;

/// How far the clock may seem to go back (between this machine and the server that issued the
/// file, or across a time synchronization) before it counts as set back.
pub const CLOCK_SLACK_SECONDS: u32 = 300;

/// Why a license file is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// Not a license file (its armor, base64, envelope or payload is wrong).
    #[error("not a license file: {0}")]
    Malformed(String),
    /// Signed with a key this application does not trust (the key's id).
    #[error("the file is signed with key {0}, which this application does not trust")]
    UntrustedKey(String),
    /// The signature does not verify: the file was changed or forged (or a machine file was
    /// checked without a hardware identifier).
    #[error("the file's signature does not verify")]
    BadSignature,
    /// It does not decrypt with this license key and machine: it belongs to another license or
    /// another machine.
    #[error("the file is for another license or another machine")]
    WrongKey,
    /// An unencrypted machine file for another machine.
    #[error("the file is bound to another machine")]
    WrongMachine,
    /// An algorithm this SDK does not know.
    #[error("the file uses an unknown algorithm {0}")]
    UnknownAlgorithm(String),
    /// The file's own validity ended (its `expiry`).
    #[error("the license file expired at {0}")]
    Expired(Timestamp),
    /// The license itself expired (its `expirationDate`).
    #[error("the license expired at {0}")]
    LicenseExpired(Timestamp),
    /// The license was suspended when the file was issued.
    #[error("the license is suspended")]
    Suspended,
    /// The clock is before the time the file was issued, or before the latest time this
    /// application has seen: it was set back.
    #[error("the clock was set back: it reads {now}, but {seen} was already seen")]
    ClockBackwards {
        /// The clock now.
        now: Timestamp,
        /// The latest time seen before.
        seen: Timestamp,
    },
    /// Reading or writing the file or the clock failed.
    #[error("i/o error: {0}")]
    Io(String),
}

impl From<LicenseFileError> for FileError {
    fn from(e: LicenseFileError) -> Self {
        match e {
            LicenseFileError::Malformed(m) => Self::Malformed(m.to_owned()),
            LicenseFileError::UntrustedKey(kid) => Self::UntrustedKey(kid),
            LicenseFileError::BadSignature => Self::BadSignature,
            LicenseFileError::WrongKey => Self::WrongKey,
            LicenseFileError::UnknownAlgorithm(alg) => Self::UnknownAlgorithm(alg),
        }
    }
}

fn io(e: std::io::Error) -> FileError {
    FileError::Io(e.to_string())
}

/// The latest time the application has seen, kept in a file: a clock set back before it (by
/// more than [`CLOCK_SLACK_SECONDS`]) is refused, so that turning the clock back does not
/// extend a file's validity.
#[derive(Clone, Debug)]
pub struct Clock {
    path: PathBuf,
}

impl Clock {
    /// A clock kept in `path` (created on first use).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The latest time seen, if any.
    pub fn latest(&self) -> Result<Option<Timestamp>, FileError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => text
                .trim()
                .parse::<i64>()
                .map(|ms| Some(Timestamp::from_millis(ms)))
                .map_err(|_| FileError::Io(format!("{} is not a clock file", self.path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        }
    }

    /// Checks `now` against the latest time seen and remembers it when it is later.
    pub fn observe(&self, now: Timestamp) -> Result<(), FileError> {
        let latest = self.latest()?;
        if let Some(seen) = latest {
            if now.plus_seconds(CLOCK_SLACK_SECONDS) < seen {
                return Err(FileError::ClockBackwards { now, seen });
            }
            if now <= seen {
                return Ok(());
            }
        }
        write_atomically(&self.path, now.as_millis().to_string().as_bytes()).map_err(io)
    }
}

/// Writes `bytes` to `path` through a temporary file beside it, so that a crash leaves the old
/// or the new contents.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// A license file as text, ready to be checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LicenseFile {
    text: String,
    file: license_file::LicenseFile,
}

impl LicenseFile {
    /// Reads the certificate's text.
    pub fn parse(text: &str) -> Result<Self, FileError> {
        Ok(Self {
            file: license_file::LicenseFile::parse(text)?,
            text: text.to_owned(),
        })
    }

    /// Reads a certificate from a file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, FileError> {
        Self::parse(&std::fs::read_to_string(path).map_err(io)?)
    }

    /// Stores the certificate in a file (atomically).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), FileError> {
        write_atomically(path.as_ref(), self.text.as_bytes()).map_err(io)
    }

    /// The certificate's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The id of the key that signed it.
    pub fn kid(&self) -> &str {
        &self.file.envelope().kid
    }

    /// Checks the file at the clock's time (`Timestamp::now()`): see [`verify_at`](Self::verify_at).
    pub fn verify(
        &self,
        trusted: &TeamPublicKeys,
        license_key: &str,
        machine: Option<&HardwareId>,
        clock: &Clock,
    ) -> Result<LicenseFilePayload, FileError> {
        self.verify_at(trusted, license_key, machine, clock, Timestamp::now())
    }

    /// Checks the file at `now` and returns what it holds: the signature with the trusted key
    /// it names, the decryption with `license_key` (and `machine`, this machine's hardware
    /// identifier, for a machine file), the machine it is bound to, that the license is not
    /// suspended, that `now` is before the file's expiry and the license's expiration, and that
    /// the clock has not gone back before the file's issue or the latest time `clock` saw (which
    /// then remembers `now`).
    pub fn verify_at(
        &self,
        trusted: &TeamPublicKeys,
        license_key: &str,
        machine: Option<&HardwareId>,
        clock: &Clock,
        now: Timestamp,
    ) -> Result<LicenseFilePayload, FileError> {
        let machine = machine.map(HardwareId::as_str);
        // A machine file is signed as one; a license file (any machine) is not.
        let bytes = match (machine, self.file.open(trusted, license_key, machine)) {
            (Some(_), Err(LicenseFileError::BadSignature)) => {
                self.file.open(trusted, license_key, None)?
            }
            (_, opened) => opened?,
        };
        let payload: LicenseFilePayload = serde_json::from_slice(&bytes)
            .map_err(|e| FileError::Malformed(format!("its payload: {e}")))?;
        // An encrypted file is this license's if it decrypts; an unencrypted one says whose it
        // is, and must say this license.
        if payload.data.license.key.as_str() != license_key {
            return Err(FileError::WrongKey);
        }
        if let Some(bound) = &payload.meta.hardware_identifier
            && machine != Some(bound.as_str())
        {
            return Err(FileError::WrongMachine);
        }
        if payload.data.license.suspended {
            return Err(FileError::Suspended);
        }
        let issued = payload.meta.issued;
        if now.plus_seconds(CLOCK_SLACK_SECONDS) < issued {
            return Err(FileError::ClockBackwards { now, seen: issued });
        }
        clock.observe(now)?;
        if let Some(expiry) = payload.meta.expiry
            && now >= expiry
        {
            return Err(FileError::Expired(expiry));
        }
        // A file issued in a grace period holds until the grace ends (its expiry never passes
        // it either).
        let end = payload.data.license.terms.grace_until.or(payload
            .data
            .license
            .terms
            .expiration_date);
        if let Some(end) = end
            && now >= end
        {
            return Err(FileError::LicenseExpired(end));
        }
        Ok(payload)
    }
}
