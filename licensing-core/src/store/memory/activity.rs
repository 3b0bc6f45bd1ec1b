//! Devices, addresses, the client API's atomic step and session keys in memory.

use super::*;
use crate::model::DeviceLabel;

fn list_usage<K, R: UsageRecord + Clone>(
    records: &HashMap<K, R>,
    license: LicenseId,
    query: &DeviceListQuery,
) -> Page<R> {
    let items = records
        .values()
        .filter(|r| r.license_id() == license && (query.filter || !r.forgotten()))
        .cloned()
        .collect();
    page_of(items, &query.paging, |a, b| {
        compare_usage(a, b, query.sort, query.paging.direction)
    })
}

fn set_forgotten<K: std::hash::Hash + Eq, R: UsageRecord + Clone>(
    records: &mut HashMap<K, R>,
    (team, license, id): (TeamId, LicenseId, K),
    forgotten: bool,
    now: Timestamp,
    entity: Entity,
) -> StoreResult<R> {
    let r = records
        .get_mut(&id)
        .filter(|r| r.license_id() == license && r.team_id() == team)
        .ok_or(StoreError::NotFound(entity))?;
    r.set_forgotten(forgotten, now);
    Ok(r.clone())
}

/// Forgets record `id` of the license within the budget (see
/// [`DeviceStore::forget_within_budget`]).
fn forget_budgeted<K: std::hash::Hash + Eq, R: UsageRecord + Clone>(
    records: &mut HashMap<K, R>,
    resets: &mut HashMap<LicenseId, Vec<Timestamp>>,
    (team, license, id): (TeamId, LicenseId, K),
    (budget, now): (crate::model::SelfServiceResets, Timestamp),
    entity: Entity,
) -> StoreResult<crate::model::SelfServiceReset> {
    use crate::model::SelfServiceReset;
    let r = records
        .get_mut(&id)
        .filter(|r| r.license_id() == license && r.team_id() == team)
        .ok_or(StoreError::NotFound(entity))?;
    if r.forgotten() {
        return Ok(SelfServiceReset::AlreadyForgotten);
    }
    let earlier = resets.entry(license).or_default();
    if let Err(refills_at) = budget.admit(earlier, now) {
        return Ok(SelfServiceReset::Spent { refills_at });
    }
    *earlier = budget.kept(earlier, now);
    earlier.push(now);
    r.set_forgotten(true, now);
    Ok(SelfServiceReset::Forgotten)
}

impl DeviceStore for MemoryStore {
    async fn forget_within_budget(
        &self,
        team: TeamId,
        license: LicenseId,
        record: crate::model::UsageRef,
        budget: crate::model::SelfServiceResets,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<crate::model::SelfServiceReset> {
        use crate::model::UsageRef;
        let done = self.with(|s| {
            s.license(team, license)?;
            let State {
                hwids, ips, resets, ..
            } = s;
            match record {
                UsageRef::Hwid(id) => forget_budgeted(
                    hwids,
                    resets,
                    (team, license, id),
                    (budget, now),
                    Entity::Hwid,
                ),
                UsageRef::Ip(id) => {
                    forget_budgeted(ips, resets, (team, license, id), (budget, now), Entity::Ip)
                }
            }
        })?;
        if done == crate::model::SelfServiceReset::Forgotten {
            self.write(journal, |_| Ok(()))?;
        }
        Ok(done)
    }

    async fn restore_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        hwids: &[Hwid],
        ips: &[IpRecord],
    ) -> StoreResult<()> {
        self.with(|s| {
            s.license(team, license)?;
            check_usage_owner(team, license, hwids, ips)?;
            for h in hwids {
                s.hwids
                    .retain(|_, o| !(o.license_id == license && o.identifier == h.identifier));
                s.hwids.insert(h.id, h.clone());
            }
            for r in ips {
                s.ips
                    .retain(|_, o| !(o.license_id == license && o.address == r.address));
                s.ips.insert(r.id, r.clone());
            }
            Ok(())
        })
    }

