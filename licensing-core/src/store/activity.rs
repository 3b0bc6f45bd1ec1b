//! What the client API's requests leave behind: a license's device and address records, the
//! atomic unit that admits a request against the license's limits and records it, and the
//! record of used classloader session keys.

use std::future::Future;
use std::net::IpAddr;

use super::*;
use crate::model::{
    DeviceLabel, NO_POLICIES, Policies, SelfServiceReset, SelfServiceResets, UsageRef,
};

/// Hardware identifiers and IP records of licenses.
pub trait DeviceStore: Send + Sync {
    /// One page of a license's hardware identifiers (the license must exist).
    fn list_hwids(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> impl Future<Output = StoreResult<Page<Hwid>>> + Send;
    /// Marks a hardware identifier of the license forgotten or remembered.
    fn set_hwid_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: HwidId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Hwid>> + Send;
    /// One page of a license's IP records (the license must exist).
    fn list_ips(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> impl Future<Output = StoreResult<Page<IpRecord>>> + Send;
    /// Stores a license's device and address records exactly as given (restoring an archive):
    /// a record of the same identifier, or address, on the license is replaced. The license
    /// must exist in the team; the records must name it.
    fn restore_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        hwids: &[Hwid],
        ips: &[IpRecord],
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Marks an IP record of the license forgotten or remembered.
    fn set_ip_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: IpId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<IpRecord>> + Send;
    /// (ext) Forgets a counted device or address record of the license for its customer (the
    /// portal), within `budget`, in one atomic step with the license's record of such resets:
    /// a record forgotten before spends nothing; otherwise, when the resets of the license in
    /// the budget's period at `now` leave room, the record is forgotten, the reset recorded and
    /// the journal written; else nothing changes and the answer says when the budget refills.
    /// Concurrent calls (on any instance) never spend more than the budget. The license must
    /// exist in the team, and the record be one of it.
    fn forget_within_budget(
        &self,
        team: TeamId,
        license: LicenseId,
        record: UsageRef,
        budget: SelfServiceResets,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<SelfServiceReset>> + Send;
}

/// What a successful client request brings to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    /// The device, when the request names one.
    pub hardware_id: Option<HardwareId>,
    /// (ext) What the request calls the device: recorded on its record (a new one, or a known
    /// one whose label it changes; such a request is not decided from a read alone).
    pub label: DeviceLabel,
    /// The client's address.
    pub ip: IpAddr,
    /// The client's country, when known.
    pub country: Option<Country>,
    /// (ext) What the step does with a floating session. A start is decided only in the atomic
    /// step (it counts the license's live sessions). An extension decides no limit: a store may
    /// admit it from records read before, with one conditional write of the session alone, as
    /// long as an ended or expired session is never written back.
    pub session: SessionStep,
}

impl Activity {
    /// Whether the request renames its device's record `own` (a new label to write): such a
    /// request is not admitted from a read alone, the atomic step writes the label.
    pub fn relabels(&self, own: Option<&Hwid>) -> bool {
        own.is_some_and(|h| self.label.changes(h))
    }
}

/// Usage records a license keeps of each kind unless the operator says otherwise.
pub const DEFAULT_MAX_RECORDS: u32 = 10_000;

/// What decides steps 7 and 8 besides the request: the team's settings, and the most usage
/// records of one kind (hardware identifiers, IP addresses) the server keeps per license.
#[derive(Clone, Copy, Debug)]
pub struct ActivityRules<'a> {
    /// The team's settings (limits' timeouts, `requireHardwareIdentifier`).
    pub settings: &'a TeamSettings,
    /// The cap on stored records of one kind per license. A new record past it first drops the
    /// least recently seen records that count against nothing (forgotten ones, ones past the
    /// team's timeout, and any when the license has no limit of that kind), a tenth of the cap
    /// at a time; when none can be dropped, the request is refused with the limit's code.
    pub max_records: u32,
    /// The client events the team's endpoints want: the atomic step writes those of an
    /// admission (see [`admission_events`](crate::model::admission_events)) with the records.
    pub events: ClientEvents,
    /// (ext) The team's policies: the atomic step decides with the license's effective terms
    /// ([`Policies::effective`]) and writes the license as stored.
    pub policies: &'a Policies,
}

impl<'a> ActivityRules<'a> {
    /// The rules with the default cap.
    pub fn new(settings: &'a TeamSettings) -> Self {
        Self {
            settings,
            max_records: DEFAULT_MAX_RECORDS,
            events: ClientEvents::NONE,
            policies: &NO_POLICIES,
        }
    }
}

/// What [`ActivityStore::record_activity`] recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The license after the step (its `expirationDate` set if the clock started).
    pub license: License,
    /// The plan that was applied.
    pub admission: Admission,
    /// The session started or extended, for a request with a [`SessionStep`].
    pub session: Option<LicenseSession>,
    /// Whether what the store read decided the request alone (its device and address counted
    /// already), without the atomic step: the [`LicenseRead`] handed to
    /// [`ActivityStore::record_activity_after`], or the store's own read in
    /// [`ActivityStore::record_activity`]. What was read then still holds for the next request
    /// of that device and address.
    pub decided_from_read: bool,
}

