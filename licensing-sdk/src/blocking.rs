//! The same client for programs without an async runtime: each call blocks until it is done.
//! The client owns a small runtime (one worker thread), which also runs the background heartbeat
//! while the program does other work. Do not call it from inside another tokio runtime.

use std::io::Write;
use std::sync::Arc;

use licensing_core::api::requests::ClientBody;
use licensing_core::{TeamId, Timestamp};

use crate::{
    DownloadRequest, Error, Heartbeat, HeartbeatSchedule, HeartbeatTask, OfflineCache, OnChange,
    OnSessionChange, ReleaseInfo, SessionState, Verified,
};

/// A blocking [`crate::LicenseClient`].
#[derive(Clone, Debug)]
pub struct LicenseClient {
    runtime: Arc<tokio::runtime::Runtime>,
    inner: crate::LicenseClient,
}

impl LicenseClient {
    /// See [`crate::LicenseClient::new`].
    pub fn new(
        base_url: &str,
        team: TeamId,
        public_key: &str,
        signing_key: &str,
    ) -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("licensing-sdk")
            .enable_all()
            .build()?;
        // reqwest's client must be made inside the runtime it runs on.
        let inner = runtime.block_on(async {
            crate::LicenseClient::new(base_url, team, public_key, signing_key)
        })?;
        Ok(Self {
            runtime: Arc::new(runtime),
            inner,
        })
    }

    /// See [`crate::LicenseClient::trust_signing_key`].
    pub fn trust_signing_key(mut self, signing_key: &str) -> Result<Self, Error> {
        self.inner = self.inner.trust_signing_key(signing_key)?;
        Ok(self)
    }

    /// See [`crate::LicenseClient::without_device_label`].
    pub fn without_device_label(mut self) -> Self {
        self.inner = self.inner.without_device_label();
        self
    }

    /// See [`crate::LicenseClient::with_device_label`].
    pub fn with_device_label(mut self, label: licensing_core::model::DeviceLabel) -> Self {
        self.inner = self.inner.with_device_label(label);
        self
    }

    /// The async client inside.
    pub fn inner(&self) -> &crate::LicenseClient {
        &self.inner
    }

    /// See [`crate::LicenseClient::verify`].
    pub fn verify(&self, body: &ClientBody) -> Result<Verified, Error> {
        self.runtime.block_on(self.inner.verify(body))
    }

    /// (ext) See [`crate::LicenseClient::record_usage`].
    pub fn record_usage(
        &self,
        body: &ClientBody,
        meter: &str,
        quantity: u64,
    ) -> Result<crate::UsageRecorded, Error> {
        self.runtime
            .block_on(self.inner.record_usage(body, meter, quantity))
    }

    /// (ext) See [`crate::LicenseClient::record_usage_as`].
    pub fn record_usage_as(
        &self,
        body: &ClientBody,
        meter: &str,
        quantity: u64,
        event_id: &str,
    ) -> Result<crate::UsageRecorded, Error> {
        self.runtime
            .block_on(self.inner.record_usage_as(body, meter, quantity, event_id))
    }

    /// (ext) See [`crate::LicenseClient::record_usage_batch`].
    pub fn record_usage_batch(
        &self,
        body: &ClientBody,
        events: &[licensing_core::api::requests::UsageEvent],
    ) -> Result<Vec<licensing_core::api::UsageEventResult>, Error> {
        self.runtime
            .block_on(self.inner.record_usage_batch(body, events))
    }

    /// See [`crate::LicenseClient::verify_with_grace`].
    pub fn verify_with_grace(
        &self,
        body: &ClientBody,
        cache: &OfflineCache,
    ) -> Result<Verified, Error> {
        self.runtime
            .block_on(self.inner.verify_with_grace(body, cache))
    }

    /// See [`crate::LicenseClient::checkout`].
    pub fn checkout(
        &self,
        body: &ClientBody,
        ttl: Option<u32>,
        path: impl AsRef<std::path::Path>,
    ) -> Result<crate::CheckedOut, Error> {
        self.runtime.block_on(self.inner.checkout(body, ttl, path))
    }

    /// See [`crate::LicenseClient::heartbeat`].
    pub fn heartbeat(&self, body: &ClientBody) -> Result<Heartbeat, Error> {
        self.runtime.block_on(self.inner.heartbeat(body))
    }

    /// See [`crate::LicenseClient::download`].
    pub fn download<W: Write>(
        &self,
        request: &DownloadRequest,
        out: W,
    ) -> Result<ReleaseInfo, Error> {
        self.runtime.block_on(self.inner.download(request, out))
    }

    /// Starts the background heartbeat on the client's runtime; it runs until the returned task
    /// is dropped.
    pub fn spawn_heartbeat(
        &self,
        body: ClientBody,
        schedule: HeartbeatSchedule,
        on_change: Option<OnChange>,
    ) -> HeartbeatTask {
        let _entered = self.runtime.enter();
        self.inner.spawn_heartbeat(body, schedule, on_change)
    }

    /// See [`crate::LicenseClient::start_session`]: the guard heartbeats on the client's
    /// runtime while the program does other work.
    pub fn start_session(
        &self,
        body: &ClientBody,
        on_change: Option<OnSessionChange>,
    ) -> Result<Session, Error> {
        let inner = self
            .runtime
            .block_on(self.inner.start_session(body, on_change))?;
        Ok(Session {
            runtime: self.runtime.clone(),
            inner: Some(inner),
        })
    }

    /// The offline cache's answer for `body` now, without asking the server.
    pub fn cached(
        &self,
        body: &ClientBody,
        cache: &OfflineCache,
    ) -> Result<Option<Verified>, Error> {
        cache.load(&self.inner, body, Timestamp::now())
    }
}

/// A blocking [`crate::Session`]: it heartbeats on the client's runtime, and dropping it ends
/// the session before the drop returns.
#[derive(Debug)]
pub struct Session {
    runtime: Arc<tokio::runtime::Runtime>,
    inner: Option<crate::Session>,
}

impl Session {
    fn inner(&self) -> &crate::Session {
        // Present until `end` or the drop takes it.
        self.inner
            .as_ref()
            .unwrap_or_else(|| unreachable!("a session is only taken by end or drop"))
    }

    /// See [`crate::Session::id`].
    pub fn id(&self) -> licensing_core::LicenseSessionId {
        self.inner().id()
    }

    /// See [`crate::Session::started`].
    pub fn started(&self) -> &licensing_core::model::SessionData {
        self.inner().started()
    }

    /// See [`crate::Session::verified`].
    pub fn verified(&self) -> &Verified {
        self.inner().verified()
    }

    /// See [`crate::Session::state`].
    pub fn state(&self) -> SessionState {
        self.inner().state()
    }

    /// See [`crate::Session::subscribe`].
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<SessionState> {
        self.inner().subscribe()
    }

    /// See [`crate::Session::end`].
    pub fn end(mut self) -> Result<(), Error> {
        match self.inner.take() {
            Some(inner) => self.runtime.block_on(inner.end()),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take()
            && let Err(e) = self.runtime.block_on(inner.end())
        {
            tracing::debug!(error = %e, "ending a dropped session failed");
        }
    }
}
