//! The dashboard's door: what happens before a staff member is signed in (sign-in with its
//! audit of failures and its second step, a set-password link, the session a cookie names) and
//! what a signed-in member does to their own account (sign out, two-step sign-in on and off).
//!
//! A [`Visitor`] is someone at the door, known only by address; the signed-in member's own
//! operations run in a [`Cx`] like every other.

use std::net::IpAddr;

use licensing_core::model::{Action, FieldChange, StaffSession, StaffUser};
use licensing_core::store::{AuditStore, Journal, OutboxStore, StaffStore, StoreError, TeamStore};
use licensing_core::{ApiError, StaffId, TeamId, Timestamp};

use super::{Cx, Operation, Run};
use crate::app::journal::Acting;
use crate::app::staff::{self, LinkRefused};
use crate::app::two_step;
use crate::state::AppState;
/// How long a staff member's sign-in (a dashboard session) lasts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lifetime {
    /// Minutes without a request after which it ends.
    pub(crate) idle_minutes: u32,
    /// Hours after signing in after which it ends whatever happens.
    pub(crate) hours: u32,
}

/// Someone at the dashboard's door, from `client`, at `now`.
pub(crate) struct Visitor<'a> {
    state: &'a AppState,
    client: IpAddr,
    now: Timestamp,
}

impl<'a> Visitor<'a> {
    /// A visitor from `client` at `now`.
    pub(crate) fn new(state: &'a AppState, client: IpAddr, now: Timestamp) -> Self {
        Self { state, client, now }
    }

    /// The accounts of an address (every team's, oldest first, at most
    /// [`staff::MAX_ACCOUNTS_PER_ADDRESS`]).
    pub(crate) async fn accounts_of(&self, email: &str) -> Result<Vec<StaffUser>, ApiError> {
        Ok(staff::accounts_of(&self.state.store, email).await?)
    }

    /// Records a failed sign-in in the log of each team where the address has an account (an
    /// address without one is logged by the server only: there is no team to tell).
    pub(crate) async fn record_failure(&self, accounts: &[StaffUser], why: &str) {
        if accounts.is_empty() {
            tracing::info!(client = %self.client, "failed dashboard sign-in for an unknown address");
            return;
        }
        let mut journal = Journal::NONE;
        for user in accounts {
            journal = journal.and(Acting::staff(user, Some(self.client)).journal(
                user.team_id,
                self.now,
                Action::StaffSignInFailed,
                user.id,
                vec![FieldChange::of("reason", None, Some(why.into()))],
            ));
        }
        if let Err(e) = self.state.store.record_journal(&journal).await {
            tracing::error!(error = %e, "recording a failed sign-in in the audit log failed");
        }
    }

    /// The teams of `accounts` with their names, for a person to choose one (a team gone
    /// meanwhile is left out).
    pub(crate) async fn teams_of(
        &self,
        accounts: &[StaffUser],
    ) -> Result<Vec<(TeamId, String)>, ApiError> {
        let mut teams = Vec::new();
        for user in accounts {
            if let Some(team) = self.state.store.get_team(user.team_id).await? {
                teams.push((user.team_id, team.name));
            }
        }
        Ok(teams)
    }

    /// The second step of `user`'s sign-in with `code` (the app's code or a recovery code,
    /// which is then used up): the account as it is now, or `None` for a wrong code.
    pub(crate) async fn second_step(
        &self,
        user: &StaffUser,
        code: &str,
    ) -> Result<Option<StaffUser>, ApiError> {
        let acting = Acting::staff(user, Some(self.client));
        two_step::sign_in(
            &self.state.store,
            &self.state.keyring,
            user,
            code,
            self.now,
            &acting,
        )
        .await
    }

    /// Starts a session of `user`, signed in `how` (audited): the session and the secret its
    /// cookie carries.
    pub(crate) async fn start_session(
        &self,
        user: &StaffUser,
        how: &str,
    ) -> Result<(StaffSession, String), ApiError> {
        let secret = staff::random_secret();
        let session = StaffSession {
            id_sha256: licensing_core::crypto::sha256_hex(secret.as_bytes()),
            user_id: user.id,
            team_id: user.team_id,
            csrf_token: staff::random_secret(),
            created_at: self.now,
            last_seen_at: self.now,
        };
        let journal = Acting::staff(user, Some(self.client)).journal(
            user.team_id,
            self.now,
            Action::StaffSignedIn,
            user.id,
            vec![FieldChange::of("method", None, Some(how.into()))],
        );
        self.state.store.create_session(&session, &journal).await?;
        Ok((session, secret))
    }

