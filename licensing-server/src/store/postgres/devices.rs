//! A license's device and address records: how their rows read, the queries that page and
//! change them, and the `DeviceStore` over both kinds through one generic path.

use std::net::IpAddr;

use licensing_core::api::requests::{DeviceListQuery, DeviceSort};
use licensing_core::model::{Hwid, IpRecord};
use licensing_core::store::{
    DeviceStore, Entity, Journal, Page, StoreError, StoreResult, check_usage_owner,
};
use licensing_core::validate::{DeviceName, DevicePlatform, HardwareId};
use licensing_core::{HwidId, IpId, LicenseId, TeamId, Timestamp};
use sqlx::Row as _;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use super::PgResult;
use super::licenses::uuids;
use super::tables::LICENSES;
use super::{PgStore, backend, in_tx, ms, page};
use super::{fetch_page, page_total, sql_direction};

/// A device record from a row of [`HWID_COLUMNS`].
pub(super) fn hwid(row: &PgRow, team: TeamId, license: LicenseId) -> PgResult<Hwid> {
    Prefixed { row, prefix: "" }.hwid(team, license)
}

/// An address record from a row of [`IP_COLUMNS`].
pub(super) fn ip(row: &PgRow, team: TeamId, license: LicenseId) -> PgResult<IpRecord> {
    Prefixed { row, prefix: "" }.ip(team, license)
}

/// A row whose record columns may carry a prefix (`h_`, `i_` where a read joins both kinds).
pub(super) struct Prefixed<'a> {
    pub(super) row: &'a PgRow,
    pub(super) prefix: &'static str,
}

impl Prefixed<'_> {
    fn get<'r, T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>>(
        &'r self,
        name: &str,
    ) -> PgResult<T> {
        Ok(self
            .row
            .try_get(format!("{}{name}", self.prefix).as_str())
            .map_err(backend)?)
    }

    fn time(&self, name: &str) -> PgResult<Timestamp> {
        self.get::<i64>(name).map(Timestamp::from_millis)
    }

    pub(super) fn hwid(&self, team: TeamId, license: LicenseId) -> PgResult<Hwid> {
        let identifier: String = self.get("identifier")?;
        let name: Option<String> = self.get("name")?;
        let platform: Option<String> = self.get("platform")?;
        Ok(Hwid {
            name: name
                .map(|n| DeviceName::parse(&n))
                .transpose()
                .map_err(|e| StoreError::backend(format!("a stored device name: {e}")))?,
            platform: platform
                .map(|p| DevicePlatform::parse(&p))
                .transpose()
                .map_err(|e| StoreError::backend(format!("a stored device platform: {e}")))?,
            id: HwidId::from_uuid(self.get("id")?),
            identifier: HardwareId::parse(&identifier)
                .map_err(|e| StoreError::backend(format!("a stored hardware identifier: {e}")))?,
            forgotten: self.get("forgotten")?,
            license_id: license,
            team_id: team,
            last_seen_at: self.time("last_seen_at")?,
            created_at: self.time("created_at")?,
            updated_at: self.time("updated_at")?,
        })
    }

    pub(super) fn ip(&self, team: TeamId, license: LicenseId) -> PgResult<IpRecord> {
        let address: Vec<u8> = self.get("address")?;
        let octets: [u8; 16] = address
            .as_slice()
            .try_into()
            .map_err(|_| StoreError::backend("a stored address is not 16 bytes"))?;
        Ok(IpRecord {
            id: IpId::from_uuid(self.get("id")?),
            address: IpAddr::from(octets).to_canonical(),
            forgotten: self.get("forgotten")?,
            country: self.get("country")?,
            alpha2: self.get("alpha2")?,
            alpha3: self.get("alpha3")?,
            license_id: license,
            team_id: team,
            last_seen_at: self.time("last_seen_at")?,
            created_at: self.time("created_at")?,
            updated_at: self.time("updated_at")?,
        })
    }
}

pub(super) const HWID_COLUMNS: &str =
    "id, identifier, forgotten, last_seen_at, created_at, updated_at, name, platform";
pub(super) const IP_COLUMNS: &str =
    "id, address, forgotten, country, alpha2, alpha3, last_seen_at, created_at, updated_at";

impl PgStore {
    /// `NotFound` unless the team has the license.
    pub(super) async fn require_license(&self, team: TeamId, license: LicenseId) -> PgResult<()> {
        let found: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM licenses WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(license.as_uuid())
                .fetch_optional(&self.pool)
                .await?;
        found
            .map(|_| ())
            .ok_or(StoreError::NotFound(Entity::License).into())
    }

