//! The admission of a client request under the license's row lock (`activity.rs` takes it): how
//! many records count against each limit (counted no further than the decision needs), which
//! records make room at the cap, core's decision, and its writes with their events.

use std::sync::LazyLock;

use licensing_core::model::{Hwid, IpRecord, License, admission_events};
use licensing_core::store::{ActivityRules, cap_reached, license_after, prune_batch};
use licensing_core::verify::{self, Admission, Denial, RecordChange, RecordKind};
use licensing_core::{LicenseId, Timestamp};
use sqlx::PgConnection;

use super::PgResult;
use super::{constraint, json, ms, opt_ms, team_missing};
use crate::store::{addr16, hwid_digest};
use licensing_core::store::Activity;

/// What the read found.
#[derive(Clone)]
pub(super) struct Own {
    pub(super) license: License,
    pub(super) hwid: Option<Hwid>,
    pub(super) ip: Option<IpRecord>,
    /// The license's counts of its device and address records.
    pub(super) held: (i64, i64),
    /// The license row's version (`xmin`) as read, when the read may decide an admission
    /// without the row lock (see `activity.rs`).
    pub(super) version: Option<i64>,
}

impl Own {
    /// The same, its license with the terms in effect (its policy's, live): what decides;
    /// itself, borrowed, for a license without a policy.
    pub(super) fn with_terms(
        &self,
        policies: &licensing_core::model::Policies,
    ) -> std::borrow::Cow<'_, Own> {
        match policies.effective(&self.license) {
            std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(self),
            std::borrow::Cow::Owned(license) => std::borrow::Cow::Owned(Own {
                license,
                hwid: self.hwid.clone(),
                ip: self.ip.clone(),
                held: self.held,
                version: self.version,
            }),
        }
    }
}

/// The earliest `lastSeenAt` that is within `timeout` minutes of `now` (none without one).
pub(super) fn cutoff(timeout: Option<u32>, now: Timestamp) -> Option<i64> {
    timeout.map(|minutes| ms(now) - i64::from(minutes) * 60_000)
}

/// How many records of `kind` count against the license's limit now, counting no further than
/// `limit` (the decision needs no more): the index of counting records by last use is read
/// from the cutoff on, so what does not count is never read. With the count, the license row's
/// version in the same snapshot (see `activity.rs`).
pub(super) async fn counted(
    conn: &mut PgConnection,
    license: &License,
    kind: RecordKind,
    timeout: Option<u32>,
    now: Timestamp,
) -> PgResult<(u64, Option<i64>)> {
    let limit = match kind {
        RecordKind::Hwid => license.hwid_limit,
        RecordKind::Ip => license.ip_limit,
    };
    let (sql, at_most) = counting_sql(kind, timeout.is_some(), limit);
    let mut query = sqlx::query_as(sql).bind(license.id.as_uuid());
    if let Some(since) = cutoff(timeout, now) {
        query = query.bind(since);
    }
    let (n, version): (i64, Option<i64>) = query.bind(at_most).fetch_one(conn).await?;
    Ok((u64::try_from(n).unwrap_or(0), version))
}

/// The license row's version (`$1` the license), as a column of a counting statement.
macro_rules! version {
    () => {
        "(SELECT xmin::text::int8 FROM licenses WHERE id = $1)"
    };
}

/// The statement [`counted`] runs, and its bound: `$1` the license, then the cutoff when there
/// is a timeout, then the bound. One statement per case, so that its plan (generic or not)
/// always reads the index from the cutoff.
pub(super) fn counting_sql(
    kind: RecordKind,
    timed: bool,
    limit: Option<u32>,
) -> (&'static str, i64) {
    let sql = match (kind, timed) {
        (RecordKind::Hwid, true) => concat!(
            "SELECT count(*), ",
            version!(),
            " FROM (SELECT 1 FROM hwids WHERE license_id = $1 AND NOT forgotten
               AND last_seen_at >= $2 LIMIT $3) counting"
        ),
        (RecordKind::Hwid, false) => concat!(
            "SELECT count(*), ",
            version!(),
            " FROM (SELECT 1 FROM hwids WHERE license_id = $1 AND NOT forgotten
               LIMIT $2) counting"
        ),
        (RecordKind::Ip, true) => concat!(
            "SELECT count(*), ",
            version!(),
            " FROM (SELECT 1 FROM ips WHERE license_id = $1 AND NOT forgotten
               AND last_seen_at >= $2 LIMIT $3) counting"
        ),
        (RecordKind::Ip, false) => concat!(
            "SELECT count(*), ",
            version!(),
            " FROM (SELECT 1 FROM ips WHERE license_id = $1 AND NOT forgotten
               LIMIT $2) counting"
        ),
    };
    (sql, limit.map_or(i64::MAX, i64::from).max(1))
}

