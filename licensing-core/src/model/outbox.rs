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
    /// The name the recipient sees as the sender (the team's), beside the server's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    /// The language the message is written in, a tag such as `en` or `de`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

impl OutboxMessage {
    /// A message of `team` to `to`, due at `now`, with no sender name and no language stated.
    pub fn new(
        team: TeamId,
        to: impl Into<String>,
        subject: String,
        body: String,
        now: Timestamp,
    ) -> Self {
        Self {
            id: MessageId::new(),
            team_id: team,
            to: to.into(),
            subject,
            body,
            attempts: 0,
            next_attempt_at: now,
            last_error: None,
            created_at: now,
            sender_name: None,
            language: None,
        }
    }

    /// The message sent in the name of `sender` (a team's name), written in `language`.
    #[must_use]
    pub fn signed(mut self, sender: &str, language: &str) -> Self {
        self.sender_name = Some(sender.to_owned());
        self.language = Some(language.to_owned());
        self
    }

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
