//! Floating sessions: [`LicenseClient::start_session`] takes one of the license's concurrent
//! seats and returns a [`Session`], a guard that heartbeats in the background at a third of the
//! session's TTL, reports a lost session (revoked, expired while the server was out of reach,
//! or the license refused) through a `watch` channel and an optional callback, and gives the
//! seat back on [`Session::end`] or when dropped.

use std::sync::Arc;
use std::time::Duration;

use licensing_core::api::requests::ClientBody;
use licensing_core::api::{ResultCode, SessionEndData, SessionStartData};
use licensing_core::model::SessionData;
use licensing_core::{LicenseKey, LicenseSessionId, Timestamp};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::client::Verified;
use crate::{Error, LicenseClient};

/// What the guard knows of its session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionState {
    /// The seat is held: the last start or heartbeat was answered. The session lives until
    /// `expires_at` unless a heartbeat extends it.
    Held {
        /// When it stops counting without a heartbeat.
        expires_at: Timestamp,
    },
    /// The last heartbeat did not reach the server (or its answer was not authentic); the
    /// guard retries, and the seat is held until `expires_at`.
    Unreachable {
        /// When it stops counting without a heartbeat.
        expires_at: Timestamp,
    },
    /// The seat is lost: the server refused the session's heartbeat with this code
    /// (`SESSION_NOT_FOUND`: revoked, or expired while the server was out of reach;
    /// `LICENSE_SUSPENDED`, `LICENSE_EXPIRED`, ...), or it expired before a heartbeat got
    /// through (`SESSION_NOT_FOUND`). The guard stopped heartbeating: stop the application,
    /// or start a new session.
    Lost(ResultCode),
    /// The application ended the session.
    Ended,
}

impl SessionState {
    /// Whether the application holds its seat.
    pub fn is_held(&self) -> bool {
        matches!(self, Self::Held { .. } | Self::Unreachable { .. })
    }
}

/// A callback told of every change of a session's state.
pub type OnSessionChange = Arc<dyn Fn(&SessionState) + Send + Sync>;

/// A held floating session: heartbeats in the background while it lives, and gives its seat
/// back when ended or dropped.
///
/// Dropping it ends the session in the background on the runtime that started it (a
/// best-effort request); call [`Session::end`] to know the seat is free. A copy that crashes
/// never ends its session: the server frees the seat when the TTL passes without a heartbeat.
#[derive(Debug)]
pub struct Session {
    client: LicenseClient,
    license_key: LicenseKey,
    session: SessionData,
    verified: Verified,
    state: watch::Receiver<SessionState>,
    task: Option<JoinHandle<()>>,
    runtime: tokio::runtime::Handle,
    ended: bool,
}

impl Session {
    /// The session's id.
    pub fn id(&self) -> LicenseSessionId {
        self.session.id
    }

    /// The session as the start answered it (its TTL and first expiry).
    pub fn started(&self) -> &SessionData {
        &self.session
    }

    /// The verify answer of the start: the license, its customers and products.
    pub fn verified(&self) -> &Verified {
        &self.verified
    }

    /// The latest state.
    pub fn state(&self) -> SessionState {
        self.state.borrow().clone()
    }

    /// A receiver that sees every change (`changed().await`).
    pub fn subscribe(&self) -> watch::Receiver<SessionState> {
        self.state.clone()
    }

    /// Stops heartbeating and ends the session: its seat is free when this returns `Ok`. A
    /// session the server no longer has (revoked or expired) is `Err` with
    /// `SESSION_NOT_FOUND`: its seat is free too.
    pub async fn end(mut self) -> Result<(), Error> {
        self.ended = true;
        if let Some(task) = self.task.take() {
            task.abort();
            task.await.ok();
        }
        self.client
            .end_session(&self.license_key, self.session.id)
            .await
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if !self.ended {
            let (client, key, id) = (self.client.clone(), self.license_key, self.session.id);
            self.runtime.spawn(async move {
                if let Err(e) = client.end_session(&key, id).await {
                    tracing::debug!(error = %e, "ending a dropped session failed");
                }
            });
        }
    }
}

