//! The customer portal's door: how a customer signs in (an e-mailed link or its code, a license
//! key, a link the vendor's site minted), the session that makes, and what it sees. Once in, a
//! customer performs the same operations as everyone else, as a [`Caller::portal`] whose reach
//! is their session's licenses.
//!
//! An e-mail sign-in answers the same whether or not the address has licenses, in words, in
//! time and in limits: a ticket is made for every address, the limits count every address, and
//! whether to send the mail is decided after the answer, by a task of its own.

use crate::app::staff::random_secret;
use std::net::IpAddr;

use licensing_core::api::requests::{LicenseListQuery, Paging, SortDirection};
use licensing_core::crypto::sha256_hex;
use licensing_core::model::{
    Action, Actor, CodeRedeemed, Customer, FieldChange, License, OutboxMessage, PORTAL_CODE_TRIES,
    PORTAL_SESSION_MS, PORTAL_TICKET_MS, PortalGrant, PortalMethod, PortalSession, PortalSignIn,
    PortalTicket, Team,
};
use licensing_core::store::{
    AuditStore, CustomerStore, Journal, LicenseStore, OutboxStore, PortalStore, TeamStore,
};
use licensing_core::{ApiError, CustomerId, LicenseKey, TeamId, Timestamp};

use super::Caller;
use super::journal::Acting;
use crate::i18n::{Arg, Lang};
use crate::runtime::ratelimit::ip_key;
use crate::state::AppState;

/// The most licenses one sign-in shows.
const MAX_LICENSES: u32 = 100;

/// A team's portal, open to sign-ins, for a visitor from `client` at `now`.
pub(crate) struct Door<'a> {
    state: &'a AppState,
    /// The team.
    pub(crate) team: Team,
    client: IpAddr,
    now: Timestamp,
}

/// A digest that keys a portal limiter: the team and what is limited.
fn limit_key(team: TeamId, what: &str) -> [u8; 32] {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"portal\n");
    hasher.update(team.as_bytes());
    hasher.update(b"\n");
    hasher.update(what.as_bytes());
    hasher.finalize().into()
}

impl<'a> Door<'a> {
    /// The portal of team `team`: `None` when the team does not exist or its portal is off
    /// (both answer 404 alike).
    pub(crate) async fn open(
        state: &'a AppState,
        team: TeamId,
        client: IpAddr,
        now: Timestamp,
    ) -> Result<Option<Self>, ApiError> {
        let Some(team) = state.store.get_team(team).await? else {
            return Ok(None);
        };
        if !team.settings.portal_enabled {
            return Ok(None);
        }
        Ok(Some(Self {
            state,
            team,
            client,
            now,
        }))
    }

    /// Whether the portal offers sign-in by `way`.
    pub(crate) fn offers(&self, way: PortalSignIn) -> bool {
        self.team.settings.portal_allows(way)
    }

    /// Asks for a sign-in e-mail to `address`: the ticket's public id (for the code form), the
    /// same for any address. The mail goes out only when the address is a customer's with
    /// licenses, decided after the answer. 429 past the limits, which count every address.
    pub(crate) async fn mail_link(
        &self,
        address: &str,
        lang: Lang,
        base: &str,
    ) -> Result<uuid::Uuid, ApiError> {
        let address = licensing_core::validate::Email::parse(address.trim())
            .map_err(|e| ApiError::bad_field("email", &e.to_string()))?
            .as_str()
            .to_lowercase();
        let limits = &self.state.limits;
        if let Some(limiter) = &limits.portal_mail_client {
            let status = limiter.check(&ip_key(self.client)).await;
            if !status.allowed() {
                return Err(status.refusal("sign-in e-mails", " per client address"));
            }
        }
        if let Some(limiter) = &limits.portal_mail_address {
            let status = limiter.check(&limit_key(self.team.id, &address)).await;
            if !status.allowed() {
                return Err(status.refusal("sign-in e-mails", " per address"));
            }
        }
        let token = random_secret();
        let code = format!("{:06}", rand::random::<u32>() % 1_000_000);
        let ticket = PortalTicket {
            id: uuid::Uuid::new_v4(),
            team_id: self.team.id,
            token_sha256: sha256_hex(token.as_bytes()),
            code_sha256: Some(code_digest(&code)),
            tries_left: PORTAL_CODE_TRIES,
            grant: PortalGrant::Email {
                address: address.clone(),
            },
            expires_at: Timestamp::from_millis(self.now.as_millis() + PORTAL_TICKET_MS),
            created_at: self.now,
        };
        self.state.store.create_portal_ticket(&ticket).await?;
        let link = format!("{base}/portal/{}/link/{token}", self.team.id);
        let (state, team, now) = (self.state.clone(), self.team.clone(), self.now);
        tokio::spawn(async move {
            if let Err(e) =
                send_sign_in_mail(&state, &team, &address, (&link, &code), lang, now).await
            {
                tracing::error!(error = %e, "queueing a portal sign-in e-mail failed");
            }
        });
        Ok(ticket.id)
    }

