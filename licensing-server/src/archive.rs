//! The archive: every team's records and release files in one portable, versioned, line-oriented
//! file, written by `licensing-server export` and read by `licensing-server import` on either
//! store. It is the way between stores (sled → PostgreSQL) and between versions.
//!
//! Format: JSON lines. The first line is the header (`{"kind":"header","format":
//! "licensing-archive","version":3,…}`), the last one the trailer with the number of lines
//! before it, so that a cut file is refused. In between, per team and in an order that import
//! can follow: the team with its API keys (hashes only), customers, products, branches,
//! licenses, each license's devices and addresses, releases, the chunks of each release file
//! (base64, 1 MiB each, consecutive), the blacklist, the hourly statistics, (since version 2)
//! the webhook endpoints with their signing secrets and the audit log, (since version 3)
//! the staff accounts with their password hashes, (since version 4) the entitlements,
//! before the products and licenses that grant them, (since version 5) the policies, after
//! the products and entitlements they name and before the licenses on them, and (since version
//! 6) the payment integrations with their sealed secrets and rules, the links from providers'
//! subscriptions and payments to licenses, and the events received (those applied still count
//! as applied, so that a redelivery after a move changes nothing), and (since version 8) each
//! license's usage counters after its devices and addresses. Records are the model's own JSON, so ids,
//! times, keys (sealed or not) and counters come back unchanged.
//!
//! Not carried: e-mails waiting in the outbox, used session keys, signed-in sessions and
//! rate-limit counters (all short-lived), and webhook events and deliveries waiting to be sent.

use std::collections::HashSet;
use std::io::BufRead;

use base64::Engine as _;
use licensing_core::api::requests::{
    AuditQuery, CustomerListQuery, DeviceListQuery, LicenseListQuery, ProductListQuery,
    ReleaseListQuery,
};
use licensing_core::model::{
    ApiKeyRecord, AuditEntry, BlacklistEntry, Branch, Customer, Entitlement, HourlyStats, Hwid,
    IpRecord, License, Policy, Product, Release, StaffUser, Team, WebhookEndpoint,
};
use licensing_core::store::{Entity, Journal, Page, Store, StoreError};
use licensing_core::{
    AuditId, BranchId, CustomerId, EntitlementId, FileId, LicenseId, PolicyId, ProductId, TeamId,
    Timestamp,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use crate::files::{FileStore, PendingFile};

/// The format's name in the header.
pub const FORMAT: &str = "licensing-archive";
/// The version this server writes; it reads this one and every earlier one.
pub const VERSION: u32 = 8;
/// Bytes of a release file per line.
const FILE_CHUNK: usize = 1024 * 1024;

/// One line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Line {
    #[serde(rename_all = "camelCase")]
    Header {
        format: String,
        version: u32,
        created_at: Timestamp,
    },
    #[serde(rename_all = "camelCase")]
    Team {
        team: Team,
        api_keys: Vec<ApiKeyRecord>,
    },
    Customer {
        customer: Customer,
    },
    /// An entitlement (version 4).
    Entitlement {
        entitlement: Entitlement,
    },
    Product {
        product: Product,
    },
    /// A policy (version 5).
    Policy {
        policy: Policy,
    },
    Branch {
        branch: Branch,
    },
    License {
        license: License,
    },
    #[serde(rename_all = "camelCase")]
    Usage {
        team_id: TeamId,
        license_id: LicenseId,
        hwids: Vec<Hwid>,
        ips: Vec<IpRecord>,
    },
    /// A license's usage counters (version 8).
    #[serde(rename_all = "camelCase")]
    Meters {
        team_id: TeamId,
        license_id: LicenseId,
        counters: Vec<licensing_core::model::UsageCounter>,
    },
    Release {
        release: Release,
    },
    #[serde(rename_all = "camelCase")]
    FileChunk {
        key: String,
        data: String,
    },
    Blacklist {
        entry: BlacklistEntry,
    },
    /// A webhook endpoint (version 2).
    Webhook {
        endpoint: WebhookEndpoint,
    },
    /// A staff account (version 3).
    Staff {
        user: StaffUser,
    },
    /// A payment integration (version 6).
    Integration {
        integration: licensing_core::model::Integration,
    },
    /// Links from a provider's subscriptions and payments to licenses, up to 100 a line
    /// (version 6).
    PaymentLinks {
        links: Vec<licensing_core::model::PaymentLink>,
    },
    /// A received payment event (version 6).
    Inbound {
        event: licensing_core::model::InboundEvent,
    },
    /// Entries of the audit log, oldest first, up to 100 a line (version 2).
    Audit {
        entries: Vec<AuditEntry>,
    },
    #[serde(rename_all = "camelCase")]
    Stats {
        team_id: TeamId,
        bucket: HourlyStats,
    },
    Trailer {
        lines: u64,
    },
}

