//! Staff accounts: creating one with a set-password link, setting the password through the link,
//! and checking a password at sign-in.
//!
//! Passwords are hashed with Argon2id and OWASP's parameters for it (19 MiB of memory, two
//! passes, one lane), on a blocking thread: a hash costs tens of milliseconds of CPU, which must
//! not stall the runtime's workers. A set-password link carries a random secret of 256 bits of
//! which only the SHA-256 is stored; it works once, for [`LINK_LIFETIME_HOURS`]. Setting a
//! password ends every session of the account.

use std::sync::LazyLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use licensing_core::crypto::sha256_hex;
use licensing_core::model::{Action, FieldChange, PasswordLink, PendingEmail, Role, StaffUser};
use licensing_core::store::{Journal, StaffStore, StoreError};
use licensing_core::validate::{Email, check_new_password};
use licensing_core::{ApiError, StaffId, TeamId, Timestamp};
use rand::RngCore as _;
use subtle::ConstantTimeEq as _;

use crate::app::journal::Acting;

/// How long a set-password link works.
pub const LINK_LIFETIME_HOURS: i64 = 72;
/// How long a set-password link asked for on the sign-in page ("forgot password") works.
pub const RESET_LINK_LIFETIME_HOURS: i64 = 1;

/// Argon2id with OWASP's recommended parameters (m = 19 MiB, t = 2, p = 1).
fn argon2() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).expect("OWASP's Argon2id parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes `password` (on the calling thread; see [`hash_password`]).
fn hash_now(password: &str) -> Result<String, StoreError> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| StoreError::backend(format!("password hashing failed: {e}")))
}

/// Whether `password` matches `hash` (a PHC string); a malformed hash matches nothing.
fn verify_now(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        argon2()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash no password is known to match: an unknown address is checked against it, so that a
/// sign-in takes as long whether or not the account exists.
static DECOY: LazyLock<String> =
    LazyLock::new(|| hash_now(&random_secret()).expect("hashing a random password"));

/// 256 random bits in base64url (43 characters).
pub(crate) fn random_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Hashes a password on a blocking thread.
pub async fn hash_password(password: &str) -> Result<String, StoreError> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || hash_now(&password))
        .await
        .map_err(|e| StoreError::backend(format!("password hashing task failed: {e}")))?
}

/// Checks a password against each hash (the decoy for an account without one, and once for
/// none at all, so that an unknown address takes as long as a known one) on a blocking thread;
/// whether each matches.
async fn verify_passwords(
    hashes: Vec<Option<String>>,
    password: &str,
) -> Result<Vec<bool>, StoreError> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || {
        if hashes.is_empty() {
            verify_now(&DECOY, &password);
        }
        hashes
            .iter()
            .map(|hash| match hash {
                Some(hash) => verify_now(hash, &password),
                None => {
                    verify_now(&DECOY, &password);
                    false
                }
            })
            .collect()
    })
    .await
    .map_err(|e| StoreError::backend(format!("password check task failed: {e}")))
}

/// A new set-password link: its secret (for the URL, shown once) and what is stored of it.
pub fn new_link(now: Timestamp) -> (String, PasswordLink) {
    link_lasting(now, LINK_LIFETIME_HOURS)
}

/// A set-password link made at `now` that works for `hours`, and its secret.
fn link_lasting(now: Timestamp, hours: i64) -> (String, PasswordLink) {
    let secret = random_secret();
    let link = PasswordLink {
        secret_sha256: sha256_hex(secret.as_bytes()),
        expires_at: now.plus_minutes(u32::try_from(hours * 60).unwrap_or(u32::MAX)),
    };
    (secret, link)
}

/// Whether `secret` opens `link` at `now` (compared in constant time).
fn opens(link: &PasswordLink, secret: &str, now: Timestamp) -> bool {
    let given = sha256_hex(secret.as_bytes());
    now < link.expires_at && bool::from(given.as_bytes().ct_eq(link.secret_sha256.as_bytes()))
}

/// An account just created, with the secret of its set-password link.
#[derive(Debug)]
pub struct CreatedStaff {
    /// The account.
    pub user: StaffUser,
    /// The link's secret: `…/set-password/{user id}/{secret}`.
    pub link_secret: String,
}

