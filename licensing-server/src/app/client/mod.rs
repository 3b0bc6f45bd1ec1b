//! The client protocol (protocol.md section 3) as one use case: [`validate`] (verify and
//! heartbeat) and [`download`] (the classloader) own the checks in the protocol's order after the
//! request is parsed (the rate limits, the team, its feature and the session key; then the
//! license, the product, the device and the limits in [`steps`]), the store's atomic step, the
//! answer's data, and what is counted. The routes parse the request, call them, sign and render.

mod certificate;
pub(crate) mod feed;
pub(crate) mod steps;
pub(crate) mod usage;

pub(crate) use certificate::certificate;

use std::net::IpAddr;
use std::sync::Arc;

use licensing_core::api::requests::{ClassloaderQuery, ClientBody, SessionEndBody};
use licensing_core::api::{
    CheckedOutFile, CheckoutData, HeartbeatData, SessionEndData, SessionEnded, SessionStartData,
    VerifyData,
};
use licensing_core::crypto::SessionKey;
use licensing_core::model::{ClientEndpoint, RequestLogEntry};
use licensing_core::model::{
    ClientEvent, LicenseSession, Release, ReleaseFile, RequestType, SessionStep, session_ttl,
};
use licensing_core::store::{
    Journal, LicenseSessionStore, LicenseStore, ProductStore, SessionKeyRefused, SessionKeyStore,
};
use licensing_core::validate::{Country, HardwareId, Version};
use licensing_core::verify::RequestKind;
use licensing_core::{
    ApiError, LicenseId, LicenseSessionId, ProductId, ResultCode, TeamId, Timestamp,
};

use steps::Recorders;
use steps::Request;

use crate::files::FileReader;
use crate::runtime::contexts::TeamContext;
use crate::runtime::ratelimit::{RateLimiter, RateStatus, ip_key};
use crate::runtime::usage::Counted;
use crate::state::AppState;

/// What a client request came to besides its answer: the team once known (every answer from
/// then on is signed and counted), the rate-limit status its headers report, and the country
/// and product the statistics count it under.
pub(crate) struct Seen {
    /// The endpoint, as the metrics and the request history name it.
    endpoint: ClientEndpoint,
    /// The request's type in the statistics.
    kind: RequestType,
    /// The team's context, once known.
    pub(crate) context: Option<Arc<TeamContext>>,
    /// The rate limit's standing.
    pub(crate) rate: Option<RateStatus>,
    /// The client's country.
    country: Option<Country>,
    /// The product counted.
    product: Option<ProductId>,
    /// (ext) What the request history keeps: the license once found, and (when history is
    /// on) the product, device and version the request named.
    license: Option<LicenseId>,
    named: Option<ProductId>,
    device: Option<HardwareId>,
    version: Option<Version>,
}

impl Seen {
    /// Nothing seen yet of a request to `kind`'s endpoint.
    pub(crate) fn new(kind: RequestKind) -> Self {
        let (endpoint, kind) = match kind {
            RequestKind::Verify => (ClientEndpoint::Verify, RequestType::Verify),
            RequestKind::Heartbeat => (ClientEndpoint::Heartbeat, RequestType::Heartbeat),
            RequestKind::Classloader => (ClientEndpoint::Classloader, RequestType::Download),
        };
        Self {
            endpoint,
            kind,
            context: None,
            rate: None,
            country: None,
            product: None,
            license: None,
            named: None,
            device: None,
            version: None,
        }
    }

    /// (ext) Nothing seen yet of an update feed's request (`UpdateCheck`, counted in the
    /// statistics as a verify) or an artifact's download (`Download`, counted as a download).
    pub(crate) fn updates(endpoint: ClientEndpoint) -> Self {
        let kind = if endpoint == ClientEndpoint::Download {
            RequestKind::Classloader
        } else {
            RequestKind::Verify
        };
        Self::new(kind).at(endpoint)
    }

    /// The same, at `endpoint` (a checkout or a session's start or end, counted in the
    /// statistics as the verify they are).
    pub(crate) fn at(self, endpoint: ClientEndpoint) -> Self {
        Self { endpoint, ..self }
    }