    /// Redeems the link token `token`: the ticket, once, when it is this team's and alive.
    pub(crate) async fn by_link(&self, token: &str) -> Result<Option<PortalTicket>, ApiError> {
        let ticket = self
            .state
            .store
            .redeem_portal_link(&sha256_hex(token.as_bytes()), self.now)
            .await?;
        Ok(ticket.filter(|t| t.team_id == self.team.id))
    }

    /// Tries `code` against ticket `id`.
    pub(crate) async fn by_code(
        &self,
        id: uuid::Uuid,
        code: &str,
    ) -> Result<CodeRedeemed, ApiError> {
        let code: String = code.chars().filter(char::is_ascii_digit).collect();
        Ok(self
            .state
            .store
            .redeem_portal_code(self.team.id, id, &code_digest(&code), self.now)
            .await?)
    }

    /// The license with key `key`, held back like a dashboard sign-in: 429 past the failures
    /// allowed from this client address; a wrong key counts as a failure.
    pub(crate) async fn by_key(&self, key: &str) -> Result<Option<License>, ApiError> {
        let guesser = super::sign_in_throttle::Guesser::of(
            self.client,
            &format!("portal key {}", self.team.id),
            None,
        );
        if let Some(status) = guesser.throttled(&self.state.limits).await {
            return Err(status.refusal("sign-in attempts", " from this address"));
        }
        let found = match LicenseKey::parse(key.trim()) {
            Ok(key) => {
                self.state
                    .store
                    .get_license_by_key(self.team.id, &key)
                    .await?
            }
            Err(_) => None,
        };
        if found.is_none() {
            guesser.failed(&self.state.limits).await;
        }
        Ok(found)
    }

    /// Signs in with `grant` by `method`: the cookie's secret and the session, audited.
    pub(crate) async fn start(
        &self,
        grant: PortalGrant,
        method: PortalMethod,
    ) -> Result<(String, PortalSession), ApiError> {
        let cookie = random_secret();
        let session = PortalSession {
            id_sha256: sha256_hex(cookie.as_bytes()),
            team_id: self.team.id,
            grant,
            csrf_token: random_secret(),
            method,
            created_at: self.now,
            last_seen_at: self.now,
        };
        let journal = session_journal(
            &session,
            Some(self.client),
            self.now,
            Action::PortalSignedIn,
        );
        self.state
            .store
            .create_portal_session(&session, &journal)
            .await?;
        Ok((cookie, session))
    }
}

pub(crate) use licensing_core::operations::customers::CreatePortalSession;

