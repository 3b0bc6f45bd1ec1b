//! The verification decision (the client API's checks, steps 2 to 8), free of storage and clocks.
//!
//! One logic serves verify, heartbeat and classloader. The server gathers the inputs, calls
//! [`precheck`] (steps 2 to 6), and then, inside the store's atomic unit for the license,
//! [`admit`] (step 7), whose [`Admission`] lists the changes of step 8. [`decide`] runs all of it
//! at once for callers that hold every input.

use std::borrow::Cow;
use std::net::IpAddr;

use crate::code::ResultCode;
use crate::expiry::Expiration;
use crate::model::{
    Branch, Hwid, IpRecord, License, LicenseSession, Release, ReleaseStatus, SessionStep,
    TeamSettings,
};
use crate::validate::{BranchName, Country, HardwareId, Version};
use crate::{ApiError, BlacklistId, CustomerId, HwidId, IpId, ProductId, Timestamp};

mod blacklist;

pub use blacklist::{Blacklist, parse_ip_or_net};

/// Which endpoint asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// `verification/verify`.
    Verify,
    /// `verification/heartbeat`.
    Heartbeat,
    /// `verification/classloader`.
    Classloader,
}

/// The validated request, as the decision needs it.
#[derive(Clone, Copy, Debug)]
pub struct ClientRequest<'a> {
    /// Which endpoint.
    pub kind: RequestKind,
    /// The device (required for heartbeat and classloader by validation).
    pub hardware_id: Option<&'a HardwareId>,
    /// The customer the client claims.
    pub customer_id: Option<CustomerId>,
    /// The product the client runs (required for classloader by validation).
    pub product_id: Option<ProductId>,
    /// The software version.
    pub version: Option<&'a Version>,
    /// The product branch.
    pub branch: Option<&'a BranchName>,
    /// The client's address (IPv4-mapped IPv6 is treated as IPv4).
    pub ip: IpAddr,
    /// The client's country, when known.
    pub country: Option<Country>,
}

/// Why a request is refused: the code, a message for the client, and the blacklist entry that
/// matched, if one did (so its hit counter can be raised).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The `result.code`.
    pub code: ResultCode,
    /// The `result.details`.
    pub details: Cow<'static, str>,
    /// The blacklist entry that refused the request.
    pub blacklist_hit: Option<BlacklistId>,
}

impl Denial {
    fn new(code: ResultCode, details: &'static str) -> Self {
        Self {
            code,
            details: Cow::Borrowed(details),
            blacklist_hit: None,
        }
    }
}

impl From<Denial> for ApiError {
    fn from(d: Denial) -> Self {
        if d.code == ResultCode::BadRequest {
            // The only 400 of the decision concerns the hardware identifier.
            return ApiError::bad_field("hardwareIdentifier", &d.details);
        }
        ApiError::new(d.code, d.details)
    }
}

/// The releases and branches of the product a request names (when the license has it).
#[derive(Clone, Copy, Debug)]
pub struct Catalog<'a> {
    /// The product's branches.
    pub branches: &'a [Branch],
    /// The product's releases, any branch.
    pub releases: &'a [Release],
}

/// What the decision reads besides the request.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The team's settings.
    pub settings: &'a TeamSettings,
    /// The compiled blacklist.
    pub blacklist: &'a Blacklist,
    /// The license found by key, if any.
    pub license: Option<&'a License>,
    /// Releases and branches of the requested product, when the request names a product.
    pub catalog: Option<Catalog<'a>>,
    /// (ext) The grace days of the license's policy (0: none): an expired license is still
    /// valid for these days after its `expirationDate`.
    pub grace_days: u32,
}