/// The oldest records of a kind that count against nothing, at most `$2`: forgotten ones, and
/// among the others those the condition names. Each part reads its index in order, no further
/// than it takes.
macro_rules! victims_sql {
    ($table:literal, $key:literal, $others:literal) => {
        concat!(
            "SELECT ",
            $key,
            " FROM (
               (SELECT ",
            $key,
            ", last_seen_at, id FROM ",
            $table,
            "
                 WHERE license_id = $1 AND forgotten ORDER BY last_seen_at, id LIMIT $2)
               UNION ALL
               (SELECT ",
            $key,
            ", last_seen_at, id FROM ",
            $table,
            "
                 WHERE license_id = $1 AND NOT forgotten ",
            $others,
            "
                 ORDER BY last_seen_at, id LIMIT $2)
             ) v ORDER BY last_seen_at, id LIMIT $2"
        )
    };
}

/// Room under the cap for a new record of `kind`, when the request makes one (`new`): the keys
/// of the records to drop first (none when there is room), or the refusal when none may be
/// dropped. The license's count of its records decides whether it is full; only a full one
/// reads records, its oldest that count against nothing.
pub(super) async fn room(
    conn: &mut PgConnection,
    found: &Own,
    (kind, new): (RecordKind, bool),
    rules: &ActivityRules<'_>,
    now: Timestamp,
) -> PgResult<Result<Vec<Vec<u8>>, Denial>> {
    let (license, held) = match kind {
        RecordKind::Hwid => (&found.license, found.held.0),
        RecordKind::Ip => (&found.license, found.held.1),
    };
    if !new || held < i64::from(rules.max_records) {
        return Ok(Ok(Vec::new()));
    }
    let (limit, timeout) = match kind {
        RecordKind::Hwid => (license.hwid_limit, rules.settings.hwid_timeout),
        RecordKind::Ip => (license.ip_limit, rules.settings.ip_timeout),
    };
    let limited = limit.is_some_and(|l| l > 0);
    let (sql, timed) = victims_sql(kind, limited, timeout.is_some());
    let mut query = sqlx::query_scalar(sql)
        .bind(license.id.as_uuid())
        .bind(prune_batch(rules.max_records) as i64);
    if timed {
        query = query.bind(cutoff(timeout, now));
    }
    let victims: Vec<Vec<u8>> = query.fetch_all(&mut *conn).await?;
    if victims.is_empty() {
        return Ok(Err(cap_reached(kind, rules.max_records)));
    }
    Ok(Ok(victims))
}

/// Deletes the records of `kind` with keys `keys` (digests or addresses) of the license.
pub(super) async fn drop_records(
    conn: &mut PgConnection,
    license: LicenseId,
    kind: RecordKind,
    keys: &[Vec<u8>],
) -> PgResult<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let sql = match kind {
        RecordKind::Hwid => "DELETE FROM hwids WHERE license_id = $1 AND digest = ANY($2)",
        RecordKind::Ip => "DELETE FROM ips WHERE license_id = $1 AND address = ANY($2)",
    };
    sqlx::query(sql)
        .bind(license.as_uuid())
        .bind(keys)
        .execute(conn)
        .await?;
    Ok(())
}

/// The statement [`room`] runs, and whether it takes the cutoff (`$3`): which of the records
/// that are not forgotten may go is every one without a limit, those past the timeout with one,
/// none with a limit and no timeout.
pub(super) fn victims_sql(kind: RecordKind, limited: bool, timed: bool) -> (&'static str, bool) {
    match (kind, limited, timed) {
        (RecordKind::Hwid, false, _) => (victims_sql!("hwids", "digest", ""), false),
        (RecordKind::Hwid, true, true) => (
            victims_sql!("hwids", "digest", "AND last_seen_at < $3"),
            true,
        ),
        (RecordKind::Hwid, true, false) => (victims_sql!("hwids", "digest", "AND false"), false),
        (RecordKind::Ip, false, _) => (victims_sql!("ips", "address", ""), false),
        (RecordKind::Ip, true, true) => (
            victims_sql!("ips", "address", "AND last_seen_at < $3"),
            true,
        ),
        (RecordKind::Ip, true, false) => (victims_sql!("ips", "address", "AND false"), false),
    }
}

