//! `licensing-server check`: reads a whole store and says whether it is sound. On sled, every
//! record decodes and every index, lookup key and counter agrees with its records; on
//! PostgreSQL (which keeps its own indexes and constraints) each license's record counts agree
//! with its records; on both, every release's file is present, of its recorded size and MD5, and
//! no private key or secret is in the clear beside sealed ones (nor in a migration's copy of the
//! store).

use std::collections::BTreeMap;

use licensing_core::api::requests::ReleaseListQuery;
use licensing_core::crypto::Md5Hasher;
use licensing_core::crypto::is_sealed_secret;
use licensing_core::store::{
    IdempotencyStore as _, PaymentStore, ReleaseStore as _, StaffStore as _, TeamStore as _,
    WebhookStore as _,
};
use serde::Serialize;
use tokio::io::AsyncReadExt as _;

use crate::archive::{ArchiveError, all_pages, bad_query, every};
use crate::files::FileStore;
use crate::store::AnyStore;

/// What a check read and found.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Records and files read, by kind.
    pub checked: BTreeMap<&'static str, u64>,
    /// Every inconsistency, one sentence each; empty when the store is sound.
    pub problems: Vec<String>,
}

/// Checks `store` (of the data directory `data_dir`) and its release files.
pub async fn check(
    store: &AnyStore,
    files: &FileStore,
    data_dir: &std::path::Path,
) -> Result<Report, ArchiveError> {
    let mut report = Report::default();
    let found = store.check_integrity().await?;
    report.checked = found.checked;
    report.problems = found.problems;
    let (mut sealed, mut clear) = (0u64, 0u64);
    for team in store.list_teams().await? {
        *report.checked.entry("teams").or_default() += 1;
        let id = team.id;
        // Keys and secrets at rest: sealed under a master key, or in the clear.
        let mut count = |is_sealed: bool| {
            if is_sealed {
                sealed += 1;
            } else {
                clear += 1;
            }
        };
        count(team.keys.sealed_by().is_some());
        for endpoint in store.list_webhooks(id).await? {
            count(is_sealed_secret(&endpoint.secret));
            if let Some(previous) = &endpoint.previous_secret {
                count(is_sealed_secret(previous));
            }
        }
        for user in store.list_staff(id).await? {
            if let Some(two_step) = &user.two_step {
                count(is_sealed_secret(&two_step.secret));
            }
        }
        for integration in store.list_integrations(id).await? {
            for stored in [
                Some(&integration.webhook_secret),
                integration.previous_secret.as_ref(),
                integration.api_key.as_ref(),
            ]
            .into_iter()
            .flatten()
            {
                count(is_sealed_secret(stored));
            }
        }
        let releases = every(
            |r: &licensing_core::model::Release| r.id,
            |n| async move {
                let q = ReleaseListQuery::parse(&all_pages(n)).map_err(bad_query)?;
                Ok(store.list_releases(id, &q).await?)
            },
        )
        .await?;
        for release in releases {
            *report.checked.entry("releases").or_default() += 1;
            if let Some(file) = &release.file {
                match digest_of(files, &file.key, Md5Hasher::new(), |h, b| h.update(b)).await? {
                    None => report.problems.push(format!(
                        "release {} (team {id}): its file {} is missing",
                        release.id, file.key
                    )),
                    Some((size, md5)) => {
                        *report.checked.entry("release files").or_default() += 1;
                        let digest = md5.finish_hex();
                        if size != file.size || digest != file.checksum {
                            report.problems.push(format!(
                                "release {} (team {id}): its file {} is damaged: {size} bytes with MD5 {digest}, recorded {} bytes with MD5 {}",
                                release.id, file.key, file.size, file.checksum
                            ));
                        }
                    }
                }
            }
            for artifact in &release.artifacts {
                use sha2::Digest as _;
                let found = digest_of(files, &artifact.key, sha2::Sha256::new(), |h, b| {
                    h.update(b);
                })
                .await?;
                match found {
                    None => report.problems.push(format!(
                        "release {} (team {id}): its artifact {} ({}) is missing",
                        release.id, artifact.id, artifact.key
                    )),
                    Some((size, sha256)) => {
                        *report.checked.entry("release artifacts").or_default() += 1;
                        let digest = hex::encode(sha256.finalize());
                        if size != artifact.size || digest != artifact.sha256 {
                            report.problems.push(format!(
                                "release {} (team {id}): its artifact {} is damaged: {size} bytes with SHA-256 {digest}, recorded {} bytes with SHA-256 {}",
                                release.id, artifact.id, artifact.size, artifact.sha256
                            ));
                        }
                    }
                }
            }
        }
    }
    report
        .checked
        .insert("private keys and secrets sealed", sealed);
    report
        .checked
        .insert("private keys and secrets in the clear", clear);
    // Kept idempotent answers hold no secret shown once; an earlier version's may, for the
    // day they are kept.
    let kept_secrets = store.count_kept_secrets().await?;
    report
        .checked
        .insert("kept answers holding a secret", kept_secrets);
    if kept_secrets > 0 {
        report.problems.push(format!(
            "{kept_secrets} kept idempotent answers hold a secret in the clear (an API key, webhook secret, set-password link or recovery code), kept by an earlier version to replay retries: they are deleted with their keys within 24 hours of their requests"
        ));
    }
    if sealed > 0 && clear > 0 {
        report.problems.push(format!(
            "{clear} private keys or secrets are stored in the clear while {sealed} are sealed under a master key: start the server with that key, which seals them"
        ));
    }
    if sealed > 0 {
        for copy in crate::store::migration_copies(data_dir) {
            report.problems.push(format!(
                "{} is a copy of the store from before a format migration, made before the keys were sealed: it holds them in the clear (the server removes it when it starts with the master key)",
                copy.display()
            ));
        }
    }
    Ok(report)
}

/// Reads stored file `key` through `hasher` (fed by `update`): its size and the hasher, or
/// `None` when it is missing.
async fn digest_of<H>(
    files: &FileStore,
    key: &str,
    mut hasher: H,
    update: impl Fn(&mut H, &[u8]),
) -> std::io::Result<Option<(u64, H)>> {
    let Some((mut reader, _)) = files.open(key).await? else {
        return Ok(None);
    };
    let mut size = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        size += n as u64;
        update(&mut hasher, &buf[..n]);
    }
    Ok(Some((size, hasher)))
}
