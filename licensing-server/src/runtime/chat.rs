//! The chat directory: checks a customer's `chatId` over HTTP (Discord-style
//! `GET {base}/users/{id}` with `Authorization: Bot <token>`) and fills the chat account's names.

use std::time::Duration;

use licensing_core::ApiError;
use licensing_core::validate::ChatId;
use serde::Deserialize;

/// A user as the directory describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ChatUser {
    /// User name.
    #[serde(default)]
    pub username: Option<String>,
    /// Avatar hash or URL.
    #[serde(default)]
    pub avatar: Option<String>,
    /// Display name.
    #[serde(default)]
    pub global_name: Option<String>,
}

/// A configured chat directory.
#[derive(Clone, Debug)]
pub struct ChatDirectory {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl ChatDirectory {
    /// A directory at `base` (such as `https://discord.com/api/v10`) with a bot token.
    pub fn new(base: &str, token: &str) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(3))
            .build()?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
        })
    }

    /// Looks a user up: unknown ids and an unreachable directory are both 400s naming `chatId`.
    pub async fn lookup(&self, id: &ChatId) -> Result<ChatUser, ApiError> {
        let url = format!("{}/users/{}", self.base, id.as_str());
        let response = self
            .client
            .get(&url)
            .header("authorization", format!("Bot {}", self.token))
            .send()
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "chat directory unreachable");
                ApiError::bad_field(
                    "chatId",
                    "could not be checked: the chat directory did not answer; try again",
                )
            })?;
        match response.status().as_u16() {
            200 => response.json::<ChatUser>().await.map_err(|e| {
                tracing::warn!(error = %e, "chat directory answered with an unexpected body");
                ApiError::bad_field(
                    "chatId",
                    "could not be checked: the chat directory answered unexpectedly",
                )
            }),
            404 => Err(ApiError::bad_field("chatId", "no chat user has this id")),
            status => {
                tracing::warn!(status, "chat directory refused the lookup");
                Err(ApiError::bad_field(
                    "chatId",
                    "could not be checked: the chat directory refused the lookup (check the bot token)",
                ))
            }
        }
    }
}
