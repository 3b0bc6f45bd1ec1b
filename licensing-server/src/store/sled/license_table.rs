//! A team's licenses as the filtered lists read them, in memory: for each license its id, the
//! four sort columns, what the `suspended`, `status`, `expiresWithinDays` and `expirationType` filters compare, and its
//! key (in one buffer, so that a key search is one substring search over the team's keys).
//!
//! A list filtered by those (alone or with the product, customer or entitlement filters, whose
//! candidates come from the reverse indexes) finds, counts and orders its licenses here and reads
//! only the page's records, instead of every license of the team.
//!
//! It is exact, not a cache that may be stale: one process owns a sled store, and every batch
//! that writes license records tells the tables which ones it wrote once it is applied
//! ([`LicenseTables::written`]), which then read those records back. A team's table is built the
//! first time a list needs it (one read of the team's licenses, about what the list cost before);
//! the licenses written while it is being built are noted and read again before it is used, so a
//! write is never missed whatever the order of the build and the write. A list that finds the
//! table being built waits for it (and reads the team as before if the build fails).
//!
//! Memory: about 160 bytes per license (120 and the slack of growing vectors and maps) of each
//! team listed with these filters since the store opened.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use licensing_core::api::requests::{LicenseFilter, LicenseSort, Paging, SortDirection};
use licensing_core::model::{ExpirationType, License};
use licensing_core::store::{StoreResult, key_search_text};
use licensing_core::{LicenseId, TeamId, Timestamp};

/// A key without its hyphens, and the byte that separates two keys in the buffer (a search text
/// without hyphens is letters and digits, so a match never runs from one key into the next).
const KEY_LEN: usize = 25;
const STRIDE: usize = KEY_LEN + 1;
const SEPARATOR: u8 = b'\n';

/// What the filters and the order need of one license.
#[derive(Clone, Copy, Debug)]
struct Row {
    id: LicenseId,
    created_at: Timestamp,
    updated_at: Timestamp,
    expiration_type: ExpirationType,
    expiration_date: Option<Timestamp>,
    last_active_at: Option<Timestamp>,
    suspended: bool,
}

impl Row {
    fn of(l: &License) -> Self {
        Self {
            id: l.id,
            created_at: l.created_at,
            updated_at: l.updated_at,
            expiration_type: l.expiration_type,
            expiration_date: l.expiration_date,
            last_active_at: l.last_active_at,
            suspended: l.suspended,
        }
    }

    /// `license_matches` for the members a row has (the same rules: see `License::is_expired`).
    fn matches(&self, f: &LicenseFilter) -> bool {
        f.expiry.is_none_or(|e| {
            let expired = self.expiration_type != ExpirationType::Never
                && self.expiration_date.is_some_and(|date| e.at >= date);
            expired == e.expired
        }) && f.expires_within.is_none_or(|w| {
            self.expiration_type != ExpirationType::Never && w.contains(self.expiration_date)
        }) && f.expiration_type.is_none_or(|t| self.expiration_type == t)
            && f.suspended.is_none_or(|s| self.suspended == s)
    }
}

/// One team's licenses: rows and keys at the same positions, and each id's position.
#[derive(Debug, Default)]
pub(super) struct Table {
    rows: Vec<Row>,
    keys: Vec<u8>,
    at: HashMap<LicenseId, usize>,
}

impl Table {
    fn put(&mut self, l: &License) {
        let mut key = [SEPARATOR; STRIDE];
        let mut n = 0;
        for &b in l.license_key.as_bytes() {
            if b != b'-' && n < KEY_LEN {
                key[n] = b.to_ascii_uppercase();
                n += 1;
            }
        }
        match self.at.entry(l.id) {
            Entry::Occupied(at) => {
                let i = *at.get();
                self.rows[i] = Row::of(l);
                self.keys[i * STRIDE..(i + 1) * STRIDE].copy_from_slice(&key);
            }
            Entry::Vacant(slot) => {
                slot.insert(self.rows.len());
                self.rows.push(Row::of(l));
                self.keys.extend_from_slice(&key);
            }
        }
    }

