//! The background heartbeat: a task that sends a heartbeat every interval (30 minutes by
//! default), reports changes of the license's state through a `watch` channel and an optional
//! callback, retries unreachable servers with backoff, and stops when its handle is dropped.

use std::sync::Arc;
use std::time::Duration;

use licensing_core::api::ResultCode;
use licensing_core::api::requests::ClientBody;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::{Error, LicenseClient};

/// What the last heartbeat said about the license.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LicenseState {
    /// No heartbeat has been answered yet.
    Unknown,
    /// `VALID`.
    Valid,
    /// `VALID`, in a grace period that ends at `until`: the license has expired and its policy
    /// still lets it run for a while. Warn the user (renew before `until`).
    Grace {
        /// When the grace period ends (the license is refused from then on).
        until: licensing_core::Timestamp,
    },
    /// `LICENSE_SUSPENDED`.
    Suspended,
    /// `LICENSE_EXPIRED`.
    Expired,
    /// `IP_LIMIT_REACHED` or `HWID_LIMIT_REACHED`.
    LimitReached(ResultCode),
    /// Any other refusal (not found, blacklisted, ...), with its code.
    Refused(ResultCode),
    /// The server could not be reached (or its answers were not authentic); retrying.
    Unreachable,
}

impl LicenseState {
    fn of(outcome: &Result<crate::client::Heartbeat, Error>) -> Option<Self> {
        Some(match outcome {
            Ok(beat) => match beat.data.license.grace_until {
                Some(until) => Self::Grace { until },
                None => Self::Valid,
            },
            Err(Error::Api { code, .. }) => match code {
                ResultCode::LicenseSuspended => Self::Suspended,
                ResultCode::LicenseExpired => Self::Expired,
                ResultCode::IpLimitReached | ResultCode::HwidLimitReached => {
                    Self::LimitReached(*code)
                }
                // Too many requests is not news about the license: retry later.
                ResultCode::RateLimit | ResultCode::InternalServerError => return None,
                other => Self::Refused(*other),
            },
            Err(_) => Self::Unreachable,
        })
    }

    /// Whether the application may keep running (in a grace period too).
    pub fn is_valid(&self) -> bool {
        matches!(self, Self::Valid | Self::Grace { .. })
    }
}

/// Timing of the background heartbeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeartbeatSchedule {
    /// Between heartbeats that were answered.
    pub interval: Duration,
    /// The first retry after a failure; doubled per failure up to `max_retry`.
    pub min_retry: Duration,
    /// The longest wait between retries.
    pub max_retry: Duration,
}

impl Default for HeartbeatSchedule {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(30 * 60),
            min_retry: Duration::from_secs(5),
            max_retry: Duration::from_secs(5 * 60),
        }
    }
}

/// A callback told of every change of state.
pub type OnChange = Arc<dyn Fn(&LicenseState) + Send + Sync>;

/// The running background heartbeat. Dropping it (or calling [`HeartbeatTask::stop`]) stops it.
#[derive(Debug)]
pub struct HeartbeatTask {
    state: watch::Receiver<LicenseState>,
    task: Option<JoinHandle<()>>,
}

impl HeartbeatTask {
    /// The latest state.
    pub fn state(&self) -> LicenseState {
        self.state.borrow().clone()
    }

    /// A receiver that sees every change (`changed().await`).
    pub fn subscribe(&self) -> watch::Receiver<LicenseState> {
        self.state.clone()
    }

    /// Stops the task and waits until it has stopped.
    pub async fn stop(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            task.await.ok();
        }
    }
}

impl Drop for HeartbeatTask {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl LicenseClient {
    /// Starts the background heartbeat for `body` (which must name the device) on the current
    /// tokio runtime. The first heartbeat is sent at once.
    pub fn spawn_heartbeat(
        &self,
        body: ClientBody,
        schedule: HeartbeatSchedule,
        on_change: Option<OnChange>,
    ) -> HeartbeatTask {
        let (tx, rx) = watch::channel(LicenseState::Unknown);
        let client = self.clone();
        let task = tokio::spawn(async move {
            let mut retry = schedule.min_retry;
            loop {
                let outcome = client.heartbeat(&body).await;
                let wait = match LicenseState::of(&outcome) {
                    Some(state) => {
                        let wait = if state == LicenseState::Unreachable {
                            let wait = retry;
                            retry = (retry * 2).min(schedule.max_retry);
                            wait
                        } else {
                            retry = schedule.min_retry;
                            schedule.interval
                        };
                        if *tx.borrow() != state {
                            if let Some(callback) = &on_change {
                                callback(&state);
                            }
                            tx.send_replace(state);
                        }
                        wait
                    }
                    None => {
                        let wait = retry;
                        retry = (retry * 2).min(schedule.max_retry);
                        wait
                    }
                };
                if let Err(e) = &outcome {
                    tracing::debug!(error = %e, "heartbeat failed");
                }
                tokio::time::sleep(wait).await;
            }
        });
        HeartbeatTask {
            state: rx,
            task: Some(task),
        }
    }
}