    async fn list_hwids(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<Hwid>> {
        self.with(|s| {
            s.license(team, license)?;
            Ok(list_usage(&s.hwids, license, query))
        })
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
        self.write(journal, |s| {
            s.license(team, license)?;
            set_forgotten(
                &mut s.hwids,
                (team, license, id),
                forgotten,
                now,
                Entity::Hwid,
            )
        })
    }

    async fn list_ips(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<IpRecord>> {
        self.with(|s| {
            s.license(team, license)?;
            Ok(list_usage(&s.ips, license, query))
        })
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
        self.write(journal, |s| {
            s.license(team, license)?;
            set_forgotten(&mut s.ips, (team, license, id), forgotten, now, Entity::Ip)
        })
    }
}

impl ActivityStore for MemoryStore {
    async fn record_activity(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let settings = rules.settings;
        self.with(|s| {
            let current = s.license(team, license)?.clone();
            // Decided with the terms in effect; written as stored.
            let decided = rules.policies.effective(&current).into_owned();
            let hwids: Vec<Hwid> = s
                .hwids
                .values()
                .filter(|h| h.license_id == license)
                .cloned()
                .collect();
            let ips: Vec<IpRecord> = s
                .ips
                .values()
                .filter(|r| r.license_id == license)
                .cloned()
                .collect();
            let admission = match verify::admit(
                &decided,
                settings,
                &hwids,
                &ips,
                activity.hardware_id.as_ref(),
                activity.ip,
                now,
            ) {
                Ok(a) => a,
                Err(denial) => return Ok(Err(denial)),
            };
            let own_session = match activity.session {
                SessionStep::Extend { id, .. } => s.floating.get(&id),
                _ => None,
            };
            let session = match verify::admit_session(
                &decided,
                rules.settings,
                activity.session,
                (activity.hardware_id.as_ref(), activity.ip),
                own_session,
                now,
                |_| {
                    Ok::<_, StoreError>(
                        s.floating
                            .values()
                            .filter(|f| f.license_id == license && f.is_live(now))
                            .count() as u64,
                    )
                },
            )? {
                Ok(session) => session,
                Err(denial) => return Ok(Err(denial)),
            };
            // Room under the cap, decided before anything changes.
            let want = prune_batch(rules.max_records);
            let mut drop_hwids = Vec::new();
            if matches!(admission.hwid, Some(verify::RecordChange::Create))
                && hwids.len() >= rules.max_records as usize
            {
                drop_hwids =
                    prune_victims(&hwids, decided.hwid_limit, settings.hwid_timeout, now, want)
                        .into_iter()
                        .map(|r| r.id)
                        .collect();
                if drop_hwids.is_empty() {
                    return Ok(Err(cap_reached(
                        verify::RecordKind::Hwid,
                        rules.max_records,
                    )));
                }
            }
            let mut drop_ips = Vec::new();
            if admission.ip == verify::RecordChange::Create
                && ips.len() >= rules.max_records as usize
            {
                drop_ips = prune_victims(&ips, decided.ip_limit, settings.ip_timeout, now, want)
                    .into_iter()
                    .map(|r| r.id)
                    .collect();
                if drop_ips.is_empty() {
                    return Ok(Err(cap_reached(verify::RecordKind::Ip, rules.max_records)));
                }
            }
            for id in drop_hwids {
                s.hwids.remove(&id);
            }
            for id in drop_ips {
                s.ips.remove(&id);
            }
            let mut new_device = None;
            match (admission.hwid, &activity.hardware_id) {
                (Some(verify::RecordChange::Create), Some(h)) => {
                    let record = new_hwid(&current, h, &activity.label, now);
                    new_device = Some(record.clone());
                    s.hwids.insert(record.id, record);
                }
                (Some(verify::RecordChange::Refresh { id, .. }), _) => {
                    if let Some(h) = s.hwids.get_mut(&id) {
                        refresh_hwid(h, &activity.label, now);
                    }
                }
                _ => {}
            }
            match admission.ip {
                verify::RecordChange::Create => {
                    let record = new_ip(&current, activity, now);
                    s.ips.insert(record.id, record);
                }
                verify::RecordChange::Refresh { id, .. } => {
                    if let Some(r) = s.ips.get_mut(&id) {
                        refresh_ip(r, activity, now);
                    }
                }
            }
            let next = license_after(&current, &admission, now);
            s.licenses.insert(next.id, next.clone());
            for event in crate::model::admission_events(
                rules.events,
                new_device.as_ref(),
                // The events show (and are tied to the products of) the terms in effect.
                &rules.policies.effective(&next),
                admission.activate.is_some(),
                now,
            ) {
                s.events.insert(event.id, event);
            }
            if let Some(session) = &session {
                if matches!(activity.session, SessionStep::Start { .. })
                    && rules
                        .events
                        .wants(crate::model::ClientEvent::SessionStarted)
                {
                    let event = crate::model::ClientEvent::SessionStarted
                        .session_event(&next, session, now);
                    s.events.insert(event.id, event);
                }
                s.floating.insert(session.id, session.clone());
            }
            Ok(Ok(Recorded {
                license: next,
                admission,
                session,
                decided_from_read: false,
            }))
        })
    }

    async fn register_device(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        hardware_id: &HardwareId,
        override_limit: bool,
        now: Timestamp,
    ) -> StoreResult<Result<RegisteredDevice, Denial>> {
        self.register_device_now((team, license), rules, hardware_id, override_limit, now)
    }
}

impl MemoryStore {
    /// [`ActivityStore::register_device`].
    pub(super) fn register_device_now(
        &self,
        (team, license): (TeamId, LicenseId),
        rules: &ActivityRules<'_>,
        hardware_id: &HardwareId,
        override_limit: bool,
        now: Timestamp,
    ) -> StoreResult<Result<RegisteredDevice, Denial>> {
        let settings = rules.settings;
        self.with(|s| {
            let current = s.license(team, license)?.clone();
            let decided = rules.policies.effective(&current).into_owned();
            let own = s
                .hwids
                .values()
                .find(|h| h.license_id == license && &h.identifier == hardware_id)
                .cloned();
            let held = || s.hwids.values().filter(|h| h.license_id == license);
            let counted = || {
                Ok::<_, StoreError>(
                    held()
                        .filter(|h| {
                            verify::counts(h.forgotten, h.last_seen_at, settings.hwid_timeout, now)
                        })
                        .count() as u64,
                )
            };
            let plan = match verify::admit_device(
                &decided,
                settings,
                own.as_ref(),
                now,
                override_limit,
                counted,
            )? {
                Ok(plan) => plan,
                Err(denial) => return Ok(Err(denial)),
            };
            let (hwid, created) = match (plan.change, own) {
                (verify::RecordChange::Refresh { .. }, Some(mut record)) => {
                    refresh_hwid(&mut record, &DeviceLabel::NONE, now);
                    (record, false)
                }
                _ => {
                    if held().count() >= rules.max_records as usize {
                        return Ok(Err(cap_reached(
                            verify::RecordKind::Hwid,
                            rules.max_records,
                        )));
                    }
                    (
                        new_hwid(&current, hardware_id, &DeviceLabel::NONE, now),
                        true,
                    )
                }
            };
            s.hwids.insert(hwid.id, hwid.clone());
            if created {
                for event in
                    crate::model::admission_events(rules.events, Some(&hwid), &decided, false, now)
                {
                    s.events.insert(event.id, event);
                }
            }
            Ok(Ok(RegisteredDevice {
                hwid,
                created,
                overrode: plan.overrode,
            }))
        })
    }
}

impl LicenseSessionStore for MemoryStore {
    async fn list_license_sessions(
        &self,
        team: TeamId,
        license: LicenseId,
        now: Timestamp,
        paging: &Paging,
    ) -> StoreResult<Page<LicenseSession>> {
        self.with(|s| {
            s.license(team, license)?;
            let live: Vec<LicenseSession> = s
                .floating
                .values()
                .filter(|f| f.license_id == license && f.is_live(now))
                .cloned()
                .collect();
            Ok(crate::store::filter::sessions_page(live, paging))
        })
    }

    async fn get_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
    ) -> StoreResult<Option<LicenseSession>> {
        self.with(|s| {
            Ok(s.floating
                .get(&id)
                .filter(|f| f.team_id == team && f.license_id == license)
                .cloned())
        })
    }

    async fn remove_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
        now: Timestamp,
        expired: bool,
        journal: &Journal,
    ) -> StoreResult<Option<LicenseSession>> {
        self.with(|s| {
            let found = s.floating.get(&id).is_some_and(|f| {
                f.team_id == team && f.license_id == license && f.is_live(now) != expired
            });
            if !found {
                return Ok(None);
            }
            s.audit.extend(journal.audit.iter().cloned());
            for event in &journal.events {
                s.events.insert(event.id, event.clone());
            }
            Ok(s.floating.remove(&id))
        })
    }