    fn remove(&mut self, id: LicenseId) {
        let Some(i) = self.at.remove(&id) else { return };
        let last = self.rows.len() - 1;
        self.rows.swap_remove(i);
        if i != last {
            self.keys
                .copy_within(last * STRIDE..(last + 1) * STRIDE, i * STRIDE);
            self.at.insert(self.rows[i].id, i);
        }
        self.keys.truncate(last * STRIDE);
    }

    fn set(&mut self, id: LicenseId, license: Option<&License>) {
        match license {
            Some(l) => self.put(l),
            None => self.remove(id),
        }
    }

    /// The licenses that pass `f`'s key search, status, expiration type and suspension filters
    /// (among `candidates` when given), ordered, and cut to the page: the page's ids, the total
    /// and whether more follow.
    pub(super) fn select(
        &self,
        f: &LicenseFilter,
        candidates: Option<&HashSet<LicenseId>>,
        sort: LicenseSort,
        paging: &Paging,
    ) -> (Vec<LicenseId>, u64, bool) {
        let column = |r: &Row| match sort {
            LicenseSort::CreatedAt => Some(r.created_at),
            LicenseSort::UpdatedAt => Some(r.updated_at),
            LicenseSort::ExpirationDate => r.expiration_date,
            LicenseSort::LastActiveAt => r.last_active_at,
        };
        let needle = f.search.as_ref().map(key_search_text).unwrap_or_default();
        let mut found: Vec<(Option<Timestamp>, LicenseId)> = Vec::new();
        let mut take = |r: &Row| {
            if r.matches(f) {
                found.push((column(r), r.id));
            }
        };
        match candidates {
            Some(ids) => {
                let finder = memchr::memmem::Finder::new(needle.as_bytes());
                for id in ids {
                    let Some(&i) = self.at.get(id) else { continue };
                    let key = &self.keys[i * STRIDE..i * STRIDE + KEY_LEN];
                    if needle.is_empty() || finder.find(key).is_some() {
                        take(&self.rows[i]);
                    }
                }
            }
            None if !needle.is_empty() => {
                // Positions rise, so a key matched twice is seen twice in a row.
                let mut last = usize::MAX;
                for at in memchr::memmem::find_iter(&self.keys, needle.as_bytes()) {
                    let i = at / STRIDE;
                    if i != last {
                        last = i;
                        take(&self.rows[i]);
                    }
                }
            }
            None => self.rows.iter().for_each(take),
        }
        let total = found.len();
        // Those without a value (no expiration date, never used) last, whichever the direction.
        let order = |a: &(Option<Timestamp>, LicenseId), b: &(Option<Timestamp>, LicenseId)| {
            a.0.is_none()
                .cmp(&b.0.is_none())
                .then_with(|| match paging.direction {
                    SortDirection::Asc => a.cmp(b),
                    SortDirection::Desc => b.cmp(a),
                })
        };
        let offset = usize::try_from(paging.offset()).unwrap_or(usize::MAX);
        let end = offset.saturating_add(paging.page_size as usize);
        if end < total {
            found.select_nth_unstable_by(end, order);
            found.truncate(end);
        }
        found.sort_unstable_by(order);
        let page = found
            .get(offset.min(found.len())..)
            .unwrap_or_default()
            .iter()
            .map(|(_, id)| *id)
            .collect();
        (page, total as u64, end < total)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.rows.len()
    }
}

enum Slot {
    /// A list is reading the team's licenses: the ids written meanwhile, to read again, and the
    /// sender whose drop (when the slot is replaced or removed) tells waiting lists it is over.
    Building(HashSet<LicenseId>, tokio::sync::watch::Sender<()>),
    Ready(Arc<RwLock<Table>>),
}

/// The tables of the teams listed so far.
#[derive(Default)]
pub(super) struct LicenseTables {
    teams: Mutex<HashMap<TeamId, Slot>>,
}