/// The license a client request names, as the client API reads it first, with the request's
/// own device and address records when the store read them in the same query (a store where
/// that costs a round trip more leaves `own` empty).
#[derive(Clone, Debug)]
pub struct LicenseRead {
    /// The license.
    pub license: License,
    /// The request's own records as read with the license: `Some` when the store read them
    /// (each `None` when absent), for [`ActivityStore::record_activity_after`].
    pub own: Option<(Option<Hwid>, Option<IpRecord>)>,
    /// What a store that writes an admission only if the license is unchanged since this read
    /// (no lock held between the read and the write) read with it; `None` for other stores and
    /// for reads that did not come from the store (a cache).
    pub mark: Option<ReadMark>,
}

/// The license row's state as read, for a store that admits optimistically: it writes the
/// request's new records with the license only if the row's version is still `version`, and
/// decides under its lock otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadMark {
    /// The row's version as read: any value that changes whenever the row is written.
    pub version: i64,
    /// The license's counts of its device and address records, as read (for the cap).
    pub records: (u64, u64),
}

/// The atomic unit of the client API.
pub trait ActivityStore: Send + Sync {
    /// The license with `key`, for a request of `activity`: what the decision reads first.
    /// Stores on a network read the request's own records in the same query, so that a request
    /// whose records already count costs one read ([`record_activity_after`]); the default
    /// reads the license alone.
    ///
    /// [`record_activity_after`]: ActivityStore::record_activity_after
    fn read_license_for_activity(
        &self,
        team: TeamId,
        key: &LicenseKey,
        activity: &Activity,
    ) -> impl Future<Output = StoreResult<Option<LicenseRead>>> + Send
    where
        Self: LicenseStore,
    {
        let _ = activity;
        async move {
            Ok(self
                .get_license_by_key(team, key)
                .await?
                .map(|license| LicenseRead {
                    license,
                    own: None,
                    mark: None,
                }))
        }
    }

