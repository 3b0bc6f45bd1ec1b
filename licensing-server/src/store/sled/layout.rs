//! Where records live: the key of each record, index and counter, and the per-license tallies
//! of devices and addresses.

use super::*;

pub(super) fn team_key(id: TeamId) -> Vec<u8> {
    key(&[&[tag::TEAM], id.as_bytes()])
}
pub(super) fn api_key_key(hash: &ApiKeyHash) -> Vec<u8> {
    key(&[&[tag::API_KEY], hash.as_bytes()])
}
pub(super) fn team_api_key_key(team: TeamId, id: ApiKeyId) -> Vec<u8> {
    key(&[&[tag::TEAM_API_KEY], team.as_bytes(), id.as_bytes()])
}
pub(super) fn license_key(team: TeamId, id: LicenseId) -> Vec<u8> {
    key(&[&[tag::LICENSE], team.as_bytes(), id.as_bytes()])
}
/// The team and id of a license record's key (none for any other key).
pub(super) fn written_license(k: &[u8]) -> Option<(TeamId, LicenseId)> {
    if k.len() != 33 || k[0] != tag::LICENSE {
        return None;
    }
    let id = |b: &[u8]| uuid::Uuid::from_slice(b).ok();
    Some((
        TeamId::from_uuid(id(&k[1..17])?),
        LicenseId::from_uuid(id(&k[17..33])?),
    ))
}
pub(super) fn license_by_key(team: TeamId, k: &LicenseKey) -> Vec<u8> {
    key(&[&[tag::LICENSE_KEY], team.as_bytes(), k.as_bytes()])
}
pub(super) fn customer_key(team: TeamId, id: CustomerId) -> Vec<u8> {
    key(&[&[tag::CUSTOMER], team.as_bytes(), id.as_bytes()])
}
pub(super) fn entitlement_key(team: TeamId, id: EntitlementId) -> Vec<u8> {
    key(&[&[tag::ENTITLEMENT], team.as_bytes(), id.as_bytes()])
}
pub(super) fn policy_key(team: TeamId, id: PolicyId) -> Vec<u8> {
    key(&[&[tag::POLICY], team.as_bytes(), id.as_bytes()])
}
pub(super) fn product_key(team: TeamId, id: ProductId) -> Vec<u8> {
    key(&[&[tag::PRODUCT], team.as_bytes(), id.as_bytes()])
}
pub(super) fn branch_key(team: TeamId, product: ProductId, id: BranchId) -> Vec<u8> {
    key(&[
        &[tag::BRANCH],
        team.as_bytes(),
        product.as_bytes(),
        id.as_bytes(),
    ])
}
pub(super) fn release_key(team: TeamId, id: ReleaseId) -> Vec<u8> {
    key(&[&[tag::RELEASE], team.as_bytes(), id.as_bytes()])
}
/// The key of a license's record of a device, by a digest of its identifier.
pub(super) fn hwid_key(team: TeamId, license: LicenseId, identifier: &HardwareId) -> Vec<u8> {
    hwid_key_of(team, license, &hwid_digest(identifier))
}
pub(super) fn hwid_key_of(team: TeamId, license: LicenseId, digest: &[u8; 16]) -> Vec<u8> {
    key(&[&[tag::HWID], team.as_bytes(), license.as_bytes(), digest])
}
/// The key of a license's record of an address.
pub(super) fn ip_key(team: TeamId, license: LicenseId, ip: IpAddr) -> Vec<u8> {
    ip_key_of(team, license, &addr16(ip))
}
pub(super) fn ip_key_of(team: TeamId, license: LicenseId, addr: &[u8; 16]) -> Vec<u8> {
    key(&[&[tag::IP], team.as_bytes(), license.as_bytes(), addr])
}
/// A license's count of its records of one kind (`table`: HWID or IP).
pub(super) fn tally_key(table: u8, team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::COUNT, table], team.as_bytes(), license.as_bytes()])
}

/// How many records of one kind a license holds, and how many of them are forgotten.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Tally {
    pub(super) total: u64,
    pub(super) forgotten: u64,
}

impl Tally {
    pub(super) fn of(forgotten: impl Iterator<Item = bool>) -> Self {
        let mut tally = Self::default();
        for f in forgotten {
            tally.total += 1;
            if f {
                tally.forgotten += 1;
            }
        }
        tally
    }

    pub(super) fn read(tx: &Tx<'_>, k: &[u8]) -> StoreResult<Self> {
        Ok(tx.get(k)?.map_or_else(Self::default, |v| Self::decode(&v)))
    }

    pub(super) fn decode(v: &[u8]) -> Self {
        let half = |range: std::ops::Range<usize>| {
            v.get(range)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_be_bytes)
        };
        Self {
            total: half(0..8),
            forgotten: half(8..16),
        }
    }

    pub(super) fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.total.to_be_bytes());
        out[8..].copy_from_slice(&self.forgotten.to_be_bytes());
        out
    }

    /// Records that count when the team sets no timeout.
    pub(super) fn counting(&self) -> u64 {
        self.total.saturating_sub(self.forgotten)
    }

    pub(super) fn forget(&mut self) {
        self.forgotten = (self.forgotten + 1).min(self.total);
    }

    pub(super) fn unforget(&mut self) {
        self.forgotten = self.forgotten.saturating_sub(1);
    }

    pub(super) fn remove(&mut self, forgotten: bool) {
        self.total = self.total.saturating_sub(1);
        if forgotten {
            self.unforget();
        }
    }
}