/// What a list should do about a team's table.
pub(super) enum Use {
    /// Read it.
    Ready(Arc<RwLock<Table>>),
    /// Build it (nobody else is), then [`LicenseTables::finish`] or [`LicenseTables::abandon`].
    Build,
    /// Another list is building it: wait until this says it is over, then ask again.
    Busy(tokio::sync::watch::Receiver<()>),
}

impl LicenseTables {
    fn teams(&self) -> std::sync::MutexGuard<'_, HashMap<TeamId, Slot>> {
        self.teams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn usable(&self, team: TeamId) -> Use {
        match self.teams().entry(team) {
            Entry::Occupied(slot) => match slot.get() {
                Slot::Ready(table) => Use::Ready(table.clone()),
                Slot::Building(_, over) => Use::Busy(over.subscribe()),
            },
            Entry::Vacant(slot) => {
                slot.insert(Slot::Building(
                    HashSet::new(),
                    tokio::sync::watch::Sender::new(()),
                ));
                Use::Build
            }
        }
    }

    /// Installs a team's table built from a read of its licenses, after reading again (with
    /// `read`) the licenses written while it was read. A failed read gives the build up.
    pub(super) fn finish(
        &self,
        team: TeamId,
        mut table: Table,
        read: impl Fn(LicenseId) -> StoreResult<Option<License>>,
    ) -> StoreResult<Arc<RwLock<Table>>> {
        let mut teams = self.teams();
        if let Some(Slot::Building(written, _)) = teams.get(&team) {
            for &id in written {
                match read(id) {
                    Ok(license) => table.set(id, license.as_ref()),
                    Err(e) => {
                        teams.remove(&team);
                        return Err(e);
                    }
                }
            }
        }
        let table = Arc::new(RwLock::new(table));
        teams.insert(team, Slot::Ready(table.clone()));
        Ok(table)
    }

    /// Gives up a build (the read failed): the next list tries again.
    pub(super) fn abandon(&self, team: TeamId) {
        let mut teams = self.teams();
        if let Some(Slot::Building(..)) = teams.get(&team) {
            teams.remove(&team);
        }
    }

    /// Called once a batch that wrote the records of `written` licenses is applied: each table
    /// reads them back with `read` (under its lock, so that of two writes of one license the
    /// later read, which sees the later write, is the one kept). A table whose read fails is
    /// dropped, to be built again by the next list that needs it.
    pub(super) fn written(
        &self,
        written: &[(TeamId, LicenseId)],
        read: impl Fn(TeamId, LicenseId) -> StoreResult<Option<License>>,
    ) {
        if written.is_empty() {
            return;
        }
        let mut ready = Vec::new();
        {
            let mut teams = self.teams();
            if teams.is_empty() {
                return;
            }
            for &(team, id) in written {
                match teams.get_mut(&team) {
                    Some(Slot::Building(ids, _)) => {
                        ids.insert(id);
                    }
                    Some(Slot::Ready(table)) => ready.push((table.clone(), team, id)),
                    None => {}
                }
            }
        }
        for (table, team, id) in ready {
            let mut held = table.write().unwrap_or_else(PoisonError::into_inner);
            match read(team, id) {
                Ok(license) => held.set(id, license.as_ref()),
                Err(e) => {
                    drop(held);
                    tracing::warn!(%team, error = %e, "a license table is dropped: a written license could not be read back");
                    let mut teams = self.teams();
                    if matches!(teams.get(&team), Some(Slot::Ready(t)) if Arc::ptr_eq(t, &table)) {
                        teams.remove(&team);
                    }
                }
            }
        }
    }