    /// The endpoint's name in the metrics.
    fn metric(&self) -> &'static str {
        match self.endpoint {
            ClientEndpoint::Verify => "verify",
            ClientEndpoint::Heartbeat => "heartbeat",
            ClientEndpoint::Classloader => "classloader",
            ClientEndpoint::Checkout => "checkout",
            ClientEndpoint::SessionStart => "session_start",
            ClientEndpoint::SessionEnd => "session_end",
            ClientEndpoint::UpdateCheck => "update_check",
            ClientEndpoint::Download => "download",
            ClientEndpoint::Usage => "usage",
        }
    }

    /// Notes what the request history keeps of `request` (when it is on).
    fn note(&mut self, state: &AppState, request: &Request<'_>) {
        if state.request_log.on() {
            self.named = request.product_id;
            self.device = request.hardware_id.cloned();
            self.version = request.version.cloned();
        }
    }

    /// Counts the request's outcome `code`: the metric always, the team's statistics once the
    /// team is known, the license's history once the license is. A refusal answered before the
    /// rate limit was counted reports the client's standing anyway (`limiter`'s, without
    /// counting).
    pub(crate) async fn count(
        &mut self,
        state: &AppState,
        code: ResultCode,
        limiter: Option<&RateLimiter<u128>>,
        ip: IpAddr,
    ) {
        if self.rate.is_none()
            && !code.is_success()
            && let Some(limiter) = limiter
        {
            self.rate = Some(limiter.peek(&ip_key(ip)).await);
        }
        state.metrics.client_outcome(self.metric(), code.as_str());
        if let Some(context) = &self.context {
            let at = Timestamp::now();
            state.usage.count(&Counted {
                team: context.team.id,
                kind: self.kind,
                country: self.country.map(|c| c.alpha2),
                product: self.product,
                code,
                at,
            });
            if let Some(license) = self.license {
                state.request_log.record(RequestLogEntry {
                    team_id: context.team.id,
                    license_id: license,
                    at,
                    count: 1,
                    last_at: None,
                    endpoint: self.endpoint,
                    code,
                    ip_address: ip,
                    country: self.country.map(|c| c.alpha2.to_owned()),
                    hardware_identifier: self.device.take().map(HardwareId::into_string),
                    product_id: self.named,
                    version: self.version.take().map(Version::into_string),
                });
            }
        }
    }

    /// Counts `status` of a per-address limit (429 past it).
    fn admit(&mut self, status: RateStatus) -> Result<(), ApiError> {
        self.rate = Some(status);
        if status.allowed() {
            Ok(())
        } else {
            Err(rate_limited(&status))
        }
    }
}

/// The 429 of a refused rate-limit check.
pub(crate) fn rate_limited(status: &RateStatus) -> ApiError {
    status.refusal("requests", "")
}

/// The per-address limiter of `kind`'s endpoint, when limits are on.
pub(crate) fn limiter(state: &AppState, kind: RequestKind) -> Option<&RateLimiter<u128>> {
    match kind {
        RequestKind::Verify => state.limits.verify.as_ref(),
        RequestKind::Heartbeat => state.limits.heartbeat.as_ref(),
        RequestKind::Classloader => state.limits.classloader_ip.as_ref(),
    }
}

/// A valid license's answer: its `data` member as the endpoint's own type (serialized as it).
#[derive(serde::Serialize)]
#[serde(untagged)]
pub(crate) enum Valid {
    /// Verify's: the license, its customers and products with their latest releases.
    Verify(VerifyData),
    /// Heartbeat's: the license's state.
    Heartbeat(HeartbeatData),
    /// (ext) Checkout's: verify's, and a license file for the machine.
    Checkout(CheckoutData),
    /// (ext) A session start's: verify's, and the session.
    Session(SessionStartData),
    /// (ext) A session end's.
    Ended(SessionEndData),
}