/// Steps 2 to 6. On success returns the release the request resolved to, if any (the classloader
/// serves it).
pub fn precheck<'a>(
    ctx: &Context<'a>,
    req: &ClientRequest<'_>,
    now: Timestamp,
) -> Result<(&'a License, Option<&'a Release>), Denial> {
    // 2. License.
    let license = ctx.license.ok_or(Denial::new(
        ResultCode::LicenseNotFound,
        "License not found",
    ))?;
    // 3. Blacklists.
    ctx.blacklist.check(req.ip, req.country, req.hardware_id)?;
    // 4. Customer and product.
    check_membership(
        &license.customer_ids,
        req.customer_id,
        ctx.settings.strict_customers,
        Denial::new(
            ResultCode::CustomerNotFound,
            "Customer not found on this license",
        ),
        Denial::new(
            ResultCode::CustomerNotFound,
            "customerId is required: this team requires the customer of licenses with customers",
        ),
    )?;
    let requires_product = ctx.settings.strict_products || req.kind == RequestKind::Classloader;
    let product_named_and_licensed = match req.product_id {
        Some(p) => license.product_ids.contains(&p),
        None => false,
    };
    if req.kind == RequestKind::Classloader && !product_named_and_licensed {
        return Err(Denial::new(
            ResultCode::ProductNotFound,
            "Product not found on this license",
        ));
    }
    check_membership(
        &license.product_ids,
        req.product_id,
        requires_product,
        Denial::new(
            ResultCode::ProductNotFound,
            "Product not found on this license",
        ),
        Denial::new(
            ResultCode::ProductNotFound,
            "productId is required: this team requires the product of licenses with products",
        ),
    )?;
    // 5. Release.
    let release = match (product_named_and_licensed, ctx.catalog) {
        (true, Some(catalog)) => resolve_release(ctx.settings, license, catalog, req)?,
        (true, None) if req.kind == RequestKind::Classloader => {
            return Err(Denial::new(
                ResultCode::ReleaseNotFound,
                "Release not found",
            ));
        }
        _ => None,
    };
    // 6. Suspended, expired (past its grace).
    standing(license, ctx.grace_days, now)?;
    Ok((license, release))
}

/// (ext) The license checks of an update feed, a feed token or an artifact download: the
/// license found (`LICENSE_NOT_FOUND`), the blacklists of the address and its country, the
/// product among the license's (`NO_ACCESS_TO_RELEASE`), then suspended and expired (past its
/// grace). No device or address is checked or counted: updaters send none.
pub fn admit_update<'a>(
    ctx: &Context<'a>,
    product: ProductId,
    ip: IpAddr,
    country: Option<Country>,
    now: Timestamp,
) -> Result<&'a License, Denial> {
    let license = ctx.license.ok_or(Denial::new(
        ResultCode::LicenseNotFound,
        "License not found",
    ))?;
    ctx.blacklist.check(ip, country, None)?;
    if !license.product_ids.contains(&product) {
        return Err(Denial::new(
            ResultCode::NoAccessToRelease,
            "This license does not grant the product: its updates are not available to it",
        ));
    }
    standing(license, ctx.grace_days, now)?;
    Ok(license)
}

/// Step 6: a suspended license is refused with `LICENSE_SUSPENDED`, an expired one past its
/// `grace_days` with `LICENSE_EXPIRED` (the client API's refusals, and the developer API's for a
/// license file).
pub fn standing(license: &License, grace_days: u32, now: Timestamp) -> Result<(), Denial> {
    if license.suspended {
        return Err(Denial::new(
            ResultCode::LicenseSuspended,
            "License is suspended",
        ));
    }
    if license.is_expired(now) && grace_until(license, grace_days, now).is_none() {
        return Err(Denial::new(
            ResultCode::LicenseExpired,
            "License has expired",
        ));
    }
    Ok(())
}

/// (ext) When the grace period of `license` ends, if it is in one at `now`: expired, with
/// `grace_days` of grace after its `expirationDate` not yet over.
pub fn grace_until(license: &License, grace_days: u32, now: Timestamp) -> Option<Timestamp> {
    if !license.is_expired(now) {
        return None;
    }
    crate::model::grace_end(license.expiration_date, grace_days).filter(|end| now < *end)
}

/// (ext) The `details` of a valid answer given in a grace period that ends at `until`.
pub fn grace_details(until: Timestamp) -> String {
    format!("License is valid (grace period until {until})")
}