impl super::Run for CreatePortalSession {
    /// A one-use link for the customer (and, when the body names one, only that license of
    /// theirs): 404 for a customer out of the caller's reach or a license not the customer's,
    /// 403 while the team's portal is off. Audited; the link itself is shown this once.
    async fn run(self, cx: &super::Cx) -> Result<licensing_core::api::PortalLink, ApiError> {
        let Self(customer, body) = self;
        let only = body.validate()?;
        let found = cx.perform(super::customers::GetCustomer(customer)).await?;
        if let Some(license) = only {
            let license = cx.read::<License>(license).await?;
            if !license.customer_ids.contains(&found.id) {
                return Err(licensing_core::store::StoreError::NotFound(
                    licensing_core::store::Entity::License,
                )
                .into());
            }
        }
        let team = cx.state.store.get_team(cx.team).await?.ok_or(
            licensing_core::store::StoreError::NotFound(licensing_core::store::Entity::Team),
        )?;
        if !team.settings.portal_enabled {
            return Err(ApiError::forbidden(
                "The team's customer portal is off: turn it on with PUT /settings {\"portalEnabled\": true}",
            ));
        }
        let token = random_secret();
        let expires_at = Timestamp::from_millis(cx.now.as_millis() + PORTAL_TICKET_MS);
        let ticket = PortalTicket {
            id: uuid::Uuid::new_v4(),
            team_id: cx.team,
            token_sha256: sha256_hex(token.as_bytes()),
            code_sha256: None,
            tries_left: 0,
            grant: PortalGrant::Customer {
                customer_id: found.id,
                license_id: only,
            },
            expires_at,
            created_at: cx.now,
        };
        cx.state.store.create_portal_ticket(&ticket).await?;
        let mut changes = vec![FieldChange::of(
            "customerId",
            None,
            Some(found.id.to_string().into()),
        )];
        if let Some(license) = only {
            changes.push(FieldChange::of(
                "licenseId",
                None,
                Some(license.to_string().into()),
            ));
        }
        let journal = cx.journal(Action::PortalLinkCreated, ticket.id, changes);
        cx.state.store.record_journal(&journal).await?;
        Ok(licensing_core::api::PortalLink {
            url: format!("{}/portal/{}/enter/{token}", cx.base_url(), cx.team),
            expires_at,
        })
    }
}

/// The team's signed-in portal sessions, newest first (for staff).
pub(crate) struct ListPortalSessions;

/// Ends a portal session of the team (for staff), by the SHA-256 of its cookie; audited.
pub(crate) struct EndPortalSession(pub(crate) String);

impl licensing_core::operations::Operation for ListPortalSessions {
    const NAME: &'static str = "list_portal_sessions";
    type Output = Vec<PortalSession>;
    const SCOPE: Option<licensing_core::model::Scope> = Some(licensing_core::model::Scope::read(
        licensing_core::model::Resource::Customers,
    ));
    const READ_ONLY: bool = true;
}

impl super::Run for ListPortalSessions {
    async fn run(self, cx: &super::Cx) -> Result<Vec<PortalSession>, ApiError> {
        cx.reach()
            .must_be_whole_team("portal sessions are the team's")?;
        let mut sessions = cx.state.store.list_portal_sessions(cx.team).await?;
        sessions.retain(|s| !s.ended(cx.now));
        Ok(sessions)
    }
}

impl licensing_core::operations::Operation for EndPortalSession {
    const NAME: &'static str = "end_portal_session";
    type Output = ();
    const SCOPE: Option<licensing_core::model::Scope> = Some(licensing_core::model::Scope::write(
        licensing_core::model::Resource::Customers,
    ));
}

impl super::Run for EndPortalSession {
    async fn run(self, cx: &super::Cx) -> Result<(), ApiError> {
        cx.reach()
            .must_be_whole_team("portal sessions are the team's")?;
        let journal = cx.journal(
            Action::PortalSignedOut,
            self.0.get(..16).unwrap_or(&self.0),
            vec![FieldChange::of("endedBy", None, Some("staff".into()))],
        );
        if cx
            .state
            .store
            .delete_portal_session(cx.team, &self.0, &journal)
            .await?
        {
            Ok(())
        } else {
            Err(ApiError::record_not_found("No such portal session"))
        }
    }
}

/// What a session sees, in words for staff: the address, the license, or the customer.
pub(crate) fn grant_words(grant: &PortalGrant) -> String {
    match grant {
        PortalGrant::Email { address } => address.clone(),
        PortalGrant::License { license_id } => format!("license {license_id}"),
        PortalGrant::Customer {
            customer_id,
            license_id: None,
        } => format!("customer {customer_id}"),
        PortalGrant::Customer {
            customer_id,
            license_id: Some(license),
        } => format!("customer {customer_id}, license {license}"),
    }
}

/// A code's digest as stored.
fn code_digest(code: &str) -> String {
    sha256_hex(format!("portal code {code}").as_bytes())
}

