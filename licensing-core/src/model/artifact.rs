//! (ext) Update artifacts: the files a desktop application's updater downloads (an installer, a
//! Velopack package, a Tauri bundle), one per platform, architecture and kind of a release, and a
//! product's update-feed settings.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{ArtifactId, Timestamp};

macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }

            /// Parses the wire spelling; the error lists the accepted ones.
            pub fn parse(text: &str) -> Result<Self, String> {
                match text {
                    $($wire => Ok(Self::$variant),)+
                    _ => Err(format!(
                        "must be one of {}",
                        [$($wire),+].join(", ")
                    )),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                Self::parse(text)
            }
        }
    };
}

wire_enum!(
    /// The operating system an artifact runs on (Tauri's `{target}` and electron-updater's
    /// channel files use the same three).
    Platform {
        /// Windows.
        Windows = "windows",
        /// macOS.
        Darwin = "darwin",
        /// Linux.
        Linux = "linux",
    }
);

wire_enum!(
    /// The processor architecture an artifact runs on (`universal`: a macOS universal binary).
    Arch {
        /// 64-bit x86.
        X86_64 = "x86_64",
        /// 64-bit ARM.
        Aarch64 = "aarch64",
        /// 32-bit x86.
        I686 = "i686",
        /// 32-bit ARM.
        Armv7 = "armv7",
        /// Every architecture of the platform (macOS universal binaries).
        Universal = "universal",
    }
);

wire_enum!(
    /// What an artifact is, by its file name's extension.
    ArtifactKind {
        /// A Velopack (or Squirrel) package.
        Nupkg = "nupkg",
        /// A macOS disk image.
        Dmg = "dmg",
        /// A zip archive (electron-updater's macOS update, Sparkle's archive).
        Zip = "zip",
        /// A gzip-compressed tar archive (Tauri's macOS `.app.tar.gz`).
        TarGz = "tar.gz",
        /// A Linux AppImage.
        AppImage = "appimage",
        /// A Windows Installer package.
        Msi = "msi",
        /// A Windows executable installer (NSIS).
        Exe = "exe",
        /// A Debian package.
        Deb = "deb",
        /// An RPM package.
        Rpm = "rpm",
    }
);

impl ArtifactKind {
    /// The kind a file name's extension says, if any (case-insensitive).
    pub fn from_file_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        let kind = if lower.ends_with(".tar.gz") {
            Self::TarGz
        } else {
            let (_, extension) = lower.rsplit_once('.')?;
            match extension {
                "nupkg" => Self::Nupkg,
                "dmg" => Self::Dmg,
                "zip" => Self::Zip,
                "appimage" => Self::AppImage,
                "msi" => Self::Msi,
                "exe" => Self::Exe,
                "deb" => Self::Deb,
                "rpm" => Self::Rpm,
                _ => return None,
            }
        };
        Some(kind)
    }
}

/// An update artifact of a release: a file for one platform, architecture and kind, its digests
/// (computed by the server while it arrived) and its signatures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Id.
    pub id: ArtifactId,
    /// Operating system.
    pub platform: Platform,
    /// Architecture.
    pub arch: Arch,
    /// Kind (from the file name unless given).
    pub kind: ArtifactKind,
    /// The file name the updaters download it as.
    pub filename: String,
    /// Bytes.
    pub size: u64,
    /// SHA-256, lower-case hex.
    pub sha256: String,
    /// SHA-512, lower-case hex (electron-updater's feed carries it in base64).
    pub sha512: String,
    /// SHA-1, lower-case hex (Velopack's feeds carry it).
    pub sha1: String,
    /// The minisign signature as a Tauri build writes it (base64 of the minisign text), the
    /// vendor's or the server's.
    pub signature: Option<String>,
    /// Sparkle's `edSignature` (base64 of the Ed25519 signature of the whole file).
    pub ed_signature: Option<String>,
    /// Whether the server made the signatures (the product's `signUpdates`) rather than the
    /// vendor.
    pub server_signed: bool,
    /// Storage key of the file.
    pub key: String,
    /// Upload time.
    pub created_at: Timestamp,
}