/// What an export or import handled.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Teams.
    pub teams: u64,
    /// Licenses.
    pub licenses: u64,
    /// Device and address records.
    pub usage_records: u64,
    /// Release files.
    pub files: u64,
    /// Lines of the archive.
    pub lines: u64,
}

/// Why an export or import failed.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// Reading or writing the archive or a file failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] licensing_core::store::StoreError),
    /// The archive is not one this server reads.
    #[error("line {line}: {message}")]
    Format {
        /// Line number (1-based).
        line: u64,
        /// What is wrong.
        message: String,
    },
}

/// The query of page `page` of a list, oldest first, 100 at a time.
pub(crate) fn all_pages(page: u32) -> String {
    format!("page={page}&pageSize=100&sortColumn=createdAt&sortDirection=asc")
}

/// Lines go out through a buffer, written in pieces of about 64 KiB.
struct Writer<W: AsyncWrite + Unpin> {
    out: W,
    buf: Vec<u8>,
    lines: u64,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    async fn line(&mut self, line: &Line) -> Result<(), ArchiveError> {
        serde_json::to_writer(&mut self.buf, line).map_err(std::io::Error::other)?;
        self.buf.push(b'\n');
        self.lines += 1;
        if self.buf.len() >= 64 * 1024 {
            self.out.write_all(&self.buf).await?;
            self.buf.clear();
        }
        Ok(())
    }

    async fn finish(&mut self) -> Result<(), ArchiveError> {
        self.out.write_all(&self.buf).await?;
        self.buf.clear();
        self.out.flush().await?;
        Ok(())
    }
}

/// Reads every page of a list, each record once (by `id`). A server may be writing meanwhile:
/// a record deleted between two pages moves the later ones forward, so a read whose total
/// changed is repeated (three passes at most) and the passes merged.
pub(crate) async fn every<T, K, F, Fut>(
    id: fn(&T) -> K,
    mut page: F,
) -> Result<Vec<T>, ArchiveError>
where
    K: std::hash::Hash + Eq,
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<Page<T>, ArchiveError>>,
{
    let mut all = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for _pass in 0..3 {
        let mut totals = std::collections::HashSet::new();
        let mut read = 0u64;
        for n in 1.. {
            let got = page(n).await?;
            totals.insert(got.total);
            read += got.items.len() as u64;
            let more = got.has_next_page;
            for item in got.items {
                if seen.insert(id(&item)) {
                    all.push(item);
                }
            }
            if !more {
                break;
            }
        }
        if totals.len() == 1 && totals.contains(&read) {
            break;
        }
    }
    Ok(all)
}

pub(crate) fn bad_query(e: licensing_core::ApiError) -> ArchiveError {
    ArchiveError::Format {
        line: 0,
        message: format!("internal list query: {e:?}"),
    }
}

