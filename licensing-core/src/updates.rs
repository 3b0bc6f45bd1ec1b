//! (ext) Update feeds: which release a license is offered, and the feed token of updaters that
//! cannot send a header.
//!
//! Only PUBLISHED releases are offered (a DEPRECATED one is never an upgrade target, an ARCHIVED
//! one is yanked), on the channel asked (a branch; none is `stable`), to the licenses
//! `allowedLicenses` admits, and, in a phased rollout, to the licenses inside it: a license is
//! when the first two bytes of SHA-256(release id ‖ license id), big-endian, mod 100 are below
//! `rolloutPercent`. A critical release skips phasing. Versions compare as semantic versions (a
//! leading `v` is allowed); a release whose version is not one is never offered.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};

use crate::model::{Artifact, Release, ReleaseStatus, RolloutPercent};
use crate::{BranchId, LicenseId, ProductId, ReleaseId, Timestamp};

/// The channel of releases without a branch.
pub const STABLE: &str = "stable";

/// A semantic version, as the feeds compare versions.
pub use semver::Version as SemVer;

/// The paths of the feeds and downloads under `{client}/updates/{productId}/`, as templates;
/// each is also served under a feed token (`…/t/{token}/…`). (Besides them: `POST …/token`.)
pub const FEED_PATHS: &[&str] = &[
    "tauri/{target}/{arch}/{currentVersion}",
    "sparkle/appcast.xml",
    "velopack/releases.{channel}.json",
    "velopack/RELEASES",
    "velopack/{fileName}",
    "electron/{channelFile}",
    "latest",
    "download/{artifactId}/{filename}",
];

/// How long a feed token lasts: 30 days.
pub const TOKEN_DAYS: u32 = 30;

/// A version as the feeds compare them: a semantic version, with an optional leading `v`.
pub fn semantic(version: &str) -> Option<semver::Version> {
    let text = version.strip_prefix(['v', 'V']).unwrap_or(version);
    semver::Version::parse(text).ok()
}

/// Whether `license` is inside the phased rollout of `release` at `percent`.
pub fn in_rollout(release: ReleaseId, license: LicenseId, percent: RolloutPercent) -> bool {
    if percent.get() >= 100 {
        return true;
    }
    let digest = Sha256::new()
        .chain_update(release.as_bytes())
        .chain_update(license.as_bytes())
        .finalize();
    let bucket = u16::from_be_bytes([digest[0], digest[1]]) % 100;
    bucket < u16::from(percent.get())
}

/// Who asks for a feed: a license (by id), or anyone (a public feed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// A license of the product.
    License(LicenseId),
    /// Anyone: releases limited to some licenses are hidden, phased ones offered once at 100%.
    Anyone,
}

/// A release a reader is offered, with its version parsed.
#[derive(Clone, Copy, Debug)]
pub struct Offer<'a> {
    /// The release.
    pub release: &'a Release,
    /// Its version.
    pub version: &'a semver::Version,
}

/// The releases of a product, parsed once: what every feed of it offers a reader.
#[derive(Debug)]
pub struct Catalog<'a> {
    releases: Vec<(&'a Release, semver::Version)>,
}