impl Valid {
    /// The answer's `result.details`.
    pub(crate) fn details(&self) -> &'static str {
        match self {
            Self::Verify(_) => "License is valid",
            Self::Heartbeat(_) => "License heartbeat successful",
            Self::Checkout(_) => "License checked out",
            Self::Session(_) => "Session started",
            Self::Ended(_) => "Session ended",
        }
    }
}

/// (ext) What a verify or heartbeat does with a floating session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionAsk {
    /// Nothing.
    None,
    /// Start one (a verify).
    Start,
    /// Extend this one (a heartbeat).
    Extend(LicenseSessionId),
    /// (checkout) Issue a file valid for the `ttl` asked (none: the team's longest), and for a
    /// license with a `sessionLimit`, lend it a seat until the file expires.
    Checkout(Option<u32>),
}

/// A request that passed: its data, and the signed challenge when it sent one.
pub(crate) struct Validated {
    /// The answer's data.
    pub(crate) data: Valid,
    /// The challenge, signed with the team's RSA key.
    pub(crate) challenge: Option<String>,
    /// The license, as the request left it (none for a session's end).
    pub(crate) license: Option<licensing_core::model::License>,
    /// (ext) The session the request started or extended.
    pub(crate) session: Option<LicenseSession>,
    /// (ext) A checkout's file: its seconds to live, and when it expires.
    pub(crate) file: Option<(u32, Timestamp)>,
    /// (ext) When the license's grace period ends, if it is in one.
    pub(crate) grace_until: Option<Timestamp>,
    /// When the request was decided.
    pub(crate) now: Timestamp,
}

impl Validated {
    /// The answer's `result.details`: the endpoint's, or in a grace period the sentence that
    /// names its end.
    pub(crate) fn details(&self) -> std::borrow::Cow<'static, str> {
        match self.grace_until {
            Some(until) => licensing_core::verify::grace_details(until).into(),
            None => self.data.details().into(),
        }
    }
}

/// (ext) A checkout's answer: the verify's, and a license file bound to the request's machine
/// and encrypted, valid for the `ttl` asked, at most the team's `checkoutMaxTtl` and never past
/// the license's end. A license with a `sessionLimit` lends the file a seat: the session taken
/// in the same atomic step as the device, that lives until the file expires.
fn checked_out(
    validated: Validated,
    input: &ClientBody,
    seen: &Seen,
) -> Result<Validated, ApiError> {
    let (Valid::Verify(data), Some((ttl, _))) = (validated.data, validated.file) else {
        return Err(ApiError::internal());
    };
    let context = seen.context.clone().ok_or_else(ApiError::internal)?;
    let license = validated.license.as_ref().ok_or_else(ApiError::internal)?;
    let seat = validated
        .session
        .as_ref()
        .zip(license.session_limit)
        .map(|(session, limit)| (session.id, limit));
    let (certificate, payload) = certificate(
        &context,
        license,
        data.clone(),
        input.hardware_id.as_ref(),
        (Some(ttl), seat),
        true,
        validated.now,
    )?;
    Ok(Validated {
        data: Valid::Checkout(CheckoutData {
            verify: data,
            license_file: CheckedOutFile {
                certificate,
                issued_at: payload.meta.issued,
                expires_at: payload.meta.expiry,
                session_id: payload.meta.session_id,
            },
        }),
        ..validated
    })
}

/// (ext) A session start's answer: the verify's, and the new session.
fn started(validated: Validated) -> Result<Validated, ApiError> {
    let (Valid::Verify(data), Some(session)) = (validated.data, &validated.session) else {
        return Err(ApiError::internal());
    };
    Ok(Validated {
        data: Valid::Session(SessionStartData {
            verify: data,
            session: session.answer(),
        }),
        ..validated
    })
}

