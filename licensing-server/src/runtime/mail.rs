//! License e-mails: queued durably with the license (see `create_license_with_mail`) and
//! delivered by a background worker over SMTP, retried with backoff, so a failing mail server
//! neither fails the API call nor loses a message.

use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use licensing_core::Timestamp;
use licensing_core::model::{Customer, License, OutboxMessage, Product};
use licensing_core::store::OutboxStore;
use maud::{Markup, html};
use tokio::sync::watch;

use crate::i18n::{Arg, Lang};

/// E-mails a team may queue per day unless the operator says otherwise.
pub const DEFAULT_DAILY_LIMIT: u32 = 50;
/// How often the worker looks for due messages.
const POLL: Duration = Duration::from_millis(500);
/// Messages sent per round.
const BATCH: usize = 20;

/// An SMTP client with its sender address.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// E-mails a team may queue per day.
    pub daily_limit: u32,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl Mailer {
    /// A mailer for an SMTP URL (`smtp://user:pass@host:587?tls=required`,
    /// `smtps://host:465`, `smtp://localhost:25`) and a sender (`Licensing <noreply@example.com>`).
    pub fn new(url: &str, from: &str) -> Result<Self, String> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| format!("LICENSING_SMTP_URL: {e}"))?
            .timeout(Some(Duration::from_secs(15)))
            .build();
        let from = from
            .parse::<Mailbox>()
            .map_err(|e| format!("LICENSING_SMTP_FROM: {e}"))?;
        Ok(Self {
            transport,
            from,
            daily_limit: DEFAULT_DAILY_LIMIT,
        })
    }

    /// Sends one message: its text, and the same text as HTML, both UTF-8, from the server's
    /// address under the message's sender name (the team's) when it has one.
    pub async fn send(&self, m: &OutboxMessage) -> Result<(), String> {
        let to =
            m.to.parse::<Mailbox>()
                .map_err(|e| format!("recipient: {e}"))?;
        let from = match &m.sender_name {
            Some(name) => Mailbox::new(Some(name.clone()), self.from.email.clone()),
            None => self.from.clone(),
        };
        let html = html_of(&m.body, m.language.as_deref().unwrap_or("en"));
        let email = Message::builder()
            .from(from)
            .to(to)
            .subject(m.subject.clone())
            .multipart(MultiPart::alternative_plain_html(m.body.clone(), html))
            .map_err(|e| format!("message: {e}"))?;
        self.transport
            .send(email)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// The HTML part of a message whose text is `text`: the same words, one template for every
/// message. Paragraphs are the text's blank-line separated blocks; an indented line (a key, a
/// code, a link) stands out in a monospace box; web addresses are links.
pub fn html_of(text: &str, language: &str) -> String {
    let blocks: Vec<&str> = text
        .split("\n\n")
        .map(|b| b.trim_end())
        .filter(|b| !b.trim().is_empty())
        .collect();
    let block = |b: &str| -> Markup {
        let lines: Vec<&str> = b.lines().collect();
        if lines.iter().all(|l| l.starts_with("    ")) {
            let code = lines
                .iter()
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join("\n");
            html! {
                p style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:15px;background:#f3f4f6;border-radius:6px;padding:10px 14px;word-break:break-all" {
                    (linked(&code))
                }
            }
        } else {
            html! {
                p style="margin:0 0 14px" {
                    @for (i, line) in lines.iter().enumerate() {
                        @if i > 0 { br; }
                        (linked(line))
                    }
                }
            }
        }
    };
    html! {
        (maud::DOCTYPE)
        html lang=(language) {
            head { meta charset="utf-8"; meta name="viewport" content="width=device-width"; }
            body style="font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;font-size:15px;line-height:1.5;color:#111827;max-width:600px;margin:0 auto;padding:20px" {
                @for b in &blocks { (block(b)) }
            }
        }
    }
    .into_string()
}

