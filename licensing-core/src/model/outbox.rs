use serde::{Deserialize, Serialize};

use crate::{MessageId, TeamId, Timestamp};

/// An e-mail waiting in the outbox until a worker delivers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxMessage {
    /// Id.
    pub id: MessageId,
    /// The team it is sent for.
    pub team_id: TeamId,
    /// Recipient address.
    pub to: String,
    /// Subject line.
    pub subject: String,
    /// Plain-text body.
    pub body: String,
    /// Delivery attempts so far.
    pub attempts: u32,
    /// When to try next.
    pub next_attempt_at: Timestamp,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When it was queued.
    pub created_at: Timestamp,
}

impl OutboxMessage {
    /// The day (days since the epoch) a message queued at `at` counts against.
    pub fn day_of(at: Timestamp) -> i64 {
        at.as_millis().div_euclid(86_400_000)
    }

    /// The delay before the next attempt after `attempts` failures: 2^n seconds, at most 15
    /// minutes.
    pub fn backoff_seconds(attempts: u32) -> u32 {
        2u32.saturating_pow(attempts.min(20)).min(15 * 60)
    }
}