/// Creates an account of `team` for `email` (kept lower-cased) with `role`, without a password
/// and with a set-password link, audited as `acting`'s (none: not audited, as when an archive
/// is loaded). An address that has an account is 400 naming `email`.
pub async fn create_staff<S: StaffStore>(
    store: &S,
    team: TeamId,
    email: &str,
    role: Role,
    now: Timestamp,
    acting: Option<&Acting>,
) -> Result<CreatedStaff, ApiError> {
    let email =
        Email::parse(&email.trim().to_lowercase()).map_err(|e| ApiError::bad_field("email", &e))?;
    let (link_secret, link) = new_link(now);
    let user = StaffUser {
        id: StaffId::new(),
        team_id: team,
        email,
        role,
        password_hash: None,
        password_link: Some(link),
        created_at: now,
        updated_at: now,
        two_step: None,
        time_zone: None,
        pending_email: None,
    };
    let journal = match acting {
        Some(acting) => acting.journal(
            team,
            now,
            Action::StaffCreated,
            user.id,
            created_changes(&user),
        ),
        None => Journal::NONE,
    };
    store.create_staff(&user, &journal).await?;
    Ok(CreatedStaff { user, link_secret })
}

/// The changes an audit entry of a new account shows.
pub fn created_changes(user: &StaffUser) -> Vec<FieldChange> {
    vec![
        FieldChange {
            field: "email".into(),
            old: None,
            new: Some(user.email.as_str().into()),
            secret: false,
            redacted: false,
        },
        FieldChange {
            field: "role".into(),
            old: None,
            new: Some(user.role.as_str().into()),
            secret: false,
            redacted: false,
        },
    ]
}

/// The account of `email` in `team`, or, without a team, the only account of `email`: the
/// account a command names. An error that says what to add otherwise.
pub async fn account_named<S: StaffStore + licensing_core::store::TeamStore>(
    store: &S,
    email: &str,
    team: Option<TeamId>,
) -> Result<StaffUser, String> {
    let found = store
        .find_staff_by_email(&email.trim().to_lowercase())
        .await
        .map_err(|e| e.to_string())?;
    let mut named: Vec<StaffUser> = found
        .into_iter()
        .filter(|u| team.is_none_or(|t| u.team_id == t))
        .collect();
    match (named.len(), team) {
        (1, _) => Ok(named.remove(0)),
        (0, Some(team)) => Err(format!(
            "team {team} has no account with the address {email}"
        )),
        (0, None) => Err(format!("no account has the address {email}")),
        (n, _) => {
            let mut teams = Vec::new();
            for user in &named {
                let name = store
                    .get_team(user.team_id)
                    .await
                    .ok()
                    .flatten()
                    .map_or_else(String::new, |t| format!(" ({})", t.name));
                teams.push(format!("{}{name}", user.team_id));
            }
            Err(format!(
                "{email} has an account in {n} teams: name one with --team ({})",
                teams.join(", ")
            ))
        }
    }
}

/// Saves `user` changed by its owner or a manager: stamped `now`, audited as `action` with
/// `changes` by `acting`.
async fn save<S: StaffStore>(
    store: &S,
    mut user: StaffUser,
    action: Action,
    changes: Vec<FieldChange>,
    now: Timestamp,
    acting: &Acting,
) -> Result<StaffUser, StoreError> {
    user.updated_at = now;
    let journal = acting.journal(user.team_id, now, action, user.id, changes);
    store.update_staff(&user, &journal).await?;
    Ok(user)
}

/// Gives `user` a new set-password link (replacing any earlier one), for a forgotten password.
/// Its password keeps working until the link is used.
pub async fn issue_link<S: StaffStore>(
    store: &S,
    user: StaffUser,
    now: Timestamp,
    acting: &Acting,
) -> Result<CreatedStaff, StoreError> {
    issue(store, user, (now, LINK_LIFETIME_HOURS), Vec::new(), acting).await
}

/// Gives `user` a set-password link asked for on the sign-in page, working for
/// [`RESET_LINK_LIFETIME_HOURS`], to be e-mailed to the account's address. Like any link it
/// replaces an earlier one, and the password keeps working until the link is used.
pub async fn issue_reset_link<S: StaffStore>(
    store: &S,
    user: StaffUser,
    now: Timestamp,
    acting: &Acting,
) -> Result<CreatedStaff, StoreError> {
    let asked = FieldChange::of("via", None, Some("forgot-password e-mail".into()));
    issue(
        store,
        user,
        (now, RESET_LINK_LIFETIME_HOURS),
        vec![asked],
        acting,
    )
    .await
}