    async fn expired_license_sessions(
        &self,
        now: Timestamp,
        max: u32,
    ) -> StoreResult<Vec<LicenseSession>> {
        self.with(|s| {
            let mut expired: Vec<LicenseSession> = s
                .floating
                .values()
                .filter(|f| !f.is_live(now))
                .cloned()
                .collect();
            expired.sort_by_key(|f| (f.expires_at, f.id));
            expired.truncate(max as usize);
            Ok(expired)
        })
    }

    async fn count_live_sessions(&self, now: Timestamp) -> StoreResult<u64> {
        self.with(|s| Ok(s.floating.values().filter(|f| f.is_live(now)).count() as u64))
    }
}

impl SessionKeyStore for MemoryStore {
    async fn use_session_key(
        &self,
        team: TeamId,
        fingerprint: [u8; 16],
        now: Timestamp,
        window_ms: i64,
        per_team: u32,
    ) -> StoreResult<Result<(), SessionKeyRefused>> {
        self.with(|s| {
            let since = now.as_millis() - window_ms;
            s.session_keys.retain(|_, used| used.as_millis() > since);
            if s.session_keys.contains_key(&(team, fingerprint)) {
                return Ok(Err(SessionKeyRefused::Reused));
            }
            let held = s.session_keys.keys().filter(|(t, _)| *t == team).count();
            if held >= per_team as usize {
                return Ok(Err(SessionKeyRefused::Full));
            }
            s.session_keys.insert((team, fingerprint), now);
            Ok(Ok(()))
        })
    }
}