    /// The live session whose id is `id_sha256`, with its account, noting that it was seen
    /// (at most once a minute); `None` when it has ended (timed out, which ends it here,
    /// signed out, or its account deleted or moved).
    pub(crate) async fn session(
        &self,
        id_sha256: &str,
        lifetime: Lifetime,
    ) -> Result<Option<(StaffUser, StaffSession)>, StoreError> {
        let store = &self.state.store;
        let Some(session) = store.get_session(id_sha256).await? else {
            return Ok(None);
        };
        let idle_end = session.last_seen_at.plus_minutes(lifetime.idle_minutes);
        let hard_end = session
            .created_at
            .plus_minutes(lifetime.hours.saturating_mul(60));
        if self.now >= idle_end || self.now >= hard_end {
            // A time-out is not a sign-out anybody did: not audited.
            store.delete_session(id_sha256, &Journal::NONE).await?;
            return Ok(None);
        }
        let Some(user) = store.get_staff(session.user_id).await? else {
            return Ok(None);
        };
        if user.team_id != session.team_id {
            return Ok(None);
        }
        if self.now.as_millis() - session.last_seen_at.as_millis() >= 60_000 {
            store.touch_session(id_sha256, self.now).await?;
        }
        Ok(Some((user, session)))
    }

    /// The account whose set-password link `secret` opens now, without using the link up.
    pub(crate) async fn link_user(
        &self,
        id: StaffId,
        secret: &str,
    ) -> Result<Option<StaffUser>, ApiError> {
        Ok(staff::link_user(&self.state.store, id, secret, self.now).await?)
    }

    /// Confirms the address change of account `id` through the link mailed to the new
    /// address; `None` for a link that does not open.
    pub(crate) async fn confirm_email(
        &self,
        id: StaffId,
        secret: &str,
    ) -> Result<Option<StaffUser>, ApiError> {
        staff::confirm_email(&self.state.store, id, secret, self.now, Some(self.client)).await
    }

    /// Asks for set-password links for the accounts of `email` ("forgot password"): 429 past
    /// the limits (three an hour per address, ten an hour per client address, counted alike
    /// for addresses with and without an account), else the same answer for every address.
    /// Each account of the address (one per team) then gets a link by e-mail, made after the
    /// answer so that its time tells nothing either.
    pub(crate) async fn forgot_password(&self, email: &str, base: String) -> Result<(), ApiError> {
        let address = licensing_core::validate::Email::parse(email.trim())
            .map_err(|e| ApiError::bad_field("email", &e.to_string()))?
            .as_str()
            .to_lowercase();
        let limits = &self.state.limits;
        if let Some(limiter) = &limits.password_mail_client {
            let status = limiter
                .check(&crate::runtime::ratelimit::ip_key(self.client))
                .await;
            if !status.allowed() {
                return Err(status.refusal("set-password e-mails", " per client address"));
            }
        }
        if let Some(limiter) = &limits.password_mail_address {
            let key = super::sign_in_throttle::limit_key(b"password-mail", &[address.as_bytes()]);
            let status = limiter.check(&key).await;
            if !status.allowed() {
                return Err(status.refusal("set-password e-mails", " per address"));
            }
        }
        let (state, client, now) = (self.state.clone(), self.client, self.now);
        tokio::spawn(async move {
            if let Err(e) = mail_reset_links(&state, &address, &base, client, now).await {
                tracing::error!(error = %e, "queueing a set-password e-mail failed");
            }
        });
        Ok(())
    }

    /// Sets the password of account `id` through its link: the link is used up, and every
    /// session of the account ends.
    pub(crate) async fn set_password(
        &self,
        id: StaffId,
        secret: &str,
        password: &str,
    ) -> Result<Result<StaffUser, LinkRefused>, ApiError> {
        Ok(staff::set_password(
            &self.state.store,
            id,
            secret,
            password,
            self.now,
            Some(self.client),
        )
        .await?)
    }
}

