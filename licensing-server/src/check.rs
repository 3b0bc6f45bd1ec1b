//! `licensing-server check`: reads a whole store and says whether it is sound. On sled, every
//! record decodes and every index, lookup key and counter agrees with its records; on
//! PostgreSQL (which keeps its own indexes and constraints) each license's record counts agree
//! with its records; on both, every release's file is present, of its recorded size and MD5.

use std::collections::BTreeMap;

use licensing_core::api::requests::ReleaseListQuery;
use licensing_core::crypto::Md5Hasher;
use licensing_core::store::{ReleaseStore as _, TeamStore as _};
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

/// Checks `store` and its release files.
pub async fn check(store: &AnyStore, files: &FileStore) -> Result<Report, ArchiveError> {
    let mut report = Report::default();
    match store {
        AnyStore::Sled(sled) => {
            let found = sled.check()?;
            report.checked = found.checked;
            report.problems = found.problems;
        }
        AnyStore::Postgres(pg) => {
            report.problems.extend(pg.check_record_counts().await?);
        }
    }
    for team in store.list_teams().await? {
        *report.checked.entry("teams").or_default() += 1;
        let id = team.id;
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
            let Some(file) = release.file else { continue };
            let Some((mut reader, _)) = files.open(&file.key).await? else {
                report.problems.push(format!(
                    "release {} (team {id}): its file {} is missing",
                    release.id, file.key
                ));
                continue;
            };
            let mut md5 = Md5Hasher::new();
            let mut size = 0u64;
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                let n = reader.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                size += n as u64;
                md5.update(&buf[..n]);
            }
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
    Ok(report)
}