/// Writes every team of `store` (and its release files from `files`) to `out`.
///
/// A server may be serving from the store meanwhile (an online backup): each record is written
/// as it was when read, and records that refer to others (licenses to customers and products,
/// branches and releases to products, releases to licenses) are read before those they refer
/// to, and keep only the references the archive can satisfy, so that the archive always
/// imports; a record created or deleted while the export runs may be in it or not.
pub async fn export<S: Store, W: AsyncWrite + Unpin>(
    store: &S,
    files: &FileStore,
    out: W,
) -> Result<Counts, ArchiveError> {
    let mut w = Writer {
        out,
        buf: Vec::with_capacity(128 * 1024),
        lines: 0,
    };
    let mut counts = Counts::default();
    w.line(&Line::Header {
        format: FORMAT.into(),
        version: VERSION,
        created_at: Timestamp::now(),
    })
    .await?;
    for team in store.list_teams().await? {
        let id = team.id;
        // Every `$record` of the team, read by the store's `$list` with a `$query` of each page.
        macro_rules! every_of {
            ($record:ty, $query:ty, $list:ident) => {
                every(
                    |r: &$record| r.id,
                    |n| async move {
                        let q = <$query>::parse(&all_pages(n)).map_err(bad_query)?;
                        Ok(store.$list(id, &q).await?)
                    },
                )
                .await?
            };
        }
        let api_keys = store.list_api_keys(id).await?;
        w.line(&Line::Team { team, api_keys }).await?;
        counts.teams += 1;
        // Those that refer first, those they refer to after them.
        let mut licenses = every_of!(License, LicenseListQuery, list_licenses);
        let mut releases = every_of!(Release, ReleaseListQuery, list_releases);
        let entitlements = store.list_entitlements(id).await?;
        let mut products = every_of!(Product, ProductListQuery, list_products);
        let mut branches = Vec::new();
        for product in &products {
            match store.list_branches(id, product.id).await {
                Ok(found) => branches.extend(found),
                // Deleted since the list was read: its branches went with it.
                Err(StoreError::NotFound(Entity::Product)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let customers = every_of!(Customer, CustomerListQuery, list_customers);
        let mut policies = store.list_policies(id).await?;
        let product_ids: HashSet<ProductId> = products.iter().map(|p| p.id).collect();
        let customer_ids: HashSet<CustomerId> = customers.iter().map(|c| c.id).collect();
        let branch_ids: HashSet<BranchId> = branches.iter().map(|b| b.id).collect();
        let entitlement_ids: HashSet<EntitlementId> = entitlements.iter().map(|e| e.id).collect();
        for license in &mut licenses {
            license.product_ids.retain(|p| product_ids.contains(p));
            license.customer_ids.retain(|c| customer_ids.contains(c));
            license
                .entitlement_ids
                .retain(|e| entitlement_ids.contains(e));
        }
        for product in &mut products {
            product
                .entitlement_ids
                .retain(|e| entitlement_ids.contains(e));
        }
        for policy in &mut policies {
            policy.product_ids.retain(|p| product_ids.contains(p));
            policy
                .entitlement_ids
                .retain(|e| entitlement_ids.contains(e));
        }
        let policy_ids: HashSet<PolicyId> = policies.iter().map(|p| p.id).collect();
        for license in &mut licenses {
            // A policy deleted since the list was read: the license keeps what applied last.
            if license.policy_id.is_some_and(|p| !policy_ids.contains(&p)) {
                license.policy_id = None;
                license.overrides.clear();
            }
        }
        releases.retain(|r| product_ids.contains(&r.product_id));
        for release in &mut releases {
            if release.branch_id.is_some_and(|b| !branch_ids.contains(&b)) {
                release.branch_id = None;
            }
        }

        for customer in customers {
            w.line(&Line::Customer { customer }).await?;
        }
        for entitlement in entitlements {
            w.line(&Line::Entitlement { entitlement }).await?;
        }
        for product in products {
            w.line(&Line::Product { product }).await?;
        }
        for policy in policies {
            w.line(&Line::Policy { policy }).await?;
        }
        for branch in branches {
            w.line(&Line::Branch { branch }).await?;
        }
        let mut written = HashSet::new();
        for license in licenses {
            let license_id = license.id;
            let usage = |n: u32| {
                DeviceListQuery::parse(&format!("{}&showForgotten=true", all_pages(n)))
                    .map_err(bad_query)
            };
            let records = async {
                let hwids = every(
                    |h: &Hwid| h.id,
                    |n| async move { Ok(store.list_hwids(id, license_id, &usage(n)?).await?) },
                )
                .await?;
                let ips = every(
                    |r: &IpRecord| r.id,
                    |n| async move { Ok(store.list_ips(id, license_id, &usage(n)?).await?) },
                )
                .await?;
                let counters = store.list_usage(id, license_id).await?;
                Ok::<_, ArchiveError>((hwids, ips, counters))
            };
            let (hwids, ips, counters) = match records.await {
                Ok(records) => records,
                // Deleted since the list was read: left out, as its references below.
                Err(ArchiveError::Store(StoreError::NotFound(Entity::License))) => continue,
                Err(e) => return Err(e),
            };
            w.line(&Line::License { license }).await?;
            written.insert(license_id);
            counts.licenses += 1;
            if !hwids.is_empty() || !ips.is_empty() {
                counts.usage_records += (hwids.len() + ips.len()) as u64;
                w.line(&Line::Usage {
                    team_id: id,
                    license_id,
                    hwids,
                    ips,
                })
                .await?;
            }
            if !counters.is_empty() {
                w.line(&Line::Meters {
                    team_id: id,
                    license_id,
                    counters,
                })
                .await?;
            }
        }
        for mut release in releases {
            release.allowed_license_ids.retain(|l| written.contains(l));
            // The release, then the chunks of each of its files (its own, its artifacts').
            let keys: Vec<String> = crate::files::stored_keys_of(&release)
                .map(str::to_owned)
                .collect();
            let mut readers = Vec::with_capacity(keys.len());
            let mut gone = false;
            for key in &keys {
                match files.open(key).await? {
                    Some((reader, _)) => readers.push(reader),
                    None => {
                        // Deleted with its release (or artifact) since the list was read: left
                        // out as its record is.
                        if store.get_release(id, release.id).await?.is_none() {
                            gone = true;
                            break;
                        }
                        return Err(ArchiveError::Io(std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            format!("release file {key} is missing from the file store"),
                        )));
                    }
                }
            }
            if gone {
                continue;
            }
            w.line(&Line::Release { release }).await?;
            for (key, mut reader) in keys.into_iter().zip(readers) {
                let mut buf = vec![0u8; FILE_CHUNK];
                loop {
                    let mut filled = 0;
                    while filled < buf.len() {
                        let n = reader.read(&mut buf[filled..]).await?;
                        if n == 0 {
                            break;
                        }
                        filled += n;
                    }
                    if filled == 0 {
                        break;
                    }
                    w.line(&Line::FileChunk {
                        key: key.clone(),
                        data: base64::engine::general_purpose::STANDARD.encode(&buf[..filled]),
                    })
                    .await?;
                    if filled < buf.len() {
                        break;
                    }
                }
                counts.files += 1;
            }
        }
        for entry in store.list_blacklist(id).await? {
            w.line(&Line::Blacklist { entry }).await?;
        }
        for bucket in store.hourly_since(id, i64::MIN).await? {
            w.line(&Line::Stats {
                team_id: id,
                bucket,
            })
            .await?;
        }
        for endpoint in store.list_webhooks(id).await? {
            w.line(&Line::Webhook { endpoint }).await?;
        }
        for user in store.list_staff(id).await? {
            w.line(&Line::Staff { user }).await?;
        }
        for integration in store.list_integrations(id).await? {
            w.line(&Line::Integration { integration }).await?;
        }
        for links in store.list_payment_links(id).await?.chunks(100) {
            w.line(&Line::PaymentLinks {
                links: links.to_vec(),
            })
            .await?;
        }
        export_inbound(store, id, &mut w).await?;
        export_audit(store, id, &mut w).await?;
    }
    let lines = w.lines;
    w.line(&Line::Trailer { lines }).await?;
    w.finish().await?;
    counts.lines = w.lines;
    Ok(counts)
}

/// Writes a team's audit log, oldest first. It is read by time (`from` the last entry written),
/// not by page number, so that entries pruned or added while it is read shift nothing: each
/// entry is written once.
/// The team's received payment events, oldest first.
async fn export_inbound<S: Store, W: AsyncWrite + Unpin>(
    store: &S,
    team: TeamId,
    w: &mut Writer<W>,
) -> Result<(), ArchiveError> {
    let mut all = Vec::new();
    for page in 1.. {
        let query = licensing_core::api::requests::InboundQuery::parse(&format!(
            "page={page}&pageSize=100"
        ))
        .map_err(|e| ArchiveError::Io(std::io::Error::other(e.details().to_owned())))?;
        let found = store.list_inbound(team, &query).await?;
        all.extend(found.items);
        if !found.has_next_page {
            break;
        }
    }
    for event in all.into_iter().rev() {
        w.line(&Line::Inbound { event }).await?;
    }
    Ok(())
}

async fn export_audit<S: Store, W: AsyncWrite + Unpin>(
    store: &S,
    team: TeamId,
    w: &mut Writer<W>,
) -> Result<(), ArchiveError> {
    let mut from: Option<Timestamp> = None;
    // The entries written at `from` exactly; the page to read from `from` on.
    let mut at_from: HashSet<AuditId> = HashSet::new();
    let mut page = 1u32;
    loop {
        let since = from.map(|f| format!("&from={f}")).unwrap_or_default();
        let q = AuditQuery::parse(&format!(
            "page={page}&pageSize=100&sortDirection=asc{since}"
        ))
        .map_err(bad_query)?;
        let got = store.list_audit(team, &q).await?;
        let before = from;
        let mut entries = Vec::with_capacity(got.items.len());
        for entry in got.items {
            if Some(entry.at) != from {
                from = Some(entry.at);
                at_from.clear();
            }
            if at_from.insert(entry.id) {
                entries.push(entry);
            }
        }
        if !entries.is_empty() {
            w.line(&Line::Audit { entries }).await?;
        }
        if !got.has_next_page {
            return Ok(());
        }
        // Read on from the newest time written; within one millisecond, by page number.
        page = if from == before { page + 1 } else { 1 };
    }
}

/// A release file being read back: its key and where its bytes go.
struct OpenFile {
    key: String,
    team: TeamId,
    id: FileId,
    pending: PendingFile,
}

async fn finish_file(files: &FileStore, open: Option<OpenFile>) -> Result<u64, ArchiveError> {
    let Some(open) = open else { return Ok(0) };
    let stored = files
        .commit(open.pending, open.team, open.id)
        .await
        .map_err(|e| ArchiveError::Io(std::io::Error::other(e)))?;
    if stored.key != open.key {
        return Err(ArchiveError::Format {
            line: 0,
            message: format!("file key {} is not <team>/<file id>", open.key),
        });
    }
    Ok(1)
}

/// Reads an archive into `store` (which must hold no team) and `files`.
pub async fn import<S: Store, R: BufRead>(
    store: &S,
    files: &FileStore,
    input: R,
) -> Result<Counts, ArchiveError> {
    if !store.list_teams().await?.is_empty() {
        return Err(ArchiveError::Format {
            line: 0,
            message: "the store already holds teams: import into an empty one".into(),
        });
    }
    let mut counts = Counts::default();
    let mut open: Option<OpenFile> = None;
    let mut trailer = false;
    let mut n: u64 = 0;
    for text in input.lines() {
        let text = text?;
        n += 1;
        let bad = |message: String| ArchiveError::Format { line: n, message };
        if trailer {
            return Err(bad("lines after the trailer".into()));
        }
        let line: Line = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if n == 1 {
            match &line {
                Line::Header {
                    format, version, ..
                } if format == FORMAT && (1..=VERSION).contains(version) => continue,
                Line::Header {
                    format, version, ..
                } if format == FORMAT => {
                    return Err(bad(format!(
                        "archive version {version}; this server reads versions 1 to {VERSION}"
                    )));
                }
                _ => return Err(bad(format!("not a {FORMAT} file (no header)"))),
            }
        }
        // Consecutive chunks of one file; any other line ends it.
        if let Line::FileChunk { key, data } = &line {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| bad(format!("file chunk: {e}")))?;
            if open.as_ref().is_none_or(|f| &f.key != key) {
                counts.files += finish_file(files, open.take()).await?;
                let (team, id) = key
                    .split_once('/')
                    .and_then(|(t, f)| Some((TeamId::parse(t).ok()?, FileId::parse(f).ok()?)))
                    .ok_or_else(|| bad(format!("file key {key} is not <team>/<file id>")))?;
                open = Some(OpenFile {
                    key: key.clone(),
                    team,
                    id,
                    pending: files.begin_artifact().await?,
                });
            }
            if let Some(f) = open.as_mut() {
                f.pending
                    .write(&bytes)
                    .await
                    .map_err(|e| ArchiveError::Io(std::io::Error::other(e)))?;
            }
            continue;
        }
        counts.files += finish_file(files, open.take()).await?;
        match line {
            Line::Header { .. } => return Err(bad("a second header".into())),
            Line::Team { team, api_keys } => {
                let Some((first, rest)) = api_keys.split_first() else {
                    return Err(bad(format!("team {} has no API key", team.id)));
                };
                store.create_team(&team, first, &Journal::NONE).await?;
                for key in rest {
                    store.create_api_key(key, &Journal::NONE).await?;
                }
                counts.teams += 1;
            }
            Line::Customer { customer } => store.create_customer(&customer, &Journal::NONE).await?,
            Line::Entitlement { entitlement } => {
                store
                    .create_entitlement(&entitlement, &Journal::NONE)
                    .await?;
            }
            Line::Product { product } => store.create_product(&product, &Journal::NONE).await?,
            Line::Policy { policy } => store.create_policy(&policy, &Journal::NONE).await?,
            Line::Branch { branch } => store.create_branch(&branch, &Journal::NONE).await?,
            Line::License { license } => {
                store.create_license(&license, &Journal::NONE).await?;
                counts.licenses += 1;
            }
            Line::Usage {
                team_id,
                license_id,
                hwids,
                ips,
            } => {
                counts.usage_records += (hwids.len() + ips.len()) as u64;
                store
                    .restore_usage(team_id, license_id, &hwids, &ips)
                    .await?;
            }
            Line::Meters {
                team_id,
                license_id,
                counters,
            } => {
                store
                    .restore_usage_counters(team_id, license_id, &counters)
                    .await?;
            }
            Line::Release { release } => store.create_release(&release, &Journal::NONE).await?,
            Line::FileChunk { .. } => unreachable!("handled above"),
            Line::Blacklist { entry } => {
                store.create_blacklist_entry(&entry, &Journal::NONE).await?
            }
            Line::Stats { team_id, bucket } => store.add_hourly(team_id, &bucket).await?,
            Line::Webhook { endpoint } => {
                store.create_webhook(&endpoint, &Journal::NONE).await?;
            }
            Line::Staff { user } => store.create_staff(&user, &Journal::NONE).await?,
            Line::Integration { integration } => {
                store.put_integration(&integration, &Journal::NONE).await?;
            }
            Line::PaymentLinks { links } => store.restore_payment_links(&links).await?,
            Line::Inbound { event } => {
                if event.status == licensing_core::model::InboundStatus::Applied {
                    // Applied, it is applied still: its mark alone.
                    store
                        .apply_inbound(&licensing_core::model::Inbound {
                            event,
                            links: licensing_core::model::LinkChange::None,
                        })
                        .await?;
                } else {
                    store.record_inbound(&event).await?;
                }
            }
            Line::Audit { entries } => store.restore_audit(&entries).await?,
            Line::Trailer { lines } => {
                if lines != n - 1 {
                    return Err(bad(format!(
                        "the trailer counts {lines} lines before it, the file has {}",
                        n - 1
                    )));
                }
                trailer = true;
            }
        }
    }
    if !trailer {
        return Err(ArchiveError::Format {
            line: n,
            message: "no trailer: the archive is cut short".into(),
        });
    }
    counts.lines = n;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use licensing_core::model::{Action, Actor, AuditEntry};
    use licensing_core::store::MemoryStore;
    use licensing_core::store::{AuditStore, StaffStore, testing};
    use licensing_core::{ApiKeyId, Timestamp};

    fn entry(team: licensing_core::TeamId, at: Timestamp, n: usize) -> AuditEntry {
        testing::audited(
            team,
            Action::LicenseCreated,
            &format!("license-{n}"),
            Actor::api_key(ApiKeyId::new(), "back end"),
            at,
        )
        .audit
        .pop()
        .expect("an entry")
    }

    /// The audit log goes through an archive whole, each entry once, in order, even with more
    /// entries in one millisecond than a page holds; and so do staff accounts.
    #[tokio::test]
    async fn the_audit_log_goes_through_an_archive_whole() {
        let (dir_a, dir_b) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        let store = MemoryStore::new();
        let team = testing::team(&store, "A").await;
        let same = Timestamp::from_millis(1_800_000_000_000);
        let mut entries: Vec<AuditEntry> = (0..250).map(|n| entry(team.id, same, n)).collect();
        entries.extend((0..120).map(|n| {
            entry(
                team.id,
                Timestamp::from_millis(1_800_000_000_001 + (n as i64) / 7),
                1000 + n,
            )
        }));
        store.restore_audit(&entries).await.expect("restore");
        let created = crate::app::staff::create_staff(
            &store,
            team.id,
            "ann@example.com",
            licensing_core::model::Role::Admin,
            same,
            None,
        )
        .await
        .expect("staff");
        let files = crate::files::FileStore::new(dir_a.path()).expect("files");
        let mut archive = Vec::new();
        super::export(&store, &files, &mut archive)
            .await
            .expect("export");

        let copy = MemoryStore::new();
        let files = crate::files::FileStore::new(dir_b.path()).expect("files");
        super::import(&copy, &files, archive.as_slice())
            .await
            .expect("import");
        let all = |s: MemoryStore| async move {
            let mut got = Vec::new();
            for page in 1.. {
                let q = licensing_core::api::requests::AuditQuery::parse(&format!(
                    "page={page}&pageSize=100&sortDirection=asc"
                ))
                .expect("query");
                let p = s.list_audit(team.id, &q).await.expect("list");
                got.extend(p.items);
                if !p.has_next_page {
                    return got;
                }
            }
            got
        };
        // Staff accounts come back as they were, link and all.
        assert_eq!(
            copy.list_staff(team.id).await.expect("staff"),
            [created.user]
        );
        let (original, restored) = (all(store).await, all(copy).await);
        assert_eq!(restored.len(), 370);
        assert_eq!(restored, original);
    }
}