impl<'a> Catalog<'a> {
    /// The releases of `channel` (a branch; `None` is `stable`) that `reader` is offered, newest
    /// first.
    pub fn offered(releases: &'a [Release], channel: Option<BranchId>, reader: Reader) -> Self {
        let mut offered: Vec<(&'a Release, semver::Version)> = releases
            .iter()
            .filter(|r| r.status == ReleaseStatus::Published && r.branch_id == channel)
            .filter(|r| match reader {
                Reader::License(license) => {
                    (r.allowed_license_ids.is_empty() || r.allowed_license_ids.contains(&license))
                        && (r.critical || in_rollout(r.id, license, r.rollout_percent))
                }
                Reader::Anyone => {
                    r.allowed_license_ids.is_empty()
                        && (r.critical || r.rollout_percent == RolloutPercent::ALL)
                }
            })
            .filter_map(|r| semantic(r.version.as_str()).map(|v| (r, v)))
            .collect();
        offered.sort_by(|(a, va), (b, vb)| vb.cmp(va).then(b.created_at.cmp(&a.created_at)));
        Self { releases: offered }
    }

    /// Every release offered, newest first.
    pub fn all(&self) -> impl Iterator<Item = Offer<'_>> + '_ {
        self.releases
            .iter()
            .map(|(release, version)| Offer { release, version })
    }

    /// The newest release offered that is newer than `current` (any, without one) and has an
    /// artifact `wanted` accepts, with that artifact.
    pub fn newest(
        &self,
        current: Option<&semver::Version>,
        wanted: impl Fn(&Artifact) -> bool,
    ) -> Option<(Offer<'_>, &'_ Artifact)> {
        self.all()
            .take_while(|offer| current.is_none_or(|c| offer.version > c))
            .find_map(|offer| {
                offer
                    .release
                    .artifacts
                    .iter()
                    .find(|a| wanted(a))
                    .map(|a| (offer, a))
            })
    }
}

/// A feed token's claims: a license may read a product's feeds until a time. It is signed by
/// the team's signing key (Ed25519) and names the key's id; using it runs the license's checks
/// again, so suspending the license revokes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedToken {
    /// The license.
    pub license: LicenseId,
    /// The product.
    pub product: ProductId,
    /// When it stops working.
    pub expires_at: Timestamp,
}

/// What a token's text starts with.
const TOKEN_PREFIX: &str = "ft1_";
/// Version byte, key id, license, product, expiry (milliseconds, big-endian).
const CLAIMS_LEN: usize = 1 + 8 + 16 + 16 + 8;

impl FeedToken {
    /// The signed text (URL-safe: it is a path segment), by the key `key_id` whose signing
    /// function is `sign`.
    pub fn encode(&self, key_id: [u8; 8], sign: impl Fn(&[u8]) -> [u8; 64]) -> String {
        let mut raw = Vec::with_capacity(CLAIMS_LEN + 64);
        raw.push(1);
        raw.extend_from_slice(&key_id);
        raw.extend_from_slice(self.license.as_bytes());
        raw.extend_from_slice(self.product.as_bytes());
        raw.extend_from_slice(&self.expires_at.as_millis().to_be_bytes());
        let signature = sign(&raw);
        raw.extend_from_slice(&signature);
        format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(raw))
    }

    /// Reads a token's text: its claims, the key id it names, and the signed bytes with their
    /// signature, to be checked by the caller with the team's key of that id. `None` when it is
    /// not a token at all.
    pub fn decode(text: &str) -> Option<(Self, [u8; 8], Signed)> {
        let raw = URL_SAFE_NO_PAD
            .decode(text.strip_prefix(TOKEN_PREFIX)?)
            .ok()?;
        if raw.len() != CLAIMS_LEN + 64 || raw[0] != 1 {
            return None;
        }
        let key_id: [u8; 8] = raw[1..9].try_into().ok()?;
        let license = LicenseId::from_uuid(uuid::Uuid::from_bytes(raw[9..25].try_into().ok()?));
        let product = ProductId::from_uuid(uuid::Uuid::from_bytes(raw[25..41].try_into().ok()?));
        let expires = i64::from_be_bytes(raw[41..49].try_into().ok()?);
        let signature: [u8; 64] = raw[CLAIMS_LEN..].try_into().ok()?;
        let claims = Self {
            license,
            product,
            expires_at: Timestamp::from_millis(expires),
        };
        let signed = Signed {
            message: raw[..CLAIMS_LEN].to_vec(),
            signature,
        };
        Some((claims, key_id, signed))
    }
}