impl LicenseClient {
    /// Starts a floating session: a verify (the body must name the device) that also takes one
    /// of the license's concurrent seats, refused with `SESSION_LIMIT_REACHED`
    /// ([`Error::Api`]) when as many copies run as the license allows. The returned guard
    /// heartbeats at a third of the session's TTL on the current tokio runtime and tells
    /// `on_change` (and [`Session::subscribe`]rs) when the session is lost.
    pub async fn start_session(
        &self,
        body: &ClientBody,
        on_change: Option<OnSessionChange>,
    ) -> Result<Session, Error> {
        if body.hardware_id.is_none() {
            return Err(Error::Config(
                "a session belongs to a machine: set the body's hardware_id".into(),
            ));
        }
        let mut body = body.clone();
        body.session_id = None;
        body.ttl = None;
        let (challenge, request) = self.with_challenge(&body)?;
        let (status, exchange) = self.post("sessions/start", request).await?;
        let (data, result) =
            self.accept::<SessionStartData>(status, &exchange, Some(&challenge))?;
        let session = data.session;
        let (tx, rx) = watch::channel(SessionState::Held {
            expires_at: session.expires_at,
        });
        let mut beat = body.clone();
        beat.session_id = Some(session.id);
        let task = tokio::spawn(heartbeat_loop(
            self.clone(),
            beat,
            session.clone(),
            tx,
            on_change,
        ));
        Ok(Session {
            client: self.clone(),
            license_key: body.license_key,
            session,
            verified: Verified {
                data: data.verify,
                result,
                offline: false,
            },
            state: rx,
            task: Some(task),
            runtime: tokio::runtime::Handle::current(),
            ended: false,
        })
    }

    /// Ends session `id` of the license `key`: its seat is free when this returns `Ok`.
    pub async fn end_session(&self, key: &LicenseKey, id: LicenseSessionId) -> Result<(), Error> {
        let request = serde_json::to_vec(&licensing_core::api::requests::SessionEndBody {
            license_key: *key,
            session_id: id,
        })
        .map_err(|e| Error::Protocol(e.to_string()))?;
        let (status, exchange) = self.post("sessions/end", request).await?;
        let (data, _) = self.accept::<SessionEndData>(status, &exchange, None)?;
        if data.session.id != id {
            return Err(Error::Protocol("the end answered another session".into()));
        }
        Ok(())
    }
}

/// The time between heartbeats of a session of `ttl` seconds: a third of it.
fn interval(ttl: u32) -> Duration {
    Duration::from_millis(u64::from(ttl) * 1000 / 3)
}

/// Heartbeats `body` (with its `sessionId`) until the session is lost; each answer moves the
/// expiry, each failure to reach the server is retried sooner, until the session expires.
async fn heartbeat_loop(
    client: LicenseClient,
    body: ClientBody,
    started: SessionData,
    tx: watch::Sender<SessionState>,
    on_change: Option<OnSessionChange>,
) {
    let set = |state: SessionState| {
        if *tx.borrow() != state {
            if let Some(callback) = &on_change {
                callback(&state);
            }
            tx.send_replace(state);
        }
    };
    let ttl = started.ttl;
    let mut expires_at = started.expires_at;
    let mut wait = interval(ttl);
    loop {
        tokio::time::sleep(wait).await;
        match client.heartbeat(&body).await {
            Ok(beat) => {
                if let Some(session) = beat.data.session {
                    expires_at = session.expires_at;
                }
                set(SessionState::Held { expires_at });
                wait = interval(ttl);
            }
            Err(Error::Api { code, .. })
                if !matches!(
                    code,
                    ResultCode::RateLimit | ResultCode::InternalServerError
                ) =>
            {
                set(SessionState::Lost(code));
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "session heartbeat failed");
                if Timestamp::now() >= expires_at {
                    set(SessionState::Lost(ResultCode::SessionNotFound));
                    return;
                }
                set(SessionState::Unreachable { expires_at });
                // Retry sooner, and never later than a moment before the expiry.
                let left = (expires_at.as_millis() - Timestamp::now().as_millis()).max(0);
                let retry = interval(ttl) / 3;
                wait = retry.min(Duration::from_millis(u64::try_from(left).unwrap_or(0) / 2));
                wait = wait.max(Duration::from_millis(200));
            }
        }
    }
}
