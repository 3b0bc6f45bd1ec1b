//! The client API's atomic unit on sled (steps 7 and 8), and the developer API's changes to a
//! license's device and address records.
//!
//! A device record is keyed by a digest of its identifier and an address record by its 16 bytes,
//! under its license, so that a request reads its own records directly, whatever else the
//! license holds. Each license keeps a count of its records of each kind (and how many are
//! forgotten): the cap on stored records is checked without reading them, and so is a limit when
//! the team sets no timeout. Only a limit with a timeout reads the records, to count those seen
//! within it, and only when the request's own record does not count already; the cap keeps that
//! bounded.

use licensing_core::model::{
    ClientEvent, DeviceLabel, Hwid, IpRecord, License, SessionStep, UsageRecord, admission_events,
};
use licensing_core::store::{
    Activity, ActivityRules, Entity, Journal, Recorded, RegisteredDevice, StoreError, StoreResult,
    cap_reached, license_after, new_hwid, new_ip, prune_batch, refresh_hwid, refresh_ip,
};
use licensing_core::validate::HardwareId;
use licensing_core::verify::{self, Denial, RecordChange, RecordKind};
use licensing_core::{LicenseId, TeamId, Timestamp};

use super::SledResult;
use super::floating;
use super::keys::{key, tag};
use super::seen::Keyed;
use super::{
    Record, SledStore, Tally, Tx, addr16, backend, decode, hwid_digest, hwid_key, ip_key,
    license_key, put_license, seen, tally_key,
};

/// The earliest `lastSeenAt` within `timeout` minutes of `now`.
fn cutoff(now: Timestamp, timeout: u32) -> Timestamp {
    Timestamp::from_millis(now.as_millis() - i64::from(timeout) * 60_000)
}

/// The request's own device and address records, when the license has them (read through `tx`,
/// so staged changes count).
fn own_records(
    tx: &Tx<'_>,
    team: TeamId,
    license: LicenseId,
    activity: &Activity,
) -> StoreResult<(Option<Hwid>, Option<IpRecord>)> {
    let hwid = match &activity.hardware_id {
        Some(h) => tx
            .get_record::<Hwid>(&hwid_key(team, license, h))?
            .filter(|r| &r.identifier == h),
        None => None,
    };
    let ip = tx
        .get_record::<IpRecord>(&ip_key(team, license, activity.ip))?
        .filter(|r| r.address == activity.ip.to_canonical());
    Ok((hwid, ip))
}

impl SledStore {
    /// Steps 7 and 8 (see [`licensing_core::store::ActivityStore::record_activity`]).
    pub(super) async fn record(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let current = self.require_license(team, license)?;
        let (own_hwid, own_ip) = self.own_records(&current, activity)?;
        self.record_read(
            &current,
            own_hwid.as_ref(),
            own_ip.as_ref(),
            rules,
            activity,
            now,
        )
        .await
    }

    /// The request's own device and address records, read without a lock.
    pub(super) fn own_records(
        &self,
        license: &License,
        activity: &Activity,
    ) -> StoreResult<(Option<Hwid>, Option<IpRecord>)> {
        let reads = self.tx();
        own_records(&reads, license.team_id, license.id, activity)
    }

    /// Steps 7 and 8 for a license and own records read without a lock (by [`Self::record`],
    /// or with the license by key for the client API): a request they show counting already is
    /// admitted from them; any other goes through the atomic step, which reads everything again.
    pub(super) async fn record_read(
        &self,
        current: &License,
        own_hwid: Option<&Hwid>,
        own_ip: Option<&IpRecord>,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let settings = rules.settings;
        let hardware_id = activity.hardware_id.as_ref();
        let (team, license) = (current.team_id, current.id);
        // The hot path: a device and address that already count need no atomic step; their
        // refreshes wait in memory (see `refresh.rs`). These reads take no lock; a stale read
        // can only send the request to the atomic step below. A session's start always takes
        // it; a heartbeat's extension of its session is a swap of the session's record.
        if !matches!(activity.session, SessionStep::Start { .. })
            && !activity.relabels(own_hwid)
            && let Some(admission) = verify::admit_counted_own(
                &rules.policies.effective(current),
                settings,
                own_hwid,
                own_ip,
                hardware_id,
                activity.ip,
                now,
            )
        {
            let session = match activity.session {
                SessionStep::Extend { id, ttl } => {
                    match self
                        .extend_session((team, license), (hardware_id, activity.ip), (id, ttl), now)
                        .await?
                    {
                        floating::Extended::Done(session) => Some(session),
                        floating::Extended::NotFound => {
                            return Ok(Err(verify::session_not_found()));
                        }
                        floating::Extended::Busy => {
                            return self.record_locked(current, rules, activity, now).await;
                        }
                    }
                }
                _ => None,
            };
            let waiting = self.inner.refreshes.add(
                team,
                license,
                hardware_id.map(hwid_digest),
                addr16(activity.ip),
                activity.country,
                now,
            );
            if waiting >= crate::store::refresh::EARLY_ROUND / crate::store::refresh::STRIPES {
                self.inner.flusher.request();
            }
            return Ok(Ok(Recorded {
                license: license_after(current, &admission, now),
                admission,
                session,
                decided_from_read: true,
            }));
        }
        self.record_locked(current, rules, activity, now).await
    }