/// (ext) Ends session `input.session_id` of the license `input.license_key` of `team`: the rate
/// limit, the team, the license, then the live session removed (with its `session.ended`
/// event). Ending needs no other check: a suspended license's application may still give its
/// seat back.
pub(crate) async fn end_session(
    state: &AppState,
    team: TeamId,
    input: &SessionEndBody,
    ip: IpAddr,
    seen: &mut Seen,
) -> Result<SessionEndData, ApiError> {
    if let Some(limiter) = limiter(state, RequestKind::Verify) {
        seen.admit(limiter.check(&ip_key(ip)).await)?;
    }
    let context = team_context(state, team).await?;
    seen.context = Some(context.clone());
    seen.country = state.geo.country(ip);
    let store = &state.store;
    let license = store
        .get_license_by_key(team, &input.license_key)
        .await?
        .ok_or_else(|| ApiError::new(ResultCode::LicenseNotFound, "License not found"))?;
    seen.license = Some(license.id);
    let now = Timestamp::now();
    let not_found = || ApiError::from(licensing_core::verify::session_not_found());
    let session = store
        .get_license_session(team, license.id, input.session_id)
        .await?
        .filter(|s| s.is_live(now))
        .ok_or_else(not_found)?;
    let mut journal = Journal::NONE;
    if context.client_events.wants(ClientEvent::SessionEnded) {
        journal =
            journal.with_event(ClientEvent::SessionEnded.session_event(&license, &session, now));
    }
    store
        .remove_license_session(team, license.id, session.id, now, false, &journal)
        .await?
        .ok_or_else(not_found)?;
    Ok(SessionEndData {
        session: SessionEnded {
            id: session.id,
            ended_at: now,
        },
    })
}

/// Verify or heartbeat (`kind`) of `input` from `ip` to `team`, doing `ask` with a floating
/// session: the rate limit, the team, steps 2 to 6, then 7 and 8 atomically in the store (with
/// the session asked: extended, started, or lent to a checkout's file, where `sessionLimit`
/// allows), and the answer's data. A checkout (a verify, when the team allows checkouts) also
/// answers its license file; a start, its session.
pub(crate) async fn validate(
    state: &AppState,
    kind: RequestKind,
    asked: (TeamId, &ClientBody, IpAddr),
    ask: SessionAsk,
    seen: &mut Seen,
) -> Result<Validated, ApiError> {
    let validated = validate_with(state, kind, asked, ask, seen).await?;
    match ask {
        SessionAsk::Checkout(_) => checked_out(validated, asked.1, seen),
        SessionAsk::Start => started(validated),
        SessionAsk::None | SessionAsk::Extend(_) => Ok(validated),
    }
}

/// What [`admit`] leaves for the answer: the license after the request and what decided it.
pub(crate) struct Admitted {
    /// The team's context.
    pub(crate) context: Arc<TeamContext>,
    /// The license as it applies after the request (its policy's terms applied).
    pub(crate) license: licensing_core::model::License,
    /// The session started or extended.
    session: Option<LicenseSession>,
    /// What the license grants.
    granted: steps::Granted,
    /// The catalog of the product the request named.
    checked: steps::Checked,
    /// A checkout's file: its seconds to live, and when it expires.
    file: Option<(u32, Timestamp)>,
    /// When the request was decided.
    pub(crate) now: Timestamp,
}

/// [`validate`] up to the answer's data of a verify or heartbeat.
async fn validate_with(
    state: &AppState,
    kind: RequestKind,
    asked: (TeamId, &ClientBody, IpAddr),
    ask: SessionAsk,
    seen: &mut Seen,
) -> Result<Validated, ApiError> {
    let input = asked.1;
    let Admitted {
        context,
        license,
        session,
        granted,
        checked,
        file,
        now,
    } = admit(state, kind, asked, ask, seen).await?;

    // The answer's data.
    let challenge = match &input.challenge {
        Some(challenge) => {
            state.metrics.rsa_operation("sign_challenge");
            Some(
                context
                    .keys
                    .sign_challenge(challenge.as_str())
                    .map_err(|e| ApiError::internal_because("signing the challenge failed", e))?,
            )
        }
        None => None,
    };
    let meters = usage::meters_now(&state.store, &license, now).await?;
    let data = match kind {
        RequestKind::Heartbeat => {
            let mut data = HeartbeatData::build(&license, granted.codes);
            data.license.meters = meters;
            data.session = session.as_ref().map(LicenseSession::answer);
            data.license.grace_until = checked.grace_until;
            Valid::Heartbeat(data)
        }
        _ => {
            let mut data = steps::verify_data(
                &state.store,
                &license,
                granted.products,
                checked.catalog.as_ref(),
                seen.product,
                input.branch.as_ref(),
            )
            .await?;
            data.license.entitlements = granted.codes;
            data.license.grace_until = checked.grace_until;
            data.license.meters = meters;
            if licensing_core::verify::hardware_unchecked(&license, input.hardware_id.as_ref()) {
                data.hardware_identifier_checked = Some(false);
            }
            Valid::Verify(data)
        }
    };
    Ok(Validated {
        data,
        challenge,
        license: Some(license),
        session,
        file,
        grace_until: checked.grace_until,
        now,
    })
}

