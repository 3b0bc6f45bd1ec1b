//! (ext) The customer portal (protocol.md section 7): closed until the team opens it; sign-in by
//! an e-mailed link (one click on its page) or its code on the browser that asked, by license
//! key, and by a link the vendor's site mints; a session sees its own licenses only, whatever
//! ids a URL or form names; devices freed within the policy's budget, exactly, under concurrent
//! clicks (across two instances on PostgreSQL); English and German.

use std::time::Duration;

use licensing_core::model::{PortalGrant, PortalTicket};
use licensing_core::store::PortalStore;
use licensing_core::{Timestamp, crypto::sha256_hex};
use serde_json::{Value, json};

use crate::dashboard::Browser;
use crate::helpers::{TestServer, on_postgres};

type Inbox = tokio::sync::mpsc::UnboundedReceiver<String>;

/// A test server that mails through an SMTP server of the test's, with the portal open.
async fn with_portal() -> (TestServer, Inbox) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(crate::mail::smtp_server(listener, tx));
    let s = TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
    })
    .await;
    open_portal(&s).await;
    (s, rx)
}

async fn open_portal(s: &TestServer) {
    let on = s
        .put(&s.dev("settings"), r#"{"portalEnabled": true}"#)
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
}

async fn customer(s: &TestServer, email: &str) -> String {
    let made = s
        .post(&s.dev("customers"), &json!({"email": email}).to_string())
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    made.ok()["id"].as_str().unwrap().to_owned()
}

async fn license_of(s: &TestServer, customer: &str, extra: Value) -> Value {
    let mut body = json!({"expirationType": "NEVER", "customerIds": [customer], "hwidLimit": 20});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    s.license(&body.to_string()).await
}

fn key(license: &Value) -> &str {
    license["licenseKey"].as_str().unwrap()
}

fn id(v: &Value) -> &str {
    v["id"].as_str().unwrap()
}

/// The next message, its soft line breaks undone.
async fn next_mail(rx: &mut Inbox) -> String {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("no e-mail arrived in time")
        .unwrap()
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=")
}

/// The link's path and the code of a sign-in mail.
fn link_and_code(mail: &str) -> (String, String) {
    let at = mail.find("/portal/").expect("a link");
    let path: String = mail[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    let marker = "sign-in page: ";
    let code_at = mail.find(marker).expect("a code") + marker.len();
    (path, mail[code_at..code_at + 6].to_owned())
}

/// Signs `b` in to team `s`'s portal with license key `key`.
async fn sign_in_by_key(s: &TestServer, b: &mut Browser, key: &str) {
    let team = s.team_id();
    let page = b.get(&format!("/portal/{team}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let done = b
        .submit(
            &page,
            &format!("/portal/{team}/key"),
            &[("licenseKey", key)],
        )
        .await;
    assert_eq!(
        (done.status, done.location()),
        (303, format!("/portal/{team}/licenses").as_str()),
        "{}",
        done.text
    );
}

#[tokio::test]
async fn the_portal_is_absent_until_the_team_opens_it_and_offers_the_ways_it_chose() {
    let s = TestServer::start().await;
    let team = s.team_id();
    let mut b = Browser::new(&s);
    let closed = b.get(&format!("/portal/{team}")).await;
    assert_eq!(closed.status, 404);
    let unknown = b
        .get(&format!("/portal/{}", licensing_core::TeamId::new()))
        .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        closed.text, unknown.text,
        "a closed portal and no team look alike"
    );
    assert_eq!(b.get(&format!("/portal/{team}/licenses")).await.status, 404);

    let settings = s.get(&s.dev("settings")).await;
    assert_eq!(settings.ok()["portalEnabled"], false);
    assert_eq!(
        settings.ok()["portalSignIn"],
        json!(["email", "licenseKey"])
    );
    let bad = s
        .put(&s.dev("settings"), r#"{"portalSignIn": ["email", "sms"]}"#)
        .await;
    bad.err(400, "BAD_REQUEST");
    assert!(
        bad.body.to_string().contains("portalSignIn"),
        "{}",
        bad.body
    );
    open_portal(&s).await;
    let open = b.get(&format!("/portal/{team}")).await;
    assert_eq!(open.status, 200, "{}", open.text);
    open.has("name=\"email\"")
        .has("name=\"licenseKey\"")
        .has("Sign in");
    assert!(
        open.header("content-security-policy")
            .contains("default-src 'none'")
    );
    assert!(open.header("cache-control").contains("no-store"));
    let only_keys = s
        .put(&s.dev("settings"), r#"{"portalSignIn": ["licenseKey"]}"#)
        .await;
    assert_eq!(only_keys.ok()["portalSignIn"], json!(["licenseKey"]));
    let page = b.get(&format!("/portal/{team}")).await;
    page.lacks("name=\"email\"").has("name=\"licenseKey\"");
    let refused = b
        .submit(
            &page,
            &format!("/portal/{team}/email"),
            &[("email", "jane@example.com")],
        )
        .await;
    assert_eq!(refused.status, 403);
    // A form without the sign-in cookie's token is refused.
    let mut stranger = Browser::new(&s);
    let forged = stranger
        .post(
            &format!("/portal/{team}/key"),
            &[("csrf", "x".repeat(43).as_str()), ("licenseKey", "AAAA")],
        )
        .await;
    assert_eq!(forged.status, 403);
}

#[tokio::test]
async fn a_customer_signs_in_by_an_emailed_link_or_its_code_and_an_unknown_address_is_answered_alike()
 {
    let (s, mut inbox) = with_portal().await;
    let team = s.team_id();
    let jane = customer(&s, "jane@example.com").await;
    // A second customer record with the same address (bought twice): its licenses are Jane's too.
    let jane_again = customer(&s, "Jane@Example.com").await;
    let john = customer(&s, "john@example.com").await;
    let first = license_of(&s, &jane, json!({})).await;
    let second = license_of(&s, &jane_again, json!({})).await;
    let johns = license_of(&s, &john, json!({})).await;

    let mut asking = Browser::new(&s);
    let page = asking.get(&format!("/portal/{team}")).await;
    let sent = asking
        .submit(
            &page,
            &format!("/portal/{team}/email"),
            &[("email", "jane@example.com")],
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    sent.has("Check your e-mail").has("name=\"code\"");
    let mut other = Browser::new(&s);
    let page = other.get(&format!("/portal/{team}")).await;
    let unknown = other
        .submit(
            &page,
            &format!("/portal/{team}/email"),
            &[("email", "nobody@example.com")],
        )
        .await;
    assert_eq!(unknown.status, sent.status);
    let same = |text: &str, address: &str, ticket: &str, csrf: &str| {
        text.replace(address, "ADDRESS")
            .replace(ticket, "TICKET")
            .replace(csrf, "CSRF")
    };
    assert_eq!(
        same(
            &sent.text,
            "jane@example.com",
            &sent.field("ticket"),
            &sent.field("csrf")
        ),
        same(
            &unknown.text,
            "nobody@example.com",
            &unknown.field("ticket"),
            &unknown.field("csrf")
        ),
        "the answer never tells whether an address has licenses"
    );

    let mail = next_mail(&mut inbox).await;
    assert!(mail.contains("To: jane@example.com"), "{mail}");
    let (link, code) = link_and_code(&mail);
    assert!(link.starts_with(&format!("/portal/{team}/link/")), "{link}");

    // The link's page asks for one click: opening it (a mail scanner) spends nothing.
    let mut phone = Browser::new(&s);
    for _ in 0..2 {
        let opened = phone.get(&link).await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        opened.has("Continue");
    }
    let opened = phone.get(&link).await;
    let signed = phone.submit(&opened, &link, &[]).await;
    assert_eq!(
        (signed.status, signed.location()),
        (303, format!("/portal/{team}/licenses").as_str()),
        "{}",
        signed.text
    );
    let cookie = signed.header("set-cookie");
    let licenses = phone.get(&format!("/portal/{team}/licenses")).await;
    assert_eq!(licenses.status, 200, "{}", licenses.text);
    licenses
        .has(key(&first))
        .has(key(&second))
        .lacks(key(&johns));
    let _ = cookie;

    // Used: the link, and its code, work no more.
    let mut late = Browser::new(&s);
    let page = late.get(&link).await;
    let reused = late.submit(&page, &link, &[]).await;
    assert_eq!(reused.status, 410, "{}", reused.text);
    reused.has("expired or was used");
    let spent = asking
        .submit(
            &sent,
            &format!("/portal/{team}/code"),
            &[
                ("ticket", &sent.field("ticket")),
                ("email", "jane@example.com"),
                ("code", &code),
            ],
        )
        .await;
    assert_eq!(spent.status, 400);
    spent.has("expired or was used up");

    // A new mail; its code typed on the browser that asked (the mail read on another device).
    let page = asking.get(&format!("/portal/{team}")).await;
    let sent = asking
        .submit(
            &page,
            &format!("/portal/{team}/email"),
            &[("email", "jane@example.com")],
        )
        .await;
    let (_, code) = link_and_code(&next_mail(&mut inbox).await);
    let wrong_code = if code == "000000" { "111111" } else { "000000" };
    let wrong = asking
        .submit(
            &sent,
            &format!("/portal/{team}/code"),
            &[
                ("ticket", &sent.field("ticket")),
                ("email", "jane@example.com"),
                ("code", wrong_code),
            ],
        )
        .await;
    assert_eq!(wrong.status, 400);
    wrong.has("4 more tries");
    let right = asking
        .submit(
            &wrong,
            &format!("/portal/{team}/code"),
            &[
                ("ticket", &sent.field("ticket")),
                ("email", "jane@example.com"),
                ("code", &code),
            ],
        )
        .await;
    assert_eq!(right.status, 303, "{}", right.text);
    asking
        .get(&format!("/portal/{team}/licenses"))
        .await
        .has(key(&first))
        .lacks(key(&johns));

    // An expired link is refused.
    let token = "expired-link-token-expired-link-token-0000";
    let stale = PortalTicket {
        id: uuid::Uuid::new_v4(),
        team_id: team,
        token_sha256: sha256_hex(token.as_bytes()),
        code_sha256: None,
        tries_left: 0,
        grant: PortalGrant::Email {
            address: "jane@example.com".into(),
        },
        expires_at: Timestamp::from_millis(Timestamp::now().as_millis() - 1),
        created_at: Timestamp::now(),
    };
    s.store.create_portal_ticket(&stale).await.unwrap();
    let path = format!("/portal/{team}/link/{token}");
    let mut someone = Browser::new(&s);
    let page = someone.get(&path).await;
    assert_eq!(someone.submit(&page, &path, &[]).await.status, 410);

    // Signing out ends the session; the audit log holds the sign-ins and the sign-out.
    let licenses = phone.get(&format!("/portal/{team}/licenses")).await;
    let out = phone
        .submit(&licenses, &format!("/portal/{team}/sign-out"), &[])
        .await;
    assert_eq!(out.status, 200, "{}", out.text);
    out.has("You are signed out");
    let after = phone.get(&format!("/portal/{team}/licenses")).await;
    assert_eq!(after.status, 303);
    let audit = s.get(&s.dev("audit-log?pageSize=100")).await;
    let actions: Vec<&str> = audit.ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .filter(|a| a.starts_with("portal."))
        .collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "portal.signed_in").count(),
        2
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "portal.signed_out")
            .count(),
        1
    );
    // No mail ever went to the unknown address.
    tokio::time::sleep(Duration::from_millis(300)).await;
    while let Ok(mail) = inbox.try_recv() {
        assert!(!mail.contains("nobody@example.com"), "{mail}");
    }
}

#[tokio::test]
async fn a_key_session_sees_its_license_only_whatever_ids_a_url_or_form_names() {
    let (s, _inbox) = with_portal().await;
    let team = s.team_id();
    let jane = customer(&s, "jane@example.com").await;
    let john = customer(&s, "john@example.com").await;
    let mine = license_of(&s, &jane, json!({})).await;
    let also_janes = license_of(&s, &jane, json!({})).await;
    let johns = license_of(&s, &john, json!({})).await;
    s.activity(id(&mine), "mine-device-0001", 1).await;
    s.activity(id(&johns), "johns-device-0001", 2).await;
    let johns_device = s
        .get(&s.dev(&format!("licenses/id/{}/hwid", id(&johns))))
        .await
        .ok()["hwids"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let mut wrong = Browser::new(&s);
    let page = wrong.get(&format!("/portal/{team}")).await;
    let refused = wrong
        .submit(
            &page,
            &format!("/portal/{team}/key"),
            &[("licenseKey", "NOPE-NOPE-NOPE-NOPE")],
        )
        .await;
    assert_eq!(refused.status, 400);
    refused.has("No license has that key");

    let mut b = Browser::new(&s);
    sign_in_by_key(&s, &mut b, key(&mine)).await;
    let list = b.get(&format!("/portal/{team}/licenses")).await;
    list.has(key(&mine))
        .lacks(key(&also_janes))
        .lacks(key(&johns));
    let page = b
        .get(&format!("/portal/{team}/licenses/{}", id(&mine)))
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    page.has("mine-device-0001").lacks("johns-device-0001");
    for other in [&also_janes, &johns] {
        let seen = b
            .get(&format!("/portal/{team}/licenses/{}", id(other)))
            .await;
        assert_eq!(seen.status, 404);
        seen.lacks(key(other));
    }
    // John's device named under Jane's license, and under John's: not found, not forgotten.
    for path in [
        format!(
            "/portal/{team}/licenses/{}/devices/{johns_device}/forget",
            id(&mine)
        ),
        format!(
            "/portal/{team}/licenses/{}/devices/{johns_device}/forget",
            id(&johns)
        ),
    ] {
        let tried = b.submit(&page, &path, &[]).await;
        assert_eq!(tried.status, 404, "{path}: {}", tried.text);
    }
    let johns_devices = s
        .get(&s.dev(&format!(
            "licenses/id/{}/hwid?showForgotten=true",
            id(&johns)
        )))
        .await;
    assert_eq!(johns_devices.ok()["hwids"][0]["forgotten"], false);

    // Another team's portal does not know this session.
    let other = s.other_team().await;
    let mut elsewhere = Browser::new(&s);
    elsewhere.always_send("cookie", &b.cookie_header());
    let theirs = elsewhere
        .get(&format!("/portal/{}/licenses", other.team_id))
        .await;
    assert_eq!(theirs.status, 404, "their portal is closed");
}

/// A policy allowing three resets a month: ten clicks at once on ten devices free exactly
/// three (on PostgreSQL, sent to two instances in turn); the rest are refused with the date the
/// budget refills; each freed device is audited with the customer as actor.
#[tokio::test]
async fn freeing_devices_keeps_to_the_policys_budget_under_concurrent_clicks() {
    let (s, _inbox) = with_portal().await;
    let team = s.team_id();
    let policy = s
        .post(
            &s.dev("policies"),
            r#"{"name": "Desk", "hwidLimit": 20, "selfServiceResets": {"count": 3, "periodDays": 30}}"#,
        )
        .await;
    assert_eq!(policy.status, 201, "{}", policy.body);
    let jane = customer(&s, "jane@example.com").await;
    let license = s
        .license(&json!({"policyId": id(policy.ok()), "customerIds": [jane]}).to_string())
        .await;
    for i in 0..10u8 {
        s.activity(id(&license), &format!("desk-device-{i:04}"), i + 1)
            .await;
    }
    let devices: Vec<String> = s
        .get(&s.dev(&format!("licenses/id/{}/hwid?pageSize=100", id(&license))))
        .await
        .ok()["hwids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(devices.len(), 10);

    let mut b = Browser::new(&s);
    sign_in_by_key(&s, &mut b, key(&license)).await;
    let page = b
        .get(&format!("/portal/{team}/licenses/{}", id(&license)))
        .await;
    page.has("up to 3 devices or addresses yourself every 30 days");
    let csrf = page.field("csrf");
    let cookie = b.cookie_header();
    let second = if on_postgres() {
        Some(s.second_instance().await)
    } else {
        None
    };
    let bases: Vec<String> = match &second {
        Some(other) => vec![s.base.clone(), other.base.clone()],
        None => vec![s.base.clone()],
    };
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let clicks = devices.iter().enumerate().map(|(i, device)| {
        let url = format!(
            "{}/portal/{team}/licenses/{}/devices/{device}/forget",
            bases[i % bases.len()],
            id(&license)
        );
        let (http, cookie, csrf) = (http.clone(), cookie.clone(), csrf.clone());
        async move {
            let answer = http
                .post(url)
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!("csrf={csrf}"))
                .send()
                .await
                .unwrap();
            let status = answer.status().as_u16();
            let location = answer
                .headers()
                .get("location")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            (status, location)
        }
    });
    let answers = futures_util::future::join_all(clicks).await;
    assert!(
        answers.iter().all(|(status, _)| *status == 303),
        "{answers:?}"
    );
    let freed = answers
        .iter()
        .filter(|(_, to)| to.ends_with("?done=forgotten"))
        .count();
    let refused: Vec<&String> = answers
        .iter()
        .filter(|(_, to)| to.contains("?spent="))
        .map(|(_, to)| to)
        .collect();
    assert_eq!((freed, refused.len()), (3, 7), "{answers:?}");
    let refill = licensing_core::Timestamp::now().plus_days(30);
    let month = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let date = refill.as_datetime().date_naive();
    use chrono::Datelike as _;
    let words = format!(
        "{} {}, {}",
        month[date.month0() as usize],
        date.day(),
        date.year()
    );
    let told = b.get(refused[0]).await;
    assert_eq!(told.status, 200, "{}", told.text);
    told.has("freed this license's 3 seats").has(&words);
    let listed = s
        .get(&s.dev(&format!(
            "licenses/id/{}/hwid?pageSize=100&showForgotten=true",
            id(&license)
        )))
        .await;
    let forgotten = listed.ok()["hwids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["forgotten"] == true)
        .count();
    assert_eq!(forgotten, 3);
    let audit = s
        .get(&s.dev("audit-log?pageSize=100&action=device.forgotten"))
        .await;
    let entries = audit.ok()["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{}", audit.body);
    for e in entries {
        assert_eq!(e["actor"]["type"], "CUSTOMER", "{e}");
        assert_eq!(e["actor"]["id"], jane.as_str(), "{e}");
    }
}

#[tokio::test]
async fn the_vendors_site_mints_a_one_use_link_that_signs_in_at_once() {
    let s = TestServer::start().await;
    let team = s.team_id();
    let jane = customer(&s, "jane@example.com").await;
    let john = customer(&s, "john@example.com").await;
    let first = license_of(&s, &jane, json!({})).await;
    let second = license_of(&s, &jane, json!({})).await;
    let johns = license_of(&s, &john, json!({})).await;
    let path = format!("customers/{jane}/portal-sessions");
    let closed = s.post(&s.dev(&path), "{}").await;
    closed.err(403, "FORBIDDEN");
    assert!(
        closed.body.to_string().contains("portalEnabled"),
        "{}",
        closed.body
    );
    open_portal(&s).await;

    let minted = s.post(&s.dev(&path), "").await;
    assert_eq!(minted.status, 201, "{}", minted.body);
    let url = minted.ok()["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("{}/portal/{team}/enter/", s.base)),
        "{url}"
    );
    assert!(minted.ok()["expiresAt"].as_str().is_some());
    let mut b = Browser::new(&s);
    let entered = b.get(&url).await;
    assert_eq!(
        (entered.status, entered.location()),
        (303, format!("/portal/{team}/licenses").as_str()),
        "{}",
        entered.text
    );
    b.get(&format!("/portal/{team}/licenses"))
        .await
        .has(key(&first))
        .has(key(&second))
        .lacks(key(&johns));
    let mut again = Browser::new(&s);
    assert_eq!(again.get(&url).await.status, 410, "one use");

    // A link for one license shows that one.
    let one = s
        .post(
            &s.dev(&path),
            &json!({"licenseId": id(&second)}).to_string(),
        )
        .await;
    let mut c = Browser::new(&s);
    c.get(one.ok()["url"].as_str().unwrap()).await;
    c.get(&format!("/portal/{team}/licenses"))
        .await
        .has(key(&second))
        .lacks(key(&first));
    // John's license for Jane, a bad id, another team's key, an unknown customer: refused.
    s.post(&s.dev(&path), &json!({"licenseId": id(&johns)}).to_string())
        .await
        .err(404, "LICENSE_NOT_FOUND");
    s.post(&s.dev(&path), r#"{"licenseId": "nope"}"#)
        .await
        .err(400, "BAD_REQUEST");
    s.post(
        &s.dev(&format!(
            "customers/{}/portal-sessions",
            licensing_core::CustomerId::new()
        )),
        "{}",
    )
    .await
    .err(404, "CUSTOMER_NOT_FOUND");
    let other = s.other_team().await;
    let theirs = s
        .send(
            reqwest::Method::POST,
            &s.dev(&path),
            Some(&other.api_key),
            Some("{}"),
        )
        .await;
    assert_eq!(theirs.status, 403, "{}", theirs.body);
    let audit = s
        .get(&s.dev("audit-log?pageSize=100&action=portal.link_created"))
        .await;
    assert_eq!(audit.ok()["entries"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn pages_and_mail_speak_german_when_asked_and_the_switch_is_kept() {
    let (s, mut inbox) = with_portal().await;
    let team = s.team_id();
    let jane = customer(&s, "jane@example.com").await;
    license_of(&s, &jane, json!({})).await;
    let mut b = Browser::new(&s);
    b.always_send("accept-language", "de-DE,de;q=0.9,en;q=0.5");
    let page = b.get(&format!("/portal/{team}")).await;
    assert_eq!(page.header("content-language"), "de");
    page.has("lang=\"de\"")
        .has("Anmelden")
        .has("Mit dem Schlüssel anmelden")
        .lacks("Sign in with the key");
    let sent = b
        .submit(
            &page,
            &format!("/portal/{team}/email"),
            &[("email", "jane@example.com")],
        )
        .await;
    sent.has("Sehen Sie in Ihr Postfach");
    let mail = next_mail(&mut inbox).await;
    assert!(
        mail.contains("Kundenportal") || mail.contains("=?utf-8?"),
        "{mail}"
    );
    // The switch: English from now on, whatever the browser asks.
    let switched = b
        .post(
            &format!("/portal/{team}/language"),
            &[("lang", "en"), ("back", &format!("/portal/{team}"))],
        )
        .await;
    assert_eq!(
        (switched.status, switched.location()),
        (303, format!("/portal/{team}").as_str())
    );
    let english = b.get(&format!("/portal/{team}")).await;
    english.has("Sign in with the key").lacks("Anmelden");
    // The switch sends nobody elsewhere.
    let away = b
        .post(
            &format!("/portal/{team}/language"),
            &[("lang", "de"), ("back", "https://evil.example/")],
        )
        .await;
    assert_eq!(away.location(), format!("/portal/{team}"));

    // A freed device is confirmed by e-mail, in German, naming the device.
    let license = license_of(&s, &jane, json!({})).await;
    s.activity(id(&license), "jane-laptop-0001", 9).await;
    let mut german = Browser::new(&s);
    german.always_send("accept-language", "de");
    sign_in_by_key(&s, &mut german, key(&license)).await;
    let path = format!("/portal/{team}/licenses/{}", id(&license));
    let page = german.get(&path).await;
    page.has("Geräte").has("Platz freigeben");
    let device = page.text[page.text.find("/devices/").unwrap() + 9..]
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let freed = german
        .submit(&page, &format!("{path}/devices/{device}/forget"), &[])
        .await;
    assert_eq!(freed.status, 303);
    german.get(freed.location()).await.has("Freigegeben.");
    let mail = next_mail(&mut inbox).await;
    assert!(mail.contains("To: jane@example.com"), "{mail}");
    assert!(mail.contains("jane-laptop-0001"), "{mail}");
    assert!(mail.contains("Kundenportal von Team"), "{mail}");
}

/// The license's page offers the newest release it may update to (not a draft, not one limited
/// to other licenses) and streams its files; a download of another release, or through another
/// customer's license, is not found. A running copy is ended; a license file for a device opens
/// with the license key and that device only.
#[tokio::test]
async fn a_customer_downloads_their_releases_ends_a_copy_and_takes_a_license_file() {
    use licensing_core::crypto::license_file::LicenseFile;

    let (s, _inbox) = with_portal().await;
    let team = s.team_id();
    let product = crate::updates::product(&s, "Studio", json!({})).await;
    let jane = customer(&s, "jane@example.com").await;
    let license = license_of(
        &s,
        &jane,
        json!({"productIds": [product], "sessionLimit": 2}),
    )
    .await;
    let john = customer(&s, "john@example.com").await;
    let johns = license_of(&s, &john, json!({"productIds": [product]})).await;
    let old = crate::updates::release(&s, &product, "1.0.0", json!({})).await;
    let new =
        crate::updates::release(&s, &product, "1.1.0", json!({"notes": "Faster saves"})).await;
    let draft = crate::updates::release(&s, &product, "2.0.0", json!({"status": "DRAFT"})).await;
    let johns_only =
        crate::updates::release(&s, &product, "1.2.0", json!({"licenseIds": [id(&johns)]})).await;
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut artifacts = Vec::new();
    for (release, name) in [
        (&old, "studio-1.0.0.dmg"),
        (&new, "studio-1.1.0.dmg"),
        (&draft, "studio-2.0.0.dmg"),
        (&johns_only, "studio-1.2.0.dmg"),
    ] {
        let made = crate::updates::upload(
            &s,
            release,
            &[("platform", "darwin"), ("arch", "universal")],
            Some((name, bytes.clone())),
        )
        .await;
        assert_eq!(made.status, 201, "{}", made.body);
        artifacts.push(made.ok()["id"].as_str().unwrap().to_owned());
    }
    s.activity(id(&license), "studio-mac-0001", 1).await;
    let started = s
        .client(
            "sessions/start",
            &json!({"licenseKey": key(&license), "hardwareIdentifier": "studio-mac-0001",
                "deviceName": "Studio Mac", "platform": "macos aarch64"}),
            None,
        )
        .await;
    assert_eq!(started.status, 200, "{:?}", started.body);

    let mut b = Browser::new(&s);
    sign_in_by_key(&s, &mut b, key(&license)).await;
    let base = format!("/portal/{team}/licenses/{}", id(&license));
    let page = b.get(&base).await;
    assert_eq!(page.status, 200, "{}", page.text);
    page.has("Version 1.1.0")
        .has("Faster saves")
        .has("studio-1.1.0.dmg")
        .lacks("studio-1.0.0.dmg")
        .lacks("studio-2.0.0.dmg")
        .lacks("studio-1.2.0.dmg")
        .has("Running copies");
    // The customer sees the device by the name its copy sent, in its devices and its sessions.
    assert_eq!(
        page.text.matches("Studio Mac (macos aarch64)").count(),
        2,
        "{}",
        page.text
    );

    let http = reqwest::Client::new();
    let fetch = |path: String| {
        let (http, cookie) = (http.clone(), b.cookie_header());
        let url = format!("{}{path}", s.base);
        async move { http.get(url).header("cookie", cookie).send().await.unwrap() }
    };
    let got = fetch(format!("{base}/downloads/{product}/{}", artifacts[1])).await;
    assert_eq!(got.status().as_u16(), 200);
    assert_eq!(
        got.headers()["content-disposition"],
        "attachment; filename=\"studio-1.1.0.dmg\""
    );
    assert_eq!(got.bytes().await.unwrap().as_ref(), bytes.as_slice());
    let history = s
        .get(&s.dev(&format!("licenses/id/{}/requests", id(&license))))
        .await;
    assert!(
        history.ok()["requests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["endpoint"] == "DOWNLOAD" && r["version"] == "1.1.0"),
        "{}",
        history.body
    );
    for artifact in [&artifacts[2], &artifacts[3]] {
        let refused = fetch(format!("{base}/downloads/{product}/{artifact}")).await;
        assert_eq!(refused.status().as_u16(), 404);
    }
    let theirs = fetch(format!(
        "/portal/{team}/licenses/{}/downloads/{product}/{}",
        id(&johns),
        artifacts[3]
    ))
    .await;
    assert_eq!(theirs.status().as_u16(), 404);

    // The license file of the device opens with the key and that machine only.
    let device = s
        .get(&s.dev(&format!("licenses/id/{}/hwid", id(&license))))
        .await
        .ok()["hwids"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let file = fetch(format!("{base}/devices/{device}/license-file")).await;
    assert_eq!(file.status().as_u16(), 200);
    let certificate = file.text().await.unwrap();
    let keys = s.public_keys().await;
    let parsed = LicenseFile::parse(&certificate).unwrap();
    let payload: Value = serde_json::from_slice(
        &parsed
            .open(&keys, key(&license), Some("studio-mac-0001"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(payload["meta"]["hardwareIdentifier"], "studio-mac-0001");
    assert!(
        parsed
            .open(&keys, key(&license), Some("other-mac-0001"))
            .is_err()
    );

    // The running copy is ended.
    let sessions = s
        .get(&s.dev(&format!("licenses/id/{}/sessions", id(&license))))
        .await;
    let session = sessions.ok()["sessions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ended = b
        .submit(&page, &format!("{base}/sessions/{session}/end"), &[])
        .await;
    assert_eq!(
        (ended.status, ended.location()),
        (303, format!("{base}?done=ended").as_str())
    );
    b.get(ended.location())
        .await
        .has("Ended")
        .lacks("Running copies");
    let after = s
        .get(&s.dev(&format!("licenses/id/{}/sessions", id(&license))))
        .await;
    assert_eq!(after.ok()["sessions"].as_array().unwrap().len(), 0);
    let audit = s
        .get(&s.dev("audit-log?pageSize=100&action=license.file_issued"))
        .await;
    assert_eq!(audit.ok()["entries"][0]["actor"]["type"], "CUSTOMER");
}

/// Staff see who is signed in to the portal and end a session; the customer is signed out at
/// once. Another team's staff cannot end it.
#[tokio::test]
async fn staff_list_and_end_portal_sessions_of_their_team_only() {
    use licensing_core::model::Role;

    let (s, _inbox) = with_portal().await;
    let team = s.team_id();
    let jane = customer(&s, "jane@example.com").await;
    let license = license_of(&s, &jane, json!({})).await;
    let mut customer_browser = Browser::new(&s);
    sign_in_by_key(&s, &mut customer_browser, key(&license)).await;

    let other = s.other_team().await;
    let mut stranger = Browser::new(&s);
    crate::dashboard::staff(
        &s,
        &mut stranger,
        other.team_id,
        "eve@other.example",
        Role::Owner,
    )
    .await;
    let mut owner = Browser::new(&s);
    crate::dashboard::staff(&s, &mut owner, team, "ann@vendor.example", Role::Owner).await;
    let settings = owner.get("/dashboard/settings").await;
    settings
        .has("Customers signed in to the portal")
        .has(&format!("license {}", id(&license)))
        .has("license key")
        .has(&format!("/portal/{team}"));
    let at = settings.text.find("/dashboard/portal-sessions/").unwrap();
    let action: String = settings.text[at..]
        .chars()
        .take_while(|c| *c != '"')
        .collect();
    let theirs = stranger.get("/dashboard/settings").await;
    theirs.lacks(&format!("license {}", id(&license)));
    let refused = stranger.submit(&theirs, &action, &[]).await;
    assert_eq!(refused.status, 404, "{}", refused.text);
    assert_eq!(
        customer_browser
            .get(&format!("/portal/{team}/licenses"))
            .await
            .status,
        200
    );
    let ended = owner.submit(&settings, &action, &[]).await;
    assert_eq!(ended.status, 303, "{}", ended.text);
    assert_eq!(
        customer_browser
            .get(&format!("/portal/{team}/licenses"))
            .await
            .status,
        303,
        "signed out"
    );
    owner
        .get("/dashboard/settings")
        .await
        .has("Nobody is signed in to the portal now.");
}

/// A local stand-in of the providers' billing APIs: Stripe's subscription and customer-portal
/// sessions, Paddle's subscription and customer-portal sessions, Lemon Squeezy's subscription;
/// it notes each request with its bearer token and body.
async fn billing_stand_in() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use warp::Filter as _;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let noted = seen.clone();
    let api = warp::method()
        .and(warp::path::full())
        .and(warp::header::optional::<String>("authorization"))
        .and(warp::body::bytes())
        .map(
            move |method: warp::http::Method,
                  path: warp::path::FullPath,
                  auth: Option<String>,
                  body: bytes::Bytes| {
                let path = path.as_str().to_owned();
                noted.lock().unwrap().push(format!(
                    "{method} {path} {} {}",
                    auth.unwrap_or_default(),
                    String::from_utf8_lossy(&body)
                ));
                let (status, answer) = match (method.as_str(), path.as_str()) {
                    ("GET", "/v1/subscriptions/sub_1Pq7KLQ9RKHgCVdK") => (
                        200,
                        json!({"id": "sub_1Pq7KLQ9RKHgCVdK", "object": "subscription", "customer": "cus_QhR5x2mZ8kLp3Q", "status": "active"}),
                    ),
                    ("POST", "/v1/billing_portal/sessions") => (
                        200,
                        json!({"id": "bps_1", "object": "billing_portal.session", "customer": "cus_QhR5x2mZ8kLp3Q",
                               "url": "https://billing.stripe.example/p/session/test_YWNjdF8x"}),
                    ),
                    ("GET", "/subscriptions/sub_01hv8x29kz0t586xy6zn1a62ny") => (
                        200,
                        json!({"data": {"id": "sub_01hv8x29kz0t586xy6zn1a62ny", "status": "active", "customer_id": "ctm_01hv6y1jedq4p1n0yqn5ba3ky4"}}),
                    ),
                    ("POST", "/customers/ctm_01hv6y1jedq4p1n0yqn5ba3ky4/portal-sessions") => (
                        201,
                        json!({"data": {"id": "cpls_01", "customer_id": "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
                               "urls": {"general": {"overview": "https://customer-portal.paddle.example/cpl_01?token=pga_x"}, "subscriptions": []}}}),
                    ),
                    ("GET", "/v1/subscriptions/880011") => (
                        200,
                        json!({"data": {"type": "subscriptions", "id": "880011", "attributes": {"status": "active",
                               "urls": {"update_payment_method": "https://shop.lemonsqueezy.example/subscription/880011/payment-details", "customer_portal": "https://shop.lemonsqueezy.example/billing?expires=1"}}}}),
                    ),
                    _ => (404, json!({"error": {"message": "No such object"}})),
                };
                warp::reply::with_status(
                    warp::reply::json(&answer),
                    warp::http::StatusCode::from_u16(status).unwrap(),
                )
            },
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(warp::serve(api).incoming(listener).run());
    (format!("http://{addr}"), seen)
}

/// With an integration that has an API key, a customer's license bought through it opens the
/// provider's billing page, minted through the provider's API for the buyer (Stripe, Paddle,
/// Lemon Squeezy); a license without a purchase says so; without an integration there is no
/// link.
#[tokio::test]
async fn a_customer_opens_the_payment_providers_billing_page_for_their_license() {
    use licensing_core::crypto::inbound::Provider;
    use licensing_core::model::PaymentLink;
    use licensing_core::store::PaymentStore;

    let (base, seen) = billing_stand_in().await;
    let s = TestServer::start_with(|c| {
        c.stripe_api_base = base.clone();
        c.paddle_api_base = base.clone();
        c.lemonsqueezy_api_base = base.clone();
    })
    .await;
    open_portal(&s).await;
    let team = s.team_id();
    let jane = customer(&s, "jane@example.com").await;
    let bought = [
        (
            Provider::Stripe,
            "sub_1Pq7KLQ9RKHgCVdK",
            "https://billing.stripe.example/p/session/test_YWNjdF8x",
        ),
        (
            Provider::Paddle,
            "sub_01hv8x29kz0t586xy6zn1a62ny",
            "https://customer-portal.paddle.example/cpl_01?token=pga_x",
        ),
        (
            Provider::LemonSqueezy,
            "880011",
            "https://shop.lemonsqueezy.example/billing?expires=1",
        ),
    ];
    let unbought = license_of(&s, &jane, json!({})).await;
    let mut b = Browser::new(&s);
    sign_in_by_key(&s, &mut b, key(&unbought)).await;
    let page = b
        .get(&format!("/portal/{team}/licenses/{}", id(&unbought)))
        .await;
    page.lacks("id=\"billing\"");

    for (provider, subject, page_url) in bought {
        let name = provider.as_str();
        s.put(
            &s.dev(&format!("integrations/{name}")),
            &json!({"webhookSecret": "whsec_portal_test_secret_0123456789", "apiKey": format!("key_{name}")}).to_string(),
        )
        .await
        .ok();
        let license = license_of(&s, &jane, json!({})).await;
        s.store
            .restore_payment_links(&[PaymentLink {
                team_id: team,
                provider,
                subject: subject.to_owned(),
                license_id: id(&license).parse().unwrap(),
                rule_id: None,
                last_event_at: Timestamp::now(),
            }])
            .await
            .unwrap();
        let mut b = Browser::new(&s);
        sign_in_by_key(&s, &mut b, key(&license)).await;
        let path = format!("/portal/{team}/licenses/{}", id(&license));
        b.get(&path).await.has("id=\"billing\"");
        let opened = b.get(&format!("{path}/billing")).await;
        assert_eq!(
            (opened.status, opened.location()),
            (303, page_url),
            "{name}: {}",
            opened.text
        );
    }
    let noted = seen.lock().unwrap().clone();
    let stripe_portal = noted
        .iter()
        .find(|r| r.starts_with("POST /v1/billing_portal/sessions"))
        .expect("a Stripe portal session");
    assert!(
        stripe_portal.contains("Bearer key_stripe"),
        "{stripe_portal}"
    );
    assert!(
        stripe_portal.contains("customer=cus_QhR5x2mZ8kLp3Q")
            && stripe_portal.contains("return_url=http"),
        "{stripe_portal}"
    );
    let paddle_portal = noted
        .iter()
        .find(|r| r.starts_with("POST /customers/"))
        .expect("a Paddle portal session");
    assert!(
        paddle_portal.contains("Bearer key_paddle")
            && paddle_portal.contains("sub_01hv8x29kz0t586xy6zn1a62ny"),
        "{paddle_portal}"
    );

    // A license of the team not bought through a provider: said in words.
    let page = b
        .get(&format!(
            "/portal/{team}/licenses/{}/billing",
            id(&unbought)
        ))
        .await;
    assert_eq!(page.status, 303);
    b.get(page.location())
        .await
        .has("No payment account was found for this license");
}
