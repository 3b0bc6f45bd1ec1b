//! Request history (`licensing_core::model::RequestLogEntry`).
//!
//! Keys: `Q|team|license|time|sequence`, so that a license's history is one range in time
//! order; the sequence (this process's, increasing) keeps entries of one millisecond apart and
//! in the order they were added. Values are a compact encoding of the rest of the entry. The
//! history is written behind the answers in batches, and flushed with whatever the store
//! flushes next: it need not be durable when the batch is applied.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use licensing_core::api::requests::RequestLogQuery;
use licensing_core::model::{ClientEndpoint, RequestLogEntry};
use licensing_core::store::{Page, RequestLogStore, StoreError, StoreResult};
use licensing_core::{LicenseId, ProductId, ResultCode, TeamId, Timestamp};

use super::SledResult;
use super::keys::{self, key, tag};
use super::{SledStore, backend};

/// The most history entries one sled batch inserts.
const HISTORY_BATCH: usize = 256;

/// The sequence of the entries this process adds.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// `tag (1) | team (16) | license (16)`: where a license's history starts.
const LICENSE_PREFIX: usize = 33;

fn license_prefix(team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::REQUEST_LOG], team.as_bytes(), license.as_bytes()])
}

fn time_of(k: &[u8]) -> Option<Timestamp> {
    let bytes: [u8; 8] = k.get(LICENSE_PREFIX..LICENSE_PREFIX + 8)?.try_into().ok()?;
    Some(Timestamp::from_millis(
        (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64,
    ))
}

/// `endpoint (1) | code (1) | address (1 + 4 or 16) | country (2, or 0 0) | product (flag 1,
/// then 16) | hardware identifier | version`, the two texts as `length (2) | bytes`; then, for
/// an entry of several requests, `count (4) | last (8)`.
fn encode(e: &RequestLogEntry) -> Vec<u8> {
    let mut out = Vec::with_capacity(48);
    out.push(
        ClientEndpoint::ALL
            .iter()
            .position(|x| *x == e.endpoint)
            .unwrap_or(0) as u8,
    );
    out.push(
        ResultCode::ALL
            .iter()
            .position(|c| *c == e.code)
            .unwrap_or(1) as u8,
    );
    match e.ip_address {
        IpAddr::V4(v4) => {
            out.push(4);
            out.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.push(6);
            out.extend_from_slice(&v6.octets());
        }
    }
    match e.country.as_deref().map(str::as_bytes) {
        Some([a, b]) => out.extend_from_slice(&[*a, *b]),
        _ => out.extend_from_slice(&[0, 0]),
    }
    match e.product_id {
        Some(p) => {
            out.push(1);
            out.extend_from_slice(p.as_bytes());
        }
        None => out.push(0),
    }
    put_text(&mut out, e.hardware_identifier.as_deref());
    put_text(&mut out, e.version.as_deref());
    if e.count > 1 || e.last_at.is_some() {
        out.extend_from_slice(&e.count.to_be_bytes());
        out.extend_from_slice(&e.last_at.unwrap_or(e.at).as_millis().to_be_bytes());
    }
    out
}

/// `length (2) | bytes`, `0xFFFF` for none (hardware identifiers and versions are far shorter).
fn put_text(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        None => out.extend_from_slice(&u16::MAX.to_be_bytes()),
        Some(text) => {
            let mut len = text.len().min(usize::from(u16::MAX - 1));
            while !text.is_char_boundary(len) {
                len -= 1;
            }
            out.extend_from_slice(&(len as u16).to_be_bytes());
            out.extend_from_slice(&text.as_bytes()[..len]);
        }
    }
}

fn take_text(v: &[u8], at: &mut usize) -> Option<Option<String>> {
    let len = u16::from_be_bytes(v.get(*at..*at + 2)?.try_into().ok()?);
    *at += 2;
    if len == u16::MAX {
        return Some(None);
    }
    let len = usize::from(len);
    let text = std::str::from_utf8(v.get(*at..*at + len)?).ok()?;
    *at += len;
    Some(Some(text.to_owned()))
}

