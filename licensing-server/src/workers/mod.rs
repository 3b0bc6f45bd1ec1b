//! The background work of a running server, started and stopped as one: [`spawn_all`] starts
//! every job the settings call for; [`Workers::stop`] signals them all and waits for each in
//! turn (the recorders write what they counted up to the last request before they end).
//!
//! The jobs of this folder reach into the operations (the seat sweeper raises the events of the
//! seats it frees); the loops that flush or deliver what a runtime piece holds (usage, request
//! history, key uses, client events, mail, webhooks) live beside their buffers in
//! [`crate::runtime`] and are started here.

pub(crate) mod audit_pruner;
pub(crate) mod change_listener;
pub(crate) mod idempotency_purger;
pub(crate) mod seat_sweeper;
pub(crate) mod sign_in_purger;

use std::future::Future;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::runtime::{mail, webhooks};
use crate::state::AppState;

/// The running jobs.
pub(crate) struct Workers {
    stop: watch::Sender<bool>,
    jobs: Vec<(&'static str, JoinHandle<()>)>,
}

impl Workers {
    /// Starts `job`, named for the logs.
    fn start(&mut self, name: &'static str, job: impl Future<Output = ()> + Send + 'static) {
        self.jobs.push((name, tokio::spawn(job)));
    }

    /// Signals every job to stop and waits for each, in the order they started.
    pub(crate) async fn stop(self) {
        self.stop.send(true).ok();
        for (name, job) in self.jobs {
            if let Err(e) = job.await {
                tracing::error!(job = name, error = %e, "a background job ended abnormally");
            }
        }
    }
}

/// Starts every background job of `state`'s server.
pub(crate) fn spawn_all(state: &AppState) -> Workers {
    let (stop, stopping) = watch::channel(false);
    let mut workers = Workers {
        stop,
        jobs: Vec::new(),
    };
    let store = &state.store;
    if let Some(mailer) = state.mailer.clone() {
        workers.start(
            "mail",
            mail::run_worker(store.clone(), mailer, stopping.clone()),
        );
    }
    workers.start(
        "usage",
        state.usage.clone().run(store.clone(), stopping.clone()),
    );
    if state.request_log.on() {
        let log = state.request_log.clone();
        workers.start(
            "request history",
            log.clone().run(store.clone(), stopping.clone()),
        );
        workers.start(
            "request history pruner",
            log.run_pruner(store.clone(), stopping.clone()),
        );
    }
    workers.start(
        "client events",
        state
            .client_events
            .clone()
            .run(store.clone(), stopping.clone()),
    );
    workers.start(
        "key uses",
        state.key_uses.clone().run(store.clone(), stopping.clone()),
    );
    workers.start(
        "seat sweeper",
        seat_sweeper::run(state.clone(), stopping.clone()),
    );
    workers.start(
        "idempotency purger",
        idempotency_purger::run(store.clone(), stopping.clone()),
    );
    if let Some(feed) = store.change_feed() {
        workers.start(
            "change listener",
            change_listener::run(
                feed,
                state.contexts.clone(),
                state.licenses.clone(),
                state.overviews.clone(),
                stopping.clone(),
            ),
        );
    }
    if let Some(settings) = state.dashboard {
        let lifetime = sign_in_purger::Lifetime {
            idle_minutes: settings.idle_minutes,
            hours: settings.session_hours,
        };
        workers.start(
            "sign-in purger",
            sign_in_purger::run_purger(store.clone(), lifetime, stopping.clone()),
        );
    }
    workers.start(
        "portal purger",
        sign_in_purger::run_portal_purger(store.clone(), stopping.clone()),
    );
    if state.audit_retention_days > 0 {
        workers.start(
            "audit pruner",
            audit_pruner::run(store.clone(), state.audit_retention_days, stopping.clone()),
        );
    }
    workers.start(
        "webhooks",
        webhooks::run_worker(store.clone(), state.webhooks.clone(), stopping),
    );
    workers
}
