//! (ext) Usage meters: report what the application used (`POST {client}/usage`), safely
//! retried.

use std::time::Duration;

use licensing_core::api::requests::{ClientBody, UsageEvent, UsageRequest};
use licensing_core::api::{Envelope, ResultCode, UsageBatchData, UsageEventResult};
use licensing_core::model::MeterState;
use rand::RngCore;

use crate::Error;
use crate::client::{LicenseClient, check_answer, verify_signature};

/// How many times a report is sent before its error is returned (transport errors, 5xx and
/// 429 are retried; the server counts the event once, whatever reaches it).
const ATTEMPTS: u32 = 4;

/// The wait before the first retry; doubled per retry.
const FIRST_RETRY: Duration = Duration::from_millis(250);

/// What a usage report came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageRecorded {
    /// Whether it was counted; `false`: the meter's limit for the period left no room
    /// (`USAGE_LIMIT_REACHED`), and nothing was counted.
    pub counted: bool,
    /// The meter's standing after it: used, limit, remaining, the period and when it resets.
    pub state: MeterState,
}

/// A fresh event id: `sdk-` and 32 hex digits.
pub fn new_event_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("sdk-{}", hex::encode(bytes))
}

impl LicenseClient {
    fn usage_url(&self) -> String {
        format!("{}/api/v1/client/teams/{}/usage", self.base, self.team)
    }

    /// Reports `quantity` (1 to 1,000,000) of meter `meter` used by the license `body` names
    /// (a verify's body: the device, the product… as the license needs). Every check of a
    /// verify applies first. The report carries a fresh event id and is retried, with the same
    /// id, when the server cannot be reached or answers 5xx or 429: the server counts it once.
    /// A meter at its limit is `Ok` with `counted: false`.
    pub async fn record_usage(
        &self,
        body: &ClientBody,
        meter: &str,
        quantity: u64,
    ) -> Result<UsageRecorded, Error> {
        self.record_usage_as(body, meter, quantity, &new_event_id())
            .await
    }

    /// [`record_usage`](Self::record_usage) under the application's own `event_id` (1 to 255
    /// visible ASCII characters), for usage it persists and may report again after a restart:
    /// within 24 hours, a report with the same id answers the first answer and counts nothing.
    pub async fn record_usage_as(
        &self,
        body: &ClientBody,
        meter: &str,
        quantity: u64,
        event_id: &str,
    ) -> Result<UsageRecorded, Error> {
        let request = |client: ClientBody| UsageRequest {
            client,
            meter: Some(meter.to_owned()),
            quantity: Some(quantity),
            event_id: Some(event_id.to_owned()),
            events: None,
        };
        let (data, valid) = self.send_usage(body, request).await?;
        let state: MeterState = serde_json::from_value(data)
            .map_err(|e| Error::Protocol(format!("the answer's data: {e}")))?;
        Ok(UsageRecorded {
            counted: valid,
            state,
        })
    }

    /// Reports usage recorded while offline, 1 to 1,000 events at once, each counted in the
    /// period of its `at` (not in the future) and answered on its own, in order. Events
    /// without an `event_id` get a fresh one, so that the batch is retried safely like
    /// [`record_usage`](Self::record_usage).
    pub async fn record_usage_batch(
        &self,
        body: &ClientBody,
        events: &[UsageEvent],
    ) -> Result<Vec<UsageEventResult>, Error> {
        let events: Vec<UsageEvent> = events
            .iter()
            .map(|e| UsageEvent {
                event_id: e.event_id.clone().or_else(|| Some(new_event_id())),
                ..e.clone()
            })
            .collect();
        let request = |client: ClientBody| UsageRequest {
            client,
            meter: None,
            quantity: None,
            event_id: None,
            events: Some(events.clone()),
        };
        let (data, _) = self.send_usage(body, request).await?;
        let data: UsageBatchData = serde_json::from_value(data)
            .map_err(|e| Error::Protocol(format!("the answer's data: {e}")))?;
        Ok(data.events)
    }

    /// Sends a usage request (with a fresh challenge each attempt), retrying what may pass
    /// later; the answer's data and whether it was `VALID` (a signed `USAGE_LIMIT_REACHED`
    /// carries the meter's standing as its data).
    async fn send_usage(
        &self,
        body: &ClientBody,
        request: impl Fn(ClientBody) -> UsageRequest,
    ) -> Result<(serde_json::Value, bool), Error> {
        let mut wait = FIRST_RETRY;
        let mut attempt = 1;
        loop {
            let outcome = self.usage_once(body, &request).await;
            let retry = match &outcome {
                Err(Error::Transport(_)) => true,
                Err(Error::Api { status, code, .. }) => {
                    *status >= 500 || *code == ResultCode::RateLimit
                }
                _ => false,
            };
            if !retry || attempt >= ATTEMPTS {
                return outcome;
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
            attempt += 1;
        }
    }

    async fn usage_once(
        &self,
        body: &ClientBody,
        request: &impl Fn(ClientBody) -> UsageRequest,
    ) -> Result<(serde_json::Value, bool), Error> {
        let (challenge, client) = self.with_challenge_body(body)?;
        let json =
            serde_json::to_vec(&request(client)).map_err(|e| Error::Protocol(e.to_string()))?;
        let (status, exchange) = self.post_to(self.usage_url(), json).await?;
        // An unsigned 5xx or 429 (a proxy's, a server going down) is worth another attempt,
        // never a success.
        if (status >= 500 || status == 429) && exchange.signature.is_empty() {
            let code = serde_json::from_slice::<Envelope<serde_json::Value>>(&exchange.response)
                .ok()
                .and_then(|e| e.result.code)
                .unwrap_or(ResultCode::InternalServerError);
            return Err(Error::Api {
                status,
                code,
                details: format!("HTTP {status}, unsigned"),
                errors: Vec::new(),
            });
        }
        // A meter at its limit is a signed refusal whose data is the meter's standing.
        if status == 403
            && let Ok(envelope) =
                serde_json::from_slice::<Envelope<serde_json::Value>>(&exchange.response)
            && envelope.result.code == Some(ResultCode::UsageLimitReached)
        {
            if exchange.signature.is_empty() {
                return Err(Error::Forged("an unsigned refusal"));
            }
            verify_signature(&self.keys, &exchange)?;
            return Ok((envelope.data, false));
        }
        let (data, result) = check_answer(&self.keys, status, &exchange)?;
        let response = result
            .challenge_response
            .as_deref()
            .ok_or(Error::Forged("the answer has no challengeResponse"))?;
        self.keys
            .rsa
            .verify_challenge(&challenge, response)
            .map_err(|_| Error::Forged("challengeResponse does not verify"))?;
        Ok((data, true))
    }
}
