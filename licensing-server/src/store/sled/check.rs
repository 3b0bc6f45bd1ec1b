//! `licensing-server check` on sled: every record decodes, and every index, lookup key and
//! counter agrees with the records it is derived from.

use std::collections::{BTreeMap, HashMap, HashSet};

use licensing_core::model::{Customer, Hwid, IpRecord, License};
use licensing_core::store::StoreResult;
use licensing_core::{LicenseId, TeamId};

use super::SledResult;
use super::keys::{key, tag};
use super::{
    SledStore, Tally, backend, customer_indexes, decode, hwid_key, ip_key, license_by_key,
    license_indexes, tally_key,
};

/// What a check found: how many records of each kind it read, and every inconsistency.
#[derive(Debug, Default)]
pub struct Findings {
    /// Records read, by kind.
    pub checked: BTreeMap<&'static str, u64>,
    /// What is wrong, one sentence each.
    pub problems: Vec<String>,
}

impl Findings {
    fn saw(&mut self, kind: &'static str) {
        *self.checked.entry(kind).or_default() += 1;
    }

    fn problem(&mut self, text: String) {
        self.problems.push(text);
    }
}

/// Compares the index entries stored under `prefix` with the `expected` ones.
fn compare_index(
    store: &SledStore,
    prefix: &[u8],
    expected: &HashSet<Vec<u8>>,
    what: &str,
    found: &mut Findings,
) -> SledResult<()> {
    let mut present = 0usize;
    for kv in store.inner.tree.scan_prefix(prefix) {
        let (k, _) = kv?;
        if expected.contains(k.as_ref()) {
            present += 1;
        } else {
            found.problem(format!(
                "{what} index entry {} names no such record (stale)",
                hex::encode(&k)
            ));
        }
    }
    if present < expected.len() {
        found.problem(format!(
            "{} {what} index entries are missing (records that lists, sorting or filters would not find)",
            expected.len() - present
        ));
    }
    Ok(())
}

/// Compares a team's stored counter with the records counted.
fn compare_count(
    store: &SledStore,
    table: u8,
    counted: &HashMap<TeamId, u64>,
    what: &str,
    found: &mut Findings,
) -> SledResult<()> {
    let mut teams: HashSet<TeamId> = counted.keys().copied().collect();
    for kv in store.inner.tree.scan_prefix(key(&[&[tag::COUNT, table]])) {
        let (k, _) = kv?;
        // [#, table] | team: per-license tallies have a license id after the team.
        if k.len() != 2 + 16 {
            continue;
        }
        let team = TeamId::from_uuid(uuid::Uuid::from_bytes(super::id16(&k)?));
        teams.insert(team);
    }
    for team in teams {
        let stored = store.count(table, team)?;
        let actual = counted.get(&team).copied().unwrap_or(0);
        if stored != actual {
            found.problem(format!(
                "team {team}: the {what} counter says {stored}, the store holds {actual}"
            ));
        }
    }
    Ok(())
}