    /// The atomic step, under the license's stripe only.
    async fn record_locked(
        &self,
        current: &License,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let (team, license) = (current.team_id, current.id);
        let stripe = self.inner.locks.license(license).await;
        self.apply_license_refresh(license).await?;
        let mut tx = self.tx();
        let outcome = self.stage_activity(&mut tx, team, license, rules, activity, now)?;
        let Ok(recorded) = outcome else {
            return Ok(outcome);
        };
        let batch = self.commit(tx).await?;
        drop(stripe);
        let started = matches!(activity.session, SessionStep::Start { .. });
        if recorded.admission.creates_state() || started {
            self.flushed_up_to(batch).await?;
        }
        Ok(Ok(recorded))
    }

    /// [`licensing_core::store::ActivityStore::register_device`]: the device limit alone, under
    /// the license's stripe, written and flushed before it returns.
    pub(super) async fn register(
        &self,
        (team, license): (TeamId, LicenseId),
        rules: &ActivityRules<'_>,
        hardware_id: &HardwareId,
        override_limit: bool,
        now: Timestamp,
    ) -> StoreResult<Result<RegisteredDevice, Denial>> {
        let stripe = self.inner.locks.license(license).await;
        self.apply_license_refresh(license).await?;
        let mut tx = self.tx();
        let current: License = tx
            .get_record(&license_key(team, license))?
            .ok_or(StoreError::NotFound(Entity::License))?;
        let decided = rules.policies.effective(&current);
        let own = tx
            .get_record::<Hwid>(&hwid_key(team, license, hardware_id))?
            .filter(|r| &r.identifier == hardware_id);
        let tally_at = tally_key(tag::HWID, team, license);
        let mut tally = Tally::read(&tx, &tally_at)?;
        let before = tally;
        let counted = || -> StoreResult<u64> {
            match rules.settings.hwid_timeout {
                None => Ok(tally.counting()),
                Some(timeout) => Ok(seen::count_since(
                    &self.inner.tree,
                    &self.inner.seen_reads,
                    tag::HWID,
                    team,
                    license,
                    cutoff(now, timeout),
                    decided.hwid_limit.map_or(u64::MAX, u64::from).max(1),
                )?),
            }
        };
        let plan = match verify::admit_device(
            &decided,
            rules.settings,
            own.as_ref(),
            now,
            override_limit,
            counted,
        )? {
            Ok(plan) => plan,
            Err(denial) => return Ok(Err(denial)),
        };
        let (hwid, created) = match (&plan.change, &own) {
            (RecordChange::Refresh { was_forgotten, .. }, Some(old)) => {
                let mut record = old.clone();
                refresh_hwid(&mut record, &DeviceLabel::NONE, now);
                tx.put_usage(Some(old), &record)?;
                if *was_forgotten {
                    tally.unforget();
                }
                (record, false)
            }
            _ => {
                if tally.total >= u64::from(rules.max_records) {
                    return Ok(Err(cap_reached(RecordKind::Hwid, rules.max_records)));
                }
                let record = new_hwid(&current, hardware_id, &DeviceLabel::NONE, now);
                tx.put_usage(None, &record)?;
                tally.total += 1;
                (record, true)
            }
        };
        if tally != before {
            tx.put(tally_at, tally.encode().to_vec());
        }
        if created {
            let events = admission_events(rules.events, Some(&hwid), &decided, false, now);
            if !events.is_empty() {
                tx.journal(&Journal {
                    audit: Vec::new(),
                    events,
                    keyed: None,
                    inbound: None,
                })?;
            }
        }
        let batch = self.commit(tx).await?;
        drop(stripe);
        self.flushed_up_to(batch).await?;
        Ok(Ok(RegisteredDevice {
            hwid,
            created,
            overrode: plan.overrode,
        }))
    }