fn check_membership<Id: PartialEq + Copy>(
    attached: &[Id],
    given: Option<Id>,
    strict: bool,
    not_member: Denial,
    required: Denial,
) -> Result<(), Denial> {
    if attached.is_empty() {
        return Ok(());
    }
    match given {
        Some(id) if attached.contains(&id) => Ok(()),
        Some(_) => Err(not_member),
        None if strict => Err(required),
        None => Ok(()),
    }
}

fn resolve_release<'a>(
    settings: &TeamSettings,
    license: &License,
    catalog: Catalog<'a>,
    req: &ClientRequest<'_>,
) -> Result<Option<&'a Release>, Denial> {
    let branch_id = match req.branch {
        None => None,
        Some(name) => Some(
            catalog
                .branches
                .iter()
                .find(|b| &b.name == name)
                .map(|b| b.id)
                .ok_or(Denial::new(
                    ResultCode::ReleaseNotFound,
                    "Branch not found for this product",
                ))?,
        ),
    };
    let in_branch = || {
        catalog
            .releases
            .iter()
            .filter(move |r| r.branch_id == branch_id)
    };
    // Without a branch, releases without one come first; then those of every branch, the most
    // recently created first (clients written for Lukittu send a version but no branch).
    let any_branch = |matches: &dyn Fn(&Release) -> bool| -> Option<&'a Release> {
        in_branch().find(|r| matches(r)).or_else(|| {
            if branch_id.is_some() {
                return None;
            }
            catalog
                .releases
                .iter()
                .filter(|r| matches(r))
                .max_by_key(|r| (r.created_at, r.id))
        })
    };
    let release = match req.version {
        Some(version) => Some(any_branch(&|r| &r.version == version).ok_or(Denial::new(
            ResultCode::ReleaseNotFound,
            "Release not found for this version",
        ))?),
        None if settings.strict_releases && !catalog.releases.is_empty() => {
            return Err(Denial::new(
                ResultCode::ReleaseNotFound,
                "version is required: this team requires the version for products with releases",
            ));
        }
        None if req.kind == RequestKind::Classloader => Some(
            crate::api::latest_release(catalog.releases, branch_id, req.branch.is_none())
                .ok_or(Denial::new(
                    ResultCode::ReleaseNotFound,
                    "No latest release for this product and branch (none is marked latest or published)",
                ))?,
        ),
        None => None,
    };
    let Some(release) = release else {
        return Ok(None);
    };
    match release.status {
        ReleaseStatus::Archived => {
            return Err(Denial::new(
                ResultCode::ReleaseArchived,
                "Release is archived",
            ));
        }
        ReleaseStatus::Draft => {
            return Err(Denial::new(ResultCode::ReleaseDraft, "Release is a draft"));
        }
        ReleaseStatus::Published | ReleaseStatus::Deprecated => {}
    }
    if !release.allowed_license_ids.is_empty() && !release.allowed_license_ids.contains(&license.id)
    {
        return Err(Denial::new(
            ResultCode::NoAccessToRelease,
            "This license has no access to the release",
        ));
    }
    if req.kind == RequestKind::Classloader && release.file.is_none() {
        return Err(Denial::new(
            ResultCode::ReleaseNotFound,
            "Release has no file",
        ));
    }
    Ok(Some(release))
}

/// Whether a record last seen at `last_seen_at` is within `timeout_minutes` of `now` (always,
/// without a timeout).
pub fn seen_within(last_seen_at: Timestamp, timeout_minutes: Option<u32>, now: Timestamp) -> bool {
    timeout_minutes.is_none_or(|minutes| last_seen_at.plus_minutes(minutes) >= now)
}

/// What happens to a device or IP record on success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordChange<Id> {
    /// A new record.
    Create,
    /// An existing record: `lastSeenAt` refreshed, `forgotten` cleared.
    Refresh {
        /// The record.
        id: Id,
        /// Whether it was forgotten (then the change must be written at once).
        was_forgotten: bool,
    },
}

/// Step 8: the changes to record for an admitted request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    /// The hardware identifier record, when the request carried one.
    pub hwid: Option<RecordChange<HwidId>>,
    /// The IP record.
    pub ip: RecordChange<IpId>,
    /// The expiration date an `ACTIVATION` license gets now, if its clock starts.
    pub activate: Option<Timestamp>,
}