/// Decides step 7, counting a limit only when it is at stake: with the license row locked, or
/// from a read of version `own.version`. Also says whether the decision rests on that version:
/// whether it counted, and every count saw the license row at that version (a refusal decided
/// without the lock holds only then).
pub(super) async fn decide(
    conn: &mut PgConnection,
    own: &Own,
    rules: &ActivityRules<'_>,
    activity: &Activity,
    now: Timestamp,
) -> PgResult<(Result<Admission, Denial>, bool)> {
    let settings = rules.settings;
    let mut known: [Option<u64>; 2] = [None, None];
    let mut same_version = None;
    let slot = |kind: RecordKind| match kind {
        RecordKind::Hwid => 0,
        RecordKind::Ip => 1,
    };
    loop {
        let decided = verify::admit_own(
            &own.license,
            settings,
            own.hwid.as_ref(),
            own.ip.as_ref(),
            activity.hardware_id.as_ref(),
            activity.ip,
            now,
            |kind| known[slot(kind)].ok_or(kind),
        );
        match decided {
            Ok(decided) => return Ok((decided, same_version.unwrap_or(false))),
            Err(kind) => {
                let timeout = match kind {
                    RecordKind::Hwid => settings.hwid_timeout,
                    RecordKind::Ip => settings.ip_timeout,
                };
                let (n, version) = counted(conn, &own.license, kind, timeout, now).await?;
                known[slot(kind)] = Some(n);
                let same = own.version.is_some() && version == own.version;
                same_version = Some(same_version.unwrap_or(true) && same);
            }
        }
    }
}

/// The fragments of step 8's statement, `WITH` members all: the license's update first, which
/// the others read (so they write nothing when it updates no row), then a device record's
/// fragment, an address record's and the events'; `$1` is the license, `$2` the moment, and
/// each fragment's own values follow in the order the fragments are written (see [`apply`]).
/// The license is updated only if its row is still the version read (`xmin`), when one is
/// given: how the one-statement admission of `activity.rs` applies only to what it decided on.
const LICENSE_AFTER: &str = "lic AS (UPDATE licenses SET last_active_at = ${last_active},
     hwid_records = hwid_records + ${hwids}, ip_records = ip_records + ${ips}
   WHERE id = $1 AND (${version}::int8 IS NULL OR xmin::text::int8 = ${version})
   RETURNING true AS won)";
const HWID_CREATE: &str = "hwid AS (INSERT INTO hwids (license_id, digest, id, identifier,
     forgotten, last_seen_at, created_at, updated_at, name, platform)
   SELECT $1, ${digest}, ${id}, ${identifier}, false, $2, $2, $2, ${name}, ${platform} FROM lic)";
const HWID_REFRESH: &str = "hwid AS (UPDATE hwids SET last_seen_at = $2,
     updated_at = CASE WHEN forgotten OR name IS DISTINCT FROM coalesce(${name}, name)
       OR platform IS DISTINCT FROM coalesce(${platform}, platform)
       THEN $2 ELSE updated_at END,
     forgotten = false, name = coalesce(${name}, name), platform = coalesce(${platform}, platform)
   FROM lic WHERE license_id = $1 AND digest = ${digest})";
const IP_CREATE: &str = "ip AS (INSERT INTO ips (license_id, address, id, forgotten, country,
     alpha2, alpha3, last_seen_at, created_at, updated_at)
   SELECT $1, ${address}, ${id}, false, ${country}, ${alpha2}, ${alpha3}, $2, $2, $2 FROM lic)";
const IP_REFRESH: &str = "ip AS (UPDATE ips SET last_seen_at = $2,
     updated_at = CASE WHEN forgotten THEN $2 ELSE updated_at END, forgotten = false,
     country = coalesce(${country}, country), alpha2 = coalesce(${alpha2}, alpha2),
     alpha3 = coalesce(${alpha3}, alpha3)
   FROM lic WHERE license_id = $1 AND address = ${address})";