/// Gives each account of `address` a set-password link and queues it in an e-mail to the
/// address, in the name of the account's team.
async fn mail_reset_links(
    state: &AppState,
    address: &str,
    base: &str,
    client: IpAddr,
    now: Timestamp,
) -> Result<(), StoreError> {
    let Some(mailer) = &state.mailer else {
        return Ok(());
    };
    for user in staff::accounts_of(&state.store, address).await? {
        let Some(team) = state.store.get_team(user.team_id).await? else {
            continue;
        };
        let acting = Acting::staff(&user, Some(client));
        let made = staff::issue_reset_link(&state.store, user, now, &acting).await?;
        let link = crate::app::accounts::set_password_link(base, &made);
        let message = crate::runtime::mail::staff_message(
            (made.user.team_id, made.user.email.as_str()),
            crate::runtime::mail::StaffMail::PasswordReset {
                team_name: &team.name,
                link: &link,
                hours: staff::RESET_LINK_LIFETIME_HOURS,
            },
            now,
        );
        state
            .store
            .queue_messages(team.id, &[message], mailer.daily_limit, now)
            .await?;
    }
    Ok(())
}

/// The signed-in member's own staff account: who acts, 403 for an API key.
fn own(cx: &Cx) -> Result<&StaffUser, ApiError> {
    cx.caller.staff.as_ref().ok_or_else(|| {
        ApiError::forbidden("Only a staff member signed in to the dashboard can do this")
    })
}

/// Ends the member's session (`session`: its id), or every session of theirs.
pub(crate) struct SignOut {
    /// The session signing out.
    pub(crate) session: String,
    /// Every session of the account, not just this one.
    pub(crate) everywhere: bool,
}