fn decode(k: &[u8], v: &[u8]) -> StoreResult<RequestLogEntry> {
    let bad = || StoreError::backend("bad request history entry");
    let id = |range: std::ops::Range<usize>| -> StoreResult<[u8; 16]> {
        k.get(range).and_then(|b| b.try_into().ok()).ok_or_else(bad)
    };
    let team = TeamId::from_uuid(uuid::Uuid::from_bytes(id(1..17)?));
    let license = LicenseId::from_uuid(uuid::Uuid::from_bytes(id(17..33)?));
    let at = time_of(k).ok_or_else(bad)?;
    let endpoint = *ClientEndpoint::ALL
        .get(usize::from(*v.first().ok_or_else(bad)?))
        .ok_or_else(bad)?;
    let code = *ResultCode::ALL
        .get(usize::from(*v.get(1).ok_or_else(bad)?))
        .ok_or_else(bad)?;
    // The address: its version (4 or 6), then its 4 or 16 bytes.
    let ip_len = match v.get(2) {
        Some(4) => 4,
        Some(6) => 16,
        _ => return Err(bad()),
    };
    let octets = v.get(3..3 + ip_len).ok_or_else(bad)?;
    let ip_address = match <[u8; 4]>::try_from(octets) {
        Ok(v4) => IpAddr::from(v4),
        Err(_) => IpAddr::from(<[u8; 16]>::try_from(octets).map_err(|_| bad())?),
    };
    let mut i = 3 + ip_len;
    let country = match v.get(i..i + 2).ok_or_else(bad)? {
        [0, 0] => None,
        pair => Some(std::str::from_utf8(pair).map_err(|_| bad())?.to_owned()),
    };
    i += 2;
    let product_id = match v.get(i).ok_or_else(bad)? {
        0 => {
            i += 1;
            None
        }
        _ => {
            let bytes: [u8; 16] = v
                .get(i + 1..i + 17)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(bad)?;
            i += 17;
            Some(ProductId::from_uuid(uuid::Uuid::from_bytes(bytes)))
        }
    };
    let hardware_identifier = take_text(v, &mut i).ok_or_else(bad)?;
    let version = take_text(v, &mut i).ok_or_else(bad)?;
    let (count, last_at) = match v.get(i..) {
        Some([]) => (1, None),
        Some(rest) if rest.len() == 12 => {
            let count = u32::from_be_bytes(rest[..4].try_into().map_err(|_| bad())?);
            let last = i64::from_be_bytes(rest[4..].try_into().map_err(|_| bad())?);
            (count, Some(Timestamp::from_millis(last)))
        }
        _ => return Err(bad()),
    };
    Ok(RequestLogEntry {
        team_id: team,
        license_id: license,
        at,
        count,
        last_at,
        endpoint,
        code,
        ip_address,
        country,
        hardware_identifier,
        product_id,
        version,
    })
}

impl RequestLogStore for SledStore {
    async fn append_requests(&self, entries: &[RequestLogEntry]) -> StoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let rows: Vec<(Vec<u8>, Vec<u8>)> = entries
            .iter()
            .map(|e| {
                let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
                let k = key(&[
                    &license_prefix(e.team_id, e.license_id),
                    &keys::time(e.at),
                    &sequence.to_be_bytes(),
                ]);
                (k, encode(e))
            })
            .collect();
        // On a blocking thread, in small batches, and outside the flush's gate: history is not
        // among the batches a flush must cover (it rides along with the next), so a second's
        // worth of it never holds up a flush, or the writes waiting for one.
        let tree = self.inner.tree.clone();
        tokio::task::spawn_blocking(move || {
            for chunk in rows.chunks(HISTORY_BATCH) {
                let mut batch = sled::Batch::default();
                for (k, v) in chunk {
                    batch.insert(k.as_slice(), v.as_slice());
                }
                tree.apply_batch(batch).map_err(backend)?;
            }
            Ok(())
        })
        .await
        .map_err(|e| StoreError::backend(format!("writing request history: {e}")))?
    }

    async fn list_requests(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &RequestLogQuery,
    ) -> StoreResult<Page<RequestLogEntry>> {
        let prefix = license_prefix(team, license);
        let start = key(&[&prefix, &query.from.map_or([0; 8], keys::time)]);
        let end = match query.to {
            Some(to) => key(&[&prefix, &keys::time(to)]),
            None => key(&[&prefix, &[0xFF; 9]]),
        };
        let range = self.inner.tree.range(start..end);
        let walk: Box<dyn Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>> =
            if query.newest_first() {
                Box::new(range.rev())
            } else {
                Box::new(range)
            };
        let offset = query.paging.offset();
        let size = u64::from(query.paging.page_size);
        let (mut total, mut items) = (0u64, Vec::new());
        for kv in walk {
            let (k, v) = kv.map_err(backend)?;
            let entry = decode(&k, &v)?;
            if !query.matches(&entry) {
                continue;
            }
            if total >= offset && total < offset + size {
                items.push(entry);
            }
            total += 1;
        }
        Ok(Page {
            has_next_page: total > offset + size,
            items,
            total,
        })
    }

    async fn cap_license_requests(&self, per_license: u64) -> StoreResult<u64> {
        let store = self.clone();
        Ok(
            tokio::task::spawn_blocking(move || cap_licenses(&store.inner.tree, per_license))
                .await
                .map_err(|e| StoreError::backend(format!("capping request history: {e}")))??,
        )
    }

    async fn prune_requests(&self, before: Timestamp, per_team: u64) -> StoreResult<u64> {
        let store = self.clone();
        Ok(
            tokio::task::spawn_blocking(move || prune(&store.inner.tree, before, per_team))
                .await
                .map_err(|e| StoreError::backend(format!("pruning request history: {e}")))??,
        )
    }
}