const EVENTS: &str = "events AS (INSERT INTO webhook_events (id, team_id, doc)
   SELECT e.id, ${team}, e.doc FROM lic, unnest(${event_ids}::uuid[], ${event_docs}::jsonb[])
     AS e(id, doc))";

/// Numbers a fragment's named values `${name}` from `next` on, in the order they first appear
/// (a name used again in the fragment keeps its number).
fn numbered(fragment: &str, next: &mut usize) -> String {
    let mut out = String::with_capacity(fragment.len());
    let mut names: Vec<(&str, usize)> = Vec::new();
    let mut rest = fragment;
    while let Some(at) = rest.find("${") {
        let end = at + rest[at..].find('}').unwrap_or(rest.len() - at);
        let name = &rest[at + 2..end.max(at + 2)];
        out.push_str(&rest[..at]);
        out.push('$');
        let number = match names.iter().find(|(n, _)| *n == name) {
            Some((_, number)) => *number,
            None => {
                names.push((name, *next));
                *next += 1;
                *next - 1
            }
        };
        out.push_str(&number.to_string());
        rest = &rest[(end + 1).min(rest.len())..];
    }
    out.push_str(rest);
    out
}

/// Step 8's statement for a device record's fragment (none when the request names no device)
/// and an address record's, numbered once for each of the six pairs. It answers how many
/// license rows it updated (one, or none when the row was not the version given).
fn statement(hwid: Option<&'static str>, ip: &'static str) -> &'static str {
    /// A device record's fragment and an address record's.
    type Pair = (Option<&'static str>, &'static str);
    static STATEMENTS: LazyLock<Vec<(Pair, String)>> = LazyLock::new(|| {
        let mut all = Vec::with_capacity(6);
        for hwid in [None, Some(HWID_CREATE), Some(HWID_REFRESH)] {
            for ip in [IP_CREATE, IP_REFRESH] {
                let mut n = 3;
                let mut members = Vec::with_capacity(4);
                members.push(numbered(LICENSE_AFTER, &mut n));
                if let Some(fragment) = hwid {
                    members.push(numbered(fragment, &mut n));
                }
                members.push(numbered(ip, &mut n));
                members.push(numbered(EVENTS, &mut n));
                let sql = format!("WITH {} SELECT count(*) FROM lic", members.join(", "));
                all.push(((hwid, ip), sql));
            }
        }
        all
    });
    STATEMENTS
        .iter()
        .find(|(pair, _)| *pair == (hwid, ip))
        .map_or("", |(_, sql)| sql.as_str())
}

