//! The team's staff accounts, managed by its owners and admins: list, invite (with a
//! set-password link, e-mailed or shown once), change a role, issue a new link, turn two-step
//! sign-in off, delete. Owners manage everyone, admins everyone but owners; nobody changes or
//! removes their own account this way.

use licensing_core::model::{Role, StaffUser};
use licensing_core::store::{OutboxStore, StaffStore, TeamStore};
use licensing_core::{ApiError, StaffId};

use super::{Cx, Operation, Run};
use crate::app::staff::{self, CreatedStaff};
use crate::runtime::mail;

/// The team's accounts.
pub(crate) struct ListAccounts;

/// One account of the team.
pub(crate) struct GetAccount(pub(crate) StaffId);

/// Creates an account with a set-password link; with `mail_from` (the dashboard's address, as
/// `https://host`) and mail set up, the link is e-mailed.
pub(crate) struct InviteAccount {
    /// Its e-mail address.
    pub(crate) email: String,
    /// Its role: one the caller may manage.
    pub(crate) role: Role,
    /// Where the link points, when it is to be e-mailed.
    pub(crate) mail_from: Option<String>,
}

/// What an invitation made.
pub(crate) struct Invited {
    /// The account and its link's secret.
    pub(crate) made: CreatedStaff,
    /// Whether the link was queued for e-mail (else it is to be shown).
    pub(crate) mailed: bool,
}

/// Gives an account another role.
pub(crate) struct ChangeRole(pub(crate) StaffId, pub(crate) Role);

/// A new set-password link for an account (its password keeps working until the link is
/// used).
pub(crate) struct NewLink(pub(crate) StaffId);

/// Turns two-step sign-in off for someone who lost their app and their recovery codes.
pub(crate) struct ResetTwoStep(pub(crate) StaffId);

/// Deletes an account, its sessions and the API keys it made.
pub(crate) struct DeleteAccount(pub(crate) StaffId);

/// The set-password link of `made`, under `base` (`https://host`).
pub(crate) fn set_password_link(base: &str, made: &CreatedStaff) -> String {
    format!(
        "{base}/dashboard/set-password/{}/{}",
        made.user.id, made.link_secret
    )
}

/// The staff member acting, when they manage accounts (403 otherwise).
fn manager(cx: &Cx) -> Result<&StaffUser, ApiError> {
    cx.caller
        .staff
        .as_ref()
        .filter(|s| s.role.manages(Role::Viewer))
        .ok_or_else(|| ApiError::forbidden("Only owners and admins manage the team's accounts."))
}

impl Operation for ListAccounts {
    const NAME: &'static str = "list_accounts";
    type Output = Vec<StaffUser>;
    const SCOPE: Option<licensing_core::model::Scope> = None;
    const READ_ONLY: bool = true;
}

impl Run for ListAccounts {
    async fn run(self, cx: &Cx) -> Result<Vec<StaffUser>, ApiError> {
        manager(cx)?;
        Ok(cx.state.store.list_staff(cx.team).await?)
    }
}

impl Operation for GetAccount {
    const NAME: &'static str = "get_account";
    type Output = StaffUser;
    const SCOPE: Option<licensing_core::model::Scope> = None;
    const READ_ONLY: bool = true;
}

impl Run for GetAccount {
    async fn run(self, cx: &Cx) -> Result<StaffUser, ApiError> {
        manager(cx)?;
        cx.state
            .store
            .get_staff(self.0)
            .await?
            .filter(|u| u.team_id == cx.team)
            .ok_or_else(|| ApiError::record_not_found("There is no such account."))
    }
}

impl Operation for InviteAccount {
    const NAME: &'static str = "invite_account";
    type Output = Invited;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for InviteAccount {
    async fn run(self, cx: &Cx) -> Result<Invited, ApiError> {
        let by = manager(cx)?;
        if !by.role.manages(self.role) {
            return Err(ApiError::forbidden(format!(
                "Your role cannot create {} accounts.",
                self.role
            )));
        }
        let store = &cx.state.store;
        let acting = cx.acting();
        let made = staff::create_staff(
            store,
            cx.team,
            &self.email,
            self.role,
            cx.now,
            Some(&acting),
        )
        .await?;
        let (Some(mailer), Some(base)) = (&cx.state.mailer, self.mail_from) else {
            return Ok(Invited {
                made,
                mailed: false,
            });
        };
        let team = store
            .get_team(cx.team)
            .await?
            .map_or_else(|| "your team".to_owned(), |t| t.name);
        let message = mail::staff_message(
            (cx.team, made.user.email.as_str()),
            mail::StaffMail::Invitation {
                team_name: &team,
                inviter: by.email.as_str(),
                link: &set_password_link(&base, &made),
                hours: staff::LINK_LIFETIME_HOURS,
            },
            cx.now,
        );
        // The account exists either way: when the mail cannot be queued, its link is shown to
        // pass on instead.
        let mailed = store
            .queue_messages(cx.team, &[message], mailer.daily_limit, cx.now)
            .await
            .is_ok();
        Ok(Invited { made, mailed })
    }
}

impl Operation for ChangeRole {
    const NAME: &'static str = "change_role";
    type Output = StaffUser;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for ChangeRole {
    async fn run(self, cx: &Cx) -> Result<StaffUser, ApiError> {
        let by = manager(cx)?;
        staff::change_role(&cx.state.store, by, self.0, self.1, cx.now, &cx.acting()).await
    }
}

impl Operation for NewLink {
    const NAME: &'static str = "new_link";
    type Output = CreatedStaff;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for NewLink {
    async fn run(self, cx: &Cx) -> Result<CreatedStaff, ApiError> {
        let by = manager(cx)?;
        staff::new_link_for(&cx.state.store, by, self.0, cx.now, &cx.acting()).await
    }
}

impl Operation for ResetTwoStep {
    const NAME: &'static str = "reset_two_step";
    type Output = StaffUser;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for ResetTwoStep {
    async fn run(self, cx: &Cx) -> Result<StaffUser, ApiError> {
        let by = manager(cx)?;
        staff::reset_two_step(&cx.state.store, by, self.0, cx.now, &cx.acting()).await
    }
}

impl Operation for DeleteAccount {
    const NAME: &'static str = "delete_account";
    type Output = StaffUser;
    const SCOPE: Option<licensing_core::model::Scope> = None;
}

impl Run for DeleteAccount {
    async fn run(self, cx: &Cx) -> Result<StaffUser, ApiError> {
        let by = manager(cx)?;
        staff::delete_account(&cx.state.store, by, self.0, cx.now, &cx.acting()).await
    }
}
