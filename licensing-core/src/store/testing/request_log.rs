//! Request history: what is appended, listed (filters, order, paging, teams) and pruned.

use super::*;
use crate::ResultCode;
use crate::api::requests::RequestLogQuery;
use crate::model::{ClientEndpoint, RequestLogEntry};

fn entry(team: TeamId, license: LicenseId, minute: u32, code: ResultCode) -> RequestLogEntry {
    RequestLogEntry {
        team_id: team,
        license_id: license,
        at: at(minute),
        count: 1,
        last_at: None,
        endpoint: if minute.is_multiple_of(3) {
            ClientEndpoint::Heartbeat
        } else {
            ClientEndpoint::Verify
        },
        code,
        ip_address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, (minute % 250) as u8)),
        country: None,
        hardware_identifier: None,
        product_id: None,
        version: None,
    }
}

async fn listed<S: Store>(
    store: &S,
    team: TeamId,
    license: LicenseId,
    query: &str,
) -> Page<RequestLogEntry> {
    let query = RequestLogQuery::parse(query).unwrap();
    store.list_requests(team, license, &query).await.unwrap()
}

fn minutes(page: &Page<RequestLogEntry>) -> Vec<Timestamp> {
    page.items.iter().map(|e| e.at).collect()
}

/// Entries come back as they were written, only under their own team and license, filtered by
/// code, outcome, endpoint and time, newest first (or oldest) and in pages; the prune drops
/// what is older than the retention and, per team, what is beyond the cap.
pub async fn request_history_lists_filters_pages_and_prunes<S: Store>(store: &S) {
    let team = team(store, "history").await;
    let other = self::team(store, "other").await;
    let (one, two) = (LicenseId::new(), LicenseId::new());
    let mut batch: Vec<RequestLogEntry> = (0..30)
        .map(|m| {
            let code = if m % 2 == 0 {
                ResultCode::Valid
            } else {
                ResultCode::HwidLimitReached
            };
            entry(team.id, one, m, code)
        })
        .collect();
    let full = RequestLogEntry {
        count: 7,
        last_at: Some(at(40).plus(chrono::TimeDelta::milliseconds(900))),
        country: Some("FI".into()),
        hardware_identifier: Some("machine-é-1".into()),
        product_id: Some(ProductId::new()),
        version: Some("2.1.0".into()),
        ip_address: "2001:db8::7".parse().unwrap(),
        endpoint: ClientEndpoint::Classloader,
        ..entry(team.id, two, 40, ResultCode::Valid)
    };
    batch.push(full.clone());
    // Two of one millisecond: the later added is the newer.
    batch.push(entry(team.id, two, 50, ResultCode::Valid));
    batch.push(entry(team.id, two, 50, ResultCode::LicenseSuspended));
    store.append_requests(&batch[..20]).await.unwrap();
    store.append_requests(&batch[20..]).await.unwrap();
    // The other team's entry names the first team's license id: it stays the other team's.
    store
        .append_requests(&[entry(other.id, one, 45, ResultCode::LicenseExpired)])
        .await
        .unwrap();

    let first = listed(store, team.id, one, "").await;
    assert_eq!((first.total, first.items.len()), (30, 25));
    assert!(first.has_next_page);
    assert_eq!(first.items[0], batch[29]);
    assert_eq!(minutes(&first)[..2], [at(29), at(28)]);
    let second = listed(store, team.id, one, "page=2").await;
    assert_eq!(minutes(&second), (0..5).rev().map(at).collect::<Vec<_>>());
    assert!(!second.has_next_page);
    let oldest = listed(store, team.id, one, "sortDirection=asc&pageSize=10").await;
    assert_eq!(minutes(&oldest), (0..10).map(at).collect::<Vec<_>>());

    let limit = listed(store, team.id, one, "code=HWID_LIMIT_REACHED&pageSize=100").await;
    assert_eq!(limit.total, 15);
    assert!(
        limit
            .items
            .iter()
            .all(|e| e.code == ResultCode::HwidLimitReached)
    );
    let refused = listed(store, team.id, one, "refused=true&pageSize=100").await;
    assert_eq!(refused.items, limit.items);
    let accepted = listed(store, team.id, one, "refused=false&pageSize=100").await;
    assert_eq!(accepted.total, 15);
    assert!(accepted.items.iter().all(|e| e.code == ResultCode::Valid));
    let window = listed(
        store,
        team.id,
        one,
        &format!("from={}&to={}&pageSize=100", at(10), at(20)),
    )
    .await;
    assert_eq!(minutes(&window), (10..20).rev().map(at).collect::<Vec<_>>());
    let beats = listed(store, team.id, one, "endpoint=HEARTBEAT&pageSize=100").await;
    assert_eq!(beats.total, 10);

    let theirs = listed(store, team.id, two, "").await;
    assert_eq!(theirs.total, 3);
    assert_eq!(theirs.items[0].code, ResultCode::LicenseSuspended);
    assert_eq!(theirs.items[1].code, ResultCode::Valid);
    assert_eq!(theirs.items[2], full, "every field reads back as written");
    let asc = listed(store, team.id, two, "sortDirection=asc").await;
    assert_eq!(asc.items[1].code, ResultCode::Valid);
    assert_eq!(asc.items[2].code, ResultCode::LicenseSuspended);

    // Isolation both ways.
    let crossed = listed(store, other.id, one, "").await;
    assert_eq!(crossed.total, 1);
    assert_eq!(crossed.items[0].code, ResultCode::LicenseExpired);
    assert_eq!(listed(store, other.id, two, "").await.total, 0);

    // The cap per license: each keeps its newest, whatever its team holds.
    assert_eq!(store.cap_license_requests(1_000).await.unwrap(), 0);
    assert_eq!(store.cap_license_requests(28).await.unwrap(), 2);
    let kept = listed(store, team.id, one, "pageSize=100").await;
    assert_eq!(kept.total, 28);
    assert!(!minutes(&kept).contains(&at(0)) && !minutes(&kept).contains(&at(1)));
    assert_eq!(listed(store, team.id, two, "").await.total, 3);
    assert_eq!(listed(store, other.id, one, "").await.total, 1);
    // Retention: everything before minute 5, of every team.
    assert_eq!(store.prune_requests(at(5), 1_000).await.unwrap(), 3);
    assert_eq!(listed(store, team.id, one, "").await.total, 25);
    // The cap: each team keeps its newest 10, whichever licenses they are of.
    assert_eq!(store.prune_requests(at(0), 10).await.unwrap(), 18);
    let kept = listed(store, team.id, one, "pageSize=100").await;
    assert_eq!(minutes(&kept), (23..30).rev().map(at).collect::<Vec<_>>());
    assert_eq!(listed(store, team.id, two, "").await.total, 3);
    assert_eq!(listed(store, other.id, one, "").await.total, 1);
    assert_eq!(store.prune_requests(at(0), 10).await.unwrap(), 0);
}