/// The audit entry of a session's start or end, its actor the customer (or the key's holder).
fn session_journal(
    session: &PortalSession,
    client: Option<IpAddr>,
    now: Timestamp,
    action: Action,
) -> Journal {
    let actor = match &session.grant {
        PortalGrant::Email { address } => Actor {
            kind: licensing_core::model::ActorKind::Customer,
            id: None,
            name: Some(address.clone()),
        },
        PortalGrant::Customer { customer_id, .. } => Actor::customer(*customer_id, None),
        PortalGrant::License { license_id } => Actor {
            kind: licensing_core::model::ActorKind::Customer,
            id: None,
            name: Some(format!("license {license_id}")),
        },
    };
    Acting::new(actor, client).journal(
        session.team_id,
        now,
        action,
        &session.id_sha256[..16],
        vec![FieldChange::of(
            "method",
            None,
            Some(session.method.as_str().into()),
        )],
    )
}

/// Queues the sign-in mail of a ticket for `address`, when the address is a customer's of
/// `team` with licenses (otherwise nothing: the answer was the same).
async fn send_sign_in_mail(
    state: &AppState,
    team: &Team,
    address: &str,
    (link, code): (&str, &str),
    lang: Lang,
    now: Timestamp,
) -> Result<(), ApiError> {
    let customers = state.store.customers_with_email(team.id, address).await?;
    if licenses_of_customers(state, team.id, &customers, None)
        .await?
        .is_empty()
    {
        return Ok(());
    }
    let Some(mailer) = &state.mailer else {
        tracing::warn!("a portal sign-in e-mail is due but no SMTP server is configured");
        return Ok(());
    };
    let team_name = team.name.as_str();
    let message = OutboxMessage::new(
        team.id,
        address,
        lang.t_with("mail-subject", &[("team", Arg::Text(team_name))]),
        lang.t_with(
            "mail-body",
            &[
                ("team", Arg::Text(team_name)),
                ("link", Arg::Text(link)),
                ("code", Arg::Text(code)),
            ],
        ),
        now,
    )
    .signed(team_name, lang.tag());
    state
        .store
        .queue_messages(team.id, &[message], mailer.daily_limit, now)
        .await?;
    Ok(())
}

/// The licenses of `customers` (only `only`, when given), each once, newest first.
async fn licenses_of_customers(
    state: &AppState,
    team: TeamId,
    customers: &[Customer],
    only: Option<licensing_core::LicenseId>,
) -> Result<Vec<License>, ApiError> {
    if customers.is_empty() {
        return Ok(Vec::new());
    }
    let mut query = LicenseListQuery {
        paging: Paging {
            page: 1,
            page_size: MAX_LICENSES,
            direction: SortDirection::Desc,
        },
        ..LicenseListQuery::default()
    };
    query.filter.customer_ids = customers.iter().map(|c| c.id).collect();
    let mut found = state.store.list_licenses(team, &query).await?.items;
    if let Some(only) = only {
        found.retain(|l| l.id == only);
    }
    Ok(found)
}

/// A signed-in customer: the session and the licenses it sees now.
pub(crate) struct Signed {
    /// The session.
    pub(crate) session: PortalSession,
    /// Its licenses, as stored now.
    pub(crate) licenses: Vec<License>,
    /// The customers it signed in as (an e-mail session's: every customer with the address).
    customers: Vec<Customer>,
}