    /// Decides and stages steps 7 and 8 for a license whose stripe the caller holds.
    fn stage_activity(
        &self,
        tx: &mut Tx<'_>,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let settings = rules.settings;
        let hardware_id = activity.hardware_id.as_ref();
        let current: License = tx
            .get_record(&license_key(team, license))?
            .ok_or(StoreError::NotFound(Entity::License))?;
        // Decided with the terms in effect (its policy's, live); written as stored.
        let decided = rules.policies.effective(&current);
        let (own_hwid, own_ip) = own_records(tx, team, license, activity)?;
        let mut hwid_tally = Tally::read(tx, &tally_key(tag::HWID, team, license))?;
        let mut ip_tally = Tally::read(tx, &tally_key(tag::IP, team, license))?;
        let (hwid_tally_before, ip_tally_before) = (hwid_tally, ip_tally);
        let reads = &self.inner.seen_reads;
        let tree = &self.inner.tree;
        // A kind of record's table, tally, timeout and the license's limit.
        let of_kind = |kind: RecordKind| match kind {
            RecordKind::Hwid => (
                tag::HWID,
                hwid_tally,
                settings.hwid_timeout,
                decided.hwid_limit,
            ),
            RecordKind::Ip => (tag::IP, ip_tally, settings.ip_timeout, decided.ip_limit),
        };
        let counted = |kind: RecordKind| -> StoreResult<u64> {
            let (table, tally, timeout, limit) = of_kind(kind);
            match timeout {
                None => Ok(tally.counting()),
                // Only the records seen within the timeout are read, and no more than the limit.
                Some(timeout) => Ok(seen::count_since(
                    tree,
                    reads,
                    table,
                    team,
                    license,
                    cutoff(now, timeout),
                    limit.map_or(u64::MAX, u64::from).max(1),
                )?),
            }
        };
        let admission = match verify::admit_own(
            &decided,
            settings,
            own_hwid.as_ref(),
            own_ip.as_ref(),
            hardware_id,
            activity.ip,
            now,
            counted,
        )? {
            Ok(admission) => admission,
            Err(denial) => return Ok(Err(denial)),
        };
        let own_session = match activity.session {
            SessionStep::Extend { id, .. } => floating::own_session(tx, team, license, id)?,
            _ => None,
        };
        let session = match verify::admit_session(
            &decided,
            rules.settings,
            activity.session,
            (hardware_id, activity.ip),
            own_session.as_ref(),
            now,
            |limit| floating::count_live(tree, team, license, now, u64::from(limit)),
        )? {
            Ok(session) => session,
            Err(denial) => return Ok(Err(denial)),
        };
        // Room under the cap, decided before anything is staged: the records to drop for a new
        // one of `kind` (none when there is room), or the refusal when none may go.
        type Room = StoreResult<Result<Vec<seen::Victim>, Denial>>;
        let room = |kind: RecordKind, new: bool| -> Room {
            let (table, tally, timeout, limit) = of_kind(kind);
            if !new || tally.total < u64::from(rules.max_records) {
                return Ok(Ok(Vec::new()));
            }
            let limited = limit.is_some_and(|l| l > 0);
            let since = timeout.map(|t| cutoff(now, t));
            let want = prune_batch(rules.max_records);
            let victims = seen::victims(tree, reads, table, team, license, limited, since, want)?;
            if victims.is_empty() {
                return Ok(Err(cap_reached(kind, rules.max_records)));
            }
            Ok(Ok(victims))
        };
        let hwid_new = matches!(admission.hwid, Some(RecordChange::Create));
        let drop_hwids = match room(RecordKind::Hwid, hwid_new)? {
            Ok(victims) => victims,
            Err(denial) => return Ok(Err(denial)),
        };
        let drop_ips = match room(RecordKind::Ip, admission.ip == RecordChange::Create)? {
            Ok(victims) => victims,
            Err(denial) => return Ok(Err(denial)),
        };
        for (victims, tally) in [(drop_hwids, &mut hwid_tally), (drop_ips, &mut ip_tally)] {
            for victim in victims {
                tx.del(victim.record);
                tx.del(victim.entry);
                tally.remove(victim.forgotten);
            }
        }
        let mut new_device = None;
        match (admission.hwid, hardware_id) {
            (Some(RecordChange::Create), Some(h)) => {
                let record = new_hwid(&current, h, &activity.label, now);
                tx.put_usage(None, &record)?;
                hwid_tally.total += 1;
                new_device = Some(record);
            }
            (Some(RecordChange::Refresh { was_forgotten, .. }), Some(_)) => {
                if let Some(old) = own_hwid {
                    let mut record = old.clone();
                    refresh_hwid(&mut record, &activity.label, now);
                    tx.put_usage(Some(&old), &record)?;
                    if was_forgotten {
                        hwid_tally.unforget();
                    }
                }
            }
            _ => {}
        }
        match admission.ip {
            RecordChange::Create => {
                tx.put_usage(None, &new_ip(&current, activity, now))?;
                ip_tally.total += 1;
            }
            RecordChange::Refresh { was_forgotten, .. } => {
                if let Some(old) = own_ip {
                    let mut record = old.clone();
                    refresh_ip(&mut record, activity, now);
                    tx.put_usage(Some(&old), &record)?;
                    if was_forgotten {
                        ip_tally.unforget();
                    }
                }
            }
        }
        // Counts are written only when they change.
        if hwid_tally != hwid_tally_before {
            tx.put(
                tally_key(tag::HWID, team, license),
                hwid_tally.encode().to_vec(),
            );
        }
        if ip_tally != ip_tally_before {
            tx.put(
                tally_key(tag::IP, team, license),
                ip_tally.encode().to_vec(),
            );
        }
        let next = license_after(&current, &admission, now);
        put_license(tx, &next, Some(&current))?;
        let mut events = admission_events(
            rules.events,
            new_device.as_ref(),
            // The events show (and are tied to the products of) the terms in effect.
            &rules.policies.effective(&next),
            admission.activate.is_some(),
            now,
        );
        if let Some(session) = &session {
            tx.put_record(floating::session_key(team, license, session.id), session)?;
            if matches!(activity.session, SessionStep::Start { .. })
                && rules.events.wants(ClientEvent::SessionStarted)
            {
                events.push(ClientEvent::SessionStarted.session_event(&next, session, now));
            }
        }
        if !events.is_empty() {
            tx.journal(&Journal {
                audit: Vec::new(),
                events,
                keyed: None,
                inbound: None,
            })?;
        }
        Ok(Ok(Recorded {
            license: next,
            admission,
            session,
            decided_from_read: false,
        }))
    }