/// Each license's entries beyond its newest `per_license` removed, on a blocking thread: one
/// pass counts the entries per license (their keys are in time order within the license), a
/// second removes the oldest of those over the cap.
fn cap_licenses(tree: &sled::Tree, per_license: u64) -> SledResult<u64> {
    let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
    for k in tree.scan_prefix([tag::REQUEST_LOG]).keys() {
        let k = k?;
        if let Some(license) = k.get(..LICENSE_PREFIX) {
            *counts.entry(license.to_vec()).or_default() += 1;
        }
    }
    let mut removed = 0;
    for (prefix, count) in counts {
        let Some(over) = count.checked_sub(per_license.max(1)).filter(|o| *o > 0) else {
            continue;
        };
        let oldest: Vec<sled::IVec> = tree
            .scan_prefix(&prefix)
            .keys()
            .take(usize::try_from(over).unwrap_or(usize::MAX))
            .collect::<Result<_, _>>()?;
        removed += remove_all(tree, oldest)?;
    }
    Ok(removed)
}

/// Removes `keys` in batches; how many.
fn remove_all(tree: &sled::Tree, keys: Vec<sled::IVec>) -> SledResult<u64> {
    let removed = keys.len() as u64;
    for chunk in keys.chunks(1_000) {
        let mut batch = sled::Batch::default();
        for k in chunk {
            batch.remove(k.clone());
        }
        tree.apply_batch(batch)?;
    }
    Ok(removed)
}

/// The prune, on a blocking thread: one pass over the history removes what is older than
/// `before` and counts the rest per team; a team over `per_team` then has its time-and-sequence
/// suffixes sorted to find the newest `per_team`, and the others go.
fn prune(tree: &sled::Tree, before: Timestamp, per_team: u64) -> SledResult<u64> {
    let mut removed = 0;
    let mut old = Vec::new();
    let mut counts: HashMap<[u8; 16], u64> = HashMap::new();
    for k in tree.scan_prefix([tag::REQUEST_LOG]).keys() {
        let k = k?;
        let (Some(at), Some(team)) = (time_of(&k), k.get(1..17)) else {
            continue;
        };
        if at < before {
            old.push(k);
            if old.len() >= 10_000 {
                removed += remove_all(tree, std::mem::take(&mut old))?;
            }
        } else if let Ok(team) = <[u8; 16]>::try_from(team) {
            *counts.entry(team).or_default() += 1;
        }
    }
    removed += remove_all(tree, old)?;
    for (team, count) in counts {
        if count <= per_team {
            continue;
        }
        let prefix = key(&[&[tag::REQUEST_LOG], &team]);
        let mut suffixes: Vec<[u8; 16]> = tree
            .scan_prefix(&prefix)
            .keys()
            .filter_map(|k| k.ok()?.get(LICENSE_PREFIX..)?.try_into().ok())
            .collect();
        let keep = usize::try_from(per_team).unwrap_or(usize::MAX);
        if suffixes.len() <= keep {
            continue;
        }
        // The `keep`-th newest: everything older goes.
        suffixes.sort_unstable_by(|a, b| b.cmp(a));
        let Some(&threshold) = keep.checked_sub(1).and_then(|i| suffixes.get(i)) else {
            // Keep none.
            let all: Vec<sled::IVec> =
                tree.scan_prefix(&prefix).keys().collect::<Result<_, _>>()?;
            removed += remove_all(tree, all)?;
            continue;
        };
        let doomed: Vec<sled::IVec> = tree
            .scan_prefix(&prefix)
            .keys()
            .filter_map(Result::ok)
            .filter(|k| k.get(LICENSE_PREFIX..).is_some_and(|s| s < &threshold[..]))
            .collect();
        removed += remove_all(tree, doomed)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_as_written() {
        let team = TeamId::new();
        let license = LicenseId::new();
        let at = Timestamp::from_millis(1_764_000_000_123);
        let plain = RequestLogEntry {
            team_id: team,
            license_id: license,
            at,
            count: 1,
            last_at: None,
            endpoint: ClientEndpoint::SessionEnd,
            code: ResultCode::SessionNotFound,
            ip_address: "192.0.2.1".parse().unwrap(),
            country: None,
            hardware_identifier: None,
            product_id: None,
            version: None,
        };
        let k = key(&[&license_prefix(team, license), &keys::time(at), &[0; 8]]);
        assert_eq!(decode(&k, &encode(&plain)).unwrap(), plain);
        let full = RequestLogEntry {
            ip_address: "2001:db8::1".parse().unwrap(),
            country: Some("SE".into()),
            hardware_identifier: Some(String::new()),
            product_id: Some(ProductId::new()),
            version: Some("1.0.0-é".into()),
            count: 12,
            last_at: Some(Timestamp::from_millis(1_764_000_000_999)),
            ..plain
        };
        assert_eq!(decode(&k, &encode(&full)).unwrap(), full);
        assert!(decode(&k, &encode(&full)[..10]).is_err());
    }
}