impl Signed {
    /// The session of cookie `secret` at `now`, for team `team`, with its licenses; `None`
    /// when there is none, it is another team's, or it has ended (then it is deleted).
    pub(crate) async fn of(
        state: &AppState,
        team: TeamId,
        secret: &str,
        now: Timestamp,
    ) -> Result<Option<Self>, ApiError> {
        let id = sha256_hex(secret.as_bytes());
        let Some(session) = state.store.get_portal_session(&id).await? else {
            return Ok(None);
        };
        if session.team_id != team {
            return Ok(None);
        }
        if session.ended(now) {
            state
                .store
                .delete_portal_session(team, &id, &Journal::NONE)
                .await?;
            return Ok(None);
        }
        if now.as_millis() - session.last_seen_at.as_millis() > 60_000 {
            state.store.touch_portal_session(&id, now).await?;
        }
        let (customers, licenses) = match &session.grant {
            PortalGrant::Email { address } => {
                let customers = state.store.customers_with_email(team, address).await?;
                let licenses = licenses_of_customers(state, team, &customers, None).await?;
                (customers, licenses)
            }
            PortalGrant::Customer {
                customer_id,
                license_id,
            } => {
                let customers = state.store.get_customers(team, &[*customer_id]).await?;
                let licenses = licenses_of_customers(state, team, &customers, *license_id).await?;
                (customers, licenses)
            }
            PortalGrant::License { license_id } => {
                let licenses: Vec<License> = state
                    .store
                    .get_license(team, *license_id)
                    .await?
                    .into_iter()
                    .collect();
                let ids: Vec<CustomerId> = licenses
                    .iter()
                    .flat_map(|l| l.customer_ids.iter().copied())
                    .collect();
                (state.store.get_customers(team, &ids).await?, licenses)
            }
        };
        Ok(Some(Self {
            session,
            licenses,
            customers,
        }))
    }

    /// The license `id` if this session sees it.
    pub(crate) fn license(&self, id: licensing_core::LicenseId) -> Option<&License> {
        self.licenses.iter().find(|l| l.id == id)
    }

    /// The caller that acts on `license` for this customer: reaches the session's licenses
    /// only; the audit log names the license's customer the session signed in as.
    pub(crate) fn caller(&self, license: &License) -> Caller {
        let customer = self
            .customers
            .iter()
            .find(|c| license.customer_ids.contains(&c.id));
        Caller::portal(
            customer.map(|c| c.id),
            customer.and_then(|c| c.email.as_ref().map(|e| e.as_str())),
            self.licenses.iter().map(|l| l.id).collect(),
        )
    }

    /// The e-mail address of `license`'s customer that this session signed in as, if any.
    pub(crate) fn email_for(&self, license: &License) -> Option<String> {
        self.customers
            .iter()
            .filter(|c| license.customer_ids.contains(&c.id))
            .find_map(|c| c.email.as_ref().map(|e| e.as_str().to_owned()))
    }

    /// Tells the customer by e-mail, in `lang`, that `name` (a device's identifier or an
    /// address; `what` says which: `reset-what-device` or `reset-what-address`) was freed from
    /// `license`: a freed seat a customer did not free is a sign of someone else in their
    /// account. Nothing without mail set up or an address; a failure is logged, never answered.
    pub(crate) async fn confirm_reset(
        &self,
        state: &AppState,
        team: &Team,
        license: &License,
        (what, name): (&str, &str),
        lang: Lang,
    ) {
        let (Some(mailer), Some(to)) = (&state.mailer, self.email_for(license)) else {
            return;
        };
        let now = Timestamp::now();
        let what = lang.t(what);
        let key = license.license_key.to_string();
        let date = lang.date(now);
        let message = OutboxMessage::new(
            team.id,
            to,
            lang.t("reset-mail-subject"),
            lang.t_with(
                "reset-mail-body",
                &[
                    ("what", Arg::Text(&what)),
                    ("name", Arg::Text(name)),
                    ("key", Arg::Text(&key)),
                    ("date", Arg::Text(&date)),
                    ("team", Arg::Text(&team.name)),
                ],
            ) + "\n",
            now,
        )
        .signed(&team.name, lang.tag());
        if let Err(e) = state
            .store
            .queue_messages(team.id, &[message], mailer.daily_limit, now)
            .await
        {
            tracing::warn!(error = %e, "queueing a portal reset confirmation failed");
        }
    }

    /// Signs out: ends the session, audited.
    pub(crate) async fn end(
        &self,
        state: &AppState,
        client: IpAddr,
        now: Timestamp,
    ) -> Result<(), ApiError> {
        let journal = session_journal(&self.session, Some(client), now, Action::PortalSignedOut);
        state
            .store
            .delete_portal_session(self.session.team_id, &self.session.id_sha256, &journal)
            .await?;
        Ok(())
    }
}

/// How long a session lasts, in seconds (the cookie's `Max-Age`).
pub(crate) const SESSION_SECS: u64 = (PORTAL_SESSION_MS / 1000) as u64;