async fn issue<S: StaffStore>(
    store: &S,
    mut user: StaffUser,
    (now, hours): (Timestamp, i64),
    changes: Vec<FieldChange>,
    acting: &Acting,
) -> Result<CreatedStaff, StoreError> {
    let (link_secret, link) = link_lasting(now, hours);
    user.password_link = Some(link);
    let user = save(store, user, Action::StaffLinkIssued, changes, now, acting).await?;
    Ok(CreatedStaff { user, link_secret })
}

/// 403 unless `by` may manage the account `target` (and give it `role`): owners manage
/// everyone, admins everyone but owners; nobody changes or removes their own account here.
fn must_manage(by: &StaffUser, target: &StaffUser, role: Role) -> Result<(), ApiError> {
    if by.id == target.id {
        return Err(ApiError::forbidden(
            "You cannot change or remove your own account; ask another owner or admin",
        ));
    }
    if by.team_id != target.team_id || !by.role.manages(target.role) || !by.role.manages(role) {
        return Err(ApiError::forbidden(format!(
            "Your role ({}) cannot manage accounts of role {}",
            by.role,
            if by.role.manages(target.role) {
                role
            } else {
                target.role
            }
        )));
    }
    Ok(())
}

/// The account `id` of `team` (404 for another team's, as for none).
async fn team_account<S: StaffStore>(
    store: &S,
    team: TeamId,
    id: StaffId,
) -> Result<StaffUser, ApiError> {
    store
        .get_staff(id)
        .await?
        .filter(|u| u.team_id == team)
        .ok_or_else(|| ApiError::record_not_found("No such account in this team"))
}

/// Gives account `id` of `by`'s team the role `role`, if `by` may.
pub async fn change_role<S: StaffStore>(
    store: &S,
    by: &StaffUser,
    id: StaffId,
    role: Role,
    now: Timestamp,
    acting: &Acting,
) -> Result<StaffUser, ApiError> {
    let mut user = team_account(store, by.team_id, id).await?;
    must_manage(by, &user, role)?;
    let change = FieldChange {
        field: "role".into(),
        old: Some(user.role.as_str().into()),
        new: Some(role.as_str().into()),
        secret: false,
        redacted: false,
    };
    user.role = role;
    Ok(save(store, user, Action::StaffUpdated, vec![change], now, acting).await?)
}

/// Deletes account `id` of `by`'s team (and its sessions), if `by` may. The API keys the
/// account made (and those they made) are revoked first: a key never outlives the person who
/// made it.
pub async fn delete_account<S: StaffStore + licensing_core::store::ApiKeyStore>(
    store: &S,
    by: &StaffUser,
    id: StaffId,
    now: Timestamp,
    acting: &Acting,
) -> Result<StaffUser, ApiError> {
    let user = team_account(store, by.team_id, id).await?;
    must_manage(by, &user, user.role)?;
    let mut changes = created_changes(&user);
    for c in &mut changes {
        c.old = c.new.take();
    }
    let journal = acting.journal(user.team_id, now, Action::StaffDeleted, user.id, changes);
    super::teams::revoke_keys_made_by(store, user.team_id, user.id.into(), acting, now).await?;
    store.delete_staff(user.team_id, user.id, &journal).await?;
    Ok(user)
}

/// Turns two-step sign-in off for account `id` of `by`'s team, if `by` may manage it (for
/// someone who lost both their authenticator app and their recovery codes).
pub async fn reset_two_step<S: StaffStore>(
    store: &S,
    by: &StaffUser,
    id: StaffId,
    now: Timestamp,
    acting: &Acting,
) -> Result<StaffUser, ApiError> {
    let user = team_account(store, by.team_id, id).await?;
    must_manage(by, &user, user.role)?;
    super::two_step::turn_off(store, &user, now, acting).await?;
    Ok(user)
}

/// A new set-password link for account `id` of `by`'s team, if `by` may manage it.
pub async fn new_link_for<S: StaffStore>(
    store: &S,
    by: &StaffUser,
    id: StaffId,
    now: Timestamp,
    acting: &Acting,
) -> Result<CreatedStaff, ApiError> {
    let user = team_account(store, by.team_id, id).await?;
    must_manage(by, &user, user.role)?;
    Ok(issue_link(store, user, now, acting).await?)
}

/// Why a set-password link was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkRefused {
    /// No such account, no link, a wrong secret or an expired link (not told apart).
    Invalid,
    /// The new password breaks a rule: what to change.
    Password(String),
}