impl Artifact {
    /// Whether this is a Velopack delta package (`-delta` in its name).
    pub fn is_delta(&self) -> bool {
        self.kind == ArtifactKind::Nupkg && self.filename.to_ascii_lowercase().contains("-delta")
    }

    /// Whether `other` takes the same place in a release (one artifact per platform,
    /// architecture and kind; a Velopack delta package apart from the full one).
    pub fn same_slot(&self, other: &Self) -> bool {
        self.platform == other.platform
            && self.arch == other.arch
            && self.kind == other.kind
            && self.is_delta() == other.is_delta()
    }
}

/// Who may read a product's update feeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum UpdateFeed {
    /// A valid license of the product (the default).
    #[default]
    License,
    /// Anyone: feeds and downloads need no credential, and are cacheable.
    Public,
}

impl UpdateFeed {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::License => "license",
            Self::Public => "public",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "license" => Ok(Self::License),
            "public" => Ok(Self::Public),
            _ => Err("must be license or public".into()),
        }
    }
}

/// Of a release's phased rollout, the share of licenses (0 to 100) offered it; 100 unless set.
///
/// On the wire it is the number. The store's binary form keeps the share held back
/// (`100 - percent`), so that a release recorded before phased rollouts existed, whose missing
/// member reads as zero, is offered to everyone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RolloutPercent(u8);

impl RolloutPercent {
    /// Everyone.
    pub const ALL: Self = Self(100);

    /// The share, 0 to 100.
    pub fn new(percent: u8) -> Result<Self, String> {
        if percent <= 100 {
            Ok(Self(percent))
        } else {
            Err("must be a whole number from 0 to 100".into())
        }
    }

    /// The share, 0 to 100.
    pub const fn get(self) -> u8 {
        self.0
    }
}

impl Default for RolloutPercent {
    fn default() -> Self {
        Self::ALL
    }
}

impl Serialize for RolloutPercent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_u8(self.0)
        } else {
            serializer.serialize_u8(100 - self.0)
        }
    }
}

impl<'de> Deserialize<'de> for RolloutPercent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let human = deserializer.is_human_readable();
        let value = u8::deserialize(deserializer)?;
        let percent = if human {
            value
        } else {
            100u8.checked_sub(value).ok_or_else(|| {
                serde::de::Error::custom("a rollout's held-back share is at most 100")
            })?
        };
        Self::new(percent).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for RolloutPercent {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Integer)
            .minimum(Some(0))
            .maximum(Some(100))
            .description(Some(
                "Share of licenses offered the release (phased rollout)",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for RolloutPercent {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_file_name() {
        assert_eq!(
            ArtifactKind::from_file_name("App_1.2.0_x64.app.tar.gz"),
            Some(ArtifactKind::TarGz)
        );
        assert_eq!(
            ArtifactKind::from_file_name("App-1.2.0-full.nupkg"),
            Some(ArtifactKind::Nupkg)
        );
        assert_eq!(
            ArtifactKind::from_file_name("app.AppImage"),
            Some(ArtifactKind::AppImage)
        );
        assert_eq!(ArtifactKind::from_file_name("notes.txt"), None);
        assert_eq!(ArtifactKind::from_file_name("README"), None);
        assert!(Platform::parse("macos").unwrap_err().contains("darwin"));
        assert_eq!(Arch::parse("x86_64"), Ok(Arch::X86_64));
    }

    #[test]
    fn a_rollout_is_its_number_on_the_wire_and_its_complement_when_stored() {
        let half = RolloutPercent::new(40).unwrap();
        assert_eq!(serde_json::to_string(&half).unwrap(), "40");
        assert_eq!(serde_json::from_str::<RolloutPercent>("40").unwrap(), half);
        assert!(serde_json::from_str::<RolloutPercent>("101").is_err());
        // What an old record's missing member reads as in the binary form: everyone.
        let missing: RolloutPercent = postcard::from_bytes(&[0]).unwrap();
        assert_eq!(missing, RolloutPercent::ALL);
        let stored = postcard::to_allocvec(&half).unwrap();
        assert_eq!(stored, [60]);
        assert_eq!(
            postcard::from_bytes::<RolloutPercent>(&stored).unwrap(),
            half
        );
    }
}