/// The checks of a verify or heartbeat (`kind`) of `input` from `ip` to `team`, doing `ask`
/// with a floating session: the rate limit, the team, steps 2 to 6, the entitlements asked
/// for, then 7 and 8 atomically in the store (with the session asked: extended, started, or
/// lent to a checkout's file, where `sessionLimit` allows).
pub(crate) async fn admit(
    state: &AppState,
    kind: RequestKind,
    (team, input, ip): (TeamId, &ClientBody, IpAddr),
    ask: SessionAsk,
    seen: &mut Seen,
) -> Result<Admitted, ApiError> {
    // Step 1's rate limit and team.
    if let Some(limiter) = limiter(state, kind) {
        seen.admit(limiter.check(&ip_key(ip)).await)?;
    }
    let context = team_context(state, team).await?;
    seen.context = Some(context.clone());
    if matches!(ask, SessionAsk::Checkout(_)) && !context.team.settings.checkout_enabled {
        return Err(ApiError::forbidden(
            "Checkout is off for this team (its setting checkoutEnabled): verify online instead",
        ));
    }
    let country = state.geo.country(ip);
    seen.country = country;
    let request = Request {
        kind,
        license_key: &input.license_key,
        hardware_id: input.hardware_id.as_ref(),
        customer_id: input.customer_id,
        product_id: input.product_id,
        version: input.version.as_ref(),
        branch: input.branch.as_ref(),
        device_name: input.device_name.as_ref(),
        platform: input.platform.as_ref(),
        ip,
        country,
    };

    // 2 to 6, the entitlements asked for, then 7 and 8 atomically in the store.
    let now = Timestamp::now();
    let mut checked = check(state, &context, &request, seen, now).await?;
    let granted = steps::granted(&state.store, &context, &checked.license).await?;
    if let Some(requested) = &input.entitlements {
        steps::require_entitlements(requested, &granted.codes)?;
    }
    let settings = &context.team.settings;
    let ttl = session_ttl(&checked.license, settings);
    let mut file = None;
    checked.activity.session = match ask {
        SessionAsk::None => SessionStep::None,
        SessionAsk::Start => SessionStep::Start {
            id: LicenseSessionId::new(),
            ttl,
        },
        SessionAsk::Extend(id) => SessionStep::Extend { id, ttl },
        SessionAsk::Checkout(asked) => {
            let max = settings.checkout_max_ttl;
            let life = asked.map_or(max, |t| t.min(max));
            let expiry = licensing_core::api::file_expiry(
                &checked.license,
                checked.grace_until,
                now,
                Some(life),
            )
            .unwrap_or_else(|| now.plus_seconds(life));
            file = Some((life, expiry));
            // The borrowed seat lives exactly as long as the file (at least a second).
            let lent = u32::try_from((expiry.as_millis() - now.as_millis() + 999) / 1000)
                .unwrap_or(life)
                .max(1);
            match checked.license.session_limit {
                Some(_) => SessionStep::Start {
                    id: LicenseSessionId::new(),
                    ttl: lent,
                },
                None => SessionStep::None,
            }
        }
    };
    let (license, session) = record_checked(state, &context, (&request, &checked), now).await?;
    Ok(Admitted {
        context,
        license,
        session,
        granted,
        checked,
        file,
        now,
    })
}