impl Admission {
    /// Whether something new must be durable before the answer (a new or un-forgotten record,
    /// an activation); otherwise only `lastSeenAt`/`lastActiveAt` move, which may be batched.
    pub fn creates_state(&self) -> bool {
        fn is_plain_refresh<Id>(change: &RecordChange<Id>) -> bool {
            matches!(
                change,
                RecordChange::Refresh {
                    was_forgotten: false,
                    ..
                }
            )
        }
        !self.hwid.as_ref().is_none_or(is_plain_refresh)
            || !is_plain_refresh(&self.ip)
            || self.activate.is_some()
    }
}

/// The two kinds of usage records a license keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// Hardware identifiers.
    Hwid,
    /// IP addresses.
    Ip,
}

/// Step 7, inside the store's atomic unit: checks the IP limit, then the hardware-identifier
/// limit, against the license's current records, and plans step 8.
///
/// Counted records are those not forgotten and, when the team sets a timeout, seen within it. A
/// limit of `null` or 0 is unlimited. A request from a record already counted passes.
///
/// This form takes every record of the license; stores use [`admit_own`], which needs only the
/// request's own records and, when a limit is at stake, a count.
pub fn admit(
    license: &License,
    settings: &TeamSettings,
    hwids: &[Hwid],
    ips: &[IpRecord],
    hardware_id: Option<&HardwareId>,
    ip: IpAddr,
    now: Timestamp,
) -> Result<Admission, Denial> {
    let ip = ip.to_canonical();
    let own_hwid = hardware_id.and_then(|h| hwids.iter().find(|r| &r.identifier == h));
    let own_ip = ips.iter().find(|r| r.address == ip);
    let counted = |kind: RecordKind| -> Result<u64, std::convert::Infallible> {
        Ok(match kind {
            RecordKind::Hwid => hwids
                .iter()
                .filter(|r| counts(r.forgotten, r.last_seen_at, settings.hwid_timeout, now))
                .count(),
            RecordKind::Ip => ips
                .iter()
                .filter(|r| counts(r.forgotten, r.last_seen_at, settings.ip_timeout, now))
                .count(),
        } as u64)
    };
    match admit_own(
        license,
        settings,
        own_hwid,
        own_ip,
        hardware_id,
        ip,
        now,
        counted,
    ) {
        Ok(decided) => decided,
        Err(never) => match never {},
    }
}

/// Step 7 from what a store can look up directly: the request's own records, when they exist
/// (`own_hwid`: the license's record of `hardware_id`; `own_ip`: its record of `ip`), and, only
/// when a limit is at stake (the own record does not count and the license has a limit of that
/// kind), `counted(kind)`: how many records of that kind count now. The cost of a request
/// therefore does not grow with the records a license holds, unless a limit must be counted.
#[allow(clippy::too_many_arguments)]
pub fn admit_own<E>(
    license: &License,
    settings: &TeamSettings,
    own_hwid: Option<&Hwid>,
    own_ip: Option<&IpRecord>,
    hardware_id: Option<&HardwareId>,
    ip: IpAddr,
    now: Timestamp,
    mut counted: impl FnMut(RecordKind) -> Result<u64, E>,
) -> Result<Result<Admission, Denial>, E> {
    let hwid_limit = license.hwid_limit.filter(|&l| l > 0);
    let missing_hardware =
        hardware_id.is_none() && hwid_limit.is_some() && settings.require_hardware_identifier;
    let own = |r: Option<&IpRecord>| r.map(|r| (r.id, r.forgotten, r.last_seen_at));
    let Some(ip_change) = plan(
        own(own_ip.filter(|r| r.address == ip.to_canonical())),
        license.ip_limit.filter(|&l| l > 0),
        settings.ip_timeout,
        now,
        || counted(RecordKind::Ip),
    )?
    else {
        return Ok(Err(Denial::new(
            ResultCode::IpLimitReached,
            "IP address limit reached",
        )));
    };
    if missing_hardware {
        // Without an identifier no device can count as the license's own: a license whose
        // devices are all taken is refused as full (what a client written for the hosted
        // service expects), one with room as a request that must name its device.
        if let Some(limit) = hwid_limit
            && counted(RecordKind::Hwid)? >= u64::from(limit)
        {
            return Ok(Err(Denial::new(
                ResultCode::HwidLimitReached,
                "Hardware identifier limit reached",
            )));
        }
        return Ok(Err(Denial::new(
            ResultCode::BadRequest,
            "is required: this license limits hardware identifiers and the team's setting \
             requireHardwareIdentifier is on (send the device's identifier, or turn the setting \
             off to let such a license verify without one)",
        )));
    }
    let hwid_change = match hardware_id {
        None => None,
        Some(h) => {
            let own = own_hwid
                .filter(|r| &r.identifier == h)
                .map(|r| (r.id, r.forgotten, r.last_seen_at));
            let planned = plan(own, hwid_limit, settings.hwid_timeout, now, || {
                counted(RecordKind::Hwid)
            })?;
            match planned {
                Some(change) => Some(change),
                None => {
                    return Ok(Err(Denial::new(
                        ResultCode::HwidLimitReached,
                        "Hardware identifier limit reached",
                    )));
                }
            }
        }
    };
    Ok(Ok(Admission {
        hwid: hwid_change,
        ip: ip_change,
        activate: Expiration::of(license).activation_date(now),
    }))
}