    /// One page of a license's records of `table` (`hwids` or `ips`).
    async fn usage_page(
        &self,
        table: &'static str,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> PgResult<(Vec<PgRow>, i64)> {
        let column = match query.sort {
            DeviceSort::LastSeenAt => "last_seen_at",
            DeviceSort::CreatedAt => "created_at",
        };
        let dir = sql_direction(query.paging.direction);
        let columns = if table == "hwids" {
            HWID_COLUMNS
        } else {
            IP_COLUMNS
        };
        // Only fixed fragments are formatted in; every value is bound.
        let sql = format!(
            "SELECT {columns}, count(*) OVER () AS total FROM {table}
             WHERE license_id = $1 AND ($2 OR NOT forgotten)
             ORDER BY {column} {dir}, id {dir} LIMIT $3 OFFSET $4"
        );
        let select = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(license.as_uuid())
            .bind(query.filter);
        let rows = fetch_page(&self.pool, select, &query.paging).await?;
        let total = page_total(&self.pool, &rows, || {
            let sql = format!(
                "SELECT count(*) AS total FROM {table} WHERE license_id = $1 AND ($2 OR NOT forgotten)"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(license.as_uuid())
                .bind(query.filter)
        })
        .await?;
        Ok((rows, total))
    }

    /// Marks a record of `table` forgotten or remembered, under the license's row lock (the
    /// client API's atomic step counts them).
    async fn set_forgotten(
        &self,
        table: &'static str,
        (team, license, id): (TeamId, LicenseId, Uuid),
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> PgResult<PgRow> {
        let missing = if table == "hwids" {
            Entity::Hwid
        } else {
            Entity::Ip
        };
        in_tx!(self.pool, journal, |tx| {
            // Unforgetting makes a record count again: the license row's version changes (see
            // `activity.rs`).
            LICENSES
                .lock_changing(&mut tx, team.as_uuid(), license.as_uuid())
                .await?;
            let columns = if table == "hwids" {
                HWID_COLUMNS
            } else {
                IP_COLUMNS
            };
            let sql = format!(
                "UPDATE {table} SET forgotten = $3, updated_at = $4
                 WHERE license_id = $1 AND id = $2 RETURNING {columns}"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(license.as_uuid())
                .bind(id)
                .bind(forgotten)
                .bind(ms(now))
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound(missing).into())
        })
    }
}

impl DeviceStore for PgStore {
    async fn forget_within_budget(
        &self,
        team: TeamId,
        license: LicenseId,
        record: licensing_core::model::UsageRef,
        budget: licensing_core::model::SelfServiceResets,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<licensing_core::model::SelfServiceReset> {
        Ok(self
            .forget_usage_within_budget((team, license), record, budget, now, journal)
            .await?)
    }

    async fn restore_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        hwids: &[Hwid],
        ips: &[IpRecord],
    ) -> StoreResult<()> {
        check_usage_owner(team, license, hwids, ips)?;
        in_tx!(self.pool, |tx| {
            LICENSES
                .lock(&mut tx, team.as_uuid(), license.as_uuid())
                .await?;
            // One statement per kind, whatever the number of records; a record given twice
            // counts once (the last), as a replacement would.
            let mut seen = std::collections::HashSet::new();
            let hwids: Vec<&Hwid> = hwids
                .iter()
                .rev()
                .filter(|h| seen.insert(crate::store::hwid_digest(&h.identifier)))
                .collect();
            if !hwids.is_empty() {
                sqlx::query(
                    "INSERT INTO hwids (license_id, digest, id, identifier, forgotten,
                       last_seen_at, created_at, updated_at, name, platform)
                     SELECT $1, * FROM unnest($2::bytea[], $3::uuid[], $4::text[], $5::bool[],
                       $6::int8[], $7::int8[], $8::int8[], $9::text[], $10::text[])
                     ON CONFLICT (license_id, digest) DO UPDATE SET id = excluded.id,
                       identifier = excluded.identifier, forgotten = excluded.forgotten,
                       last_seen_at = excluded.last_seen_at, created_at = excluded.created_at,
                       updated_at = excluded.updated_at, name = excluded.name,
                       platform = excluded.platform",
                )
                .bind(license.as_uuid())
                .bind(
                    hwids
                        .iter()
                        .map(|h| crate::store::hwid_digest(&h.identifier).to_vec())
                        .collect::<Vec<_>>(),
                )
                .bind(uuids(&hwids, |h| *h.id.as_uuid()))
                .bind(
                    hwids
                        .iter()
                        .map(|h| h.identifier.as_str())
                        .collect::<Vec<_>>(),
                )
                .bind(hwids.iter().map(|h| h.forgotten).collect::<Vec<_>>())
                .bind(hwids.iter().map(|h| ms(h.last_seen_at)).collect::<Vec<_>>())
                .bind(hwids.iter().map(|h| ms(h.created_at)).collect::<Vec<_>>())
                .bind(hwids.iter().map(|h| ms(h.updated_at)).collect::<Vec<_>>())
                .bind(
                    hwids
                        .iter()
                        .map(|h| h.name.as_ref().map(DeviceName::as_str))
                        .collect::<Vec<_>>(),
                )
                .bind(
                    hwids
                        .iter()
                        .map(|h| h.platform.as_ref().map(DevicePlatform::as_str))
                        .collect::<Vec<_>>(),
                )
                .execute(&mut *tx)
                .await?;
            }
            let mut seen = std::collections::HashSet::new();
            let ips: Vec<&IpRecord> = ips
                .iter()
                .rev()
                .filter(|r| seen.insert(crate::store::addr16(r.address)))
                .collect();
            if !ips.is_empty() {
                sqlx::query(
                    "INSERT INTO ips (license_id, address, id, forgotten, country, alpha2, alpha3,
                       last_seen_at, created_at, updated_at)
                     SELECT $1, * FROM unnest($2::bytea[], $3::uuid[], $4::bool[], $5::text[],
                       $6::text[], $7::text[], $8::int8[], $9::int8[], $10::int8[])
                     ON CONFLICT (license_id, address) DO UPDATE SET id = excluded.id,
                       forgotten = excluded.forgotten, country = excluded.country,
                       alpha2 = excluded.alpha2, alpha3 = excluded.alpha3,
                       last_seen_at = excluded.last_seen_at, created_at = excluded.created_at,
                       updated_at = excluded.updated_at",
                )
                .bind(license.as_uuid())
                .bind(
                    ips.iter()
                        .map(|r| crate::store::addr16(r.address).to_vec())
                        .collect::<Vec<_>>(),
                )
                .bind(uuids(&ips, |r| *r.id.as_uuid()))
                .bind(ips.iter().map(|r| r.forgotten).collect::<Vec<_>>())
                .bind(ips.iter().map(|r| r.country.as_deref()).collect::<Vec<_>>())
                .bind(ips.iter().map(|r| r.alpha2.as_deref()).collect::<Vec<_>>())
                .bind(ips.iter().map(|r| r.alpha3.as_deref()).collect::<Vec<_>>())
                .bind(ips.iter().map(|r| ms(r.last_seen_at)).collect::<Vec<_>>())
                .bind(ips.iter().map(|r| ms(r.created_at)).collect::<Vec<_>>())
                .bind(ips.iter().map(|r| ms(r.updated_at)).collect::<Vec<_>>())
                .execute(&mut *tx)
                .await?;
            }
            sqlx::query(
                "UPDATE licenses SET
                   hwid_records = (SELECT count(*) FROM hwids WHERE license_id = $1),
                   ip_records = (SELECT count(*) FROM ips WHERE license_id = $1)
                 WHERE id = $1",
            )
            .bind(license.as_uuid())
            .execute(&mut *tx)
            .await?;
            Ok(())
        })
    }