/// The account whose set-password link `secret` opens at `now`, without using the link up.
pub async fn link_user<S: StaffStore>(
    store: &S,
    id: StaffId,
    secret: &str,
    now: Timestamp,
) -> Result<Option<StaffUser>, StoreError> {
    Ok(store.get_staff(id).await?.filter(|user| {
        user.password_link
            .as_ref()
            .is_some_and(|link| opens(link, secret, now))
    }))
}

/// Sets the password of account `id` through its link: the link is used up, and every session
/// of the account ends.
pub async fn set_password<S: StaffStore>(
    store: &S,
    id: StaffId,
    secret: &str,
    password: &str,
    now: Timestamp,
    address: Option<std::net::IpAddr>,
) -> Result<Result<StaffUser, LinkRefused>, StoreError> {
    let Some(mut user) = store.get_staff(id).await? else {
        return Ok(Err(LinkRefused::Invalid));
    };
    if !user
        .password_link
        .as_ref()
        .is_some_and(|link| opens(link, secret, now))
    {
        return Ok(Err(LinkRefused::Invalid));
    }
    if let Err(rule) = check_new_password(password, user.email.as_str()) {
        return Ok(Err(LinkRefused::Password(rule)));
    }
    user.password_hash = Some(hash_password(password).await?);
    user.password_link = None;
    user.updated_at = now;
    let acting = Acting::staff(&user, address);
    let journal = acting.journal(
        user.team_id,
        now,
        Action::StaffPasswordSet,
        user.id,
        vec![FieldChange::secret("password")],
    );
    store.update_staff(&user, &journal).await?;
    store.delete_sessions_of(user.id).await?;
    Ok(Ok(user))
}

/// Whether `password` is `user`'s (an account without one has none that matches); checked on a
/// blocking thread.
pub async fn is_password(user: &StaffUser, password: &str) -> Result<bool, StoreError> {
    let matches = verify_passwords(vec![user.password_hash.clone()], password).await?;
    Ok(matches.first() == Some(&true))
}

/// The refusal of a change to one's own account when `field` does not hold the account's
/// password.
fn not_your_password(field: &str) -> ApiError {
    ApiError::bad_field(field, "is not your current password")
}

/// Changes `user`'s own password, given the `current` one: every session of the account ends
/// (the caller starts a new one for the browser that asked).
pub async fn change_password<S: StaffStore>(
    store: &S,
    user: &StaffUser,
    current: &str,
    new: &str,
    now: Timestamp,
    acting: &Acting,
) -> Result<StaffUser, ApiError> {
    if !is_password(user, current).await? {
        return Err(not_your_password("currentPassword"));
    }
    check_new_password(new, user.email.as_str())
        .map_err(|rule| ApiError::bad_field("newPassword", &rule))?;
    if new == current {
        return Err(ApiError::bad_field(
            "newPassword",
            "is your current password: choose a new one",
        ));
    }
    let mut user = user.clone();
    user.password_hash = Some(hash_password(new).await?);
    user.password_link = None;
    let changes = vec![FieldChange::secret("password")];
    let user = save(store, user, Action::StaffPasswordSet, changes, now, acting).await?;
    store.delete_sessions_of(user.id).await?;
    Ok(user)
}

/// Asks for `user`'s sign-in address to become `email`, given their password: nothing changes
/// until the link to the new address is followed ([`confirm_email`]), so that nobody takes an
/// address they cannot read (and with it, that address's failed sign-ins in their team's log).
/// Returns the account and the link's secret (to mail, never to show); `None` when `email` is
/// the address it has. An address with an account in the team is 400, and so is any change on
/// a server that cannot mail the link (`mails`).
pub async fn request_email_change<S: StaffStore>(
    store: &S,
    user: &StaffUser,
    (password, email): (&str, &str),
    mails: bool,
    now: Timestamp,
    acting: &Acting,
) -> Result<Option<(StaffUser, String)>, ApiError> {
    let email =
        Email::parse(&email.trim().to_lowercase()).map_err(|e| ApiError::bad_field("email", &e))?;
    if !is_password(user, password).await? {
        return Err(not_your_password("password"));
    }
    if !mails {
        return Err(ApiError::bad_field(
            "email",
            "cannot change here: this server sends no e-mail, and a new address must be confirmed by a link sent to it (ask an owner to invite you under the new address)",
        ));
    }
    if email == user.email {
        return Ok(None);
    }
    if store
        .find_staff_by_email(email.as_str())
        .await?
        .iter()
        .any(|other| other.team_id == user.team_id)
    {
        return Err(ApiError::bad_field(
            "email",
            "already has an account in this team",
        ));
    }
    let (secret, link) = new_link(now);
    let mut changed = user.clone();
    changed.pending_email = Some(PendingEmail { email, link });
    let change = FieldChange::of(
        "pendingEmail",
        None,
        Some("(sent a confirmation link)".into()),
    );
    let user = save(
        store,
        changed,
        Action::StaffUpdated,
        vec![change],
        now,
        acting,
    )
    .await?;
    Ok(Some((user, secret)))
}