/// Steps 7 and 8 when nothing is at stake: the request's device (when it names one) and its
/// address are records that already count against the license's limits, and no `ACTIVATION`
/// clock starts. Such a request passes whatever concurrent requests do (a record that counts
/// always passes, and only `lastSeenAt`/`lastActiveAt` move), so a store may admit it outside its
/// per-license atomic step and batch the refreshes. Records read from a stale snapshot are safe
/// here: a stale `lastSeenAt` is older, so it can only send the request to [`admit`].
///
/// `None` means the request must go through [`admit`] in the store's atomic step. Whenever this
/// returns an admission, [`admit`] returns the same one.
pub fn admit_counted(
    license: &License,
    settings: &TeamSettings,
    hwids: &[Hwid],
    ips: &[IpRecord],
    hardware_id: Option<&HardwareId>,
    ip: IpAddr,
    now: Timestamp,
) -> Option<Admission> {
    let ip = ip.to_canonical();
    let own_hwid = hardware_id.and_then(|h| hwids.iter().find(|r| &r.identifier == h));
    let own_ip = ips.iter().find(|r| r.address == ip);
    admit_counted_own(license, settings, own_hwid, own_ip, hardware_id, ip, now)
}

/// (ext) How many live sessions of `license` a start must find fewer than: its `sessionLimit`,
/// at most the team's `maxLiveSessionsPerLicense` (which bounds licenses without a limit too).
pub fn live_session_bound(license: &License, settings: &TeamSettings) -> u32 {
    let cap = settings.max_live_sessions_per_license.max(1);
    license.session_limit.map_or(cap, |limit| limit.min(cap))
}

/// (ext) The session step of an admitted request, inside the store's atomic step for the
/// license. A start is refused with `SESSION_LIMIT_REACHED` when the license's live sessions,
/// `live(bound)` (a store may stop counting at `bound`, [`live_session_bound`]), reach its
/// `sessionLimit` or the team's cap of live sessions per license. An extension is refused with
/// `SESSION_NOT_FOUND` unless `own` (the session it names, as stored) is live and the request's
/// device's. Returns the session to write: the new one, or the one extended.
pub fn admit_session<E>(
    license: &License,
    settings: &TeamSettings,
    step: SessionStep,
    (hardware_id, ip): (Option<&HardwareId>, IpAddr),
    own: Option<&LicenseSession>,
    now: Timestamp,
    live: impl FnOnce(u32) -> Result<u64, E>,
) -> Result<Result<Option<LicenseSession>, Denial>, E> {
    match step {
        SessionStep::None => Ok(Ok(None)),
        SessionStep::Start { id, ttl } => {
            let Some(hardware_id) = hardware_id else {
                return Ok(Err(Denial::new(ResultCode::BadRequest, "is required")));
            };
            let bound = live_session_bound(license, settings);
            if live(bound)? >= u64::from(bound) {
                let limited_by_license = license.session_limit.is_some_and(|l| l <= bound);
                return Ok(Err(Denial::new(
                    ResultCode::SessionLimitReached,
                    if limited_by_license {
                        "Session limit reached: as many copies run as the license allows"
                    } else {
                        "Session limit reached: this license holds as many live sessions as its team allows (maxLiveSessionsPerLicense); end sessions or let them expire"
                    },
                )));
            }
            Ok(Ok(Some(LicenseSession::start(
                id,
                license,
                hardware_id,
                ip,
                ttl,
                now,
            ))))
        }
        SessionStep::Extend { id, ttl } => match own {
            Some(session)
                if session.id == id
                    && session.license_id == license.id
                    && session.extendable_by(hardware_id, now) =>
            {
                Ok(Ok(Some(session.extended(ip, ttl, now))))
            }
            _ => Ok(Err(session_not_found())),
        },
    }
}

