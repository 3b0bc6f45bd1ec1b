//! A signed-in person's own account: their password (the current one asked, other sessions
//! ended, wrong guesses limited), their sign-in address (the password asked, another account's
//! address refused, 400 naming it) and their time zone (every time the dashboard shows is in it, to the second
//! in logs); both stores.

use licensing_core::model::Role;

use crate::dashboard::{Browser, PASSWORD, staff};
use crate::helpers::TestServer;

#[tokio::test]
async fn a_person_changes_their_own_password_and_their_other_sessions_end() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "ann@vendor.example", Role::Support).await;
    // A second browser of the same person.
    let mut other = Browser::new(&s);
    assert_eq!(
        other.sign_in("ann@vendor.example", PASSWORD).await.status,
        303
    );
    assert_eq!(other.get("/dashboard/account").await.status, 200);

    let page = b.get("/dashboard/account").await;
    page.has("Change password")
        .has("autocomplete=\"new-password\"");
    // A wrong current password: refused in words, nothing changed.
    let wrong = b
        .submit(
            &page,
            "/dashboard/account/password",
            &[
                ("currentPassword", "not my password"),
                ("newPassword", "a brand new lantern by the sea"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 400, "{}", wrong.text);
    wrong
        .has("Current password")
        .has("is not your current password")
        .lacks("currentPassword</code>");
    // A weak new password: the rule, in words.
    let weak = b
        .submit(
            &page,
            "/dashboard/account/password",
            &[("currentPassword", PASSWORD), ("newPassword", "short")],
        )
        .await;
    assert_eq!(weak.status, 400, "{}", weak.text);
    weak.has("New password").has("at least 12 characters");

    let changed = b
        .submit(
            &page,
            "/dashboard/account/password",
            &[
                ("currentPassword", PASSWORD),
                ("newPassword", "a brand new lantern by the sea"),
            ],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.text);
    assert_eq!(
        changed.location(),
        "/dashboard/account?notice=password-changed"
    );
    // This browser stays signed in (a new session); the other one is signed out.
    b.get("/dashboard/account?notice=password-changed")
        .await
        .has("Password changed.");
    let ended = other.get("/dashboard/account").await;
    assert_eq!(ended.status, 303, "{}", ended.text);
    assert!(ended.location().starts_with("/dashboard/sign-in"));
    // The old password no longer signs in; the new one does.
    let mut fresh = Browser::new(&s);
    assert_eq!(
        fresh.sign_in("ann@vendor.example", PASSWORD).await.status,
        401
    );
    assert_eq!(
        fresh
            .sign_in("ann@vendor.example", "a brand new lantern by the sea")
            .await
            .status,
        303
    );
    // Audited as the person's own change, the password itself never shown.
    let log = s.get(&s.dev("audit-log?action=staff.password_set")).await;
    let entry = &log.ok()["entries"][0];
    assert_eq!(entry["actor"]["name"], "ann@vendor.example");
    assert!(!log.ok().to_string().contains("lantern"));
}

#[tokio::test]
async fn wrong_current_passwords_are_limited_per_session() {
    // Five wrong passwords a minute per session, as for signing in.
    let s = TestServer::start_with(|c| c.auth_failure_limit_per_minute = 50).await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "bo@vendor.example", Role::Viewer).await;
    let page = b.get("/dashboard/account").await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let status = b
            .submit(
                &page,
                "/dashboard/account/email",
                &[("email", "bo2@vendor.example"), ("password", "guess")],
            )
            .await
            .status;
        statuses.push(status);
    }
    assert_eq!(statuses, [400, 400, 400, 400, 400, 429]);
    let waited = b
        .submit(
            &page,
            "/dashboard/account/email",
            &[("email", "bo2@vendor.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(waited.status, 429, "{}", waited.text);
    waited.has("Too many wrong passwords");
}

/// A test server that sends e-mail to an SMTP server of the test's, and the mail it receives.
async fn with_mail() -> (TestServer, tokio::sync::mpsc::UnboundedReceiver<String>) {
    with_mail_and(|_| {}).await
}

/// [`with_mail`], with more settings.
async fn with_mail_and(
    more: impl FnOnce(&mut licensing_server::config::Config),
) -> (TestServer, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(crate::mail::smtp_server(listener, tx));
    let s = TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
        more(c);
    })
    .await;
    (s, rx)
}

