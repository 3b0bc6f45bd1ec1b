//! The staged changes of one write to the tree: read before they are applied, applied as one
//! batch, and the licenses they touched told to the license tables.

use std::collections::BTreeMap;

use super::SledResult;
use super::*;

/// The licenses a developer write changes (records, not just references to them): their locks
/// are held while it stages and applies.
#[derive(Clone, Copy, Debug)]
pub(super) enum Touch {
    /// None.
    Nothing,
    /// This one.
    License(LicenseId),
    /// Any number (the wide lock is held).
    Licenses,
}

/// Staged changes of one write, readable before they are applied.
pub(super) struct Tx<'a> {
    tree: &'a sled::Tree,
    /// Told which licenses the write changed once it is applied.
    tables: &'a LicenseTables,
    pub(super) pending: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl<'a> Tx<'a> {
    pub(super) fn new(tree: &'a sled::Tree, tables: &'a LicenseTables) -> Self {
        Self {
            tree,
            tables,
            pending: BTreeMap::new(),
        }
    }

    pub(super) fn get(&self, k: &[u8]) -> SledResult<Option<Vec<u8>>> {
        match self.pending.get(k) {
            Some(v) => Ok(v.clone()),
            None => Ok(self.tree.get(k)?.map(|v| v.to_vec())),
        }
    }

    pub(super) fn get_record<T: Record>(&self, k: &[u8]) -> StoreResult<Option<T>> {
        self.get(k)?.map(|v| decode(&v)).transpose()
    }

    pub(super) fn put(&mut self, k: Vec<u8>, v: Vec<u8>) {
        self.pending.insert(k, Some(v));
    }

    pub(super) fn put_record<T: Record>(&mut self, k: Vec<u8>, v: &T) -> StoreResult<()> {
        self.put(k, encode(v)?);
        Ok(())
    }

    pub(super) fn del(&mut self, k: Vec<u8>) {
        self.pending.insert(k, None);
    }

    pub(super) fn add_count(&mut self, k: Vec<u8>, delta: i64) -> StoreResult<()> {
        let current = self.get(&k)?.map_or(0, |v| decode_count(&v));
        let next = current.saturating_add_signed(delta);
        self.put(k, next.to_be_bytes().to_vec());
        Ok(())
    }

    /// 404 `Team` unless team `team` exists.
    pub(super) fn require_team(&self, team: TeamId) -> StoreResult<()> {
        match self.get(&team_key(team))? {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound(Entity::Team)),
        }
    }

    /// Stages `mail` of `team` in the outbox, due at once, counted in the team's mail of the
    /// day (`now`'s); 429 `Limit` past `daily_limit` (`what`: the e-mails it counts).
    pub(super) fn queue_mail(
        &mut self,
        team: TeamId,
        mail: &[OutboxMessage],
        (daily_limit, what): (u32, &str),
        now: Timestamp,
    ) -> StoreResult<()> {
        let day = mail_day_key(team, OutboxMessage::day_of(now));
        let queued = self.get(&day)?.map_or(0, |v| decode_count(&v));
        if queued + mail.len() as u64 > u64::from(daily_limit) {
            return Err(StoreError::Limit(format!(
                "at most {daily_limit} {what} a day per team; try again tomorrow"
            )));
        }
        for m in mail {
            self.put_record(outbox_key(m.id), m)?;
            self.put(outbox_due_key(m), Vec::new());
        }
        self.add_count(day, mail.len() as i64)
    }

    /// Stages a write's journal: its audit entry, by team and time, and by time alone for
    /// pruning; its webhook events, in the queue.
    pub(super) fn journal(&mut self, journal: &Journal) -> StoreResult<()> {
        for entry in &journal.audit {
            let (by_team, by_time) = audit_keys(entry.team_id, entry.at, entry.id);
            self.put_record(by_team, entry)?;
            self.put(by_time, Vec::new());
        }
        for event in &journal.events {
            self.put_record(webhooks::event_key(event.id), event)?;
        }
        if let Some(inbound) = &journal.inbound {
            super::payments::stage_inbound(self, inbound)?;
        }
        Ok(())
    }

    /// Applies the staged changes: one key by itself, more in one batch.
    pub(super) fn commit(self) -> SledResult<()> {
        let licenses: Vec<_> = self
            .pending
            .keys()
            .filter_map(|k| written_license(k))
            .collect();
        let mut pending = self.pending.into_iter();
        match (pending.next(), pending.len()) {
            // One key is written atomically by itself: sled's batch would also pin its log
            // (two synchronous writes of its I/O buffers on its own threads), which costs a
            // single-key write (a usage counter) more than the rest of its request.
            (Some((k, Some(v))), 0) => drop(self.tree.insert(k, v)?),
            (Some((k, None)), 0) => drop(self.tree.remove(k)?),
            (first, _) => {
                let mut batch = sled::Batch::default();
                for (k, v) in first.into_iter().chain(pending) {
                    match v {
                        Some(v) => batch.insert(k, v),
                        None => batch.remove(k),
                    }
                }
                self.tree.apply_batch(batch)?;
            }
        }
        let tree = self.tree;
        self.tables.written(&licenses, |team, id| {
            tree.get(license_key(team, id))
                .map_err(backend)?
                .map(|v| decode(&v))
                .transpose()
        });
        Ok(())
    }
}

pub(super) fn decode_count(v: &[u8]) -> u64 {
    v.try_into().map(u64::from_be_bytes).unwrap_or(0)
}
