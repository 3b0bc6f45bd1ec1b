//! The operations: what the server does, whoever asks. Each is a type (its typed input), with
//! the scope it needs and a typed output, and runs through one [`Cx::perform`], which checks the
//! scope and, once the operation is over, drops what the client API keeps in memory that the
//! operation's journals changed; the operation itself checks product restrictions and writes
//! its journal (the audit actor with it). The developer API, the admin API, the dashboard and
//! the command line all perform the same operations, so each rule is enforced in one place.
//!
//! Nothing here speaks HTTP, JSON or HTML: an operation takes typed values and answers typed
//! values or an [`ApiError`]; the web layer parses requests into operations and renders what
//! they answer.

pub(crate) mod access;
pub(crate) mod accounts;
pub(crate) mod admin;
pub(crate) mod artifacts;
pub(crate) mod billing;
mod caller;
pub(crate) mod client;
pub(crate) mod customers;
pub(crate) mod devices;
pub(crate) mod entitlements;
pub(crate) mod floating;
pub(crate) mod integrations;
pub mod journal;
pub(crate) mod license_files;
pub(crate) mod licenses;
pub(crate) mod once;
pub mod operator;
pub(crate) mod policies;
pub(crate) mod portal;
pub(crate) mod products;
mod reach;
pub(crate) mod releases;
pub(crate) mod sign_in;
pub(crate) mod sign_in_throttle;
pub mod staff;
pub(crate) mod team;
pub mod teams;
pub mod two_step;
pub(crate) mod usage;
pub(crate) mod webhooks;

use std::future::Future;

use std::net::IpAddr;
use tracing::Instrument;

use licensing_core::model::{Action, FieldChange};
use licensing_core::store::Journal;
use licensing_core::{ApiError, TeamId, Timestamp, UserId};

pub(crate) use caller::Caller;

use crate::app::journal::{Acting, InboundSlot, Journaled};
use crate::state::AppState;

pub(crate) use licensing_core::operations::Operation;

/// An operation this server runs: what it does, for `cx`'s caller and team. What it is (its
/// input, scope and output) is declared by [`Operation`], in `licensing-core` for the
/// operations of the developer API.
pub(crate) trait Run: Operation {
    /// Does it, for `cx`'s caller and team.
    fn run(self, cx: &Cx) -> impl Future<Output = Result<Self::Output, ApiError>> + Send;
}

/// Drops what the server keeps in memory about the team when dropped, after an operation that
/// may have written or one that was abandoned half-way: its cached licenses, its headline
/// counts, and the context of each team the operation's journals changed (see
/// [`Action::changes_team_context`](licensing_core::model::Action::changes_team_context)).
struct Written<'a>(&'a Cx);

impl Drop for Written<'_> {
    fn drop(&mut self) {
        let state = &self.0.state;
        state.licenses.forget_team(self.0.team);
        state.overviews.forget(self.0.team);
        for team in self.0.journaled.take() {
            state.contexts.invalidate(team);
        }
    }
}

/// Who asks, for which team, when and from where: what every operation runs in.
pub(crate) struct Cx {
    /// The server.
    pub(crate) state: AppState,
    /// The team acted on.
    pub(crate) team: TeamId,
    /// Who acts: an API key, or a staff member through the dashboard.
    pub(crate) caller: Caller,
    /// When.
    pub(crate) now: Timestamp,
    /// The client's address (protocol.md section 3's rule behind proxies).
    pub(crate) client: IpAddr,
    /// The teams whose context this operation's journals changed.
    journaled: Journaled,
    /// (ext) The mark of the payment event whose effect the operations are.
    inbound: Option<InboundSlot>,
    /// The address the request was sent to (`scheme://host`), for links an operation makes
    /// when the server has no public URL.
    origin: Option<String>,
}

impl Cx {
    /// The context of `caller`'s operations on `team`, from `client` at `now`.
    pub(crate) fn new(
        state: AppState,
        team: TeamId,
        caller: Caller,
        now: Timestamp,
        client: IpAddr,
    ) -> Self {
        Self {
            state,
            team,
            caller,
            now,
            client,
            journaled: Journaled::default(),
            inbound: None,
            origin: None,
        }
    }

    /// The same context, for a request sent to `origin` (`scheme://host`, from its `Host`
    /// header).
    pub(crate) fn with_origin(mut self, origin: Option<String>) -> Self {
        self.origin = origin;
        self
    }