/// `text` escaped, its `http://` and `https://` addresses links.
fn linked(text: &str) -> Markup {
    let mut parts: Vec<(bool, &str)> = Vec::new();
    let mut rest = text;
    while let Some(start) = [rest.find("https://"), rest.find("http://")]
        .into_iter()
        .flatten()
        .min()
    {
        let end = rest[start..]
            .find(char::is_whitespace)
            .map_or(rest.len(), |n| start + n);
        // A sentence's full stop or closing bracket after an address is not part of it.
        let url = rest[start..end].trim_end_matches(['.', ',', ')', ';', ':', '!', '?']);
        parts.push((false, &rest[..start]));
        parts.push((true, url));
        rest = &rest[start + url.len()..];
    }
    parts.push((false, rest));
    html! {
        @for (is_link, part) in parts {
            @if is_link { a href=(part) style="color:#1d4ed8" { (part) } } @else { (part) }
        }
    }
}

/// The language `customer` reads: their metadata item `language` (`de`, `de-AT`) when the
/// catalog has it, else English.
pub(crate) fn language_of(customer: &Customer) -> Lang {
    customer
        .metadata
        .iter()
        .find(|m| m.key.eq_ignore_ascii_case("language"))
        .and_then(|m| Lang::of_tag(&m.value))
        .unwrap_or(Lang::En)
}

/// The messages for a new license: one to each customer with an e-mail address, in the
/// customer's language (their metadata item `language`, when the catalog has it), sent in the
/// name of `team_name`.
pub fn license_messages(
    license: &License,
    customers: &[Customer],
    products: &[Product],
    team_name: &str,
    now: Timestamp,
) -> Vec<OutboxMessage> {
    let product_names: Vec<&str> = products.iter().map(|p| p.name.as_str()).collect();
    let key = license.license_key.to_string();
    customers
        .iter()
        .filter_map(|c| {
            let to = c.email.as_ref()?.as_str();
            let lang = language_of(c);
            let what = if product_names.is_empty() {
                lang.t("license-mail-your-software")
            } else {
                product_names.join(", ")
            };
            let expires = match (license.expiration_date, license.expiration_days) {
                (Some(date), _) => lang.t_with(
                    "license-mail-until",
                    &[("date", Arg::Text(&lang.date(date)))],
                ),
                (None, Some(days)) => lang.t_with(
                    "license-mail-days",
                    &[("days", Arg::Number(i64::from(days)))],
                ),
                (None, None) => lang.t("license-mail-never"),
            };
            let there = lang.t("license-mail-there");
            let greeting = c
                .full_name
                .as_deref()
                .or(c.username.as_deref())
                .unwrap_or(&there);
            let subject = lang.t_with("license-mail-subject", &[("what", Arg::Text(&what))]);
            let body = lang.t_with(
                "license-mail-body",
                &[
                    ("name", Arg::Text(greeting)),
                    ("what", Arg::Text(&what)),
                    ("key", Arg::Text(&key)),
                    ("expires", Arg::Text(&expires)),
                ],
            ) + "\n";
            Some(
                OutboxMessage::new(license.team_id, to, subject, body, now)
                    .signed(team_name, lang.tag()),
            )
        })
        .collect()
}

/// What a message to a staff member says.
pub enum StaffMail<'a> {
    /// The invitation of a new account.
    Invitation {
        /// The team's name.
        team_name: &'a str,
        /// Who invites.
        inviter: &'a str,
        /// The set-password link.
        link: &'a str,
        /// How long the link works.
        hours: i64,
    },
    /// A set-password link the account's owner asked for on the sign-in page.
    PasswordReset {
        /// The team's name.
        team_name: &'a str,
        /// The set-password link.
        link: &'a str,
        /// How long the link works.
        hours: i64,
    },
    /// The confirmation of a new sign-in address of an account.
    EmailChange {
        /// The account's address now.
        from: &'a str,
        /// The link that confirms the change.
        link: &'a str,
        /// How long the link works.
        hours: i64,
    },
}