/// The next message's confirmation link's path.
async fn confirm_link(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> (String, String) {
    mailed_link(rx, "/dashboard/confirm-email/").await
}

/// A link in the next message: its path from `marker` on, and the message.
async fn mailed_link(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    marker: &str,
) -> (String, String) {
    let message = tokio::time::timeout(std::time::Duration::from_secs(20), rx.recv())
        .await
        .expect("no e-mail arrived in time")
        .unwrap()
        // Long lines may come quoted-printable: undo its soft line breaks.
        .replace("=\n", "")
        .replace("=3D", "=");
    let at = message.find(marker).expect("a link");
    let path: String = message[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    (message, path)
}

/// A person who forgot their password asks the sign-in page for a link: the answer is the same
/// for an address without an account (which gets no mail), the password keeps working until
/// the link is used, the link works once, the request is audited, and asking is limited.
#[tokio::test]
async fn a_forgotten_password_is_replaced_through_a_link_mailed_from_the_sign_in_page() {
    // Authentication limits on (the tests' default is off), as a server has them.
    let (s, mut rx) = with_mail_and(|c| c.auth_failure_limit_per_minute = 10).await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "fay@vendor.example", Role::Owner).await;

    let mut door = Browser::new(&s);
    door.get("/dashboard/sign-in")
        .await
        .has("href=\"/dashboard/forgot-password\"")
        .has("Forgot your password?");
    let form = door.get("/dashboard/forgot-password").await;
    assert_eq!(form.status, 200, "{}", form.text);
    let asked = door
        .submit(
            &form,
            "/dashboard/forgot-password",
            &[("email", " Fay@Vendor.example ")],
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    asked.has("Check your e-mail").has("has an account here");
    let (message, link) = mailed_link(&mut rx, "/dashboard/set-password/").await;
    assert!(message.contains("To: fay@vendor.example"), "{message}");
    assert!(
        message.contains("From: \"Team A\" <noreply@example.com>")
            || message.contains("From: Team A <noreply@example.com>"),
        "{message}"
    );
    assert!(message.contains("Choose a new password"), "{message}");

    // An address without an account: the same answer, and no mail.
    let unknown = door
        .submit(
            &form,
            "/dashboard/forgot-password",
            &[("email", "nobody@vendor.example")],
        )
        .await;
    assert_eq!(unknown.status, 200);
    assert_eq!(
        unknown.text.replace("nobody@vendor.example", "ADDRESS"),
        asked.text.replace("Fay@Vendor.example", "ADDRESS"),
        "the same page for both"
    );
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(1500), rx.recv())
            .await
            .is_err(),
        "no mail for an address without an account"
    );
    let bad = door
        .submit(
            &form,
            "/dashboard/forgot-password",
            &[("email", "not an address")],
        )
        .await;
    assert_eq!(bad.status, 400);
    bad.has("not an e-mail address");

    // Until the link is used the password works (a stranger's request locks nobody out).
    assert_eq!(
        Browser::new(&s)
            .sign_in("fay@vendor.example", PASSWORD)
            .await
            .status,
        303
    );
    let mut mailbox = Browser::new(&s);
    let set = mailbox.get(&link).await;
    assert_eq!(set.status, 200, "{}", set.text);
    set.has("fay@vendor.example");
    let new_password = "another quiet harbour at noon";
    let done = mailbox
        .post(
            &link,
            &[("password", new_password), ("confirm", new_password)],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert_eq!(mailbox.get(&link).await.status, 404, "the link works once");
    assert_eq!(
        Browser::new(&s)
            .sign_in("fay@vendor.example", PASSWORD)
            .await
            .status,
        401
    );
    assert_eq!(
        Browser::new(&s)
            .sign_in("fay@vendor.example", new_password)
            .await
            .status,
        303
    );
    let log = s.get(&s.dev("audit-log?action=staff.link_issued")).await;
    let entry = &log.ok()["entries"][0];
    assert_eq!(entry["changes"][0]["field"], "via", "{entry}");
    assert_eq!(entry["changes"][0]["new"], "forgot-password e-mail");

    // Three requests an hour per address, whether or not it has an account.
    for _ in 0..2 {
        let again = door
            .submit(
                &form,
                "/dashboard/forgot-password",
                &[("email", "fay@vendor.example")],
            )
            .await;
        assert_eq!(again.status, 200, "{}", again.text);
    }
    let limited = door
        .submit(
            &form,
            "/dashboard/forgot-password",
            &[("email", "fay@vendor.example")],
        )
        .await;
    assert_eq!(limited.status, 429, "{}", limited.text);
    limited.has("Too many links");
    assert!(!limited.header("retry-after").is_empty());
}

/// A new sign-in address takes effect only when the link mailed to it is followed: the
/// password is asked, another account's address in the team is refused, and until the link is
/// followed the account signs in with its address as it was; the change is audited.
#[tokio::test]
async fn a_person_changes_their_own_address_by_a_link_sent_to_it() {
    let (s, mut rx) = with_mail().await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "cy@vendor.example",
        Role::Developer,
    )
    .await;
    let mut taken = Browser::new(&s);
    staff(
        &s,
        &mut taken,
        s.team_id(),
        "dee@vendor.example",
        Role::Viewer,
    )
    .await;
    let page = b.get("/dashboard/account").await;

    let wrong = b
        .submit(
            &page,
            "/dashboard/account/email",
            &[("email", "cy.new@vendor.example"), ("password", "wrong")],
        )
        .await;
    assert_eq!(wrong.status, 400, "{}", wrong.text);
    wrong
        .has("Your password")
        .has("is not your current password")
        .has("value=\"cy.new@vendor.example\"");
    let clash = b
        .submit(
            &page,
            "/dashboard/account/email",
            &[("email", "DEE@vendor.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(clash.status, 400, "{}", clash.text);
    clash.has("already has an account in this team");
    let bad = b
        .submit(
            &page,
            "/dashboard/account/email",
            &[("email", "not an address"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);

    let asked = b
        .submit(
            &page,
            "/dashboard/account/email",
            &[("email", "Cy.New@vendor.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(asked.status, 303, "{}", asked.text);
    assert_eq!(
        asked.location(),
        "/dashboard/account?notice=email-confirm-sent"
    );
    let (message, link) = confirm_link(&mut rx).await;
    assert!(message.contains("To: cy.new@vendor.example"), "{message}");
    // Nothing changed yet: the old address signs in, the new one does not.
    b.get("/dashboard/account")
        .await
        .has("Waiting for confirmation")
        .has("cy.new@vendor.example");
    let mut fresh = Browser::new(&s);
    assert_eq!(
        fresh
            .sign_in("cy.new@vendor.example", PASSWORD)
            .await
            .status,
        401
    );
    // The link's page asks for one click (a mail scanner that opens it changes nothing).
    let mut mailbox = Browser::new(&s);
    let confirm = mailbox.get(&link).await;
    assert_eq!(confirm.status, 200, "{}", confirm.text);
    confirm.has("Confirm the address");
    let confirmed = mailbox.post(&link, &[]).await;
    assert_eq!(confirmed.status, 303, "{}", confirmed.text);
    assert_eq!(
        mailbox.post(&link, &[]).await.status,
        404,
        "the link works once"
    );
    let mut fresh = Browser::new(&s);
    assert_eq!(
        fresh.sign_in("cy@vendor.example", PASSWORD).await.status,
        401
    );
    assert_eq!(
        fresh
            .sign_in("cy.new@vendor.example", PASSWORD)
            .await
            .status,
        303
    );
    let log = s.get(&s.dev("audit-log?action=staff.updated")).await;
    let change = &log.ok()["entries"][0]["changes"][0];
    assert_eq!(change["field"], "email");
    assert_eq!(change["old"], "cy@vendor.example");
    assert_eq!(change["new"], "cy.new@vendor.example");
}

/// Nobody takes an address of another team's staff without reading its mail: asking for it
/// changes nothing, and the failed sign-ins of that address stay out of the asking team's log.
/// Without e-mail the server cannot prove an address, and refuses to change one.
#[tokio::test]
async fn another_teams_address_cannot_be_taken_without_its_mail() {
    let (s, mut rx) = with_mail().await;
    let other = s.other_team().await;
    let other_id = other.team_id;
    let mut victim = Browser::new(&s);
    staff(
        &s,
        &mut victim,
        other_id,
        "vic@elsewhere.example",
        Role::Owner,
    )
    .await;
    let mut taker = Browser::new(&s);
    staff(
        &s,
        &mut taker,
        s.team_id(),
        "tak@vendor.example",
        Role::Owner,
    )
    .await;
    let page = taker.get("/dashboard/account").await;
    let asked = taker
        .submit(
            &page,
            "/dashboard/account/email",
            &[("email", "vic@elsewhere.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(asked.status, 303, "{}", asked.text);
    let (message, _) = confirm_link(&mut rx).await;
    assert!(message.contains("To: vic@elsewhere.example"), "{message}");
    // The victim's failed sign-ins are not the taker's team's to read.
    let mut guesser = Browser::new(&s);
    assert_eq!(
        guesser
            .sign_in("vic@elsewhere.example", "not the password at all")
            .await
            .status,
        401
    );
    let log = s.get(&s.dev("audit-log?pageSize=100")).await;
    let failed: Vec<_> = log.ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "staff.sign_in_failed")
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    // Without e-mail: refused in words.
    let plain = TestServer::start().await;
    let mut b = Browser::new(&plain);
    staff(
        &plain,
        &mut b,
        plain.team_id(),
        "no.mail@vendor.example",
        Role::Owner,
    )
    .await;
    let page = b.get("/dashboard/account").await;
    let refused = b
        .submit(
            &page,
            "/dashboard/account/email",
            &[("email", "other@vendor.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused.has("sends no e-mail");
}

#[tokio::test]
async fn times_are_shown_in_the_persons_time_zone_to_the_second_in_logs() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "eve@vendor.example", Role::Owner).await;
    s.license(r#"{"expirationType":"NEVER"}"#).await;
    let page = b.get("/dashboard/account").await;
    page.has("<option value=\"Asia/Kolkata\"");
    let refused = b
        .submit(
            &page,
            "/dashboard/account/time-zone",
            &[("timeZone", "Mars/Olympus")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused.has("is not a time zone");

    // UTC first: the audit log's times end in UTC, to the second.
    let utc = b.get("/dashboard/audit").await;
    assert_eq!(utc.status, 200, "{}", utc.text);
    let seconds_utc = regex_time(&utc.text, "UTC");
    assert!(seconds_utc.is_some(), "{}", utc.text);

    let saved = b
        .submit(
            &page,
            "/dashboard/account/time-zone",
            &[("timeZone", "Asia/Kolkata")],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    b.get("/dashboard/account")
        .await
        .has("<option value=\"Asia/Kolkata\" selected");
    // India is UTC+5:30 all year: the same entry, five and a half hours later, marked IST.
    let kolkata = b.get("/dashboard/audit").await;
    let shown = regex_time(&kolkata.text, "IST").expect("a time in IST");
    let (day, time) = seconds_utc.unwrap();
    let utc_at =
        chrono::NaiveDateTime::parse_from_str(&format!("{day} {time}"), "%Y-%m-%d %H:%M:%S")
            .unwrap();
    let ist_at = chrono::NaiveDateTime::parse_from_str(
        &format!("{} {}", shown.0, shown.1),
        "%Y-%m-%d %H:%M:%S",
    )
    .unwrap();
    assert_eq!(ist_at - utc_at, chrono::Duration::minutes(330));
    let log = s.get(&s.dev("audit-log?action=staff.updated")).await;
    assert_eq!(log.ok()["entries"][0]["changes"][0]["new"], "Asia/Kolkata");
    // Back to UTC.
    let page = b.get("/dashboard/account").await;
    b.submit(
        &page,
        "/dashboard/account/time-zone",
        &[("timeZone", "UTC")],
    )
    .await;
    assert!(regex_time(&b.get("/dashboard/audit").await.text, "UTC").is_some());
}

/// The last `YYYY-MM-DD HH:MM:SS ZONE` on a page: day and time.
fn regex_time(text: &str, zone: &str) -> Option<(String, String)> {
    let suffix = format!(" {zone}<");
    // The last one shown: the oldest entry, which is on both pages compared (the newest is the
    // time zone's change itself, on the second page only).
    let at = text.rfind(&suffix)?;
    let start = at.checked_sub(19)?;
    let stamp = &text[start..at];
    let (day, time) = stamp.split_once(' ')?;
    (day.len() == 10 && time.len() == 8).then(|| (day.to_owned(), time.to_owned()))
}