    /// A table made of `licenses` (a read of one team's records).
    pub(super) fn table_of(
        licenses: impl IntoIterator<Item = StoreResult<License>>,
    ) -> StoreResult<Table> {
        let mut table = Table::default();
        for l in licenses {
            table.put(&l?);
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use licensing_core::LicenseKey;
    use licensing_core::api::requests::ExpiryFilter;
    use licensing_core::validate::SearchText;

    fn license(key: &str, created: i64, suspended: bool) -> License {
        let mut l =
            licensing_core::store::testing::license(TeamId::new(), Timestamp::from_millis(created));
        l.license_key = LicenseKey::parse(key).unwrap();
        l.suspended = suspended;
        l
    }

    fn page(size: u32, number: u32, direction: SortDirection) -> Paging {
        Paging {
            page: number,
            page_size: size,
            direction,
        }
    }

    #[test]
    fn a_search_finds_keys_across_groups_and_lists_them_in_order() {
        let a = license("AAAAA-BBBBB-CCCCC-DDDDD-EEEEE", 1_000, false);
        let b = license("BBBBB-CCCCC-AAAAA-AAAAA-AAAAA", 2_000, true);
        let c = license("ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZE", 3_000, false);
        let table = LicenseTables::table_of([a.clone(), b.clone(), c.clone()].map(Ok)).unwrap();
        let search = |text: &str| LicenseFilter {
            search: Some(SearchText::parse(text).unwrap()),
            ..Default::default()
        };
        let desc = page(10, 1, SortDirection::Desc);
        let ids = |f: &LicenseFilter| table.select(f, None, LicenseSort::CreatedAt, &desc);
        // Across a hyphen, lower case, with and without the hyphen.
        assert_eq!(ids(&search("bb-cc")), (vec![b.id, a.id], 2, false));
        assert_eq!(ids(&search("BBCC")), (vec![b.id, a.id], 2, false));
        // A key matched at several places counts once; a match never spans two keys.
        assert_eq!(ids(&search("AAAAA")), (vec![b.id, a.id], 2, false));
        assert_eq!(ids(&search("EZ")).1, 0);
        assert_eq!(ids(&search("E")), (vec![c.id, a.id], 2, false));
        // With the suspension filter, and among candidates.
        let mut both = search("CCCCC");
        both.suspended = Some(false);
        assert_eq!(ids(&both), (vec![a.id], 1, false));
        let only_b: HashSet<_> = [b.id].into();
        assert_eq!(
            table.select(&search("CC"), Some(&only_b), LicenseSort::CreatedAt, &desc),
            (vec![b.id], 1, false)
        );
    }

    #[test]
    fn pages_ties_updates_and_removals() {
        let mut table = Table::default();
        let mut all: Vec<License> = (0..30)
            .map(|i| license(&format!("AAAAA-BBBBB-CCCCC-DDDDD-{i:05}"), i / 3, false))
            .collect();
        for l in &all {
            table.put(l);
        }
        let f = LicenseFilter::default();
        all.sort_by_key(|l| (l.created_at, l.id));
        let mut got = Vec::new();
        for n in 1..=3 {
            let (ids, total, more) = table.select(
                &f,
                None,
                LicenseSort::CreatedAt,
                &page(10, n, SortDirection::Asc),
            );
            assert_eq!((total, more), (30, n < 3));
            got.extend(ids);
        }
        assert_eq!(got, all.iter().map(|l| l.id).collect::<Vec<_>>());
        let (past, _, more) = table.select(
            &f,
            None,
            LicenseSort::CreatedAt,
            &page(10, 4, SortDirection::Asc),
        );
        assert!(past.is_empty() && !more);

        // A suspension, a removal from the middle (the last row moves into its place), a key
        // change.
        let mut changed = all[0].clone();
        changed.suspended = true;
        changed.license_key = LicenseKey::parse("QQQQQ-QQQQQ-QQQQQ-QQQQQ-QQQQQ").unwrap();
        table.set(changed.id, Some(&changed));
        table.set(all[5].id, None);
        table.set(all[5].id, None);
        assert_eq!(table.len(), 29);
        let suspended = LicenseFilter {
            suspended: Some(true),
            ..Default::default()
        };
        let first = page(10, 1, SortDirection::Desc);
        assert_eq!(
            table.select(&suspended, None, LicenseSort::CreatedAt, &first),
            (vec![changed.id], 1, false)
        );
        let search = |text: &str| LicenseFilter {
            search: Some(SearchText::parse(text).unwrap()),
            ..Default::default()
        };
        assert_eq!(
            table.select(&search("QQQ"), None, LicenseSort::CreatedAt, &first),
            (vec![changed.id], 1, false)
        );
        assert_eq!(
            table
                .select(&search("BBBBB"), None, LicenseSort::CreatedAt, &first)
                .1,
            28
        );
        let last = &all[29];
        assert_eq!(
            table
                .select(
                    &search(&last.license_key.as_str()[18..]),
                    None,
                    LicenseSort::CreatedAt,
                    &first
                )
                .0,
            vec![last.id]
        );
    }

    /// The memory the module documentation states: a row, a key and an entry of the id map
    /// (24 bytes and a control byte), before the slack of growing vectors and maps.
    #[test]
    fn a_license_costs_about_what_the_documentation_says() {
        let row = std::mem::size_of::<Row>();
        let entry = std::mem::size_of::<(LicenseId, usize)>() + 1;
        assert!(row + STRIDE + entry <= 120, "{row} + {STRIDE} + {entry}");
    }

    #[test]
    fn status_and_expiration_type_follow_the_license_rules() {
        let now = Timestamp::now();
        let mut dated = license("AAAAA-AAAAA-AAAAA-AAAAA-AAAAA", 1, false);
        dated.expiration_type = ExpirationType::Date;
        dated.expiration_date = Some(now);
        let mut never = license("BBBBB-AAAAA-AAAAA-AAAAA-AAAAA", 2, false);
        never.expiration_type = ExpirationType::Never;
        never.expiration_date = None;
        let table = LicenseTables::table_of([dated.clone(), never.clone()].map(Ok)).unwrap();
        for l in [&dated, &never] {
            for expired in [false, true] {
                let f = LicenseFilter {
                    expiry: Some(ExpiryFilter { expired, at: now }),
                    ..Default::default()
                };
                let (ids, ..) = table.select(
                    &f,
                    None,
                    LicenseSort::CreatedAt,
                    &page(10, 1, SortDirection::Asc),
                );
                assert_eq!(
                    ids.contains(&l.id),
                    licensing_core::store::license_matches(l, &f),
                    "{expired}"
                );
            }
        }
        let f = LicenseFilter {
            expiration_type: Some(ExpirationType::Never),
            ..Default::default()
        };
        let (ids, ..) = table.select(
            &f,
            None,
            LicenseSort::UpdatedAt,
            &page(10, 1, SortDirection::Asc),
        );
        assert_eq!(ids, vec![never.id]);
    }

    #[test]
    fn a_write_during_a_build_is_read_again() {
        let tables = LicenseTables::default();
        let team = TeamId::new();
        let mut l = license("AAAAA-AAAAA-AAAAA-AAAAA-AAAAA", 1, false);
        l.team_id = team;
        assert!(matches!(tables.usable(team), Use::Build));
        let Use::Busy(over) = tables.usable(team) else {
            panic!("not busy")
        };
        // Written while the build reads: the build's read missed it.
        tables.written(&[(team, l.id)], |_, _| {
            unreachable!("not read while building")
        });
        let table = tables
            .finish(team, Table::default(), |id| {
                Ok((id == l.id).then(|| l.clone()))
            })
            .unwrap();
        assert_eq!(table.read().unwrap().len(), 1);
        // A list that waited is told the build is over.
        assert!(over.has_changed().is_err());
        // Once ready, a write is read back at once: here the license is gone.
        tables.written(&[(team, l.id)], |_, _| Ok(None));
        assert_eq!(table.read().unwrap().len(), 0);
        assert!(matches!(tables.usable(team), Use::Ready(_)));
        // A write that cannot be read back drops the table.
        tables.written(&[(team, l.id)], |_, _| {
            Err(licensing_core::store::StoreError::backend("unreadable"))
        });
        assert!(matches!(tables.usable(team), Use::Build));
        // An abandoned build lets the next list build.
        let other = TeamId::new();
        assert!(matches!(tables.usable(other), Use::Build));
        tables.abandon(other);
        assert!(matches!(tables.usable(other), Use::Build));
    }
}