impl SledStore {
    /// Reads the whole store and reports what does not agree: undecodable records, index entries
    /// missing or stale, license-key lookups pointing elsewhere, counters and per-license
    /// tallies that differ from the records, and device or address records of no license. Run it
    /// on a store no server holds open.
    pub fn check(&self) -> StoreResult<Findings> {
        let tree = &self.inner.tree;
        let mut found = Findings::default();

        // Licenses: their indexes, their key lookups, the counters.
        let mut expected = HashSet::new();
        let mut licenses: HashMap<(TeamId, LicenseId), License> = HashMap::new();
        let mut per_team: HashMap<TeamId, u64> = HashMap::new();
        for kv in tree.scan_prefix([tag::LICENSE]) {
            let (k, v) = kv.map_err(backend)?;
            let license: License = match decode(&v) {
                Ok(l) => l,
                Err(e) => {
                    found.problem(format!(
                        "license record {} does not decode: {e}",
                        hex::encode(&k)
                    ));
                    continue;
                }
            };
            found.saw("licenses");
            *per_team.entry(license.team_id).or_default() += 1;
            expected.extend(license_indexes(&license));
            let lookup = tree
                .get(license_by_key(license.team_id, &license.license_key))
                .map_err(backend)?;
            if lookup.as_deref() != Some(license.id.as_bytes().as_slice()) {
                found.problem(format!(
                    "license {}: its key does not find it (the client API would not)",
                    license.id
                ));
            }
            licenses.insert((license.team_id, license.id), license);
        }
        compare_index(
            self,
            &[tag::INDEX, tag::LICENSE],
            &expected,
            "license",
            &mut found,
        )?;
        compare_count(self, tag::LICENSE, &per_team, "license", &mut found)?;
        for kv in tree.scan_prefix([tag::LICENSE_KEY]) {
            let (k, v) = kv.map_err(backend)?;
            let points = k
                .get(1..17)
                .and_then(|t| <[u8; 16]>::try_from(t).ok())
                .zip(<[u8; 16]>::try_from(v.as_ref()).ok())
                .map(|(t, l)| {
                    (
                        TeamId::from_uuid(uuid::Uuid::from_bytes(t)),
                        LicenseId::from_uuid(uuid::Uuid::from_bytes(l)),
                    )
                });
            let known = points.and_then(|p| licenses.get(&p)).is_some_and(|l| {
                license_by_key(l.team_id, &l.license_key).as_slice() == k.as_ref()
            });
            if !known {
                found.problem(format!(
                    "license-key lookup {} leads to no license holding that key",
                    hex::encode(&k)
                ));
            }
        }

        // Customers: their indexes and counters.
        let mut expected = HashSet::new();
        let mut per_team: HashMap<TeamId, u64> = HashMap::new();
        for kv in tree.scan_prefix([tag::CUSTOMER]) {
            let (k, v) = kv.map_err(backend)?;
            match decode::<Customer>(&v) {
                Ok(c) => {
                    found.saw("customers");
                    *per_team.entry(c.team_id).or_default() += 1;
                    expected.extend(customer_indexes(&c));
                }
                Err(e) => found.problem(format!(
                    "customer record {} does not decode: {e}",
                    hex::encode(&k)
                )),
            }
        }
        compare_index(
            self,
            &[tag::INDEX, tag::CUSTOMER],
            &expected,
            "customer",
            &mut found,
        )?;
        compare_count(self, tag::CUSTOMER, &per_team, "customer", &mut found)?;

        // Devices and addresses: keyed by value under a license, counted per license.
        let mut tallies: HashMap<(u8, TeamId, LicenseId), Tally> = HashMap::new();
        // Each record has its entry in the index by last use, and the index holds no other.
        let mut records = 0u64;
        let mut missing_entries = 0u64;
        for (table, kind) in [(tag::HWID, "devices"), (tag::IP, "addresses")] {
            for kv in tree.scan_prefix([table]) {
                let (k, v) = kv.map_err(backend)?;
                let owner = k
                    .get(1..17)
                    .zip(k.get(17..33))
                    .and_then(|(t, l)| {
                        Some((<[u8; 16]>::try_from(t).ok()?, <[u8; 16]>::try_from(l).ok()?))
                    })
                    .map(|(t, l)| {
                        (
                            TeamId::from_uuid(uuid::Uuid::from_bytes(t)),
                            LicenseId::from_uuid(uuid::Uuid::from_bytes(l)),
                        )
                    });
                let Some((team, license)) = owner else {
                    found.problem(format!("{kind} key {} is malformed", hex::encode(&k)));
                    continue;
                };
                let (expected_key, forgotten, entry) = if table == tag::HWID {
                    match decode::<Hwid>(&v) {
                        Ok(h) => (
                            hwid_key(team, license, &h.identifier),
                            h.forgotten,
                            super::seen::entry_key(&h),
                        ),
                        Err(e) => {
                            found.problem(format!(
                                "device record {} does not decode: {e}",
                                hex::encode(&k)
                            ));
                            continue;
                        }
                    }
                } else {
                    match decode::<IpRecord>(&v) {
                        Ok(r) => (
                            ip_key(team, license, r.address),
                            r.forgotten,
                            super::seen::entry_key(&r),
                        ),
                        Err(e) => {
                            found.problem(format!(
                                "address record {} does not decode: {e}",
                                hex::encode(&k)
                            ));
                            continue;
                        }
                    }
                };
                found.saw(kind);
                records += 1;
                if tree.get(&entry).map_err(backend)?.is_none() {
                    missing_entries += 1;
                }
                if expected_key.as_slice() != k.as_ref() {
                    found.problem(format!(
                        "{kind} record {} is filed under another value than it holds",
                        hex::encode(&k)
                    ));
                }
                if !licenses.contains_key(&(team, license)) {
                    found.problem(format!(
                        "{kind} record {} belongs to license {license}, which does not exist",
                        hex::encode(&k)
                    ));
                }
                let tally = tallies.entry((table, team, license)).or_default();
                tally.total += 1;
                if forgotten {
                    tally.forgotten += 1;
                }
            }
        }
        let entries = tree.scan_prefix([tag::SEEN]).count() as u64;
        if missing_entries > 0 {
            found.problem(format!(
                "{missing_entries} device or address records are missing from the index by last use"
            ));
        }
        if entries != records - missing_entries {
            found.problem(format!(
                "the index by last use holds {entries} entries for {} records",
                records - missing_entries
            ));
        }
        for (team, license) in licenses.keys() {
            for (table, kind) in [(tag::HWID, "device"), (tag::IP, "address")] {
                let stored = tree
                    .get(tally_key(table, *team, *license))
                    .map_err(backend)?
                    .map_or_else(Tally::default, |v| Tally::decode(&v));
                let actual = tallies
                    .get(&(table, *team, *license))
                    .copied()
                    .unwrap_or_default();
                if stored != actual {
                    found.problem(format!(
                        "license {license}: its {kind} count says {} ({} forgotten), it holds {} ({} forgotten); limits would be judged wrongly",
                        stored.total, stored.forgotten, actual.total, actual.forgotten
                    ));
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use licensing_core::store::{Journal, LicenseStore, testing};

    use super::super::keys::tag;
    use super::super::{SledStore, license_indexes, tally_key};

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    /// A sound store checks clean; a missing and a stale index entry, a lookup key leading
    /// nowhere and a wrong device count are each reported.
    #[test]
    fn damage_to_indexes_and_counts_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open(dir.path()).expect("open");
        let license = block_on(async {
            let team = testing::team(&store, "A").await;
            let license = testing::license(team.id, licensing_core::Timestamp::now());
            store
                .create_license(&license, &Journal::NONE)
                .await
                .expect("create");
            license
        });
        let sound = store.check().expect("check");
        assert!(sound.problems.is_empty(), "{:?}", sound.problems);
        assert_eq!(sound.checked.get("licenses"), Some(&1));

        let tree = &store.inner.tree;
        let index = license_indexes(&license).remove(0);
        tree.remove(&index).expect("remove");
        let mut stale = index.clone();
        *stale.last_mut().expect("id") ^= 1;
        tree.insert(&stale, Vec::<u8>::new()).expect("insert");
        tree.insert(
            super::super::keys::key(&[&[tag::LICENSE_KEY], license.team_id.as_bytes(), b"NOPE"]),
            license.id.as_bytes().to_vec(),
        )
        .expect("insert");
        tree.insert(
            tally_key(tag::HWID, license.team_id, license.id),
            super::super::Tally {
                total: 3,
                forgotten: 0,
            }
            .encode()
            .to_vec(),
        )
        .expect("insert");
        let found = store.check().expect("check");
        let said = found.problems.join("\n");
        assert_eq!(found.problems.len(), 4, "{said}");
        assert!(
            said.contains("1 license index entries are missing"),
            "{said}"
        );
        assert!(said.contains("names no such record (stale)"), "{said}");
        assert!(said.contains("leads to no license"), "{said}");
        assert!(said.contains("device count says 3"), "{said}");
    }
}
