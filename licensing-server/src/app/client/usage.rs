//! (ext) Usage meters on the client API: `POST {client}/usage` counts what an application
//! used after verify's checks (the store decides each increment atomically), and verify and
//! heartbeat answer the meters' standing.

use std::net::IpAddr;

use licensing_core::api::requests::UsageBody;
use licensing_core::api::{UsageBatchData, UsageEventResult};
use licensing_core::model::{License, LicenseMeter, MeterState, UsageIncrement, UsageOutcome};
use licensing_core::store::UsageStore;
use licensing_core::verify::RequestKind;
use licensing_core::{ApiError, ResultCode, TeamId, Timestamp};

use super::{Seen, SessionAsk, admit};
use crate::state::AppState;

/// The meters of `license` (its policy's applied) with their standing at `now`: `[]`, and
/// nothing read, without meters.
pub(crate) async fn meters_now<S: UsageStore>(
    store: &S,
    license: &License,
    now: Timestamp,
) -> Result<Vec<LicenseMeter>, ApiError> {
    if license.meters.is_empty() {
        return Ok(Vec::new());
    }
    let used = store
        .used_now(license.team_id, license.id, &license.meters, now)
        .await?;
    Ok(license
        .meters
        .iter()
        .zip(used)
        .map(|(m, used)| m.state(used, now).into())
        .collect())
}

/// What usage came to.
pub(crate) enum Counted {
    /// One event: counted, or refused (`USAGE_LIMIT_REACHED`) with the meter's standing.
    One(UsageOutcome),
    /// A batch: each event's result.
    Batch(UsageBatchData),
}

/// A usage request that passed verify's checks: what it counted, and the signed challenge.
pub(crate) struct UsageAnswer {
    /// What was counted.
    pub(crate) counted: Counted,
    /// The challenge, signed with the team's RSA key.
    pub(crate) challenge: Option<String>,
}

/// `POST {client}/usage` of `input` from `ip` to `team`: verify's checks (rate limited and
/// counted as a verify, the device and address recorded), then each event's meter found among
/// the license's (404 `METER_NOT_FOUND` naming those it lacks, nothing counted), then the
/// increments counted atomically in the store.
pub(crate) async fn record_usage(
    state: &AppState,
    team: TeamId,
    input: &UsageBody,
    ip: IpAddr,
    seen: &mut Seen,
) -> Result<UsageAnswer, ApiError> {
    let admitted = admit(
        state,
        RequestKind::Verify,
        (team, &input.client, ip),
        SessionAsk::None,
        seen,
    )
    .await?;
    let license = &admitted.license;
    let mut unknown: Vec<&str> = input
        .events
        .iter()
        .map(|e| e.meter.as_str())
        .filter(|code| !license.meters.iter().any(|m| m.code == *code))
        .collect();
    unknown.dedup();
    if !unknown.is_empty() {
        return Err(licensing_core::verify::meter_not_found(
            &license.meters,
            &unknown,
        ));
    }
    let increments: Vec<UsageIncrement> = input
        .events
        .iter()
        .filter_map(|e| {
            let meter = license.meters.iter().find(|m| m.code == e.meter)?;
            Some(UsageIncrement {
                meter: meter.clone(),
                quantity: e.quantity,
                at: e.at.unwrap_or(admitted.now),
                event_id: e.event_id.clone(),
            })
        })
        .collect();
    let mut outcomes = state
        .store
        .record_usage(
            license,
            &increments,
            admitted.context.client_events,
            admitted.now,
        )
        .await?;
    let challenge = match &input.client.challenge {
        Some(challenge) => {
            state.metrics.rsa_operation("sign_challenge");
            Some(
                admitted
                    .context
                    .keys
                    .sign_challenge(challenge.as_str())
                    .map_err(|e| ApiError::internal_because("signing the challenge failed", e))?,
            )
        }
        None => None,
    };
    let counted = if input.batch {
        Counted::Batch(UsageBatchData {
            events: increments
                .into_iter()
                .zip(outcomes)
                .map(|(inc, outcome)| UsageEventResult {
                    event_id: inc.event_id,
                    code: if outcome.counted {
                        ResultCode::Valid
                    } else {
                        ResultCode::UsageLimitReached
                    },
                    state: outcome.state,
                })
                .collect(),
        })
    } else {
        let outcome = outcomes
            .pop()
            .ok_or_else(|| ApiError::internal_because("usage", "the store answered nothing"))?;
        Counted::One(outcome)
    };
    Ok(UsageAnswer { counted, challenge })
}

/// The details of a refused increment: what was used of what, and when it resets.
pub(crate) fn limit_details(state: &MeterState) -> String {
    let limit = state.limit.unwrap_or_default();
    match state.resets_at {
        Some(at) => format!(
            "Usage limit reached: {} of {limit} {} used this period; it starts again at {at}",
            state.used, state.meter
        ),
        None => format!(
            "Usage limit reached: {} of {limit} {} used",
            state.used, state.meter
        ),
    }
}