    async fn list_hwids(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<Hwid>> {
        Ok(self.usage_list(Usage::HWIDS, team, license, query).await?)
    }

    async fn set_hwid_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: HwidId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Hwid> {
        let key = (team, license, *id.as_uuid());
        Ok(self
            .usage_forgotten(Usage::HWIDS, key, forgotten, now, journal)
            .await?)
    }

    async fn list_ips(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<IpRecord>> {
        Ok(self.usage_list(Usage::IPS, team, license, query).await?)
    }

    async fn set_ip_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: IpId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<IpRecord> {
        let key = (team, license, *id.as_uuid());
        Ok(self
            .usage_forgotten(Usage::IPS, key, forgotten, now, journal)
            .await?)
    }
}

/// A kind of usage record (a license's hardware identifiers or addresses): its table, and how
/// a row of it reads.
struct Usage<R> {
    table: &'static str,
    read: fn(&PgRow, TeamId, LicenseId) -> PgResult<R>,
}

impl Usage<Hwid> {
    const HWIDS: Self = Self {
        table: "hwids",
        read: hwid,
    };
}

impl Usage<IpRecord> {
    const IPS: Self = Self {
        table: "ips",
        read: ip,
    };
}

impl PgStore {
    /// A page of a license's usage records of one kind (404 for a license not of `team`).
    async fn usage_list<R>(
        &self,
        usage: Usage<R>,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> PgResult<Page<R>> {
        self.settle().await?;
        self.require_license(team, license).await?;
        let (rows, total) = self.usage_page(usage.table, license, query).await?;
        let items = rows
            .iter()
            .map(|row| (usage.read)(row, team, license))
            .collect::<PgResult<_>>()?;
        Ok(page(items, total, &query.paging))
    }

    /// Marks one usage record of a license forgotten or counted again.
    async fn usage_forgotten<R>(
        &self,
        usage: Usage<R>,
        key: (TeamId, LicenseId, uuid::Uuid),
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> PgResult<R> {
        let row = self
            .set_forgotten(usage.table, key, forgotten, now, journal)
            .await?;
        (usage.read)(&row, key.0, key.1)
    }
}