/// The signed part of a token and its signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    /// The bytes signed.
    pub message: Vec<u8>,
    /// Their Ed25519 signature.
    pub signature: [u8; 64],
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Arch, ArtifactKind, Platform};
    use crate::validate::Version;
    use crate::{ArtifactId, TeamId, UserId};

    fn release(version: &str, status: ReleaseStatus) -> Release {
        let at = Timestamp::from_millis(1_790_000_000_000);
        Release {
            id: ReleaseId::new(),
            version: Version::parse(version).unwrap(),
            status,
            latest: false,
            product_id: ProductId::new(),
            branch_id: None,
            team_id: TeamId::new(),
            created_by_user_id: UserId::ADMIN,
            created_at: at,
            updated_at: at,
            metadata: Vec::new(),
            file: None,
            allowed_license_ids: Vec::new(),
            notes: None,
            critical: false,
            rollout_percent: RolloutPercent::ALL,
            artifacts: vec![Artifact {
                id: ArtifactId::new(),
                platform: Platform::Linux,
                arch: Arch::X86_64,
                kind: ArtifactKind::AppImage,
                filename: "app.AppImage".into(),
                size: 1,
                sha256: String::new(),
                sha512: String::new(),
                sha1: String::new(),
                signature: None,
                ed_signature: None,
                server_signed: false,
                key: String::new(),
                created_at: at,
            }],
        }
    }

    #[test]
    fn only_published_semantic_versions_of_the_channel_are_offered_newest_first() {
        let license = LicenseId::new();
        let releases = vec![
            release("1.0.0", ReleaseStatus::Published),
            release("1.2.0", ReleaseStatus::Deprecated),
            release("v1.10.0", ReleaseStatus::Published),
            release("1.11.0", ReleaseStatus::Draft),
            release("1.12.0", ReleaseStatus::Archived),
            release("build-7", ReleaseStatus::Published),
            release("1.9.0", ReleaseStatus::Published),
        ];
        let catalog = Catalog::offered(&releases, None, Reader::License(license));
        let versions: Vec<String> = catalog.all().map(|o| o.version.to_string()).collect();
        assert_eq!(versions, ["1.10.0", "1.9.0", "1.0.0"]);
        let current = semantic("1.9.0").unwrap();
        let (offer, _) = catalog.newest(Some(&current), |_| true).unwrap();
        assert_eq!(offer.release.version.as_str(), "v1.10.0");
        let newest = semantic("1.10.0").unwrap();
        assert!(catalog.newest(Some(&newest), |_| true).is_none());
        assert!(
            catalog
                .newest(None, |a| a.platform == Platform::Darwin)
                .is_none()
        );
        let beta = BranchId::new();
        assert_eq!(
            Catalog::offered(&releases, Some(beta), Reader::Anyone)
                .all()
                .count(),
            0
        );
    }

    #[test]
    fn a_phased_rollout_is_deterministic_and_a_critical_release_skips_it() {
        let mut phased = release("2.0.0", ReleaseStatus::Published);
        phased.rollout_percent = RolloutPercent::new(0).unwrap();
        let licenses: Vec<LicenseId> = (0..400).map(|_| LicenseId::new()).collect();
        let offered = |r: &Release| {
            licenses
                .iter()
                .filter(|l| {
                    Catalog::offered(std::slice::from_ref(r), None, Reader::License(**l))
                        .all()
                        .count()
                        == 1
                })
                .count()
        };
        assert_eq!(offered(&phased), 0);
        phased.rollout_percent = RolloutPercent::new(50).unwrap();
        let half = offered(&phased);
        assert!(
            (120..=280).contains(&half),
            "{half} of 400 in a 50% rollout"
        );
        assert_eq!(offered(&phased), half, "the same licenses every time");
        phased.rollout_percent = RolloutPercent::new(0).unwrap();
        phased.critical = true;
        assert_eq!(offered(&phased), 400);
        // Anyone (a public feed) sees a phased release only at 100%.
        phased.critical = false;
        phased.rollout_percent = RolloutPercent::new(99).unwrap();
        assert_eq!(
            Catalog::offered(std::slice::from_ref(&phased), None, Reader::Anyone)
                .all()
                .count(),
            0
        );
    }

    #[test]
    fn tokens_read_back_and_reject_tampering() {
        let token = FeedToken {
            license: LicenseId::new(),
            product: ProductId::new(),
            expires_at: Timestamp::from_millis(1_790_000_000_000),
        };
        let text = token.encode([3; 8], |_| [9; 64]);
        assert!(text.starts_with("ft1_"));
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
        let (read, key_id, signed) = FeedToken::decode(&text).unwrap();
        assert_eq!((read, key_id, signed.signature), (token, [3; 8], [9; 64]));
        assert!(FeedToken::decode("ft1_abc").is_none());
        assert!(FeedToken::decode(&text[1..]).is_none());
    }
}
