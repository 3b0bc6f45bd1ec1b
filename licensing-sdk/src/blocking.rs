//! The same client for programs without an async runtime: each call blocks until it is done.
//! The client owns a small runtime (one worker thread), which also runs the background heartbeat
//! while the program does other work. Do not call it from inside another tokio runtime.

use std::io::Write;
use std::sync::Arc;

use licensing_core::api::requests::ClientBody;
use licensing_core::{TeamId, Timestamp};

use crate::{
    DownloadRequest, Error, Heartbeat, HeartbeatSchedule, HeartbeatTask, OfflineCache, OnChange,
    ReleaseInfo, Verified,
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

    /// The async client inside.
    pub fn inner(&self) -> &crate::LicenseClient {
        &self.inner
    }

    /// See [`crate::LicenseClient::verify`].
    pub fn verify(&self, body: &ClientBody) -> Result<Verified, Error> {
        self.runtime.block_on(self.inner.verify(body))
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

    /// The offline cache's answer for `body` now, without asking the server.
    pub fn cached(
        &self,
        body: &ClientBody,
        cache: &OfflineCache,
    ) -> Result<Option<Verified>, Error> {
        cache.load(&self.inner, body, Timestamp::now())
    }
}