/// (ext) The refusal of a session that is unknown, ended, revoked or expired.
pub fn session_not_found() -> Denial {
    Denial::new(
        ResultCode::SessionNotFound,
        "Session not found: it ended, was revoked or expired; start a new one",
    )
}

/// (ext) 404 `METER_NOT_FOUND`: the license (its policy applied) has no meter of the codes in
/// `unknown`; the details name them and the meters it has.
pub fn meter_not_found(meters: &[crate::model::Meter], unknown: &[&str]) -> ApiError {
    let known: Vec<&str> = meters.iter().map(|m| m.code.as_str()).collect();
    ApiError::new(
        ResultCode::MeterNotFound,
        format!(
            "The license has no meter {}: its meters are {}",
            unknown.join(", "),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ),
    )
}

/// [`admit_counted`] from the request's own records only (see [`admit_own`]).
pub fn admit_counted_own(
    license: &License,
    settings: &TeamSettings,
    own_hwid: Option<&Hwid>,
    own_ip: Option<&IpRecord>,
    hardware_id: Option<&HardwareId>,
    ip: IpAddr,
    now: Timestamp,
) -> Option<Admission> {
    if Expiration::of(license).activation_date(now).is_some() {
        return None;
    }
    let ip = ip.to_canonical();
    let ip_record = own_ip.filter(|r| {
        r.address == ip && counts(r.forgotten, r.last_seen_at, settings.ip_timeout, now)
    })?;
    let hwid = match hardware_id {
        None if license.hwid_limit.is_some_and(|l| l > 0)
            && settings.require_hardware_identifier =>
        {
            return None;
        }
        None => None,
        Some(h) => Some(
            own_hwid
                .filter(|r| {
                    &r.identifier == h
                        && counts(r.forgotten, r.last_seen_at, settings.hwid_timeout, now)
                })?
                .id,
        ),
    };
    Some(Admission {
        hwid: hwid.map(|id| RecordChange::Refresh {
            id,
            was_forgotten: false,
        }),
        ip: RecordChange::Refresh {
            id: ip_record.id,
            was_forgotten: false,
        },
        activate: None,
    })
}

/// Whether a record counts against its limit: not forgotten and, with a timeout, seen within it.
pub fn counts(
    forgotten: bool,
    last_seen_at: Timestamp,
    timeout: Option<u32>,
    now: Timestamp,
) -> bool {
    !forgotten && seen_within(last_seen_at, timeout, now)
}

/// Whether a verify was admitted without checking a hardware identifier: the team does not
/// require one, the request sent none, and the license limits them (`hardwareIdentifierChecked:
/// false` in the answer).
pub fn hardware_unchecked(license: &License, hardware_id: Option<&HardwareId>) -> bool {
    hardware_id.is_none() && license.hwid_limit.is_some_and(|l| l > 0)
}