/// Confirms the address change of account `id` through the link mailed to the new address:
/// the account signs in with it from now on. `None` for a link that does not open (unknown,
/// used, expired) or an address taken in the team meanwhile.
pub async fn confirm_email<S: StaffStore>(
    store: &S,
    id: StaffId,
    secret: &str,
    now: Timestamp,
    address: Option<std::net::IpAddr>,
) -> Result<Option<StaffUser>, ApiError> {
    let Some(user) = store.get_staff(id).await? else {
        return Ok(None);
    };
    let Some(pending) = user
        .pending_email
        .clone()
        .filter(|p| opens(&p.link, secret, now))
    else {
        return Ok(None);
    };
    let mut changed = user.clone();
    changed.pending_email = None;
    if store
        .find_staff_by_email(pending.email.as_str())
        .await?
        .iter()
        .any(|other| other.team_id == user.team_id && other.id != user.id)
    {
        return Ok(None);
    }
    let change = FieldChange::of(
        "email",
        Some(user.email.as_str().into()),
        Some(pending.email.as_str().into()),
    );
    changed.email = pending.email;
    let acting = Acting::staff(&user, address);
    Ok(Some(
        save(
            store,
            changed,
            Action::StaffUpdated,
            vec![change],
            now,
            &acting,
        )
        .await?,
    ))
}

/// Sets the time zone `user` reads times in (`None`: UTC); `zone` is an IANA name already
/// checked by the caller.
pub async fn set_time_zone<S: StaffStore>(
    store: &S,
    user: &StaffUser,
    zone: Option<String>,
    now: Timestamp,
    acting: &Acting,
) -> Result<StaffUser, ApiError> {
    if zone == user.time_zone {
        return Ok(user.clone());
    }
    let mut changed = user.clone();
    let change = FieldChange::of(
        "timeZone",
        user.time_zone.as_deref().map(Into::into),
        zone.as_deref().map(Into::into),
    );
    changed.time_zone = zone;
    Ok(save(
        store,
        changed,
        Action::StaffUpdated,
        vec![change],
        now,
        acting,
    )
    .await?)
}

/// The most accounts of one address a sign-in checks (each check is an Argon2 hash): the
/// oldest ones, when an address has an account in more teams than that.
pub const MAX_ACCOUNTS_PER_ADDRESS: usize = 10;

/// The accounts of an address, read at sign-in (every team's, oldest first, at most
/// [`MAX_ACCOUNTS_PER_ADDRESS`]).
pub async fn accounts_of<S: StaffStore>(
    store: &S,
    email: &str,
) -> Result<Vec<StaffUser>, StoreError> {
    let mut accounts = store
        .find_staff_by_email(&email.trim().to_lowercase())
        .await?;
    accounts.truncate(MAX_ACCOUNTS_PER_ADDRESS);
    Ok(accounts)
}

/// Those of `accounts` (one address's, see [`accounts_of`]) whose password is `password`. An
/// account without a password yet matches nothing; the check takes as long whether or not the
/// address has accounts.
pub async fn check_sign_in(
    accounts: &[StaffUser],
    password: &str,
) -> Result<Vec<StaffUser>, StoreError> {
    let hashes = accounts.iter().map(|u| u.password_hash.clone()).collect();
    let matches = verify_passwords(hashes, password).await?;
    Ok(accounts
        .iter()
        .zip(matches)
        .filter(|(_, matched)| *matched)
        .map(|(user, _)| user.clone())
        .collect())
}

#[cfg(test)]
mod tests {
    use licensing_core::store::{MemoryStore, TeamStore};

    use super::*;

    async fn team(store: &MemoryStore) -> TeamId {
        crate::app::teams::create_team(store, "A", Timestamp::now())
            .await
            .unwrap()
            .team_id
    }

    fn fields(e: &ApiError) -> Vec<&str> {
        e.field_errors().iter().map(|f| f.field.as_str()).collect()
    }