/// A message to staff member's address `to` of `team`, due at once.
pub fn staff_message(
    (team, to): (licensing_core::TeamId, &str),
    mail: StaffMail<'_>,
    now: Timestamp,
) -> OutboxMessage {
    // An invitation comes in the team's name; the other messages concern the account only.
    let sender = match &mail {
        StaffMail::Invitation { team_name, .. } | StaffMail::PasswordReset { team_name, .. } => {
            Some(*team_name)
        }
        StaffMail::EmailChange { .. } => None,
    };
    let (subject, body) = match mail {
        StaffMail::Invitation {
            team_name,
            inviter,
            link,
            hours,
        } => (
            format!("You are invited to the {team_name} licensing dashboard"),
            format!(
                "Hello,\n\n{inviter} invited you to the licensing dashboard of {team_name}.\n\nChoose your password here (the link works once, within {hours} hours):\n\n    {link}\n\nIf you did not expect this, ignore this e-mail.\n"
            ),
        ),
        StaffMail::PasswordReset {
            team_name,
            link,
            hours,
        } => (
            format!("Choose a new password for the {team_name} licensing dashboard"),
            format!(
                "Hello,\n\nSomeone, probably you, asked for a new password for your account on the licensing dashboard of {team_name}.\n\nChoose it here (the link works once, within {hours} {unit}):\n\n    {link}\n\nIf you did not ask for this, ignore this e-mail: your password stays as it is.\n",
                unit = if hours == 1 { "hour" } else { "hours" },
            ),
        ),
        StaffMail::EmailChange { from, link, hours } => (
            "Confirm your new sign-in address".to_owned(),
            format!(
                "Hello,\n\nThe licensing dashboard account {from} asked to sign in with this address from now on.\n\nTo confirm, open this link (it works once, within {hours} hours):\n\n    {link}\n\nIf you did not ask for this, ignore this e-mail: nothing changes.\n"
            ),
        ),
    };
    let message = OutboxMessage::new(team, to, subject, body, now);
    match sender {
        Some(team_name) => message.signed(team_name, "en"),
        None => message,
    }
}

/// Delivers due messages until `stop` turns true.
pub async fn run_worker<S: OutboxStore>(store: S, mailer: Mailer, stop: watch::Receiver<bool>) {
    super::periodic::every(POLL, stop, || deliver_due(&store, &mailer)).await;
}

async fn deliver_due<S: OutboxStore>(store: &S, mailer: &Mailer) {
    // Claimed for ten minutes: the most a batch's deliveries take, so that the worker of another
    // instance on the same database sends none of them meanwhile.
    let due = match store
        .claim_messages(Timestamp::now(), 10 * 60 * 1000, BATCH)
        .await
    {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(error = %e, "reading the outbox failed");
            return;
        }
    };
    for mut m in due {
        match mailer.send(&m).await {
            Ok(()) => {
                tracing::info!(message = %m.id, to = %mask_email(&m.to), attempts = m.attempts + 1, "license e-mail delivered");
                if let Err(e) = store.message_sent(&m).await {
                    tracing::error!(error = %e, "could not remove a delivered message");
                }
            }
            Err(e) => {
                m.attempts += 1;
                let delay = OutboxMessage::backoff_seconds(m.attempts);
                m.next_attempt_at = Timestamp::now().plus_seconds(delay);
                // Customers' addresses stay out of the logs: masked, here and in the SMTP
                // server's words.
                tracing::warn!(
                    message = %m.id,
                    to = %mask_email(&m.to),
                    attempts = m.attempts,
                    retry_in_s = delay,
                    error = %mask_emails_in(&e),
                    "license e-mail failed"
                );
                m.last_error = Some(e);
                if let Err(e) = store.message_failed(&m).await {
                    tracing::error!(error = %e, "could not reschedule a message");
                }
            }
        }
    }
}

/// An e-mail address for the logs: its first character and its domain (`j***@example.com`).
pub fn mask_email(address: &str) -> String {
    match address.rsplit_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}***@{domain}")
        }
        None => "***".into(),
    }
}

/// `text` with every e-mail address in it masked (see [`mask_email`]).
pub fn mask_emails_in(text: &str) -> String {
    let is_part = |c: char| c.is_alphanumeric() || "._%+-@".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.contains('@') {
            out.push_str(&mask_email(word));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if is_part(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_masked_wherever_they_appear() {
        assert_eq!(mask_email("jane.doe@example.com"), "j***@example.com");
        assert_eq!(mask_email("nobody"), "***");
        assert_eq!(
            mask_emails_in("550 5.1.1 <jane.doe@example.com>: user unknown; cc x@y.org"),
            "550 5.1.1 <j***@example.com>: user unknown; cc x***@y.org"
        );
        assert_eq!(mask_emails_in("no address here"), "no address here");
    }
}