impl Operation for SignOut {
    const NAME: &'static str = "sign_out";
    type Output = ();
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for SignOut {
    async fn run(self, cx: &Cx) -> Result<(), ApiError> {
        let user = own(cx)?;
        let store = &cx.state.store;
        let journal = cx.journal(
            Action::StaffSignedOut,
            user.id,
            vec![FieldChange::of(
                "sessions",
                None,
                Some(
                    if self.everywhere {
                        "every one"
                    } else {
                        "this one"
                    }
                    .into(),
                ),
            )],
        );
        if self.everywhere {
            store.delete_sessions_of(user.id).await?;
            store.record_journal(&journal).await?;
        } else {
            store.delete_session(&self.session, &journal).await?;
        }
        Ok(())
    }
}

/// The name of the member's team.
pub(crate) struct OwnTeamName;

impl Operation for OwnTeamName {
    const NAME: &'static str = "own_team_name";
    type Output = Option<String>;
    const SCOPE: Option<licensing_core::model::Scope> = None;
    const READ_ONLY: bool = true;
}

impl Run for OwnTeamName {
    async fn run(self, cx: &Cx) -> Result<Option<String>, ApiError> {
        Ok(cx.state.store.get_team(cx.team).await?.map(|t| t.name))
    }
}

/// Turns two-step sign-in on for the member, with the authenticator entry's `secret` (from the
/// setup page) and the `code` the app shows: the recovery codes, shown once.
pub(crate) struct TurnOnTwoStep {
    /// The entry's secret (base32).
    pub(crate) secret: String,
    /// The app's code.
    pub(crate) code: String,
}

impl Operation for TurnOnTwoStep {
    const NAME: &'static str = "turn_on_two_step";
    type Output = Vec<String>;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for TurnOnTwoStep {
    async fn run(self, cx: &Cx) -> Result<Vec<String>, ApiError> {
        let user = own(cx)?;
        two_step::turn_on(
            &cx.state.store,
            &cx.state.keyring,
            user,
            &self.secret,
            &self.code,
            cx.now,
            &cx.acting(),
        )
        .await
    }
}

/// Turns two-step sign-in off for the member, with a good `code` (the app's or a recovery
/// code): `false`, and nothing changed, for a wrong one.
pub(crate) struct TurnOffTwoStep {
    /// The code.
    pub(crate) code: String,
}

impl Operation for TurnOffTwoStep {
    const NAME: &'static str = "turn_off_two_step";
    type Output = bool;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for TurnOffTwoStep {
    async fn run(self, cx: &Cx) -> Result<bool, ApiError> {
        let user = own(cx)?;
        let Some(current) = &user.two_step else {
            return Ok(true);
        };
        let secret = two_step::open_secret(&cx.state.keyring, user, current)?;
        if two_step::spend(current, &secret, &self.code, cx.now).is_none() {
            return Ok(false);
        }
        two_step::turn_off(&cx.state.store, user, cx.now, &cx.acting()).await?;
        Ok(true)
    }
}

/// Changes the member's own password, given the current one: every session of the account ends
/// (the dashboard starts a new one for the browser that asked).
pub(crate) struct ChangeOwnPassword {
    /// The password now.
    pub(crate) current: String,
    /// The new one.
    pub(crate) new: String,
}

impl Operation for ChangeOwnPassword {
    const NAME: &'static str = "change_own_password";
    type Output = StaffUser;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for ChangeOwnPassword {
    async fn run(self, cx: &Cx) -> Result<StaffUser, ApiError> {
        let user = own(cx)?;
        staff::change_password(
            &cx.state.store,
            user,
            &self.current,
            &self.new,
            cx.now,
            &cx.acting(),
        )
        .await
    }
}

/// Asks for the member's own sign-in address to change, given their password: a link is
/// mailed to the new address, and the change takes effect when it is followed. `false` when the
/// address is the one the account has (nothing to confirm).
pub(crate) struct ChangeOwnEmail {
    /// The account's password.
    pub(crate) password: String,
    /// The new address.
    pub(crate) email: String,
    /// The dashboard's address (`https://host`), for the link.
    pub(crate) base: String,
}

impl Operation for ChangeOwnEmail {
    const NAME: &'static str = "change_own_email";
    type Output = bool;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for ChangeOwnEmail {
    async fn run(self, cx: &Cx) -> Result<bool, ApiError> {
        let user = own(cx)?;
        let mailer = cx.state.mailer.as_ref();
        let store = &cx.state.store;
        let Some((user, secret)) = staff::request_email_change(
            store,
            user,
            (&self.password, &self.email),
            mailer.is_some(),
            cx.now,
            &cx.acting(),
        )
        .await?
        else {
            return Ok(false);
        };
        let Some(mailer) = mailer else {
            return Err(ApiError::internal());
        };
        let Some(pending) = &user.pending_email else {
            return Err(ApiError::internal());
        };
        let link = format!("{}/dashboard/confirm-email/{}/{secret}", self.base, user.id);
        let message = crate::runtime::mail::staff_message(
            (user.team_id, pending.email.as_str()),
            crate::runtime::mail::StaffMail::EmailChange {
                from: user.email.as_str(),
                link: &link,
                hours: staff::LINK_LIFETIME_HOURS,
            },
            cx.now,
        );
        store
            .queue_messages(user.team_id, &[message], mailer.daily_limit, cx.now)
            .await?;
        Ok(true)
    }
}

/// Sets the time zone the member reads times in: an IANA name (`Europe/Berlin`), or empty for
/// UTC.
pub(crate) struct SetOwnTimeZone(pub(crate) String);

impl Operation for SetOwnTimeZone {
    const NAME: &'static str = "set_own_time_zone";
    type Output = StaffUser;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for SetOwnTimeZone {
    async fn run(self, cx: &Cx) -> Result<StaffUser, ApiError> {
        let user = own(cx)?;
        let zone = match self.0.trim() {
            "" | "UTC" => None,
            name => Some(
                name.parse::<chrono_tz::Tz>()
                    .map_err(|_| {
                        ApiError::bad_field(
                            "timeZone",
                            "is not a time zone: choose one of the list, such as Europe/Berlin",
                        )
                    })?
                    .name()
                    .to_owned(),
            ),
        };
        staff::set_time_zone(&cx.state.store, user, zone, cx.now, &cx.acting()).await
    }
}