    /// Marks one of a license's records (found by id among them) forgotten or remembered.
    pub(super) async fn set_forgotten<R>(
        &self,
        journal: &Journal,
        team: TeamId,
        license: LicenseId,
        id: uuid::Uuid,
        forgotten: bool,
        now: Timestamp,
    ) -> SledResult<R>
    where
        R: UsageRecord + Record + Keyed + Clone,
    {
        Ok(self
            .journaled_touching(journal, super::Touch::License(license), |tx| {
                let old: R = self.find_usage(tx, team, license, id)?;
                self.stage_forgotten(tx, (team, license), &old, forgotten, now)
            })
            .await?)
    }

    /// Record `id` of the license (which must exist), found among the license's records.
    pub(super) fn find_usage<R>(
        &self,
        tx: &Tx<'_>,
        team: TeamId,
        license: LicenseId,
        id: uuid::Uuid,
    ) -> StoreResult<R>
    where
        R: UsageRecord + Record + Keyed,
    {
        tx.get(&license_key(team, license))?
            .ok_or(StoreError::NotFound(Entity::License))?;
        let prefix = key(&[&[R::TABLE], team.as_bytes(), license.as_bytes()]);
        for kv in self.inner.tree.scan_prefix(&prefix) {
            let (_, v) = kv.map_err(backend)?;
            let record: R = decode(&v)?;
            if record.record_id() == id {
                return Ok(record);
            }
        }
        Err(StoreError::NotFound(R::MISSING))
    }

    /// Stages `old` forgotten or remembered, with the license's tally; the record as written.
    pub(super) fn stage_forgotten<R>(
        &self,
        tx: &mut Tx<'_>,
        (team, license): (TeamId, LicenseId),
        old: &R,
        forgotten: bool,
        now: Timestamp,
    ) -> StoreResult<R>
    where
        R: UsageRecord + Record + Keyed + Clone,
    {
        let table = R::TABLE;
        let mut record: R = old.clone();
        record.set_forgotten(forgotten, now);
        if old.forgotten() != forgotten {
            let tally_k = tally_key(table, team, license);
            let mut tally = Tally::read(tx, &tally_k)?;
            if forgotten {
                tally.forget();
            } else {
                tally.unforget();
            }
            tx.put(tally_k, tally.encode().to_vec());
        }
        tx.put_usage(Some(old), &record)?;
        Ok(record)
    }
}