/// Plans one record kind from its own record (id, forgotten, last seen): `None` when the limit
/// refuses. `counted` is asked only when the own record does not count and a limit exists.
fn plan<Id: Copy, E>(
    own: Option<(Id, bool, Timestamp)>,
    limit: Option<u32>,
    timeout: Option<u32>,
    now: Timestamp,
    counted: impl FnOnce() -> Result<u64, E>,
) -> Result<Option<RecordChange<Id>>, E> {
    if let Some((id, forgotten, last_seen)) = own
        && counts(forgotten, last_seen, timeout, now)
    {
        // Already counted: always passes.
        return Ok(Some(RecordChange::Refresh {
            id,
            was_forgotten: false,
        }));
    }
    let change = match own {
        Some((id, forgotten, _)) => RecordChange::Refresh {
            id,
            was_forgotten: forgotten,
        },
        None => RecordChange::Create,
    };
    match limit {
        Some(limit) if counted()? >= u64::from(limit) => Ok(None),
        _ => Ok(Some(change)),
    }
}

/// (ext) How a device the vendor registers for a license (a license file issued for a machine)
/// is recorded: [`admit_device`]'s plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceAdmission {
    /// The record to create or refresh.
    pub change: RecordChange<HwidId>,
    /// Whether the device passed the license's device limit only because the vendor said to
    /// override it.
    pub overrode: bool,
}

/// (ext) The device limit of step 7 alone, for a device the vendor registers outside a client
/// request, inside the store's atomic unit for the license: `own` is the license's record of
/// the device (when it has one), `counted()` how many devices count now (asked only when the
/// limit is at stake). A device already counted passes; another passes when the limit leaves
/// room, or past it when `override_limit` (the plan says so); otherwise `HWID_LIMIT_REACHED`.
pub fn admit_device<E>(
    license: &License,
    settings: &TeamSettings,
    own: Option<&Hwid>,
    now: Timestamp,
    override_limit: bool,
    counted: impl FnOnce() -> Result<u64, E>,
) -> Result<Result<DeviceAdmission, Denial>, E> {
    let own = own.map(|r| (r.id, r.forgotten, r.last_seen_at));
    let limit = license.hwid_limit.filter(|&l| l > 0);
    if let Some(change) = plan(own, limit, settings.hwid_timeout, now, counted)? {
        return Ok(Ok(DeviceAdmission {
            change,
            overrode: false,
        }));
    }
    if !override_limit {
        return Ok(Err(Denial::new(
            ResultCode::HwidLimitReached,
            "Hardware identifier limit reached: forget a device of the license first, or \
             override the limit for this machine",
        )));
    }
    let unlimited = plan(own, None, settings.hwid_timeout, now, || Ok::<_, E>(0))?;
    Ok(Ok(DeviceAdmission {
        change: unlimited.unwrap_or(RecordChange::Create),
        overrode: true,
    }))
}

/// (ext) A usage increment of `quantity` on a counter at `used`, against a period's `limit`
/// (`None`: unlimited), inside the store's atomic step for the counter: the counter after it
/// when `used + quantity ≤ limit`, else `None` (`USAGE_LIMIT_REACHED`, nothing counted).
pub fn admit_usage(limit: Option<u64>, used: u64, quantity: u64) -> Option<u64> {
    let after = used.checked_add(quantity)?;
    match limit {
        Some(limit) if after > limit => None,
        _ => Some(after),
    }
}

/// The outcome of [`decide`].
#[derive(Clone, Copy, Debug)]
pub struct Decision<'a> {
    /// The license.
    pub license: &'a License,
    /// The release the request resolved to.
    pub release: Option<&'a Release>,
    /// What to record.
    pub admission: Admission,
}

/// Steps 2 to 8 at once, for callers that hold the license's records (tests, simple stores).
pub fn decide<'a>(
    ctx: &Context<'a>,
    req: &ClientRequest<'_>,
    hwids: &[Hwid],
    ips: &[IpRecord],
    now: Timestamp,
) -> Result<Decision<'a>, Denial> {
    let (license, release) = precheck(ctx, req, now)?;
    let admission = admit(
        license,
        ctx.settings,
        hwids,
        ips,
        req.hardware_id,
        req.ip,
        now,
    )?;
    Ok(Decision {
        license,
        release,
        admission,
    })
}

#[cfg(test)]
mod tests;