/// An audit entry's keys: by team, then time and id (the record); by time, then team and id (an
/// empty value, for pruning oldest first across teams).
pub(super) fn audit_keys(team: TeamId, at: Timestamp, id: AuditId) -> (Vec<u8>, Vec<u8>) {
    (
        key(&[
            &[tag::AUDIT],
            team.as_bytes(),
            &keys::time(at),
            id.as_bytes(),
        ]),
        key(&[
            &[tag::INDEX, tag::AUDIT],
            &keys::time(at),
            team.as_bytes(),
            id.as_bytes(),
        ]),
    )
}

pub(super) fn blacklist_key(team: TeamId, id: BlacklistId) -> Vec<u8> {
    key(&[&[tag::BLACKLIST], team.as_bytes(), id.as_bytes()])
}
pub(super) fn stats_key(team: TeamId, hour: i64) -> Vec<u8> {
    key(&[&[tag::STATS], team.as_bytes(), &keys::hour(hour)])
}
pub(super) fn outbox_key(id: MessageId) -> Vec<u8> {
    key(&[&[tag::OUTBOX], id.as_bytes()])
}
/// The outbox queue: due time, then id.
pub(super) fn outbox_due_key(m: &OutboxMessage) -> Vec<u8> {
    key(&[
        &[tag::INDEX, tag::OUTBOX],
        &keys::time(m.next_attempt_at),
        m.id.as_bytes(),
    ])
}
pub(super) fn mail_day_key(team: TeamId, day: i64) -> Vec<u8> {
    key(&[
        &[tag::COUNT, tag::MAIL_DAY],
        team.as_bytes(),
        &keys::hour(day),
    ])
}
pub(super) fn count_key(table: u8, team: TeamId) -> Vec<u8> {
    key(&[&[tag::COUNT, table], team.as_bytes()])
}
pub(super) fn index_prefix(table: u8, index: u8, team: TeamId) -> Vec<u8> {
    key(&[&[tag::INDEX, table, index], team.as_bytes()])
}

pub(super) fn license_indexes(l: &License) -> Vec<Vec<u8>> {
    let id = l.id.as_bytes();
    let mut keys = vec![
        key(&[
            &index_prefix(tag::LICENSE, ix::CREATED, l.team_id),
            &keys::time(l.created_at),
            id,
        ]),
        key(&[
            &index_prefix(tag::LICENSE, ix::UPDATED, l.team_id),
            &keys::time(l.updated_at),
            id,
        ]),
        key(&[
            &index_prefix(tag::LICENSE, ix::ACTIVE, l.team_id),
            &keys::opt_time(l.last_active_at),
            id,
        ]),
    ];
    // One entry per record the license refers to, by the kind of reference.
    let references = (l
        .customer_ids
        .iter()
        .map(|c| (ix::BY_CUSTOMER, c.as_bytes())))
    .chain(l.product_ids.iter().map(|p| (ix::BY_PRODUCT, p.as_bytes())))
    .chain(
        l.entitlement_ids
            .iter()
            .map(|e| (ix::BY_ENTITLEMENT, e.as_bytes())),
    )
    .chain(l.policy_id.iter().map(|p| (ix::BY_POLICY, p.as_bytes())));
    keys.extend(
        references
            .map(|(index, other)| key(&[&index_prefix(tag::LICENSE, index, l.team_id), other, id])),
    );
    keys
}

pub(super) fn customer_indexes(c: &Customer) -> Vec<Vec<u8>> {
    let id = c.id.as_bytes();
    let p = |index| index_prefix(tag::CUSTOMER, index, c.team_id);
    vec![
        key(&[&p(ix::CREATED), &keys::time(c.created_at), id]),
        key(&[&p(ix::UPDATED), &keys::time(c.updated_at), id]),
        key(&[&p(ix::NAME), &keys::text(c.full_name.as_deref()), id]),
        key(&[
            &p(ix::EMAIL),
            &keys::text(c.email.as_ref().map(|e| e.as_str())),
            id,
        ]),
        key(&[&p(ix::USERNAME), &keys::text(c.username.as_deref()), id]),
    ]
}

/// Replaces `old` index keys with `new` ones, writing only those that change (a heartbeat's
/// refresh moves one of a license's index keys, not all of them).
pub(super) fn reindex(tx: &mut Tx<'_>, old: Vec<Vec<u8>>, new: Vec<Vec<u8>>) {
    let keep: HashSet<&Vec<u8>> = new.iter().collect();
    for k in old.iter().filter(|k| !keep.contains(k)) {
        tx.del(k.clone());
    }
    let had: HashSet<&Vec<u8>> = old.iter().collect();
    for k in new.iter().filter(|k| !had.contains(k)) {
        tx.put(k.clone(), Vec::new());
    }
}