    /// [`record_activity`](ActivityStore::record_activity) after
    /// [`read_license_for_activity`](ActivityStore::read_license_for_activity): a store may
    /// admit a request whose records already count from what `read` holds, without reading
    /// again; the atomic step is the same.
    fn record_activity_after(
        &self,
        read: &LicenseRead,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Result<Recorded, Denial>>> + Send {
        self.record_activity(read.license.team_id, read.license.id, rules, activity, now)
    }

    /// In one atomic step per license: read the license and the request's own records, run
    /// [`verify::admit_own`](crate::verify::admit_own) with the team's settings, then the
    /// activity's [`SessionStep`] ([`verify::admit_session`](crate::verify::admit_session):
    /// a start counts the license's live sessions against its `sessionLimit`; an extension
    /// needs the live session of the request's device, else `SESSION_NOT_FOUND`), and on
    /// admission write the session (with its `session.started` event when wanted), create or refresh the hardware-identifier and IP records (dropping records past
    /// the cap of `rules`), start an `ACTIVATION` clock and set `lastActiveAt`. New records are
    /// durable when this returns. A refusal is the inner `Err`. The cost must not grow with the
    /// number of records the license holds, except to count them for a limit that is at stake
    /// or to drop some at the cap; the atomic step excludes other requests of the same license
    /// only.
    fn record_activity(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Result<Recorded, Denial>>> + Send;

    /// (ext) Records a device for the license outside a client request (a license file the
    /// vendor issues for a machine), in the license's atomic step: reads the license and its
    /// record of `hardware_id`, runs [`verify::admit_device`](crate::verify::admit_device) with the license's effective
    /// terms, and on admission creates the record (unnamed) or refreshes and remembers it, and
    /// keeps the license's record count. A new record past the cap of `rules` is refused with
    /// the limit's code (nothing is dropped for it). Durable when it returns.
    fn register_device(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        hardware_id: &HardwareId,
        override_limit: bool,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Result<RegisteredDevice, Denial>>> + Send;
}

/// (ext) What [`ActivityStore::register_device`] recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredDevice {
    /// The device's record as written.
    pub hwid: Hwid,
    /// Whether the record is new.
    pub created: bool,
    /// Whether it passed the device limit only by the vendor's override.
    pub overrode: bool,
}

/// Why a classloader session key was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKeyRefused {
    /// The team used it within the window.
    Reused,
    /// The team used as many session keys within the window as it may keep.
    Full,
}

/// The record of used classloader session keys (a session key is
/// accepted once), kept per team and across restarts.
pub trait SessionKeyStore: Send + Sync {
    /// Takes a session key (its `fingerprint`) for `team` at `now`, durably: refused when the
    /// team used it within `window_ms`, or when the team already holds `per_team` keys used within
    /// the window. Keys older than the window are forgotten.
    fn use_session_key(
        &self,
        team: TeamId,
        fingerprint: [u8; 16],
        now: Timestamp,
        window_ms: i64,
        per_team: u32,
    ) -> impl Future<Output = StoreResult<Result<(), SessionKeyRefused>>> + Send;
}

/// (ext) Floating sessions, besides the atomic step that starts and extends them.
pub trait LicenseSessionStore: Send + Sync {
    /// One page of the license's sessions live at `now`, newest first (`paging`'s direction
    /// `desc`; `asc`: oldest first), by start (the license must exist).
    fn list_license_sessions(
        &self,
        team: TeamId,
        license: LicenseId,
        now: Timestamp,
        paging: &Paging,
    ) -> impl Future<Output = StoreResult<Page<LicenseSession>>> + Send;
    /// Session `id` of the license, live or not, while the server keeps it.
    fn get_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
    ) -> impl Future<Output = StoreResult<Option<LicenseSession>>> + Send;
    /// Deletes session `id` of the license if it is live at `now` (`expired`: if it has
    /// expired by `now`), with `journal`, in one step. Returns the session deleted; `None`
    /// (and nothing written) when there is none in that state.
    fn remove_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
        now: Timestamp,
        expired: bool,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Option<LicenseSession>>> + Send;
    /// At most `max` sessions of any team that expired by `now`, soonest expired first.
    fn expired_license_sessions(
        &self,
        now: Timestamp,
        max: u32,
    ) -> impl Future<Output = StoreResult<Vec<LicenseSession>>> + Send;
    /// How many sessions of every team are live at `now`.
    fn count_live_sessions(&self, now: Timestamp) -> impl Future<Output = StoreResult<u64>> + Send;
}
