//! Where a sled store's space goes: its live entries by kind, with the bytes of their keys and
//! values, beside what its files take (benches/README.md, "What bounds the disk figure"). What
//! the files hold beyond the live bytes is sled's own: its framing of each entry and node, and
//! the earlier versions of pages its log has not cleaned yet.

use licensing_core::store::StoreResult;

use super::keys::tag;
use super::{SledStore, backend};

/// The live entries of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpaceUse {
    /// What the entries are: a kind of record (`license`), or `index: ` and the kind an index
    /// entry leads to.
    pub kind: String,
    /// How many there are.
    pub entries: u64,
    /// The bytes of their keys.
    pub key_bytes: u64,
    /// The bytes of their values, as stored (sealed, for the kinds that are).
    pub value_bytes: u64,
}

/// The space a store takes: its live entries by kind, largest first, and its files.
#[derive(Clone, Debug, Default)]
pub struct Space {
    /// The records' database, by kind, and the kept idempotent answers (in files of their
    /// own: names as keys, records as values).
    pub kinds: Vec<SpaceUse>,
    /// Bytes the records' database's files take.
    pub records_on_disk: u64,
    /// Bytes the kept answers' files take.
    pub answers_on_disk: u64,
}

impl SpaceUse {
    /// The bytes of their keys and values together.
    pub fn bytes(&self) -> u64 {
        self.key_bytes + self.value_bytes
    }

    /// Counts one more entry.
    fn add(&mut self, key: &[u8], value: &[u8]) {
        self.entries += 1;
        self.key_bytes += key.len() as u64;
        self.value_bytes += value.len() as u64;
    }
}

impl Space {
    /// The live bytes of every kind, keys and values, answers included.
    pub fn live_bytes(&self) -> u64 {
        self.kinds.iter().map(SpaceUse::bytes).sum()
    }
}

/// The name of the kind tagged `t`.
fn kind(t: u8) -> &'static str {
    match t {
        tag::TEAM => "team",
        tag::API_KEY => "API key",
        tag::TEAM_API_KEY => "team's API key",
        tag::LICENSE => "license",
        tag::LICENSE_KEY => "license by key",
        tag::CUSTOMER => "customer",
        tag::PRODUCT => "product",
        tag::BRANCH => "branch",
        tag::RELEASE => "release",
        tag::HWID => "device",
        tag::IP => "address",
        tag::BLACKLIST => "blacklist entry",
        tag::STATS => "statistics",
        tag::OUTBOX => "mail outbox",
        tag::MAIL_DAY => "mail per day",
        tag::COUNT => "count",
        tag::META => "store metadata",
        tag::SESSION_KEY => "used session key",
        tag::AUDIT => "audit entry",
        tag::WEBHOOK => "webhook",
        tag::EVENT => "event",
        tag::DELIVERY => "delivery",
        tag::EVENT_MARK => "event mark",
        tag::STAFF => "staff account",
        tag::STAFF_EMAIL => "staff by e-mail",
        tag::TEAM_STAFF => "team's staff",
        tag::WEB_SESSION => "web session",
        tag::STAFF_WEB_SESSION => "account's web sessions",
        tag::SEEN => "by last use",
        tag::ENTITLEMENT => "entitlement",
        tag::FLOATING => "floating session",
        tag::IDEMPOTENCY => "kept answer (first format)",
        tag::KEPT => "kept answer's mark",
        tag::REQUEST_LOG => "request history",
        tag::PORTAL_TICKET => "portal sign-in ticket",
        tag::PORTAL_TICKET_ID => "portal ticket by id",
        tag::PORTAL_SESSION => "portal session",
        tag::RESETS => "self-service resets",
        tag::USAGE => "usage counter",
        tag::USAGE_ANSWER => "kept usage answer",
        _ => "other",
    }
}

impl SledStore {
    /// Where the store's space goes (see [`Space`]). Reads every entry: for measuring, not for
    /// a running server's requests.
    pub fn space(&self) -> StoreResult<Space> {
        let mut by_kind = std::collections::BTreeMap::<(bool, u8), SpaceUse>::new();
        for entry in self.inner.tree.iter() {
            let (k, v) = entry.map_err(backend)?;
            let of = match (k.first(), k.get(1)) {
                (Some(&tag::INDEX), Some(&t)) => (true, t),
                (Some(&t), _) => (false, t),
                (None, _) => (false, 0),
            };
            by_kind
                .entry(of)
                .or_insert_with(|| SpaceUse {
                    kind: match of {
                        (true, t) => format!("index: {}", kind(t)),
                        (false, t) => kind(t).to_owned(),
                    },
                    ..SpaceUse::default()
                })
                .add(&k, &v);
        }
        let mut kinds: Vec<SpaceUse> = by_kind.into_values().collect();
        let (entries, value_bytes) = self.inner.kept.usage()?;
        if entries > 0 {
            kinds.push(SpaceUse {
                kind: "kept answer".to_owned(),
                entries,
                key_bytes: entries * super::kept_files::NAME as u64,
                value_bytes,
            });
        }
        kinds.sort_by_key(|k| std::cmp::Reverse(k.bytes()));
        Ok(Space {
            kinds,
            records_on_disk: self.inner.db.size_on_disk().map_err(backend)?,
            answers_on_disk: self.answers_on_disk()?,
        })
    }
}