/// Writes step 8 of an admission with the events the team wants of it: the device and address
/// records made or refreshed, the license's `lastActiveAt` and record counts (`counts`: made
/// minus dropped, of each kind) and the events, in one statement, so one round trip (a
/// license's first request, which starts its clock, also writes the license whole). The
/// caller holds the license row, or gives the row's version as read (`unchanged_since`): then
/// nothing is written unless the row is still that version. Returns the license after it;
/// `None` when the row was not the version given.
pub(super) async fn apply(
    conn: &mut PgConnection,
    own: &Own,
    admission: &Admission,
    (rules, counts): (&ActivityRules<'_>, (i32, i32)),
    activity: &Activity,
    (now, unchanged_since): (Timestamp, Option<i64>),
) -> PgResult<Option<License>> {
    let l = &own.license;
    let next = license_after(l, admission, now);
    let (hwid, h) = match (admission.hwid, &activity.hardware_id) {
        (Some(RecordChange::Create), Some(h)) => (Some(HWID_CREATE), Some(h)),
        (Some(RecordChange::Refresh { .. }), Some(h)) => (Some(HWID_REFRESH), Some(h)),
        _ => (None, None),
    };
    let ip = match admission.ip {
        RecordChange::Create => IP_CREATE,
        RecordChange::Refresh { .. } => IP_REFRESH,
    };
    // The statement, its values numbered in the order they are bound below.
    let mut query = sqlx::query_scalar(statement(hwid, ip))
        .bind(l.id.as_uuid())
        .bind(ms(now))
        .bind(opt_ms(next.last_active_at))
        .bind(counts.0)
        .bind(counts.1)
        .bind(unchanged_since);
    let mut new_device = None;
    let label = &activity.label;
    let (name, platform) = (
        label.name.as_ref().map(|n| n.as_str().to_owned()),
        label.platform.as_ref().map(|p| p.as_str().to_owned()),
    );
    if let (Some(fragment), Some(h)) = (hwid, h) {
        if fragment == HWID_CREATE {
            let record = licensing_core::store::new_hwid(l, h, label, now);
            query = query
                .bind(hwid_digest(h).to_vec())
                .bind(*record.id.as_uuid())
                .bind(h.as_str().to_owned())
                .bind(name)
                .bind(platform);
            new_device = Some(record);
        } else {
            query = query
                .bind(name)
                .bind(platform)
                .bind(hwid_digest(h).to_vec());
        }
    }
    let country = activity.country;
    let place = (
        country.map(|c| c.name),
        country.map(|c| c.alpha2),
        country.map(|c| c.alpha3),
    );
    query = if ip == IP_CREATE {
        query
            .bind(addr16(activity.ip).to_vec())
            .bind(uuid::Uuid::new_v4())
            .bind(place.0)
            .bind(place.1)
            .bind(place.2)
    } else {
        query
            .bind(place.0)
            .bind(place.1)
            .bind(place.2)
            .bind(addr16(activity.ip).to_vec())
    };
    let events = admission_events(
        rules.events,
        new_device.as_ref(),
        // The events show (and are tied to the products of) the terms in effect.
        &rules.policies.effective(&next),
        admission.activate.is_some(),
        now,
    );
    let written: i64 = query
        .bind(l.team_id.as_uuid())
        .bind(events.iter().map(|e| *e.id.as_uuid()).collect::<Vec<_>>())
        .bind(events.iter().map(json).collect::<Vec<_>>())
        .fetch_one(&mut *conn)
        .await
        .map_err(|err| constraint(err, &[("webhook_events_team_id_fkey", team_missing)]))?;
    if written == 0 {
        return Ok(None);
    }
    if admission.activate.is_some() {
        super::licenses::write(conn, &next).await?;
    }
    Ok(Some(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each fragment's named values are numbered on from where the last one stopped, in the
    /// order `apply` binds them.
    #[test]
    fn step_8_is_one_statement_with_its_values_numbered_in_order() {
        let mut n = 3;
        let after = numbered(LICENSE_AFTER, &mut n);
        assert!(after.contains("last_active_at = $3"), "{after}");
        assert!(after.contains("ip_records = ip_records + $5"), "{after}");
        // The version, used twice, is one value.
        assert!(
            after.contains("($6::int8 IS NULL OR xmin::text::int8 = $6)"),
            "{after}"
        );
        let hwid = numbered(HWID_CREATE, &mut n);
        assert!(
            hwid.contains("SELECT $1, $7, $8, $9, false, $2, $2, $2, $10, $11 FROM lic"),
            "{hwid}"
        );
        let ip = numbered(IP_REFRESH, &mut n);
        assert!(ip.contains("coalesce($12, country)"), "{ip}");
        assert!(ip.contains("coalesce($14, alpha3)"), "{ip}");
        assert!(ip.ends_with("address = $15)"), "{ip}");
        let events = numbered(EVENTS, &mut n);
        assert!(events.contains("SELECT e.id, $16, e.doc"), "{events}");
        assert!(
            events.contains("unnest($17::uuid[], $18::jsonb[])"),
            "{events}"
        );
        assert_eq!(n, 19);
        // A name used twice in a fragment is one value: the refresh binds the label's two
        // members, then the digest.
        let refresh = numbered(HWID_REFRESH, &mut 3);
        assert!(refresh.contains("name = coalesce($3, name)"), "{refresh}");
        assert!(
            refresh.contains("IS DISTINCT FROM coalesce($4, platform)"),
            "{refresh}"
        );
        assert!(refresh.ends_with("digest = $5)"), "{refresh}");
        assert_eq!(
            statement(Some(HWID_CREATE), IP_REFRESH),
            format!("WITH {after}, {hwid}, {ip}, {events} SELECT count(*) FROM lic")
        );
        for fragment in [
            LICENSE_AFTER,
            HWID_CREATE,
            HWID_REFRESH,
            IP_CREATE,
            IP_REFRESH,
            EVENTS,
        ] {
            assert!(!numbered(fragment, &mut 3).contains("${"), "{fragment}");
        }
    }
}