    /// The server's public address (`--public-url`), else the one the request was sent to,
    /// else the loopback address: where links an operation makes point.
    pub(crate) fn base_url(&self) -> String {
        base_url(self.state.public_url.as_deref(), self.origin.clone())
    }

    /// The same context, whose next journal carries `mark` (a payment event's effect: see
    /// `billing.rs`); the slot tells afterwards whether a journal took it.
    pub(crate) fn with_inbound(mut self, mark: InboundSlot) -> Self {
        self.inbound = Some(mark);
        self
    }

    /// Performs `op` after checking that the caller has its scope (403 naming it otherwise),
    /// in a tracing span named after it, counted by name and outcome. After an operation that
    /// may write, what the client API keeps in memory that it changed is dropped, whatever its
    /// outcome, even when the caller went away before it finished.
    pub(crate) async fn perform<O: Run>(&self, op: O) -> Result<O::Output, ApiError> {
        let started = std::time::Instant::now();
        let span = tracing::info_span!("operation", name = O::NAME, team = %self.team);
        let done = async {
            if let Some(scope) = O::SCOPE {
                self.caller.require(scope)?;
            }
            let _written = (!O::READ_ONLY).then(|| Written(self));
            op.run(self).await
        }
        .instrument(span)
        .await;
        let outcome = match &done {
            Ok(_) => "ok",
            Err(e) => e.code().as_str(),
        };
        self.state
            .metrics
            .operation(O::NAME, outcome, started.elapsed());
        done
    }

    /// The journal of a change this operation makes: its audit entry, naming the caller and
    /// the client's address.
    pub(crate) fn journal(
        &self,
        action: Action,
        resource_id: impl std::fmt::Display,
        changes: Vec<FieldChange>,
    ) -> Journal {
        self.acting()
            .journal(self.team, self.now, action, resource_id, changes)
    }

    /// The journal of a change from `old` to `new` this operation makes: its audit entry and
    /// its webhook event (see [`Acting::change`]).
    pub(crate) fn change<T: serde::Serialize>(
        &self,
        action: Action,
        resource_id: impl std::fmt::Display,
        old: Option<&T>,
        new: Option<&T>,
    ) -> Journal {
        self.acting()
            .change(self.team, self.now, action, resource_id, old, new)
    }

    /// The journal of `new`, which this operation creates (see [`Cx::change`]).
    pub(crate) fn created<T: serde::Serialize>(
        &self,
        action: Action,
        resource_id: impl std::fmt::Display,
        new: &T,
    ) -> Journal {
        self.change(action, resource_id, None, Some(new))
    }

    /// Who this operation acts as, for the audit log.
    pub(crate) fn acting(&self) -> Acting {
        Acting {
            actor: self.caller.actor.clone(),
            address: Some(self.client),
            journaled: Some(self.journaled.clone()),
            inbound: self.inbound.clone(),
        }
    }

    /// The `createdByUserId` of what this operation creates.
    pub(crate) fn user(&self) -> UserId {
        self.caller.user
    }
}

/// A team named "Shop" on a server of its own (a sled store in a directory of its own), for
/// the operations' tests: contexts of any caller on it.
/// Where the links this server makes point: its public address (`--public-url`), else the
/// `origin` the request was sent to, else the loopback address.
pub(crate) fn base_url(public_url: Option<&str>, origin: Option<String>) -> String {
    match (public_url, origin) {
        (Some(url), _) => url.trim_end_matches('/').to_owned(),
        (None, Some(origin)) => origin,
        (None, None) => "http://127.0.0.1".to_owned(),
    }
}

#[cfg(test)]
pub(crate) struct Shop {
    /// The team.
    pub(crate) team: TeamId,
    server: crate::Server,
    _dir: tempfile::TempDir,
}

#[cfg(test)]
impl Shop {
    /// The team, created the way the command line creates one, and its server.
    pub(crate) async fn open() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::open_store(dir.path()).unwrap();
        let team = teams::create_team(&store, "Shop", Timestamp::now())
            .await
            .unwrap()
            .team_id;
        let config = crate::Config::for_data_dir(dir.path());
        let server = crate::Server::bind_with_store(config, store).await.unwrap();
        Self {
            team,
            server,
            _dir: dir,
        }
    }

    /// The server's state.
    pub(crate) fn state(&self) -> AppState {
        self.server.state.clone()
    }

    /// The context of `caller`'s operations on the team, now, from this machine.
    pub(crate) fn as_caller(&self, caller: Caller) -> Cx {
        let here = IpAddr::from([127, 0, 0, 1]);
        Cx::new(self.state(), self.team, caller, Timestamp::now(), here)
    }
}