/// A download the client may have: the open file, the key to seal it with, and what its
/// headers say.
pub(crate) struct Granted {
    /// The stored file, open (it stays readable if the release is deleted meanwhile).
    pub(crate) file: FileReader,
    /// Its length as stored.
    pub(crate) stored_len: u64,
    /// The client's session key.
    pub(crate) key: SessionKey,
    /// The release served.
    pub(crate) release: Release,
    /// Its file's record.
    pub(crate) record: ReleaseFile,
    /// The release marked latest in the same product and branch.
    pub(crate) latest: Option<Release>,
    /// The product's name.
    pub(crate) product_name: String,
}

/// A classloader download of `input` from `ip` from `team`: the rate limits (per address,
/// then per license key), the team, its feature, the session key, steps 2 to 6, the file, the
/// session key taken, then 7 and 8 atomically in the store.
pub(crate) async fn download(
    state: &AppState,
    team: TeamId,
    input: &ClassloaderQuery,
    ip: IpAddr,
    seen: &mut Seen,
) -> Result<Granted, ApiError> {
    // 1. Rate limits, team, feature, session key.
    if let Some(limiter) = &state.limits.classloader_ip {
        seen.admit(limiter.check(&ip_key(ip)).await)?;
    }
    if let Some(limiter) = &state.limits.classloader_key {
        let status = limiter.check(&(team, input.license_key)).await;
        if seen.rate.is_none_or(|r| status.remaining <= r.remaining) {
            seen.rate = Some(status);
        }
        if !status.allowed() {
            return Err(rate_limited(&status));
        }
    }
    let context = team_context(state, team).await?;
    seen.context = Some(context.clone());
    if !context.team.features.classloader {
        return Err(ApiError::forbidden(
            "The classloader feature is off for this team",
        ));
    }
    let key = session_key(state, &context, input.session_key.as_str())?;
    let country = state.geo.country(ip);
    seen.country = country;
    let request = Request {
        kind: RequestKind::Classloader,
        license_key: &input.license_key,
        hardware_id: Some(&input.hardware_id),
        customer_id: input.customer_id,
        product_id: Some(input.product_id),
        version: input.version.as_ref(),
        branch: input.branch.as_ref(),
        device_name: None,
        platform: None,
        ip,
        country,
    };

    // 2 to 6.
    let now = Timestamp::now();
    let checked = check(state, &context, &request, seen, now).await?;
    let release = checked.release.clone().ok_or_else(release_not_found)?;
    let record = release.file.clone().ok_or_else(release_not_found)?;
    // The file is opened before anything is recorded, so a missing file records no device. An
    // open file stays readable even if the release is deleted meanwhile.
    let (file, stored_len) = match state.files.open_at(&record.key, 0).await {
        Ok(Some(opened)) => opened,
        Ok(None) => {
            tracing::warn!(key = %record.key, "a release's file is missing from the file store");
            return Err(release_not_found());
        }
        Err(e) => {
            return Err(ApiError::internal_because(
                "opening a release file failed",
                e,
            ));
        }
    };

    // The session key is taken only now, when the license and the product passed: nobody can
    // fill a team's record of used keys without a license of it.
    take_session_key(state, team, &key, now).await?;

    // 7 and 8.
    record_checked(state, &context, (&request, &checked), now).await?;

    // What the headers say.
    let product_name = state
        .store
        .get_product(team, input.product_id)
        .await?
        .map(|p| p.name)
        .unwrap_or_default();
    let latest = checked
        .catalog
        .as_ref()
        .and_then(|(_, releases)| latest_of_branch(releases, &release))
        .cloned();
    Ok(Granted {
        file,
        stored_len,
        key,
        release,
        record,
        latest,
        product_name,
    })
}

/// What the client steps record besides the answer, and the licenses they cache.
fn recorders(state: &AppState) -> Recorders<'_> {
    Recorders {
        usage: &state.usage,
        events: &state.client_events,
        licenses: &state.licenses,
        contexts: &state.contexts,
    }
}