    #[test]
    fn hashes_are_argon2id_with_owasp_parameters_and_salted() {
        let a = hash_now("correct horse battery staple").unwrap();
        let b = hash_now("correct horse battery staple").unwrap();
        assert!(a.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{a}");
        assert_ne!(a, b, "a salt of its own each time");
        assert!(verify_now(&a, "correct horse battery staple"));
        assert!(!verify_now(&a, "correct horse battery stapler"));
        assert!(!verify_now("not a hash", "correct horse battery staple"));
    }

    #[test]
    fn links_open_with_their_secret_until_they_expire() {
        let now = Timestamp::now();
        let (secret, link) = new_link(now);
        assert_eq!(secret.len(), 43, "256 bits in base64url");
        assert!(!link.secret_sha256.contains(&secret));
        assert!(opens(&link, &secret, now));
        assert!(opens(&link, &secret, now.plus_minutes(72 * 60 - 1)));
        assert!(!opens(&link, &secret, now.plus_minutes(72 * 60)));
        assert!(!opens(&link, &new_link(now).0, now));
    }

    #[tokio::test]
    async fn an_account_is_created_gets_its_password_through_the_link_and_signs_in() {
        let store = MemoryStore::new();
        let team = team(&store).await;
        let now = Timestamp::now();
        let created = create_staff(&store, team, " Ann@Example.com ", Role::Support, now, None)
            .await
            .unwrap();
        assert_eq!(created.user.email.as_str(), "ann@example.com");
        assert_eq!(created.user.password_hash, None);
        let again = create_staff(&store, team, "ANN@example.com", Role::Viewer, now, None)
            .await
            .unwrap_err();
        assert_eq!(fields(&again), ["email"]);
        assert_eq!(
            fields(
                &create_staff(&store, team, "not an address", Role::Viewer, now, None)
                    .await
                    .unwrap_err()
            ),
            ["email"]
        );

        // No password yet: nobody signs in.
        let ann = || async { accounts_of(&store, " ANN@example.com").await.unwrap() };
        assert_eq!(check_sign_in(&ann().await, "").await.unwrap(), []);
        let id = created.user.id;
        let secret = &created.link_secret;
        // A wrong secret, an expired link and a weak password are refused; nothing changes.
        let set = |secret: String, password: &'static str, at: Timestamp| {
            let store = store.clone();
            async move {
                set_password(&store, id, &secret, password, at, None)
                    .await
                    .unwrap()
            }
        };
        let strong = "a quiet harbour at dawn";
        assert_eq!(
            set(new_link(now).0, strong, now).await,
            Err(LinkRefused::Invalid)
        );
        assert_eq!(
            set(secret.clone(), strong, now.plus_minutes(72 * 60)).await,
            Err(LinkRefused::Invalid)
        );
        assert_eq!(
            set(secret.clone(), "qwerty123456", now).await,
            Err(LinkRefused::Password(
                "is one of the most commonly used passwords; choose another".into()
            ))
        );
        assert_eq!(
            set_password(&store, StaffId::new(), secret, strong, now, None)
                .await
                .unwrap(),
            Err(LinkRefused::Invalid)
        );

        // The link sets it once, and ends the account's sessions.
        let session = licensing_core::model::StaffSession {
            id_sha256: "0".repeat(64),
            user_id: id,
            team_id: team,
            csrf_token: "csrf".into(),
            created_at: now,
            last_seen_at: now,
        };
        store
            .create_session(&session, &Journal::NONE)
            .await
            .unwrap();
        let user = set(secret.clone(), strong, now).await.unwrap();
        assert!(user.password_link.is_none());
        assert_eq!(store.get_session(&session.id_sha256).await.unwrap(), None);
        assert_eq!(
            set(secret.clone(), "another quiet harbour", now).await,
            Err(LinkRefused::Invalid),
            "used up"
        );

        let signed_in = check_sign_in(&ann().await, strong).await.unwrap();
        assert_eq!(signed_in.iter().map(|u| u.id).collect::<Vec<_>>(), [id]);
        assert_eq!(
            check_sign_in(&ann().await, "a quiet harbour")
                .await
                .unwrap(),
            []
        );
        let bob = accounts_of(&store, "bob@example.com").await.unwrap();
        assert!(bob.is_empty());
        assert_eq!(check_sign_in(&bob, strong).await.unwrap(), []);
        assert!(store.get_team(team).await.unwrap().is_some());
    }
}