/// Steps 2 to 6 of `request`, noting the product it is counted under.
async fn check(
    state: &AppState,
    context: &TeamContext,
    request: &Request<'_>,
    seen: &mut Seen,
    now: Timestamp,
) -> Result<steps::Checked, ApiError> {
    seen.note(state, request);
    let (product, license, checked) =
        steps::check(&state.store, recorders(state), context, request, now).await;
    seen.product = product;
    seen.license = license;
    checked
}

/// Steps 7 and 8 of a checked request, atomically in the store: the license after them.
async fn record_checked(
    state: &AppState,
    context: &TeamContext,
    request: (&Request<'_>, &steps::Checked),
    now: Timestamp,
) -> Result<(licensing_core::model::License, Option<LicenseSession>), ApiError> {
    steps::record(
        &state.store,
        recorders(state),
        context,
        state.max_records,
        request,
        now,
    )
    .await
}

fn release_not_found() -> ApiError {
    ApiError::new(ResultCode::ReleaseNotFound, "Release has no file")
}

/// The latest release of the served release's product and branch (the rule of verify's
/// `latestRelease`).
fn latest_of_branch<'a>(releases: &'a [Release], served: &Release) -> Option<&'a Release> {
    licensing_core::api::latest_release(releases, served.branch_id, false)
}

/// The team's context, or 404 `TEAM_NOT_FOUND`.
pub(crate) async fn team_context(
    state: &AppState,
    team: TeamId,
) -> Result<Arc<TeamContext>, ApiError> {
    state
        .contexts
        .get(&state.store, team)
        .await?
        .ok_or_else(|| ApiError::new(ResultCode::TeamNotFound, "Team not found"))
}

/// A session key decrypted (step 1), or the 400. It is marked used only once the license and
/// product pass ([`take_session_key`]).
fn session_key(
    state: &AppState,
    context: &TeamContext,
    text: &str,
) -> Result<SessionKey, ApiError> {
    state.metrics.rsa_operation("decrypt_session_key");
    context.keys.decrypt_session_key(text).map_err(|_| {
        ApiError::new(
            ResultCode::InvalidSessionKey,
            "Invalid session key: send the hex of an RSA-OAEP (SHA-1) encryption of at least 16 random bytes under the team's public key",
        )
    })
}

/// How long a session key stays used (protocol.md section 2).
const SESSION_KEY_WINDOW_MS: i64 = 15 * 60 * 1000;
/// Session keys a team may have used within the window; past it, downloads are refused with
/// 429 until older keys leave the window (about 110 downloads a second, sustained).
const SESSION_KEYS_PER_TEAM: u32 = 100_000;

/// Marks a session key used by `team`, durably: 400 when the team used it within 15 minutes,
/// 429 when the team used too many lately. Keys are remembered by a fingerprint of the derived
/// AES key, not of the ciphertext: RSA-OAEP is randomized, so one secret encrypted twice gives
/// two ciphertexts, and hex may be sent in either case.
async fn take_session_key(
    state: &AppState,
    team: TeamId,
    key: &SessionKey,
    now: Timestamp,
) -> Result<(), ApiError> {
    use sha2::Digest as _;
    let digest = sha2::Sha256::new()
        .chain_update(b"licensing session key\n")
        .chain_update(key.as_bytes())
        .finalize();
    let mut fingerprint = [0u8; 16];
    fingerprint.copy_from_slice(&digest[..16]);
    let taken = state
        .store
        .use_session_key(
            team,
            fingerprint,
            now,
            SESSION_KEY_WINDOW_MS,
            SESSION_KEYS_PER_TEAM,
        )
        .await?;
    match taken {
        Ok(()) => Ok(()),
        Err(SessionKeyRefused::Reused) => Err(ApiError::new(
            ResultCode::InvalidSessionKey,
            "Invalid session key: session key already used; draw a new one for every download",
        )),
        Err(SessionKeyRefused::Full) => Err(ApiError::new(
            ResultCode::RateLimit,
            "Too many downloads for this team in the last 15 minutes: retry later",
        )),
    }
}
