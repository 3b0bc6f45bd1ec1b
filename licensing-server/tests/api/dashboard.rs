//! The staff dashboard over real HTTP, as a browser without JavaScript uses it: set-password
//! links, signing in and out, sessions and their time-outs, CSRF, roles, throttling, and the
//! license pages acting through the developer API's rules (and audit log).

use std::collections::HashMap;

use licensing_core::crypto::sha256_hex;
use licensing_core::model::{Role, StaffSession};
use licensing_core::store::{Journal, StaffStore};
use licensing_core::{TeamId, Timestamp};
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use serde_json::{Value, json};

use crate::helpers::TestServer;

pub(crate) const PASSWORD: &str = "a quiet harbour at dawn";

/// A browser: its own cookies, no automatic redirects (each 303 is looked at).
pub(crate) struct Browser {
    base: String,
    http: reqwest::Client,
    cookies: HashMap<String, String>,
    /// Extra headers sent with every request.
    headers: Vec<(&'static str, String)>,
}

/// One answer: status, headers, body text.
pub(crate) struct Page {
    pub(crate) status: u16,
    headers: HeaderMap,
    pub(crate) text: String,
}

impl Page {
    /// The value of header `name`, or empty.
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub(crate) fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The value of hidden field `csrf` on the page.
    fn csrf(&self) -> String {
        self.field("csrf")
    }

    /// The value of the (first) field named `name` on the page.
    pub(crate) fn field(&self, name: &str) -> String {
        let marker = format!(r#"name="{name}" value=""#);
        let at = self
            .text
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name}: {}", self.text));
        let rest = &self.text[at + marker.len()..];
        rest[..rest.find('"').unwrap()].to_owned()
    }

    #[track_caller]
    pub(crate) fn has(&self, needle: &str) -> &Self {
        assert!(
            self.text.contains(needle),
            "{needle:?} missing ({}): {}",
            self.status,
            self.text
        );
        self
    }

    #[track_caller]
    pub(crate) fn lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.text.contains(needle),
            "{needle:?} present: {}",
            self.text
        );
        self
    }
}

impl Browser {
    pub(crate) fn new(s: &TestServer) -> Self {
        Self {
            base: s.base.clone(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: HashMap::new(),
            headers: Vec::new(),
        }
    }

    async fn send(
        &mut self,
        method: reqwest::Method,
        path: &str,
        form: Option<&[(&str, &str)]>,
    ) -> Page {
        let url = if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.base)
        };
        let mut request = self.http.request(method, url);
        if !self.cookies.is_empty() {
            let cookie: Vec<String> = self
                .cookies
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            request = request.header("cookie", cookie.join("; "));
        }
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        if let Some(form) = form {
            let body = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish();
            request = request
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        for value in headers.get_all(SET_COOKIE) {
            let text = value.to_str().unwrap();
            let (pair, _) = text.split_once(';').unwrap_or((text, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if text.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let text = response.text().await.unwrap();
        Page {
            status,
            headers,
            text,
        }
    }

    pub(crate) async fn get(&mut self, path: &str) -> Page {
        self.send(reqwest::Method::GET, path, None).await
    }

    /// Sends `name: value` with every request from now on.
    pub(crate) fn always_send(&mut self, name: &'static str, value: &str) {
        self.headers.push((name, value.to_owned()));
    }

    /// The `Cookie` header the browser sends now.
    pub(crate) fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub(crate) async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        self.send(reqwest::Method::POST, path, Some(form)).await
    }

    /// Posts a form carrying the CSRF token of `from` (a page of this session).
    pub(crate) async fn submit(
        &mut self,
        from: &Page,
        path: &str,
        fields: &[(&str, &str)],
    ) -> Page {
        let token = from.csrf();
        let mut form = vec![("csrf", token.as_str())];
        form.extend_from_slice(fields);
        self.post(path, &form).await
    }

    /// Signs in with `email`, the tests' password and a two-step `code`; the answer to the form.
    async fn sign_in_with_code(&mut self, email: &str, code: &str) -> Page {
        let form = self.get("/dashboard/sign-in").await;
        self.submit(
            &form,
            "/dashboard/sign-in",
            &[("email", email), ("password", PASSWORD), ("code", code)],
        )
        .await
    }

    /// Signs in with `email` and `password`; the answer to the form.
    pub(crate) async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let form = self.get("/dashboard/sign-in").await;
        assert_eq!(form.status, 200, "{}", form.text);
        self.submit(
            &form,
            "/dashboard/sign-in",
            &[("email", email), ("password", password)],
        )
        .await
    }
}

/// Creates an account of `team` with `role` and sets its password through its link, with the
/// browser; the browser is then signed in.
pub(crate) async fn staff(
    s: &TestServer,
    b: &mut Browser,
    team: TeamId,
    email: &str,
    role: Role,
) -> String {
    let created =
        licensing_server::staff::create_staff(&s.store, team, email, role, Timestamp::now(), None)
            .await
            .unwrap();
    let link = format!(
        "/dashboard/set-password/{}/{}",
        created.user.id, created.link_secret
    );
    let form = b.get(&link).await;
    assert_eq!(form.status, 200, "{}", form.text);
    form.has(email);
    let done = b
        .post(&link, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    assert_eq!(
        (done.status, done.location()),
        (303, "/dashboard/?notice=password-set")
    );
    created.user.id.to_string()
}

#[tokio::test]
async fn an_owner_sets_a_password_through_the_link_and_creates_a_license_the_audit_log_names_them_for()
 {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    let created = licensing_server::staff::create_staff(
        &s.store,
        s.team_id(),
        "Ann@Example.com",
        Role::Owner,
        Timestamp::now(),
        None,
    )
    .await
    .unwrap();
    let link = format!(
        "/dashboard/set-password/{}/{}",
        created.user.id, created.link_secret
    );
    // A wrong secret, then weak and mismatched passwords: refused, the link still works.
    let wrong = format!(
        "/dashboard/set-password/{}/{}",
        created.user.id,
        "x".repeat(43)
    );
    assert_eq!(b.get(&wrong).await.status, 404);
    let page = b.get(&link).await;
    page.has("ann@example.com")
        .has("autocomplete=\"new-password\"");
    let weak = b
        .post(
            &link,
            &[("password", "password1234"), ("confirm", "password1234")],
        )
        .await;
    assert_eq!(weak.status, 400);
    weak.has("most commonly used passwords");
    let differ = b
        .post(
            &link,
            &[
                ("password", PASSWORD),
                ("confirm", "something else entirely"),
            ],
        )
        .await;
    assert_eq!(differ.status, 400);
    differ.has("differ");
    // The link sets the password once and signs the browser in.
    let done = b
        .post(&link, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert!(b.cookies.contains_key("session"), "{:?}", b.cookies);
    let cookie = done.headers.get(SET_COOKIE).unwrap().to_str().unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert_eq!(b.get(&link).await.status, 404, "used up");

    let list = b.get("/dashboard/licenses").await;
    assert_eq!(list.status, 200);
    list.has("No licenses match.").has("ann@example.com");
    let csp = list.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert_eq!(list.headers["x-frame-options"], "DENY");
    assert_eq!(list.headers["cache-control"], "no-store");

    // A form with a problem comes back with it named and the values kept.
    let new = b.get("/dashboard/licenses/new").await;
    let bad = b
        .submit(
            &new,
            "/dashboard/licenses",
            &[
                ("expirationType", "DATE"),
                ("expirationDate", "2001-01-01"),
                ("hwidLimit", "two"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400);
    bad.has("hwidLimit").has("must be a whole number");
    let past = b
        .submit(
            &new,
            "/dashboard/licenses",
            &[("expirationType", "DATE"), ("expirationDate", "2001-01-01")],
        )
        .await;
    assert_eq!(past.status, 400);
    past.has("expirationDate").has("must be in the future");
    assert_eq!(s.get(&s.dev("licenses")).await.ok()["totalResults"], 0);

    let made = b
        .submit(
            &new,
            "/dashboard/licenses",
            &[
                ("expirationType", "DURATION"),
                ("expirationDays", "30"),
                ("expirationStart", "CREATION"),
                ("hwidLimit", "2"),
                ("metadata", "plan=pro"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    assert!(made.location().ends_with("?notice=license-created"));
    let listed = s.get(&s.dev("licenses")).await;
    let license = listed.ok()["licenses"][0].clone();
    assert_eq!(license["hwidLimit"], 2);
    assert_eq!(license["createdByUserId"], created.user.id.to_string());
    let key = license["licenseKey"].as_str().unwrap();
    let page = b.get(made.location()).await;
    page.has(key).has("License created.").has("plan");
    b.get("/dashboard/licenses").await.has(key);

    // The audit log names the staff member.
    let audit = s.get(&s.dev("audit-log?action=license.created")).await;
    let entry = &audit.ok()["entries"][0];
    assert_eq!(entry["actor"]["type"], "USER");
    assert_eq!(entry["actor"]["id"], created.user.id.to_string());
    assert_eq!(entry["actor"]["name"], "ann@example.com");
    let set = s.get(&s.dev("audit-log?action=staff.password_set")).await;
    assert_eq!(set.ok()["entries"][0]["actor"]["type"], "USER");
    // The page lists the creation's values, not the fields it left empty.
    b.get("/dashboard/audit?resourceType=license")
        .await
        .has("<code>hwidLimit</code>: — → 2")
        .lacks("— → —")
        .has("1 entry<");
    // A record's id leads to its history and to its page; the history is that record's only.
    let id = license["id"].as_str().unwrap();
    let all = b.get("/dashboard/audit").await;
    all.has(&format!(r#"href="/dashboard/audit?resourceId={id}""#))
        .has(&format!(r#"href="/dashboard/licenses/{id}""#))
        .has("staff.password_set");
    b.get(&format!("/dashboard/audit?resourceId={id}"))
        .await
        .has("The history of record")
        .has("license.created")
        .lacks("staff.password_set")
        .has("1 entry<");
}

#[tokio::test]
async fn the_license_page_shows_live_sessions_and_support_revokes_one() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "seats@vendor.example",
        Role::Support,
    )
    .await;
    // The form takes the two members; the page shows the seats in use.
    let l = s
        .license(r#"{"expirationType":"NEVER","sessionLimit":2,"sessionTtl":120}"#)
        .await;
    let (id, key) = (l["id"].as_str().unwrap(), l["licenseKey"].as_str().unwrap());
    let started = s
        .client(
            "sessions/start",
            &json!({"licenseKey": key, "hardwareIdentifier": "seat-machine-0001"}),
            Some("203.0.113.9"),
        )
        .await;
    let session = started.valid()["session"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A license that is not floating and runs no session shows no sessions.
    let plain = s.license(r#"{"expirationType":"NEVER"}"#).await;
    b.get(&format!(
        "/dashboard/licenses/{}",
        plain["id"].as_str().unwrap()
    ))
    .await
    .lacks("concurrent seat")
    .lacks(r#"id="sessions""#);
    let page = b.get(&format!("/dashboard/licenses/{id}")).await;
    page.has("1 of 2 concurrent seats in use")
        .has("seat-machine-0001")
        .has("203.0.113.9")
        .has("Revoke");
    let revoked = b
        .submit(
            &page,
            &format!("/dashboard/licenses/{id}/sessions/{session}/revoke"),
            &[],
        )
        .await;
    assert_eq!(revoked.status, 303, "{}", revoked.text);
    b.get(revoked.location())
        .await
        .has("Session revoked")
        .has("0 of 2 concurrent seats in use")
        .has("No copy of the application runs with this license now.");
    s.client(
        "heartbeat",
        &json!({"licenseKey": key, "hardwareIdentifier": "seat-machine-0001", "sessionId": session}),
        None,
    )
    .await
    .err(404, "SESSION_NOT_FOUND");
    // The edit form shows and changes the members.
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "owner-seats@vendor.example",
        Role::Owner,
    )
    .await;
    let edit = owner.get(&format!("/dashboard/licenses/{id}/edit")).await;
    edit.has(r#"name="sessionLimit""#).has(r#"value="120""#);
    let changed = owner
        .submit(
            &edit,
            &format!("/dashboard/licenses/{id}/edit"),
            &[
                ("licenseKey", key),
                ("expirationType", "NEVER"),
                ("sessionLimit", "5"),
                ("sessionTtl", ""),
            ],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.text);
    let after = s
        .get(&s.dev(&format!("licenses/id/{id}")))
        .await
        .ok()
        .clone();
    assert_eq!(
        (after["sessionLimit"].clone(), after["sessionTtl"].clone()),
        (json!(5), json!(null))
    );
    let bad = owner
        .submit(
            &edit,
            &format!("/dashboard/licenses/{id}/edit"),
            &[
                ("licenseKey", key),
                ("expirationType", "NEVER"),
                ("sessionTtl", "5"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    bad.has("sessionTtl");
}

#[tokio::test]
async fn a_license_is_found_by_key_and_by_customer_and_support_frees_a_seat_and_suspends_it() {
    let s = TestServer::start().await;
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"fullName":"Grace Hopper","email":"grace@navy.example"}"#,
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let l = s
        .license(&format!(
            r#"{{"expirationType":"NEVER","hwidLimit":1,"customerIds":["{customer}"]}}"#
        ))
        .await;
    s.license(r#"{"expirationType":"NEVER"}"#).await;
    let (id, key) = (l["id"].as_str().unwrap(), l["licenseKey"].as_str().unwrap());
    let verify = |device: &'static str| {
        let s = &s;
        async move {
            s.client(
                "verify",
                &json!({"licenseKey": key, "hardwareIdentifier": device}),
                None,
            )
            .await
        }
    };
    verify("device-aaaa-0001").await.valid();
    verify("device-bbbb-0002")
        .await
        .err(403, "HWID_LIMIT_REACHED");

    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Support,
    )
    .await;
    // By part of the key, by e-mail, by name: only this license.
    for search in [&key[6..17], "navy.example", "grace hop"] {
        let found = b
            .get(&format!(
                "/dashboard/licenses?search={}",
                form_urlencoded::byte_serialize(search.as_bytes()).collect::<String>()
            ))
            .await;
        assert_eq!(found.status, 200);
        found.has(key).has("1–1 of 1");
    }
    b.get("/dashboard/licenses?search=nobody-at-all")
        .await
        .has("No licenses match.");
    // Support may not create licenses: no button, and the form is refused.
    let list = b.get("/dashboard/licenses").await;
    list.lacks("/dashboard/licenses/new");

    let page = b.get(&format!("/dashboard/licenses/{id}")).await;
    page.has("Grace Hopper")
        .has("device-aaaa-0001")
        .has("Forget")
        .has("Suspend")
        .lacks("Delete…");
    let hwids = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    let hwid = hwids.ok()["hwids"][0]["id"].as_str().unwrap().to_owned();
    let forgot = b
        .submit(
            &page,
            &format!("/dashboard/licenses/{id}/devices/{hwid}/forget"),
            &[],
        )
        .await;
    assert_eq!(forgot.status, 303, "{}", forgot.text);
    b.get(forgot.location())
        .await
        .has("Device forgotten")
        .has("Remember");
    verify("device-bbbb-0002").await.valid();
    b.get(&format!("/dashboard/licenses/{id}"))
        .await
        .has("device-bbbb-0002");

    let suspended = b
        .submit(
            &page,
            &format!("/dashboard/licenses/{id}/suspend"),
            &[("reason", "Chargeback <i>ORD-7</i>")],
        )
        .await;
    assert_eq!(suspended.status, 303);
    verify("device-bbbb-0002")
        .await
        .err(403, "LICENSE_SUSPENDED");
    b.get(suspended.location())
        .await
        .has("Suspended")
        .has("Unsuspend")
        .has("Suspended because")
        .has("Chargeback &lt;i&gt;ORD-7&lt;/i&gt;");
    // The list's filters: the suspended one alone, then the other alone; the choice is kept
    // in the form and in the pager's links.
    let other = s
        .license(r#"{"expirationType":"DATE","expirationDate":"2999-01-01T00:00:00Z"}"#)
        .await;
    let other_key = other["licenseKey"].as_str().unwrap();
    b.get("/dashboard/licenses?suspended=true")
        .await
        .has(key)
        .lacks(other_key)
        .has("1–1 of 1")
        .has(r#"<option value="true" selected>Suspended</option>"#);
    b.get("/dashboard/licenses?suspended=false&expirationType=DATE&status=ACTIVE")
        .await
        .has(other_key)
        .lacks(key)
        .has("1–1 of 1");
    b.get("/dashboard/licenses?status=EXPIRED")
        .await
        .has("No licenses match.");
    // An unknown choice is no filter at all.
    b.get("/dashboard/licenses?status=LIVE")
        .await
        .has(key)
        .has(other_key);
    // Deleting is beyond the role: refused, and the license stays.
    let refused = b
        .submit(&page, &format!("/dashboard/licenses/{id}/delete"), &[])
        .await;
    assert_eq!(refused.status, 403);
    refused.has("may not create, change or delete licenses");
    s.get(&s.dev(&format!("licenses/id/{id}"))).await.ok();
}

#[tokio::test]
async fn a_viewer_sees_no_buttons_and_every_change_it_posts_is_refused() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "look@vendor.example", Role::Viewer).await;
    let page = b.get(&format!("/dashboard/licenses/{id}")).await;
    assert_eq!(page.status, 200);
    page.has(l["licenseKey"].as_str().unwrap())
        .lacks(">Suspend<")
        .lacks("Delete…")
        .lacks("New license");
    for path in [
        format!("/dashboard/licenses/{id}/suspend"),
        format!("/dashboard/licenses/{id}/delete"),
    ] {
        let refused = b.submit(&page, &path, &[]).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.text);
    }
    let new = b
        .submit(&page, "/dashboard/licenses", &[("expirationType", "NEVER")])
        .await;
    assert_eq!(new.status, 403);
    let after = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(after.ok()["suspended"], false);
    assert_eq!(s.get(&s.dev("licenses")).await.ok()["totalResults"], 1);
}

#[tokio::test]
async fn a_form_without_the_sessions_token_changes_nothing() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    let path = format!("/dashboard/licenses/{id}/suspend");
    for form in [vec![], vec![("csrf", "forged-token")]] {
        let refused = b.post(&path, &form).await;
        assert_eq!(refused.status, 403);
        refused.has("did not come from a page of your current session");
    }
    // Another session's token does not do either.
    let mut other = Browser::new(&s);
    let other_page = {
        other.sign_in("own@vendor.example", PASSWORD).await;
        other.get("/dashboard/licenses").await
    };
    assert_eq!(b.submit(&other_page, &path, &[]).await.status, 403);
    let after = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(after.ok()["suspended"], false);
    // The sign-in form has its own token: without it, nobody is signed in.
    let mut fresh = Browser::new(&s);
    let refused = fresh
        .post(
            "/dashboard/sign-in",
            &[("email", "own@vendor.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(refused.status, 403);
    assert!(!fresh.cookies.contains_key("session"));
}

#[tokio::test]
async fn signing_in_returns_to_the_page_asked_for_and_signing_out_ends_the_session() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    let page = b.get("/dashboard/account").await;
    page.has("Sign out everywhere");
    let out = b.submit(&page, "/dashboard/sign-out", &[]).await;
    assert_eq!(
        (out.status, out.location()),
        (303, "/dashboard/sign-in?notice=signed-out")
    );
    // Signed out: pages send the browser to sign in, and back afterwards.
    let asked = b.get("/dashboard/licenses?page=1").await;
    assert_eq!(asked.status, 303);
    assert_eq!(
        asked.location(),
        "/dashboard/sign-in?next=%2Fdashboard%2Flicenses%3Fpage%3D1"
    );
    let form = b.get(asked.location()).await;
    let wrong = b
        .submit(
            &form,
            "/dashboard/sign-in",
            &[
                ("email", "own@vendor.example"),
                ("password", "not the password"),
                ("next", "/dashboard/licenses?page=1"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 401);
    wrong.has("do not match an account");
    let right = b
        .submit(
            &form,
            "/dashboard/sign-in",
            &[
                ("email", "OWN@vendor.example "),
                ("password", PASSWORD),
                ("next", "/dashboard/licenses?page=1"),
            ],
        )
        .await;
    assert_eq!(
        (right.status, right.location()),
        (303, "/dashboard/licenses?page=1")
    );
    // Never to another site.
    let away = b
        .submit(
            &form,
            "/dashboard/sign-in",
            &[
                ("email", "own@vendor.example"),
                ("password", PASSWORD),
                ("next", "//evil.example/"),
            ],
        )
        .await;
    assert_eq!(away.location(), "/dashboard/");

    // Two browsers; "sign out everywhere" in one ends both.
    let mut other = Browser::new(&s);
    assert_eq!(
        other.sign_in("own@vendor.example", PASSWORD).await.status,
        303
    );
    assert_eq!(other.get("/dashboard/licenses").await.status, 200);
    let page = b.get("/dashboard/account").await;
    let all = b.submit(&page, "/dashboard/sign-out-everywhere", &[]).await;
    assert_eq!(all.status, 303);
    let ended = other.get("/dashboard/licenses").await;
    assert_eq!(ended.status, 303);
    assert!(
        ended.location().contains("notice=session-ended"),
        "{}",
        ended.location()
    );
    assert_eq!(b.get("/dashboard/licenses").await.status, 303);
}

#[tokio::test]
async fn sessions_end_after_the_idle_time_out_and_the_absolute_one() {
    let s = TestServer::start_with(|c| {
        c.dashboard_idle_minutes = 30;
        c.dashboard_session_hours = 12;
    })
    .await;
    let mut b = Browser::new(&s);
    let user = staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    let user: licensing_core::StaffId = user.parse().unwrap();
    let now = Timestamp::now();
    // Sessions as if signed in earlier: the store holds them, the test holds their cookies.
    let session = |secret: &str, created: i64, seen: i64| StaffSession {
        id_sha256: sha256_hex(secret.as_bytes()),
        user_id: user,
        team_id: s.team_id(),
        csrf_token: "t".repeat(43),
        created_at: Timestamp::from_millis(now.as_millis() - created * 60_000),
        last_seen_at: Timestamp::from_millis(now.as_millis() - seen * 60_000),
    };
    for (secret, created, seen, alive) in [
        ("idle-29-minutes", 60, 29, true),
        ("idle-31-minutes", 60, 31, false),
        ("signed-in-13-hours-ago", 13 * 60, 1, false),
    ] {
        s.store
            .create_session(&session(secret, created, seen), &Journal::NONE)
            .await
            .unwrap();
        let mut other = Browser::new(&s);
        other.cookies.insert("session".into(), secret.into());
        let page = other.get("/dashboard/licenses").await;
        if alive {
            assert_eq!(page.status, 200, "{secret}");
        } else {
            assert_eq!(page.status, 303, "{secret}");
            assert!(page.location().contains("notice=session-ended"));
            assert!(
                s.store
                    .get_session(&sha256_hex(secret.as_bytes()))
                    .await
                    .unwrap()
                    .is_none(),
                "{secret}: removed from the store"
            );
        }
    }

    // Sessions never presented again are purged by the server itself (at start, then every
    // quarter of an hour); one still in time stays.
    let hash = |secret: &str| sha256_hex(secret.as_bytes());
    for (secret, created, seen) in [
        ("abandoned-idle", 90, 45),
        ("abandoned-old", 13 * 60, 2),
        ("still-in-time", 60, 5),
    ] {
        s.store
            .create_session(&session(secret, created, seen), &Journal::NONE)
            .await
            .unwrap();
    }
    let s = s.restart().await;
    let waited = std::time::Instant::now();
    let gone = |secret: &'static str| {
        let s = &s;
        async move { s.store.get_session(&hash(secret)).await.unwrap().is_none() }
    };
    while !(gone("abandoned-old").await && gone("abandoned-idle").await)
        && waited.elapsed() < std::time::Duration::from_secs(60)
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for (secret, kept) in [
        ("abandoned-idle", false),
        ("abandoned-old", false),
        ("still-in-time", true),
    ] {
        assert_eq!(
            s.store.get_session(&hash(secret)).await.unwrap().is_some(),
            kept,
            "{secret}"
        );
    }
}

#[tokio::test]
async fn failed_sign_ins_are_throttled_per_account_whatever_the_password_then() {
    let s = TestServer::start_with(|c| c.auth_failure_limit_per_minute = 50).await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    staff(
        &s,
        &mut Browser::new(&s),
        s.team_id(),
        "two@vendor.example",
        Role::Viewer,
    )
    .await;
    let mut guesser = Browser::new(&s);
    for _ in 0..5 {
        let wrong = guesser
            .sign_in("own@vendor.example", "guess guess guess")
            .await;
        assert_eq!(wrong.status, 401);
    }
    // The sixth attempt is refused before the password is looked at, even the right one.
    let held = guesser.sign_in("own@vendor.example", PASSWORD).await;
    assert_eq!(held.status, 429, "{}", held.text);
    held.has("Too many failed sign-ins");
    assert!(held.headers.contains_key("retry-after"));
    // An account nobody has is held alike (nothing tells it apart).
    for _ in 0..5 {
        guesser
            .sign_in("ghost@vendor.example", "guess guess guess")
            .await;
    }
    assert_eq!(
        guesser.sign_in("ghost@vendor.example", "x").await.status,
        429
    );
    // Another account is not held.
    assert_eq!(
        guesser.sign_in("two@vendor.example", PASSWORD).await.status,
        303
    );
}

/// NIT-10: five wrong passwords locked an account for everyone, so whoever knew the owner's
/// address could keep the owner out. Now a guesser holds back only itself: its own address, and
/// (spread over many addresses) new browsers; a browser that signed in before is never held by
/// anyone else's failures.
#[tokio::test]
async fn guessing_a_password_does_not_lock_its_owner_out() {
    let s = TestServer::start_with(|c| c.auth_failure_limit_per_minute = 1_000).await;
    // Everyone comes through the proxy, from an address elsewhere (so over HTTPS: `__Host-`
    // cookies).
    let from = |address: &str| {
        let mut b = Browser::new(&s);
        b.headers.push(("x-forwarded-for", address.to_owned()));
        b
    };
    let mut owner = from("198.51.100.30");
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    assert!(
        owner.cookies.contains_key("__Host-device"),
        "{:?}",
        owner.cookies
    );
    let page = owner.get("/dashboard/account").await;
    owner.submit(&page, "/dashboard/sign-out", &[]).await;
    let mut guesser = from("203.0.113.66");
    for _ in 0..5 {
        let wrong = guesser
            .sign_in("own@vendor.example", "guess guess guess")
            .await;
        assert_eq!(wrong.status, 401);
    }
    assert_eq!(
        guesser.sign_in("own@vendor.example", PASSWORD).await.status,
        429,
        "the guesser's own address is held"
    );
    // The owner, from another address, in a browser that never signed in: let in.
    let mut elsewhere = from("198.51.100.20");
    let in_ = elsewhere.sign_in("own@vendor.example", PASSWORD).await;
    assert_eq!(in_.status, 303, "{}", in_.text);
    // Guesses spread over many addresses hold back new browsers at last (a hundred an hour)...
    for n in 0..19u8 {
        let mut g = from(&format!("203.0.113.{}", 100 + n));
        for _ in 0..5 {
            assert_eq!(
                g.sign_in("own@vendor.example", "guess again and again")
                    .await
                    .status,
                401
            );
        }
    }
    let mut new_browser = from("198.51.100.21");
    let held = new_browser.sign_in("own@vendor.example", PASSWORD).await;
    assert_eq!(held.status, 429, "{}", held.text);
    // ... but not a browser that signed in before, from anywhere, even the guesser's address.
    owner.headers = vec![("x-forwarded-for", "203.0.113.66".to_owned())];
    let back = owner.sign_in("own@vendor.example", PASSWORD).await;
    assert_eq!(back.status, 303, "{}", back.text);
    // A forged or foreign device cookie is no help.
    let mut forger = from("198.51.100.22");
    forger
        .cookies
        .insert("__Host-device".into(), "A".repeat(96));
    assert_eq!(
        forger.sign_in("own@vendor.example", PASSWORD).await.status,
        429
    );
    // The failures are in the audit log, with their addresses (NIT-12).
    let log = s
        .get(&s.dev("audit-log?action=staff.sign_in_failed&pageSize=100"))
        .await;
    let entries = log.ok()["entries"].as_array().unwrap().clone();
    assert_eq!(
        entries.len(),
        100,
        "five from the first address, 95 from the others"
    );
    assert_eq!(entries.last().unwrap()["address"], "203.0.113.66");
    assert_eq!(
        entries[0]["changes"][0],
        json!({"field": "reason", "new": "password"})
    );
}

/// NIT-12: signing in and out leave audit entries, with how and from where.
#[tokio::test]
async fn signing_in_and_out_is_audited() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    let id = staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    let page = b.get("/dashboard/account").await;
    b.submit(&page, "/dashboard/sign-out", &[]).await;
    b.headers
        .push(("x-forwarded-for", "198.51.100.5".to_owned()));
    assert_eq!(b.sign_in("own@vendor.example", PASSWORD).await.status, 303);
    let page = b.get("/dashboard/account").await;
    b.submit(&page, "/dashboard/sign-out-everywhere", &[]).await;
    let log = s
        .get(&s.dev("audit-log?resourceType=staff&sortDirection=asc"))
        .await;
    let entries: Vec<(String, Value, Value)> = log.ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] != "staff.password_set")
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["changes"][0]["new"].clone(),
                e["address"].clone(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            (
                "staff.signed_in".to_owned(),
                json!("set-password link"),
                json!("127.0.0.1")
            ),
            (
                "staff.signed_out".to_owned(),
                json!("this one"),
                json!("127.0.0.1")
            ),
            (
                "staff.signed_in".to_owned(),
                json!("password"),
                json!("198.51.100.5")
            ),
            (
                "staff.signed_out".to_owned(),
                json!("every one"),
                json!("198.51.100.5")
            ),
        ]
    );
    let entry = &log.ok()["entries"][1];
    assert_eq!(entry["resourceId"], id.as_str());
    assert_eq!(entry["actor"]["name"], "own@vendor.example");
}

/// NIT-14: inviting an address that had an account in another team answered "already has an
/// account", so any owner learned who had accounts in other teams. Now each team has its own
/// accounts: the invitation is answered as for any new address, and the person, whose password
/// opens accounts in both teams, chooses one when signing in.
#[tokio::test]
async fn an_address_with_an_account_elsewhere_is_invited_like_any_other() {
    let s = TestServer::start_with(|c| {
        c.admin_token = Some("a-long-enough-admin-token-0123456789".into())
    })
    .await;
    let other = s.other_team().await;
    let mut theirs = Browser::new(&s);
    staff(
        &s,
        &mut theirs,
        other.team_id,
        "own@other.example",
        Role::Owner,
    )
    .await;
    let mut ann = Browser::new(&s);
    staff(
        &s,
        &mut ann,
        other.team_id,
        "ann@shared.example",
        Role::Viewer,
    )
    .await;
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let page = owner.get("/dashboard/users").await;
    let invite = |email: &'static str| [("email", email), ("role", "viewer")];
    let elsewhere = owner
        .submit(&page, "/dashboard/users", &invite("ann@shared.example"))
        .await;
    let nowhere = owner
        .submit(&page, "/dashboard/users", &invite("nobody@shared.example"))
        .await;
    assert_eq!((elsewhere.status, nowhere.status), (201, 201));
    let shape = |p: &Page| {
        p.text
            .replace("ann@shared.example", "ADDRESS")
            .replace("nobody@shared.example", "ADDRESS")
            .split("id=\"new-link\">")
            .next()
            .unwrap()
            .to_owned()
    };
    // Up to the link itself (a random secret), the two answers differ only by the address.
    let (a, b) = (shape(&elsewhere), shape(&nowhere));
    assert_eq!(a.len(), b.len());
    // Through the admin API alike: 201 with an account, as for an address never seen.
    for email in ["own@other.example", "never@other.example"] {
        let made = s
            .client
            .post(format!(
                "{}/api/v1/admin/teams/{}/users",
                s.base,
                s.team_id()
            ))
            .bearer_auth("a-long-enough-admin-token-0123456789")
            .json(&json!({"email": email, "role": "viewer"}))
            .send()
            .await
            .unwrap();
        assert_eq!(made.status(), 201, "{email}");
    }
    // The same address again in this team is the one refusal, and it names only this team.
    let again = owner
        .submit(&page, "/dashboard/users", &invite("ann@shared.example"))
        .await;
    assert_eq!(again.status, 400);
    again.has("already has an account in this team");

    // Ann sets the new account's password to the same one: signing in asks which team.
    let link = text_after(&elsewhere, r#"id="new-link">"#);
    let path = &link[link.find("/dashboard/").unwrap()..];
    let mut second = Browser::new(&s);
    second
        .post(path, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    let mut fresh = Browser::new(&s);
    let choose = fresh.sign_in("ann@shared.example", PASSWORD).await;
    assert_eq!(choose.status, 200, "{}", choose.text);
    choose.has("Choose one").has("Team A").has("Team B");
    let team = s.team_id().to_string();
    let chosen = fresh
        .submit(
            &choose,
            "/dashboard/sign-in",
            &[
                ("email", "ann@shared.example"),
                ("password", PASSWORD),
                ("team", team.as_str()),
            ],
        )
        .await;
    assert_eq!(chosen.status, 303, "{}", chosen.text);
    fresh.get("/dashboard/account").await.has("Team A");
}

#[tokio::test]
async fn staff_see_and_change_only_their_own_teams_licenses() {
    let s = TestServer::start().await;
    let other = s.other_team().await;
    let theirs = s
        .send(
            reqwest::Method::POST,
            &format!("{}/api/v1/dev/teams/{}/licenses", s.base, other.team_id),
            Some(&other.api_key),
            Some(r#"{"expirationType":"NEVER"}"#),
        )
        .await;
    let theirs = theirs.ok().clone();
    let (id, key) = (
        theirs["id"].as_str().unwrap(),
        theirs["licenseKey"].as_str().unwrap(),
    );
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    let page = b.get(&format!("/dashboard/licenses/{id}")).await;
    assert_eq!(page.status, 404);
    page.lacks(key);
    b.get(&format!("/dashboard/licenses?search={}", &key[..11]))
        .await
        .lacks(key)
        .has("No licenses match.");
    let list = b.get("/dashboard/licenses").await;
    for path in [
        format!("/dashboard/licenses/{id}/suspend"),
        format!("/dashboard/licenses/{id}/delete"),
    ] {
        assert_eq!(b.submit(&list, &path, &[]).await.status, 404, "{path}");
    }
    let after = s
        .send(
            reqwest::Method::GET,
            &format!(
                "{}/api/v1/dev/teams/{}/licenses/id/{id}",
                s.base, other.team_id
            ),
            Some(&other.api_key),
            None,
        )
        .await;
    assert_eq!(after.ok()["suspended"], false);
}

/// Behind a reverse proxy that rewrites `Host` (nginx's default `proxy_pass`), a set-password
/// link names the server's public URL when one is set, and the host the browser used (as the
/// proxy passes it on) otherwise, never the proxy's name for the upstream.
#[tokio::test]
async fn behind_a_proxy_links_point_to_the_public_url() {
    async fn invited_link(s: &TestServer, host: &str) -> String {
        let mut owner = Browser::new(s);
        owner.headers.push(("host", host.to_owned()));
        owner.headers.push(("x-forwarded-proto", "https".into()));
        staff(
            s,
            &mut owner,
            s.team_id(),
            "own@vendor.example",
            Role::Owner,
        )
        .await;
        let page = owner.get("/dashboard/users").await;
        let made = owner
            .submit(
                &page,
                "/dashboard/users",
                &[("email", "desk@vendor.example"), ("role", "support")],
            )
            .await;
        assert_eq!(made.status, 201, "{}", made.text);
        text_after(&made, r#"id="new-link">"#)
    }
    let public = TestServer::start_with(|c| {
        c.public_url = Some("https://licensing.example.com/".parse().unwrap());
    })
    .await;
    let link = invited_link(&public, "licensing-upstream").await;
    assert!(
        link.starts_with("https://licensing.example.com/dashboard/set-password/"),
        "{link}"
    );
    // The link works (through the server's own address here).
    let path = &link[link.find("/dashboard/").unwrap()..];
    Browser::new(&public)
        .get(path)
        .await
        .has("desk@vendor.example");

    // Without the setting: the Host the proxy passed on (`proxy_set_header Host $host`).
    let plain = TestServer::start().await;
    let link = invited_link(&plain, "shop.example.org").await;
    assert!(
        link.starts_with("http://shop.example.org/dashboard/set-password/")
            || link.starts_with("https://shop.example.org/dashboard/set-password/"),
        "{link}"
    );
}

#[tokio::test]
async fn over_https_the_cookie_is_secure_and_the_dashboard_can_be_turned_off() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    b.headers.push(("x-forwarded-proto", "https".into()));
    staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    assert!(b.cookies.contains_key("__Host-session"), "{:?}", b.cookies);
    assert!(!b.cookies.contains_key("session"));
    assert_eq!(b.get("/dashboard/licenses").await.status, 200);

    let css = b.get("/dashboard/static/dashboard.css").await;
    assert_eq!(css.status, 200);
    assert!(
        css.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    assert!(
        css.headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    // The pages name their icon, which is served from the binary (the portal's pages too).
    let page = b.get("/dashboard/licenses").await;
    let icon = page
        .text
        .split("rel=\"icon\" type=\"image/svg+xml\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a page names its icon")
        .to_owned();
    for path in [icon.as_str(), "/portal/static/favicon.svg"] {
        let icon = b.get(path).await;
        assert_eq!(icon.status, 200, "{path}");
        assert_eq!(icon.headers["content-type"], "image/svg+xml", "{path}");
        assert!(icon.text.starts_with("<svg"), "{path}");
    }

    // The server's address leads to the dashboard, for whoever types it.
    let root = b.get("/").await;
    assert_eq!(root.status, 303);
    assert_eq!(root.location(), "/dashboard/");
    let posted = b.http.post(format!("{}/", b.base)).send().await.unwrap();
    assert_eq!(posted.status().as_u16(), 405);

    let off = TestServer::start_with(|c| c.dashboard = false).await;
    let mut b = Browser::new(&off);
    assert_eq!(b.get("/dashboard/sign-in").await.status, 404);
    let root = b.get("/").await;
    assert_eq!(root.status, 404);
    assert!(root.text.contains("No such endpoint"), "{}", root.text);
}

impl Browser {
    /// Posts a multipart form (a release upload).
    async fn post_multipart(&mut self, path: &str, form: reqwest::multipart::Form) -> Page {
        let mut request = self.http.post(format!("{}{path}", self.base));
        let cookie: Vec<String> = self
            .cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        request = request.header("cookie", cookie.join("; "));
        let response = request.multipart(form).send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        Page {
            status,
            headers,
            text,
        }
    }
}

/// The text of the element whose opening tag ends with `marker` (such as `id="new-key">`).
pub(crate) fn text_after(page: &Page, marker: &str) -> String {
    let at = page
        .text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} missing: {}", page.text));
    let rest = &page.text[at + marker.len()..];
    rest[..rest.find('<').unwrap()].to_owned()
}

#[tokio::test]
async fn a_release_is_uploaded_with_its_file_and_shows_its_checksum() {
    use reqwest::multipart::{Form, Part};
    let s = TestServer::start().await;
    let product = s.product("Desktop app").await;
    let product_id = product["id"].as_str().unwrap().to_owned();
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let page = b.get("/dashboard/releases").await;
    page.has("Upload a release").has("Desktop app");
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let form = |csrf: Option<String>, version: &str| {
        let mut form = Form::new();
        if let Some(csrf) = csrf {
            form = form.text("csrf", csrf);
        }
        form.text("productId", product_id.clone())
            .text("version", version.to_owned())
            .text("status", "PUBLISHED")
            .text("setAsLatest", "true")
            .part(
                "file",
                Part::bytes(bytes.clone()).file_name("app-1.0.0.jar"),
            )
    };
    // Without the token nothing is stored.
    let refused = b
        .post_multipart("/dashboard/releases", form(None, "1.0.0"))
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);
    // A bad version comes back named, with nothing stored.
    let bad = b
        .post_multipart(
            "/dashboard/releases",
            form(Some(page.csrf()), "not a version"),
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    bad.has("version");
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);

    let made = b
        .post_multipart("/dashboard/releases", form(Some(page.csrf()), "1.0.0"))
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let shown = b.get(made.location()).await;
    let checksum = licensing_core::crypto::md5_hex(&bytes);
    shown
        .has(&checksum)
        .has("app-1.0.0.jar")
        .has("Release uploaded");
    let stored = s.get(&s.dev("releases")).await;
    let release = &stored.ok()["releases"][0];
    assert_eq!(release["file"]["checksum"], checksum.as_str());
    assert_eq!(release["latest"], true);
    let id = release["id"].as_str().unwrap().to_owned();

    // Its status changes, its file stays.
    let changed = b
        .submit(
            &shown,
            &format!("/dashboard/releases/{id}"),
            &[("status", "ARCHIVED"), ("licenseKeys", "")],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.text);
    let after = s.get(&s.dev(&format!("releases/{id}"))).await;
    assert_eq!(after.ok()["status"], "ARCHIVED");
    assert_eq!(after.ok()["file"]["checksum"], checksum.as_str());
    // An unknown license key is named.
    let unknown = b
        .submit(
            &shown,
            &format!("/dashboard/releases/{id}"),
            &[
                ("status", "PUBLISHED"),
                ("licenseKeys", "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA"),
            ],
        )
        .await;
    assert_eq!(unknown.status, 400);
    unknown.has("no license has the key");

    let deleted = b
        .submit(&shown, &format!("/dashboard/releases/{id}/delete"), &[])
        .await;
    assert_eq!(deleted.status, 303);
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);
}

#[tokio::test]
async fn an_api_key_made_in_the_dashboard_is_shown_once_and_held_to_its_scopes() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;
    let page = b.get("/dashboard/api-keys").await;
    page.has("licenses:read");
    let none = b
        .submit(&page, "/dashboard/api-keys", &[("name", "nothing")])
        .await;
    assert_eq!(none.status, 400);
    none.has("scopes");
    let made = b
        .submit(
            &page,
            "/dashboard/api-keys",
            &[("name", "reporting"), ("scopes", "licenses:read")],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    let key = text_after(&made, r#"id="new-key">"#);
    assert!(key.starts_with("lk_") || key.len() > 20, "{key}");
    b.get("/dashboard/api-keys")
        .await
        .lacks(&key)
        .has("reporting");
    // The form sent twice makes one key; the second answer does not show it again.
    let page = b.get("/dashboard/api-keys").await;
    let token = page.field("formToken");
    let fields = [
        ("formToken", token.as_str()),
        ("name", "twice"),
        ("scopes", "licenses:read"),
    ];
    let first = b.submit(&page, "/dashboard/api-keys", &fields).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let shown = text_after(&first, r#"id="new-key">"#);
    let again = b.submit(&page, "/dashboard/api-keys", &fields).await;
    assert_eq!(again.headers.get("idempotent-replayed").unwrap(), "true");
    again
        .lacks(&shown)
        .has(licensing_core::idempotency::REDACTED);
    let read = s
        .send(reqwest::Method::GET, &s.dev("licenses"), Some(&key), None)
        .await;
    read.ok();
    s.send(
        reqwest::Method::POST,
        &s.dev("licenses"),
        Some(&key),
        Some(r#"{"expirationType":"NEVER"}"#),
    )
    .await
    .err(403, "FORBIDDEN");

    let keys = s.get(&s.dev("api-keys")).await;
    let id = keys.ok()["apiKeys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "reporting")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let confirm = b.get(&format!("/dashboard/api-keys/{id}/revoke")).await;
    confirm.has("Revoke this API key?");
    let revoked = b
        .submit(&confirm, &format!("/dashboard/api-keys/{id}/revoke"), &[])
        .await;
    assert_eq!(revoked.status, 303);
    s.send(reqwest::Method::GET, &s.dev("licenses"), Some(&key), None)
        .await
        .err(401, "UNAUTHORIZED");
    // The audit log page shows who did it.
    b.get("/dashboard/audit")
        .await
        .has("api_key.revoked")
        .has("own@vendor.example (staff)");
}

#[tokio::test]
async fn owners_and_admins_manage_accounts_and_nobody_else_does() {
    let s = TestServer::start().await;
    let mut owner = Browser::new(&s);
    let owner_id = staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let page = owner.get("/dashboard/users").await;
    page.has("own@vendor.example").has("(you)");
    let made = owner
        .submit(
            &page,
            "/dashboard/users",
            &[("email", "Adm@Vendor.example"), ("role", "admin")],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    let link = text_after(&made, r#"id="new-link">"#);
    let path = &link[link.find("/dashboard/").unwrap()..];
    let again = owner
        .submit(
            &page,
            "/dashboard/users",
            &[("email", "adm@vendor.example"), ("role", "viewer")],
        )
        .await;
    assert_eq!(again.status, 400);
    again.has("email");

    let mut admin = Browser::new(&s);
    admin.get(path).await.has("adm@vendor.example");
    let set = admin
        .post(path, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    assert_eq!(set.status, 303);
    let users = admin.get("/dashboard/users").await;
    // An admin does not manage owners, nor make them.
    users.lacks(&format!("/dashboard/users/{owner_id}/delete"));
    let refused = admin
        .submit(
            &users,
            &format!("/dashboard/users/{owner_id}/role"),
            &[("role", "viewer")],
        )
        .await;
    assert_eq!(refused.status, 403);
    let no_owner = admin
        .submit(
            &users,
            "/dashboard/users",
            &[("email", "boss@vendor.example"), ("role", "owner")],
        )
        .await;
    assert_eq!(no_owner.status, 403);
    let viewer = admin
        .submit(
            &users,
            "/dashboard/users",
            &[("email", "look@vendor.example"), ("role", "viewer")],
        )
        .await;
    assert_eq!(viewer.status, 201);
    let link = text_after(&viewer, r#"id="new-link">"#);
    let mut look = Browser::new(&s);
    let path = &link[link.find("/dashboard/").unwrap()..];
    look.post(path, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    assert_eq!(look.get("/dashboard/users").await.status, 403);
    look.get("/dashboard/licenses")
        .await
        .lacks("/dashboard/users");

    // The owner removes the admin: their session ends at once.
    let admin_id = services_id(&s, "adm@vendor.example").await;
    let page = owner
        .get(&format!("/dashboard/users/{admin_id}/delete"))
        .await;
    page.has("Delete this account?");
    let gone = owner
        .submit(&page, &format!("/dashboard/users/{admin_id}/delete"), &[])
        .await;
    assert_eq!(gone.status, 303);
    assert_eq!(admin.get("/dashboard/licenses").await.status, 303);
    let audit = s.get(&s.dev("audit-log?resourceType=staff")).await;
    let actions: Vec<&str> = audit.ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for action in ["staff.created", "staff.deleted", "staff.password_set"] {
        assert!(actions.contains(&action), "{actions:?}");
    }
}

async fn services_id(s: &TestServer, email: &str) -> String {
    s.store.find_staff_by_email(email).await.unwrap()[0]
        .id
        .to_string()
}

#[tokio::test]
async fn customers_products_branches_blacklist_and_settings_are_managed_by_the_roles_that_may() {
    let s = TestServer::start().await;
    let mut dev = Browser::new(&s);
    staff(
        &s,
        &mut dev,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    // A customer, with a problem first.
    let page = dev.get("/dashboard/customers").await;
    let bad = dev
        .submit(
            &page,
            "/dashboard/customers",
            &[("fullName", "Ada"), ("email", "not an address")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    bad.has("email");
    let made = dev
        .submit(
            &page,
            "/dashboard/customers",
            &[
                ("fullName", "Ada Lovelace"),
                ("email", "ada@engine.example"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    dev.get(made.location())
        .await
        .has("Ada Lovelace")
        .has("ada@engine.example");
    dev.get("/dashboard/customers?search=engine")
        .await
        .has("Ada Lovelace");
    dev.get("/dashboard/customers?search=nobody")
        .await
        .has("No customers match.");

    // A product with a branch.
    let page = dev.get("/dashboard/products").await;
    let made = dev
        .submit(
            &page,
            "/dashboard/products",
            &[("name", "Desktop app"), ("url", "")],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let product_page = dev.get(made.location()).await;
    product_page.has("Desktop app").has("No branches");
    let product_path = made.location().split('?').next().unwrap().to_owned();
    let branch = dev
        .submit(
            &product_page,
            &format!("{product_path}/branches"),
            &[("name", "beta")],
        )
        .await;
    assert_eq!(branch.status, 303, "{}", branch.text);
    dev.get(&product_path).await.has("beta");
    let products = s.get(&s.dev("products")).await;
    assert_eq!(products.ok()["products"][0]["name"], "Desktop app");

    // The blacklist.
    let page = dev.get("/dashboard/blacklist").await;
    let bad = dev
        .submit(
            &page,
            "/dashboard/blacklist",
            &[("type", "IP"), ("value", "not an address")],
        )
        .await;
    assert_eq!(bad.status, 400);
    let added = dev
        .submit(
            &page,
            "/dashboard/blacklist",
            &[("type", "IP"), ("value", "203.0.113.0/24")],
        )
        .await;
    assert_eq!(added.status, 303, "{}", added.text);
    dev.get("/dashboard/blacklist").await.has("203.0.113.0/24");
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    s.client(
        "verify",
        &json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": "device-1234-5678"}),
        Some("203.0.113.9"),
    )
    .await
    .err(403, "IP_BLACKLISTED");

    // Settings: a developer reads them, cannot change them.
    let settings = dev.get("/dashboard/settings").await;
    settings.has("Your role may read the settings");
    // The device setting says what it does: verifies of licenses with a device limit only.
    settings.has("A hardware identifier on a verify of a license with a device limit");
    settings.has("heartbeats always need one");
    let refused = dev
        .submit(
            &settings,
            "/dashboard/settings",
            &[("strictProducts", "true")],
        )
        .await;
    assert_eq!(refused.status, 403);
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let settings = owner.get("/dashboard/settings").await;
    let bad = owner
        .submit(&settings, "/dashboard/settings", &[("hwidTimeout", "soon")])
        .await;
    assert_eq!(bad.status, 400);
    bad.has("must be a whole number of minutes");
    let saved = owner
        .submit(
            &settings,
            "/dashboard/settings",
            &[("strictProducts", "true"), ("hwidTimeout", "90")],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let stored = s.get(&s.dev("settings")).await;
    assert_eq!(stored.ok()["strictProducts"], true);
    assert_eq!(stored.ok()["hwidTimeout"], 90);
    assert_eq!(
        stored.ok()["requireHardwareIdentifier"],
        false,
        "unchecked boxes are false"
    );
}

/// The settings page lists the signing keys; an owner rotates the key and retires the former
/// one (each confirmed); a developer sees the keys without the buttons and a forged rotation is
/// refused.
/// The users page says what each role may do in the README's words (its table of roles).
#[tokio::test]
async fn the_users_page_describes_the_roles_as_the_readme_does() {
    let s = TestServer::start().await;
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let page = owner.get("/dashboard/users").await;
    let readme = include_str!("../../../README.md");
    let mut rows = 0;
    for line in readme.lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let Some((role, may)) = rest.split_once("` | ") else {
            continue;
        };
        if Role::parse(role).is_err() {
            continue;
        }
        let may = may.trim_end_matches(" |");
        page.has(&format!(
            "<code>{role}</code></dt><dd class=\"hint\">{may}</dd>"
        ));
        rows += 1;
    }
    assert_eq!(rows, 5);
}

/// The settings page shows what a developer embeds, as the API gives it: the team id, the RSA
/// public key (PEM and base64) and the active signing key, each with a copy button.
#[tokio::test]
async fn the_settings_page_shows_the_developer_information() {
    let s = TestServer::start().await;
    let keys = s.get(&s.dev("public-key")).await.ok().clone();
    let mut dev = Browser::new(&s);
    staff(
        &s,
        &mut dev,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let page = dev.get("/dashboard/settings").await;
    page.has("Developer information")
        .has(&format!("id=\"team-id\">{}</code>", s.team_id()))
        .has(&format!(
            "<pre class=\"key\" id=\"rsa-public-key\">{}</pre>",
            keys["publicKey"].as_str().unwrap()
        ))
        .has(keys["publicKeyBase64"].as_str().unwrap())
        .has(&format!(
            "id=\"signing-key\">{}</code>",
            keys["signingKey"].as_str().unwrap()
        ))
        .has(keys["signingKeys"][0]["kid"].as_str().unwrap())
        .has(keys["updaterKeys"]["minisign"].as_str().unwrap());
    assert!(
        page.text.matches("data-copy=").count() >= 5,
        "{}",
        page.text
    );
}

#[tokio::test]
async fn signing_keys_are_rotated_and_retired_on_the_settings_page() {
    let s = TestServer::start().await;
    let old_kid = s.get(&s.dev("public-key")).await.ok()["signingKeys"][0]["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut dev = Browser::new(&s);
    staff(
        &s,
        &mut dev,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let page = dev.get("/dashboard/settings").await;
    page.has(&old_kid)
        .has("Active")
        .lacks("Rotate at once")
        .lacks("Create the next signing key");
    let forged = dev
        .submit(&page, "/dashboard/settings/signing-keys/rotate", &[])
        .await;
    assert_eq!(forged.status, 403, "{}", forged.text);

    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let page = owner.get("/dashboard/settings").await;
    page.has("Rotate at once")
        .has("Create the next signing key")
        .has("publish it in an application release");
    let confirm = owner.get("/dashboard/settings/signing-keys/rotate").await;
    confirm.has("Rotate the signing key?");
    let rotated = owner
        .submit(&confirm, "/dashboard/settings/signing-keys/rotate", &[])
        .await;
    assert_eq!(rotated.status, 303, "{}", rotated.text);
    let keys = s.get(&s.dev("public-key")).await.ok()["signingKeys"].clone();
    let new_kid = keys[1]["kid"].as_str().unwrap().to_owned();
    assert_eq!(
        (keys[0]["active"].clone(), keys[1]["active"].clone()),
        (json!(false), json!(true))
    );
    let page = owner
        .get("/dashboard/settings?notice=signing-key-rotated")
        .await;
    page.has(&new_kid)
        .has("Former: trusted until retired")
        .has(&format!(
            "/dashboard/settings/signing-keys/{old_kid}/retire"
        ))
        .lacks(&format!(
            "/dashboard/settings/signing-keys/{new_kid}/retire"
        ));
    // The active key has no confirmation page, and an id that is no id is not found.
    assert_eq!(
        owner
            .get(&format!(
                "/dashboard/settings/signing-keys/{new_kid}/retire"
            ))
            .await
            .status,
        404
    );
    assert_eq!(
        owner
            .get("/dashboard/settings/signing-keys/nonsense/retire")
            .await
            .status,
        404
    );
    let confirm = owner
        .get(&format!(
            "/dashboard/settings/signing-keys/{old_kid}/retire"
        ))
        .await;
    confirm.has("Retire this signing key?").has(&old_kid);
    let retired = owner
        .submit(
            &confirm,
            &format!("/dashboard/settings/signing-keys/{old_kid}/retire"),
            &[],
        )
        .await;
    assert_eq!(retired.status, 303, "{}", retired.text);
    owner
        .get("/dashboard/settings")
        .await
        .has(&new_kid)
        .lacks(&old_kid);
    // Retiring the active key through a forged form is refused with the reason.
    let refused = owner
        .submit(
            &confirm,
            &format!("/dashboard/settings/signing-keys/{new_kid}/retire"),
            &[],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused.has("active signing key");

    // In two steps: the next key is listed as such, then activated after a confirmation.
    let page = owner.get("/dashboard/settings").await;
    let created = owner
        .submit(&page, "/dashboard/settings/signing-keys", &[])
        .await;
    assert_eq!(created.status, 303, "{}", created.text);
    let keys = s.get(&s.dev("public-key")).await.ok()["signingKeys"].clone();
    let next_kid = keys[1]["kid"].as_str().unwrap().to_owned();
    assert_eq!(keys[1]["state"], "next");
    let page = owner
        .get("/dashboard/settings?notice=signing-key-created")
        .await;
    page.has("Next: signs nothing yet")
        .has(&format!(
            "/dashboard/settings/signing-keys/{next_kid}/activate"
        ))
        .lacks("Create the next signing key");
    let confirm = owner
        .get(&format!(
            "/dashboard/settings/signing-keys/{next_kid}/activate"
        ))
        .await;
    confirm.has("Activate the next signing key?").has(&next_kid);
    let activated = owner
        .submit(
            &confirm,
            &format!("/dashboard/settings/signing-keys/{next_kid}/activate"),
            &[],
        )
        .await;
    assert_eq!(activated.status, 303, "{}", activated.text);
    assert_eq!(
        s.get(&s.dev("public-key")).await.ok()["signingKeys"][1]["state"],
        "active"
    );
}

/// Entitlements in the dashboard: created on their page (a malformed code shown as the form's
/// problem), granted on the product and license forms, shown on the license page, deleted with
/// a confirmation; a license file downloaded from the license page, named after the key, opens
/// for its machine.
#[tokio::test]
async fn entitlements_and_license_files_in_the_dashboard() {
    use licensing_core::crypto::license_file::LicenseFile;

    let s = TestServer::start().await;
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let page = owner.get("/dashboard/entitlements").await;
    page.has("No entitlements yet");
    let bad = owner
        .submit(
            &page,
            "/dashboard/entitlements",
            &[("name", "Export"), ("code", "pro export")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    bad.has("must be 1 to 64 of A-Z");
    for (name, code) in [("Export", "EXPORT"), ("Single sign-on", "SSO")] {
        let made = owner
            .submit(
                &page,
                "/dashboard/entitlements",
                &[("name", name), ("code", code)],
            )
            .await;
        assert_eq!(made.status, 303, "{}", made.text);
    }
    let all = s
        .get(&s.dev("entitlements?sortColumn=code&sortDirection=asc"))
        .await
        .ok()
        .clone();
    let (export, sso) = (
        all["entitlements"][0]["id"].as_str().unwrap().to_owned(),
        all["entitlements"][1]["id"].as_str().unwrap().to_owned(),
    );

    // A product granting SSO; a license granting EXPORT itself.
    let products = owner.get("/dashboard/products").await;
    products.has("Single sign-on");
    let made = owner
        .submit(
            &products,
            "/dashboard/products",
            &[("name", "Desk"), ("entitlementIds", &sso)],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let product = made
        .location()
        .trim_start_matches("/dashboard/products/")
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    owner
        .get(&format!("/dashboard/products/{product}"))
        .await
        .has("<code>SSO</code>");
    let form = owner.get("/dashboard/licenses/new").await;
    let made = owner
        .submit(
            &form,
            "/dashboard/licenses",
            &[
                ("expirationType", "NEVER"),
                ("productIds", &product),
                ("entitlementsShown", "true"),
                ("entitlementIds", &export),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let license_page = made.location().split('?').next().unwrap().to_owned();
    let shown = owner.get(&license_page).await;
    shown
        .has("<code>EXPORT</code>, <code>SSO</code>")
        .has("Download license file");
    let id = license_page
        .trim_start_matches("/dashboard/licenses/")
        .to_owned();
    let license = s
        .get(&s.dev(&format!("licenses/id/{id}")))
        .await
        .ok()
        .clone();
    let key = license["licenseKey"].as_str().unwrap().to_owned();
    assert_eq!(license["entitlementIds"], json!([export]));

    // A license file for a machine the license has seen.
    s.client(
        "verify",
        &json!({"licenseKey": key, "hardwareIdentifier": "device-1234-5678"}),
        None,
    )
    .await
    .valid();
    let shown = owner.get(&license_page).await;
    shown.has(r#"<option value="device-1234-5678">"#);
    let download = owner
        .submit(
            &shown,
            &format!("{license_page}/file"),
            &[
                ("machine", "device-1234-5678"),
                ("days", "30"),
                ("encrypt", "true"),
            ],
        )
        .await;
    assert_eq!(download.status, 200, "{}", download.text);
    assert_eq!(
        download
            .headers
            .get("content-disposition")
            .unwrap()
            .to_str()
            .unwrap(),
        format!("attachment; filename=\"{key}.lic\"")
    );
    let file = LicenseFile::parse(&download.text).unwrap();
    let payload: serde_json::Value = serde_json::from_slice(
        &file
            .open(&s.public_keys().await, &key, Some("device-1234-5678"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(payload["meta"]["ttl"], 30 * 86_400);
    assert_eq!(
        payload["data"]["license"]["entitlements"],
        json!(["EXPORT", "SSO"])
    );
    let refused = owner
        .submit(&shown, &format!("{license_page}/file"), &[("days", "0")])
        .await;
    assert_eq!(refused.status, 400);

    // A viewer sees the codes, not the forms; a forged download is refused.
    let mut viewer = Browser::new(&s);
    staff(
        &s,
        &mut viewer,
        s.team_id(),
        "view@vendor.example",
        Role::Viewer,
    )
    .await;
    let seen = viewer.get(&license_page).await;
    seen.has("<code>EXPORT</code>")
        .lacks("Download license file");
    let forged = viewer
        .submit(&seen, &format!("{license_page}/file"), &[])
        .await;
    assert_eq!(forged.status, 403);
    viewer
        .get("/dashboard/entitlements")
        .await
        .has("EXPORT")
        .lacks("New entitlement");

    // Deleted with a confirmation: gone from the license page.
    let confirm = owner
        .get(&format!("/dashboard/entitlements/{export}/delete"))
        .await;
    confirm.has("Delete this entitlement?");
    let deleted = owner
        .submit(
            &confirm,
            &format!("/dashboard/entitlements/{export}/delete"),
            &[],
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.text);
    owner
        .get(&license_page)
        .await
        .lacks("<code>EXPORT</code>")
        .has("<code>SSO</code>");
}

#[tokio::test]
async fn the_overview_draws_the_days_requests_as_svg_with_their_numbers() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    for device in ["device-1111-0001", "device-1111-0002"] {
        s.client(
            "verify",
            &json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": device}),
            None,
        )
        .await
        .valid();
    }
    s.client(
        "verify",
        &json!({"licenseKey": "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA", "hardwareIdentifier": "device-1111-0003"}),
        None,
    )
    .await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "look@vendor.example", Role::Viewer).await;
    let page = b.get("/dashboard/").await;
    assert_eq!(page.status, 200, "{}", page.text);
    page.has("<svg class=\"chart\"")
        .has("Client requests per day")
        .has(": 2 successful")
        .has(": 1 refused")
        .lacks("style=");
    let today = Timestamp::now()
        .as_datetime()
        .format("%Y-%m-%d")
        .to_string();
    page.has(&format!("<td>{today}</td><td>2</td><td>1</td>"));
    let licenses = r#"<span class="number">1</span><span class="label">licenses</span>"#;
    page.has(licenses)
        .has(r#"<span class="number">1</span><span class="label">active in the last hour</span>"#);

    // The headline counts are current, though the charts come from a cache of 15 minutes.
    for _ in 0..2 {
        s.license(r#"{"expirationType":"NEVER"}"#).await;
    }
    s.post(&s.dev("customers"), r#"{"email":"new@example.com"}"#)
        .await
        .ok();
    b.get("/dashboard/")
        .await
        .lacks(licenses)
        .has(r#"<span class="number">3</span><span class="label">licenses</span>"#)
        .has(r#"<span class="number">1</span><span class="label">customers</span>"#);
}

#[tokio::test]
async fn a_webhook_endpoint_is_made_with_its_secret_shown_once_tested_and_deleted() {
    let s = TestServer::start_with(|c| {
        c.webhook_allow_http = true;
        c.webhook_allow_private = true;
    })
    .await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let page = b.get("/dashboard/webhooks").await;
    page.has("No endpoints yet.");
    let bad = b
        .submit(
            &page,
            "/dashboard/webhooks",
            &[("url", "ftp://nowhere"), ("eventTypes", "*")],
        )
        .await;
    assert_eq!(bad.status, 400);
    bad.has("url");
    let made = b
        .submit(
            &page,
            "/dashboard/webhooks",
            &[
                ("url", "http://127.0.0.1:9/hook"),
                ("eventTypes", "license.*, webhook.test"),
            ],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    let secret = text_after(&made, r#"id="new-secret">"#);
    assert!(secret.starts_with("whsec_"), "{secret}");
    let listed = b.get("/dashboard/webhooks").await;
    listed.has("http://127.0.0.1:9/hook").lacks(&secret);
    let id = s.get(&s.dev("webhooks")).await.ok()["webhooks"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let endpoint = b.get(&format!("/dashboard/webhooks/{id}")).await;
    endpoint.has("Nothing sent yet.");
    let tested = b
        .submit(&endpoint, &format!("/dashboard/webhooks/{id}/test"), &[])
        .await;
    assert_eq!(tested.status, 303);
    b.get(tested.location()).await.has("webhook.test");
    let confirm = b.get(&format!("/dashboard/webhooks/{id}/delete")).await;
    let gone = b
        .submit(&confirm, &format!("/dashboard/webhooks/{id}/delete"), &[])
        .await;
    assert_eq!(gone.status, 303);
    assert_eq!(
        s.get(&s.dev("webhooks")).await.ok()["webhooks"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[tokio::test]
async fn the_admin_api_creates_an_account_whose_link_sets_its_password() {
    const TOKEN: &str = "admin-token-for-tests-0123456789";
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let url = format!("{}/api/v1/admin/teams/{}/users", s.base, s.team_id());
    let post = |url: String, body: &'static str, token: Option<&'static str>| {
        let s = &s;
        async move { s.send(reqwest::Method::POST, &url, token, Some(body)).await }
    };
    post(
        url.clone(),
        r#"{"email":"ann@example.com","role":"support"}"#,
        None,
    )
    .await
    .err(401, "UNAUTHORIZED");
    let bad = post(
        url.clone(),
        r#"{"email":"ann@example.com","role":"boss"}"#,
        Some(TOKEN),
    )
    .await;
    bad.err(400, "BAD_REQUEST");
    assert_eq!(bad.fields(), ["role"]);
    let unknown = format!(
        "{}/api/v1/admin/teams/{}/users",
        s.base,
        uuid::Uuid::new_v4()
    );
    post(
        unknown,
        r#"{"email":"ann@example.com","role":"support"}"#,
        Some(TOKEN),
    )
    .await
    .err(404, "TEAM_NOT_FOUND");
    let made = post(
        url.clone(),
        r#"{"email":"Ann@Example.com","role":"support"}"#,
        Some(TOKEN),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let data = made.ok();
    assert_eq!(data["email"], "ann@example.com");
    assert_eq!(data["role"], "support");
    let path = data["setPasswordPath"].as_str().unwrap().to_owned();
    let again = post(
        url,
        r#"{"email":"ann@example.com","role":"viewer"}"#,
        Some(TOKEN),
    )
    .await;
    again.err(400, "BAD_REQUEST");
    assert_eq!(again.fields(), ["email"]);

    let mut b = Browser::new(&s);
    let done = b
        .post(&path, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    b.get("/dashboard/licenses")
        .await
        .has("ann@example.com")
        .has("support");
    let audit = s.get(&s.dev("audit-log?action=staff.created")).await;
    assert_eq!(audit.ok()["entries"][0]["actor"]["type"], "ADMIN");
}

/// A sole owner who forgot the password gets back in while the server runs: the admin API
/// gives the account a new one-time set-password link.
#[tokio::test]
async fn the_admin_api_gives_a_locked_out_account_a_new_link() {
    const TOKEN: &str = "admin-token-for-tests-0123456789";
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let post = |url: String, body: &'static str, token: Option<&'static str>| {
        let s = &s;
        async move { s.send(reqwest::Method::POST, &url, token, Some(body)).await }
    };
    let users = format!("{}/api/v1/admin/teams/{}/users", s.base, s.team_id());
    let made = post(
        users,
        r#"{"email":"sole@example.com","role":"owner"}"#,
        Some(TOKEN),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let first = made.ok()["setPasswordPath"].as_str().unwrap().to_owned();
    let mut b = Browser::new(&s);
    let done = b
        .post(&first, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    assert_eq!(done.status, 303, "{}", done.text);

    let links = format!(
        "{}/api/v1/admin/teams/{}/password-links",
        s.base,
        s.team_id()
    );
    post(links.clone(), r#"{"email":"sole@example.com"}"#, None)
        .await
        .err(401, "UNAUTHORIZED");
    let missing = post(links.clone(), r#"{}"#, Some(TOKEN)).await;
    missing.err(400, "BAD_REQUEST");
    assert_eq!(missing.fields(), ["email"]);
    let nobody = post(
        links.clone(),
        r#"{"email":"nobody@example.com"}"#,
        Some(TOKEN),
    )
    .await;
    nobody.err(404, "BAD_REQUEST");
    let said = nobody.body["result"]["details"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains("has no account with the address"), "{said}");
    let elsewhere = format!(
        "{}/api/v1/admin/teams/{}/password-links",
        s.base,
        uuid::Uuid::new_v4()
    );
    post(elsewhere, r#"{"email":"sole@example.com"}"#, Some(TOKEN))
        .await
        .err(404, "TEAM_NOT_FOUND");
    let issued = post(links, r#"{"email":"Sole@Example.com"}"#, Some(TOKEN)).await;
    assert_eq!(issued.status, 201, "{}", issued.body);
    let data = issued.ok();
    assert_eq!(data["email"], "sole@example.com");
    assert_eq!(data["role"], "owner");
    let path = data["setPasswordPath"].as_str().unwrap().to_owned();
    assert_ne!(path, first);

    const NEW: &str = "another quiet harbour at noon";
    let mut fresh = Browser::new(&s);
    let done = fresh
        .post(&path, &[("password", NEW), ("confirm", NEW)])
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    fresh
        .get("/dashboard/licenses")
        .await
        .has("sole@example.com");
    // The link worked once.
    let again = Browser::new(&s)
        .post(&path, &[("password", NEW), ("confirm", NEW)])
        .await;
    assert_ne!(again.status, 303);
    let mut later = Browser::new(&s);
    assert_eq!(later.sign_in("sole@example.com", NEW).await.status, 303);
    later
        .get("/dashboard/licenses")
        .await
        .has("sole@example.com");
    let audit = s.get(&s.dev("audit-log?action=staff.link_issued")).await;
    assert_eq!(audit.ok()["entries"][0]["actor"]["type"], "ADMIN");
}

#[tokio::test]
async fn an_admin_edits_a_license_and_what_the_form_leaves_alone_stays() {
    let s = TestServer::start().await;
    let product = s.product("Editor").await;
    // An expiry at 15:30, which the form shows by its day only.
    let l = s
        .license(
            &json!({
                "expirationType": "DATE", "expirationDate": "2999-03-04T15:30:00Z",
                "hwidLimit": 3, "productIds": [product["id"]],
                "metadata": [{"key": "plan", "value": "pro"}],
            })
            .to_string(),
        )
        .await;
    let (id, key) = (l["id"].as_str().unwrap(), l["licenseKey"].as_str().unwrap());
    let product_id = product["id"].as_str().unwrap();
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "edit@vendor.example", Role::Admin).await;
    b.get(&format!("/dashboard/licenses/{id}"))
        .await
        .has(&format!("/dashboard/licenses/{id}/edit"));
    let form = b.get(&format!("/dashboard/licenses/{id}/edit")).await;
    assert_eq!(form.status, 200, "{}", form.text);
    form.has("Edit license")
        .has(r#"value="2999-03-04""#)
        .has("plan=pro")
        .has(r#"name="hwidLimit" value="3""#)
        .has(key);
    let path = format!("/dashboard/licenses/{id}/edit");
    let fields = |hwid: &'static str, kind: &'static str| {
        vec![
            ("licenseKey", key),
            ("productIds", product_id),
            ("expirationType", kind),
            ("expirationDate", "2999-03-04"),
            ("hwidLimit", hwid),
            ("ipLimit", "4"),
            ("metadata", "plan=team\nseats=5"),
        ]
    };
    // A device limit of 0 is refused with the field named; nothing changes.
    let refused = b.submit(&form, &path, &fields("0", "DATE")).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused.has("hwidLimit").has("Edit license");
    let stored = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(stored.ok()["hwidLimit"], 3);
    assert_eq!(stored.ok()["ipLimit"], Value::Null);

    // The device limit cleared, an address limit, new metadata; the same day keeps the hour.
    let saved = b.submit(&form, &path, &fields("", "DATE")).await;
    assert_eq!(
        (saved.status, saved.location()),
        (
            303,
            format!("/dashboard/licenses/{id}?notice=license-updated").as_str()
        ),
        "{}",
        saved.text
    );
    b.get(saved.location()).await.has("Changes saved.");
    let stored = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    let stored = stored.ok();
    assert_eq!(stored["hwidLimit"], Value::Null);
    assert_eq!(stored["ipLimit"], 4);
    assert_eq!(stored["expirationDate"], "2999-03-04T15:30:00.000Z");
    assert_eq!(stored["metadata"][1]["key"], "seats");
    assert_eq!(stored["products"][0]["id"], product_id);
    assert_eq!(stored["licenseKey"], key);
    // The audit log names the admin.
    let audit = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&action=license.updated")))
        .await;
    assert_eq!(
        audit.ok()["entries"][0]["actor"]["name"],
        "edit@vendor.example"
    );

    // Never expiring now: the date goes.
    let never = b.submit(&form, &path, &fields("", "NEVER")).await;
    assert_eq!(never.status, 303, "{}", never.text);
    let stored = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(stored.ok()["expirationDate"], Value::Null);

    // A viewer gets no form and cannot save.
    let mut viewer = Browser::new(&s);
    staff(
        &s,
        &mut viewer,
        s.team_id(),
        "peek@vendor.example",
        Role::Viewer,
    )
    .await;
    viewer
        .get(&format!("/dashboard/licenses/{id}"))
        .await
        .lacks(&format!("/dashboard/licenses/{id}/edit"));
    let page = viewer.get(&format!("/dashboard/licenses/{id}")).await;
    assert_eq!(viewer.get(&path).await.status, 403);
    let refused = viewer.submit(&page, &path, &fields("7", "NEVER")).await;
    assert_eq!(refused.status, 403);
    let stored = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(stored.ok()["hwidLimit"], Value::Null);
}

/// The code an authenticator app with `secret` shows `offset` seconds from now.
fn app_code(secret: &str, offset: i64) -> String {
    let app = totp_rs::TOTP::new(
        totp_rs::Algorithm::SHA1,
        6,
        1,
        30,
        totp_rs::Secret::Encoded(secret.to_owned())
            .to_bytes()
            .unwrap(),
        Some("app".into()),
        "me".into(),
    )
    .unwrap();
    app.generate(u64::try_from(Timestamp::now().as_millis() / 1000 + offset).unwrap())
}

#[tokio::test]
async fn two_step_sign_in_takes_the_apps_code_or_a_recovery_code_once() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    let id = staff(
        &s,
        &mut b,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    b.get("/dashboard/account")
        .await
        .has("Turn on two-step sign-in");
    let setup = b.get("/dashboard/account/two-step").await;
    assert_eq!(setup.status, 200, "{}", setup.text);
    setup.has("<svg").has("otpauth").lacks("<?xml");
    let secret = setup.field("secret");
    // A wrong code: still off, with the field named.
    let wrong = b
        .submit(
            &setup,
            "/dashboard/account/two-step",
            &[("secret", &secret), ("code", "000000")],
        )
        .await;
    assert_eq!(wrong.status, 400, "{}", wrong.text);
    wrong.has("is not the code your app shows now");
    let first_code = app_code(&secret, 0);
    let on = b
        .submit(
            &setup,
            "/dashboard/account/two-step",
            &[("secret", &secret), ("code", &first_code)],
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.text);
    on.has("Two-step sign-in is on");
    let codes: Vec<String> = on
        .text
        .split("<li><code>")
        .skip(1)
        .map(|rest| rest[..rest.find('<').unwrap()].to_owned())
        .collect();
    assert_eq!(codes.len(), 10, "{}", on.text);
    let audit = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&action=staff.updated")))
        .await;
    assert_eq!(audit.ok()["entries"][0]["changes"][0]["field"], "twoStep");
    let stored = s
        .store
        .get_staff(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(
        !stored
            .two_step
            .as_ref()
            .unwrap()
            .recovery_codes
            .contains(&codes[0]),
        "recovery codes are stored hashed"
    );

    // Signing in now takes the code: a password alone is not enough, nor a wrong code, nor the
    // code already spent turning it on.
    let mut other = Browser::new(&s);
    for (code, says) in [
        (String::new(), "signs in in two steps"),
        ("123456".to_owned(), "That code is not right"),
        (first_code.clone(), "That code is not right"),
    ] {
        let refused = other.sign_in_with_code("dev@vendor.example", &code).await;
        assert_eq!(refused.status, 401, "{}", refused.text);
        refused.has(says);
        assert!(!other.cookies.contains_key("session"));
    }
    // The next step's code (a phone a little ahead) signs in.
    let signed = other
        .sign_in_with_code("dev@vendor.example", &app_code(&secret, 30))
        .await;
    assert_eq!(signed.status, 303, "{}", signed.text);
    assert!(other.cookies.contains_key("session"));

    // A recovery code, typed in capitals without dashes, signs in once.
    let typed = codes[4].to_uppercase().replace('-', "");
    let mut third = Browser::new(&s);
    let signed = third.sign_in_with_code("dev@vendor.example", &typed).await;
    assert_eq!(signed.status, 303);
    third
        .get("/dashboard/account")
        .await
        .has("9 of 10 recovery codes are unused");
    let again = Browser::new(&s)
        .sign_in_with_code("dev@vendor.example", &typed)
        .await;
    assert_eq!(again.status, 401, "a recovery code is good once");
    let audit = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&action=staff.updated")))
        .await;
    assert_eq!(
        audit.ok()["entries"][0]["changes"][0]["field"],
        "recoveryCodes"
    );
    assert_eq!(audit.ok()["entries"][0]["changes"][0]["new"], "9");

    // A set-password link replaces the password, not the second step.
    let account = licensing_server::staff::account_named(&s.store, "dev@vendor.example", None)
        .await
        .unwrap();
    let link = licensing_server::staff::issue_link(
        &s.store,
        account,
        Timestamp::now(),
        &licensing_server::journal::Acting::command_line(),
    )
    .await
    .unwrap();
    let path = format!("/dashboard/set-password/{id}/{}", link.link_secret);
    let mut fifth = Browser::new(&s);
    let set = fifth
        .post(&path, &[("password", PASSWORD), ("confirm", PASSWORD)])
        .await;
    assert_eq!(
        (set.status, set.location()),
        (303, "/dashboard/sign-in?notice=password-set")
    );
    assert!(!fifth.cookies.contains_key("session"));

    // An owner turns it off for someone who lost their phone and codes.
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "boss@vendor.example",
        Role::Owner,
    )
    .await;
    let users = owner.get("/dashboard/users").await;
    users.has("Turn off two-step");
    let reset = owner
        .submit(&users, &format!("/dashboard/users/{id}/two-step/off"), &[])
        .await;
    assert_eq!(reset.status, 303, "{}", reset.text);
    let stored = s
        .store
        .get_staff(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(stored.two_step.is_none());
    // Nobody else can: a developer's forged form is refused. (The set-password link ended the
    // account's sessions, so another developer tries.)
    let mut third = Browser::new(&s);
    staff(
        &s,
        &mut third,
        s.team_id(),
        "dev2@vendor.example",
        Role::Developer,
    )
    .await;
    let page = third.get("/dashboard/account").await;
    let boss = s
        .store
        .find_staff_by_email("boss@vendor.example")
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        third
            .submit(
                &page,
                &format!("/dashboard/users/{}/two-step/off", boss.id),
                &[]
            )
            .await
            .status,
        403
    );
}

#[tokio::test]
async fn two_step_sign_in_is_turned_off_with_a_code_only() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "me@vendor.example", Role::Viewer).await;
    let setup = b.get("/dashboard/account/two-step").await;
    let secret = setup.field("secret");
    // A forged secret is not taken: the page starts over with a new one.
    let forged = b
        .submit(
            &setup,
            "/dashboard/account/two-step",
            &[("secret", "short"), ("code", "123456")],
        )
        .await;
    assert_eq!(forged.status, 200);
    forged.lacks("Two-step sign-in is on");
    let on = b
        .submit(
            &setup,
            "/dashboard/account/two-step",
            &[("secret", &secret), ("code", &app_code(&secret, 0))],
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.text);
    let account = b.get("/dashboard/account").await;
    account.has("Turn two-step sign-in off");
    let kept = b
        .submit(
            &account,
            "/dashboard/account/two-step/off",
            &[("code", "999999")],
        )
        .await;
    assert_eq!(kept.status, 400);
    b.get("/dashboard/account")
        .await
        .has("Turn two-step sign-in off");
    let off = b
        .submit(
            &account,
            "/dashboard/account/two-step/off",
            &[("code", &app_code(&secret, 30))],
        )
        .await;
    assert_eq!(
        (off.status, off.location()),
        (303, "/dashboard/account?notice=two-step-off")
    );
    b.get("/dashboard/account")
        .await
        .has("Turn on two-step sign-in");
}

#[tokio::test]
async fn with_e_mail_configured_staff_are_invited_and_license_keys_sent_again_by_e_mail() {
    use std::time::Duration;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(crate::mail::smtp_server(listener, tx));
    let s = TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
    })
    .await;
    async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("no e-mail arrived in time")
            .unwrap()
    }
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "boss@vendor.example", Role::Owner).await;

    // An invitation: the link goes by e-mail, and works.
    let users = b.get("/dashboard/users").await;
    users.has(r#"name="sendEmail""#);
    let invited = b
        .submit(
            &users,
            "/dashboard/users",
            &[
                ("email", "new@vendor.example"),
                ("role", "support"),
                ("sendEmail", "true"),
            ],
        )
        .await;
    assert_eq!(
        (invited.status, invited.location()),
        (303, "/dashboard/users?notice=user-invited"),
        "{}",
        invited.text
    );
    // Long lines may come quoted-printable: undo its soft line breaks.
    let message = next(&mut rx).await.replace("=\n", "").replace("=3D", "=");
    assert!(message.contains("To: new@vendor.example"), "{message}");
    assert!(
        message.contains("boss@vendor.example invited you"),
        "{message}"
    );
    let at = message.find("/dashboard/set-password/").expect("a link");
    let path: String = message[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    let mut newcomer = Browser::new(&s);
    let form = newcomer.get(&path).await;
    assert_eq!(form.status, 200, "{path}: {}", form.text);
    form.has("new@vendor.example");

    // A license's key, sent again to its customer with an address (through the API's own
    // operation), from the license page.
    let jane = s
        .post(
            &s.dev("customers"),
            r#"{"email":"jane@example.com","fullName":"Jane"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    let nameless = s
        .post(&s.dev("customers"), r#"{"username":"no-mail"}"#)
        .await
        .ok()["id"]
        .clone();
    let l = s
        .license(&json!({"expirationType": "NEVER", "customerIds": [jane, nameless]}).to_string())
        .await;
    let (id, key) = (l["id"].as_str().unwrap(), l["licenseKey"].as_str().unwrap());
    let page = b.get(&format!("/dashboard/licenses/{id}")).await;
    page.has("E-mail the key to its customers");
    let sent = b
        .submit(&page, &format!("/dashboard/licenses/{id}/email"), &[])
        .await;
    assert_eq!(
        (sent.status, sent.location()),
        (
            303,
            format!("/dashboard/licenses/{id}?notice=license-emailed").as_str()
        )
    );
    let message = next(&mut rx).await;
    assert!(message.contains("To: jane@example.com"), "{message}");
    assert!(message.contains(key), "{message}");
    // The notice names the recipients; the license page keeps who sent it to whom, and when; the
    // audit log has it.
    let shown = b.get(sent.location()).await;
    shown
        .has("The key is on its way to jane@example.com.")
        .has("Key e-mailed")
        .has("to jane@example.com, by boss@vendor.example (staff)");
    let audit = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&action=license.emailed")))
        .await;
    let entry = audit.ok()["entries"][0].clone();
    assert_eq!(entry["actor"]["type"], "USER");
    assert_eq!(entry["changes"][0]["field"], "recipients");
    assert_eq!(entry["changes"][0]["new"], json!(["jane@example.com"]));
    let api = s.post(&s.dev(&format!("licenses/id/{id}/email")), "").await;
    assert_eq!(api.ok()["queued"], 1);
    assert_eq!(api.ok()["recipients"], json!(["jane@example.com"]));
    next(&mut rx).await;
    let audit = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&action=license.emailed")))
        .await;
    assert_eq!(audit.ok()["entries"].as_array().unwrap().len(), 2);
    assert_eq!(audit.ok()["entries"][0]["actor"]["type"], "API_KEY");
    b.get(&format!("/dashboard/licenses/{id}"))
        .await
        .lacks("The key is on its way")
        .has("by API key");

    // A license whose customers have no address: refused, in plain words.
    let bare = s
        .license(&json!({"expirationType": "NEVER", "customerIds": [nameless]}).to_string())
        .await;
    let bare_id = bare["id"].as_str().unwrap();
    b.get(&format!("/dashboard/licenses/{bare_id}"))
        .await
        .lacks("E-mail the key");
    s.post(&s.dev(&format!("licenses/id/{bare_id}/email")), "")
        .await
        .err(400, "BAD_REQUEST");
    // A viewer may not send it.
    let mut viewer = Browser::new(&s);
    staff(
        &s,
        &mut viewer,
        s.team_id(),
        "look@vendor.example",
        Role::Viewer,
    )
    .await;
    let page = viewer.get(&format!("/dashboard/licenses/{id}")).await;
    page.lacks("E-mail the key");
    assert_eq!(
        viewer
            .submit(&page, &format!("/dashboard/licenses/{id}/email"), &[])
            .await
            .status,
        403
    );
}

#[tokio::test]
async fn without_e_mail_a_license_key_cannot_be_sent_again() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let answer = s
        .post(
            &s.dev(&format!("licenses/id/{}/email", l["id"].as_str().unwrap())),
            "",
        )
        .await;
    answer.err(400, "BAD_REQUEST");
    assert!(
        answer.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("not configured"),
        "{}",
        answer.body
    );
    s.post(
        &s.dev(&format!("licenses/id/{}/email", uuid::Uuid::new_v4())),
        "",
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
}

/// BUG-11: a key made by a staff member stops working when the account is deleted, and so do
/// the keys that key made.
#[tokio::test]
async fn deleting_an_account_revokes_the_keys_it_made() {
    let s = TestServer::start().await;
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let mut dev = Browser::new(&s);
    let dev_id = staff(
        &s,
        &mut dev,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let page = dev.get("/dashboard/api-keys").await;
    let made = dev
        .submit(
            &page,
            "/dashboard/api-keys",
            &[
                ("name", "dev's key"),
                ("scopes", "api-keys:write"),
                ("scopes", "licenses:read"),
            ],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    let key = text_after(&made, r#"id="new-key">"#);
    // That key makes another.
    let child = s
        .send(
            reqwest::Method::POST,
            &s.dev("api-keys"),
            Some(&key),
            Some(r#"{"name":"made by dev's key","scopes":["licenses:read"]}"#),
        )
        .await;
    let child = child.ok()["key"].as_str().unwrap().to_owned();
    for key in [&key, &child] {
        s.send(reqwest::Method::GET, &s.dev("licenses"), Some(key), None)
            .await
            .ok();
    }
    let page = owner
        .get(&format!("/dashboard/users/{dev_id}/delete"))
        .await;
    let gone = owner
        .submit(&page, &format!("/dashboard/users/{dev_id}/delete"), &[])
        .await;
    assert_eq!(gone.status, 303);
    for key in [&key, &child] {
        s.send(reqwest::Method::GET, &s.dev("licenses"), Some(key), None)
            .await
            .err(401, "UNAUTHORIZED");
    }
    // Audited: each key's revocation, naming what it went with, by the owner.
    let log = s.get(&s.dev("audit-log?action=api_key.revoked")).await;
    let entries = log.ok()["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "{entries:?}");
    for entry in &entries {
        assert_eq!(entry["actor"]["name"], "own@vendor.example");
        assert!(
            entry["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["field"] == "revokedWith"),
            "{entry}"
        );
    }
    let keys = s.get(&s.dev("api-keys")).await;
    let names: Vec<&str> = keys.ok()["apiKeys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["initial"]);
}

/// NIT-11: with a master key, a two-step secret is sealed at rest, and signing in with the
/// app's code still works.
#[tokio::test]
async fn two_step_secrets_are_sealed_under_a_master_key() {
    let keys = tempfile::tempdir().unwrap();
    let key_file = crate::webhooks::master_key_in(keys.path());
    let s = TestServer::start_with(|c| c.master_key_file = Some(key_file.clone())).await;
    let mut b = Browser::new(&s);
    let id = staff(
        &s,
        &mut b,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let setup = b.get("/dashboard/account/two-step").await;
    let secret = setup.field("secret");
    let on = b
        .submit(
            &setup,
            "/dashboard/account/two-step",
            &[("secret", &secret), ("code", &app_code(&secret, 0))],
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.text);
    let stored = s
        .store
        .get_staff(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap()
        .two_step
        .unwrap();
    assert!(stored.secret.starts_with("sealed:v1:"), "{}", stored.secret);
    assert!(!stored.secret.contains(&secret));
    let mut other = Browser::new(&s);
    let signed = other
        .sign_in_with_code("dev@vendor.example", &app_code(&secret, 30))
        .await;
    assert_eq!(signed.status, 303, "{}", signed.text);
}

/// A form sent twice (a double click, a reload that posts again) does its change once and is
/// answered the same both times; the same form sent with other values is a change of its own.
#[tokio::test]
async fn a_form_sent_twice_does_its_change_once_and_is_answered_the_same() {
    let s = TestServer::start().await;
    let mut dev = Browser::new(&s);
    staff(
        &s,
        &mut dev,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let page = dev.get("/dashboard/customers").await;
    let token = page.field("formToken");
    let fields = [
        ("formToken", token.as_str()),
        ("fullName", "Grace Hopper"),
        ("email", "grace@navy.example"),
    ];
    let first = dev.submit(&page, "/dashboard/customers", &fields).await;
    assert_eq!(first.status, 303, "{}", first.text);
    let again = dev.submit(&page, "/dashboard/customers", &fields).await;
    assert_eq!(again.status, 303, "{}", again.text);
    assert_eq!(again.location(), first.location());
    assert_eq!(again.headers.get("idempotent-replayed").unwrap(), "true");
    let count = || async {
        s.get(&s.dev("customers")).await.ok()["totalResults"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(count().await, 1);
    let audit = s.get(&s.dev("audit-log?pageSize=100")).await;
    let created = audit.ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "customer.created")
        .count();
    assert_eq!(created, 1);
    // Back, edit, send: another change.
    let edited = [
        ("formToken", token.as_str()),
        ("fullName", "Grace B. Hopper"),
        ("email", "grace@navy.example"),
    ];
    let other = dev.submit(&page, "/dashboard/customers", &edited).await;
    assert_eq!(other.status, 303);
    assert_ne!(other.location(), first.location());
    assert_eq!(count().await, 2);
    // Every form of a page has a token of its own, new each time the page is shown.
    let shown_again = dev.get("/dashboard/customers").await;
    assert_ne!(shown_again.field("formToken"), token);
}

/// (ext) Policies in the dashboard: made on their page, chosen on the license form (a blank limit
/// is the plan's, a value overrides it), named on the license page with where each limit comes
/// from, edited with what the change reaches stated, and deleted with their licenses keeping
/// their terms.
#[tokio::test]
async fn policies_in_the_dashboard() {
    let s = TestServer::start().await;
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let page = owner.get("/dashboard/policies").await;
    page.has("No policies yet");
    let bad = owner
        .submit(
            &page,
            "/dashboard/policies",
            &[
                ("name", "Pro"),
                ("expirationType", "DURATION"),
                ("hwidLimit", "3"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    bad.has("is required when the license expires after a duration");
    let made = owner
        .submit(
            &page,
            "/dashboard/policies",
            &[
                ("name", "Pro"),
                ("expirationType", "DURATION"),
                ("expirationDays", "365"),
                ("hwidLimit", "3"),
                ("graceDays", "7"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let policy_page = made.location().split('?').next().unwrap().to_owned();
    let policy = policy_page
        .trim_start_matches("/dashboard/policies/")
        .to_owned();
    owner
        .get("/dashboard/policies")
        .await
        .has("Pro")
        .has("7 days");

    // A license on the plan: its expiration as the plan says, its limits the plan's.
    let form = owner.get("/dashboard/licenses/new").await;
    form.has("No plan").has("As the plan says");
    let made = owner
        .submit(
            &form,
            "/dashboard/licenses",
            &[
                ("policyId", &policy),
                ("expirationType", "PLAN"),
                ("ipLimit", "4"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let license_page = made.location().split('?').next().unwrap().to_owned();
    let id = license_page
        .trim_start_matches("/dashboard/licenses/")
        .to_owned();
    let license = s
        .get(&s.dev(&format!("licenses/id/{id}")))
        .await
        .ok()
        .clone();
    assert_eq!(license["policyId"], json!(policy));
    assert_eq!(license["expirationDays"], 365);
    assert_eq!(license["hwidLimit"], 3);
    assert_eq!(license["overrides"], json!(["ipLimit"]));
    owner
        .get(&license_page)
        .await
        .has(">Pro</a>")
        .has("3 (the plan's)")
        .has("4 (set on this license)");

    // Saving the edit form as it stands changes nothing of where the limits come from.
    let edit = owner.get(&format!("{license_page}/edit")).await;
    edit.has("The plan's: 3")
        .has(r#"name="ipLimit" placeholder="The plan's: no limit" value="4""#)
        .has("Use the plan's value instead");
    let key = license["licenseKey"].as_str().unwrap().to_owned();
    let saved = owner
        .submit(
            &edit,
            &format!("{license_page}/edit"),
            &[
                ("licenseKey", &key),
                ("policyId", &policy),
                ("expirationType", "DURATION"),
                ("expirationDays", "365"),
                ("ipLimit", ""),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let license = s
        .get(&s.dev(&format!("licenses/id/{id}")))
        .await
        .ok()
        .clone();
    assert_eq!(
        license["overrides"],
        json!([]),
        "a blank limit is the plan's"
    );
    assert_eq!(license["ipLimit"], Value::Null);
    assert_eq!(license["expirationDays"], 365);

    // The policy's page says what a change reaches; the change reaches the license.
    let shown = owner.get(&policy_page).await;
    shown.has("Saving changes 1 license at once");
    let saved = owner
        .submit(
            &shown,
            &policy_page,
            &[
                ("name", "Pro"),
                ("expirationType", "DURATION"),
                ("expirationDays", "365"),
                ("hwidLimit", "5"),
                ("graceDays", "7"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let license = s
        .get(&s.dev(&format!("licenses/id/{id}")))
        .await
        .ok()
        .clone();
    assert_eq!(license["hwidLimit"], 5);
    owner
        .get(&format!("/dashboard/licenses?policy={policy}"))
        .await
        .has(license["licenseKey"].as_str().unwrap());

    // Deleted after a confirmation: the license keeps the terms as its own.
    let confirm = owner.get(&format!("{policy_page}/delete")).await;
    confirm.has("1 license keeps the terms that apply now");
    let deleted = owner
        .submit(&confirm, &format!("{policy_page}/delete"), &[])
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.text);
    let license = s
        .get(&s.dev(&format!("licenses/id/{id}")))
        .await
        .ok()
        .clone();
    assert_eq!(license["policyId"], Value::Null);
    assert_eq!(license["hwidLimit"], 5);
}

/// (ext) Payments in the dashboard: an integration set up with its secret (shown by its last 4
/// characters, the address to paste shown), a rule added, the events received listed with why
/// one was skipped, and replayed once a rule matches.
#[tokio::test]
async fn payments_in_the_dashboard() {
    let s = TestServer::start().await;
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    let policy = s.post(&s.dev("policies"), r#"{"name":"Pro"}"#).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = owner.get("/dashboard/payments").await;
    page.has("Not set up").has("No events received yet");
    let saved = owner
        .submit(
            &page,
            "/dashboard/payments/stripe",
            &[
                ("webhookSecret", "whsec_dashboard_0123wxyz"),
                ("enabled", "true"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let page = owner.get("/dashboard/payments").await;
    page.has("…wxyz")
        .has(&format!(
            "/api/v1/integrations/stripe?teamId={}",
            s.team_id()
        ))
        .has("invoice.paid");
    assert!(
        !page.text.contains("whsec_dashboard_0123wxyz"),
        "no secret on the page"
    );
    // A purchase no rule matches: skipped, with the reason on the page.
    let body = json!({"id": "evt_dash_1", "type": "invoice.paid", "created": 1_790_000_000,
        "data": {"object": {"id": "in_1", "billing_reason": "subscription_create", "customer_email": "dana@example.com",
        "subscription": "sub_dash", "lines": {"data": [{"period": {"end": 4_102_444_800_i64}, "price": {"id": "price_dash", "product": "prod_dash"}}]}}}})
    .to_string();
    assert_eq!(s.stripe_event("whsec_dashboard_0123wxyz", &body).await, 200);
    let page = owner.get("/dashboard/payments").await;
    page.has("no rule matches price price_dash").has("Replay");
    let added = owner
        .submit(
            &page,
            "/dashboard/payments/stripe/rules",
            &[
                ("kind", "priceId"),
                ("value", "price_dash"),
                ("policyId", &policy),
                ("onPaymentFailed", "keep"),
                ("onCancel", "periodEnd"),
                ("onRefund", "delete"),
            ],
        )
        .await;
    assert_eq!(added.status, 303, "{}", added.text);
    let event = s.get(&s.dev("integrations/events")).await.ok()["events"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = owner.get("/dashboard/payments").await;
    page.has("price_dash").has("Deletes it").has("Delete");
    let replayed = owner
        .submit(
            &page,
            &format!("/dashboard/payments/events/{event}/replay"),
            &[],
        )
        .await;
    assert_eq!(replayed.status, 303, "{}", replayed.text);
    assert!(
        replayed.location().contains("event-replayed-applied"),
        "{}",
        replayed.location()
    );
    owner
        .get(replayed.location())
        .await
        .has("Event replayed: applied.")
        .has("license created for dana@example.com");
    assert_eq!(s.get(&s.dev("licenses")).await.ok()["totalResults"], 1);
}

/// Update feeds in the dashboard: a product's update settings, a release's rollout, critical flag
/// and notes, and its artifacts uploaded (signed by the server), shown and deleted.
#[tokio::test]
async fn update_settings_rollouts_and_artifacts_in_the_dashboard() {
    use reqwest::multipart::{Form, Part};
    let s = TestServer::start().await;
    let product = s.post(&s.dev("products"), r#"{"name":"Desk"}"#).await;
    let product_id = product.ok()["id"].as_str().unwrap().to_owned();
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;

    // The product: the server signs, the feeds are public; a bad key is named.
    let page = b.get(&format!("/dashboard/products/{product_id}")).await;
    page.has("Update feed addresses")
        .has("/tauri/{{target}}/{{arch}}/{{current_version}}");
    let bad = b
        .submit(
            &page,
            &format!("/dashboard/products/{product_id}"),
            &[("name", "Desk"), ("updaterPublicKey", "not a key")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    bad.has("minisign public key");
    let saved = b
        .submit(
            &page,
            &format!("/dashboard/products/{product_id}"),
            &[
                ("name", "Desk"),
                ("updateFeed", "public"),
                ("signUpdates", "true"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let stored = s.get(&s.dev(&format!("products/{product_id}"))).await;
    assert_eq!(stored.ok()["updateFeed"], "public");
    assert_eq!(stored.ok()["signUpdates"], true);

    // A release, then its rollout, critical flag and notes from its page.
    let release = s
        .client
        .post(s.dev("releases"))
        .bearer_auth(s.key())
        .multipart(Form::new().text(
            "data",
            serde_json::json!({"version": "2.1.0", "productId": product_id, "status": "PUBLISHED"})
                .to_string(),
        ))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = b.get(&format!("/dashboard/releases/{release}")).await;
    shown.has("Update artifacts").has("No artifacts");
    let too_much = b
        .submit(
            &shown,
            &format!("/dashboard/releases/{release}"),
            &[("status", "PUBLISHED"), ("rolloutPercent", "101")],
        )
        .await;
    assert_eq!(too_much.status, 400);
    too_much.has("from 0 to 100");
    let changed = b
        .submit(
            &shown,
            &format!("/dashboard/releases/{release}"),
            &[
                ("status", "PUBLISHED"),
                ("rolloutPercent", "30"),
                ("critical", "true"),
                ("notes", "Faster *sync*"),
            ],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.text);
    let after = s.get(&s.dev(&format!("releases/{release}"))).await;
    assert_eq!(after.ok()["rolloutPercent"], 30);
    assert_eq!(after.ok()["critical"], true);
    assert_eq!(after.ok()["notes"], "Faster *sync*");

    // An artifact, streamed and signed by the server; an unknown platform is named.
    let artifact_form = |csrf: String, platform: &str| {
        Form::new()
            .text("csrf", csrf)
            .text("platform", platform.to_owned())
            .text("arch", "universal")
            .part(
                "file",
                Part::bytes(vec![9u8; 150_000]).file_name("Desk-2.1.0.dmg"),
            )
    };
    let refused = b
        .post_multipart(
            &format!("/dashboard/releases/{release}/artifacts"),
            artifact_form(shown.csrf(), "beos"),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused.has("platform");
    let made = b
        .post_multipart(
            &format!("/dashboard/releases/{release}/artifacts"),
            artifact_form(shown.csrf(), "darwin"),
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let page = b.get(made.location()).await;
    page.has("Artifact uploaded")
        .has("Desk-2.1.0.dmg")
        .has("Tauri (minisign) and Sparkle (Ed25519), by the server")
        .has("30% of licenses")
        .has("Critical");
    let listed = s
        .get(&s.dev(&format!("releases/{release}/artifacts")))
        .await;
    let artifact = listed.ok()["artifacts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deleted = b
        .submit(
            &page,
            &format!("/dashboard/releases/{release}/artifacts/{artifact}/delete"),
            &[],
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.text);
    let listed = s
        .get(&s.dev(&format!("releases/{release}/artifacts")))
        .await;
    assert_eq!(listed.ok()["artifacts"], serde_json::json!([]));
}

/// A support desk finds things: the license form's customer picker searches every customer
/// (not only the hundred newest), a customer's page starts a license for them, the license
/// search finds an order number kept in metadata, and the list sorts by expiry and last use
/// and shows those expiring within some days.
#[tokio::test]
async fn the_desk_finds_customers_and_licenses_by_metadata_expiry_and_use() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Developer,
    )
    .await;
    let oldest = s
        .post(
            &s.dev("customers"),
            r#"{"fullName":"Quentin Oldest","email":"quentin@example.com"}"#,
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..100 {
        s.post(
            &s.dev("customers"),
            &json!({"fullName": format!("Newer {i}")}).to_string(),
        )
        .await
        .ok();
    }
    b.get("/dashboard/licenses/new")
        .await
        .has("Find customers")
        .lacks("Quentin Oldest");
    b.get("/dashboard/licenses/new?customerSearch=quentin")
        .await
        .has("Quentin Oldest")
        .lacks("Newer 7<");
    let customer = b.get(&format!("/dashboard/customers/{oldest}")).await;
    customer.has(&format!(
        "href=\"/dashboard/licenses/new?customer={oldest}\""
    ));
    b.get(&format!("/dashboard/licenses/new?customer={oldest}"))
        .await
        .has(&format!(
            "<option value=\"{oldest}\" selected>Quentin Oldest"
        ));

    // Three licenses: one with an order number that expires in 3 days, one in 60 days (used
    // once), one that never expires.
    let in_days = |days: i64| {
        Timestamp::from_millis(Timestamp::now().as_millis() + days * 86_400_000).to_string()
    };
    let soon = s
        .license(
            &json!({"expirationType": "DATE", "expirationDate": in_days(3),
                "metadata": [{"key": "order", "value": "ORD-2026-0777"}]})
            .to_string(),
        )
        .await;
    let later = s
        .license(&json!({"expirationType": "DATE", "expirationDate": in_days(60)}).to_string())
        .await;
    let never = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let key = |l: &Value| l["licenseKey"].as_str().unwrap().to_owned();
    s.client(
        "verify",
        &json!({"licenseKey": key(&later), "hardwareIdentifier": "desk-device-0001"}),
        None,
    )
    .await
    .valid();

    let found = b.get("/dashboard/licenses?search=ord-2026-0777").await;
    found
        .has("Licenses whose metadata contains")
        .has(&key(&soon))
        .lacks(&key(&later));
    let week = b.get("/dashboard/licenses?expiring=7").await;
    week.has(&key(&soon))
        .lacks(&key(&later))
        .lacks(&key(&never));
    let by_expiry = b
        .get("/dashboard/licenses?sort=expirationDate&direction=asc")
        .await;
    let at = |page: &Page, l: &Value| page.text.find(&key(l)).unwrap();
    assert!(at(&by_expiry, &soon) < at(&by_expiry, &later));
    assert!(
        at(&by_expiry, &later) < at(&by_expiry, &never),
        "undated last"
    );
    let by_use = b.get("/dashboard/licenses?sort=lastActiveAt").await;
    assert!(
        at(&by_use, &later) < at(&by_use, &soon),
        "the used one first"
    );
}

#[tokio::test]
async fn devices_show_their_names_and_are_found_by_them() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Developer,
    )
    .await;
    let named = s
        .license(r#"{"expirationType":"NEVER","sessionLimit":2}"#)
        .await;
    let other = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let key = named["licenseKey"].as_str().unwrap();
    let id = named["id"].as_str().unwrap();
    let device = "desk-device-0000000001";
    s.client(
        "sessions/start",
        &json!({"licenseKey": key, "hardwareIdentifier": device,
            "deviceName": "ANA-<i>PC</i>", "platform": "windows 11"}),
        None,
    )
    .await
    .valid();
    s.client(
        "verify",
        &json!({"licenseKey": other["licenseKey"], "hardwareIdentifier": "desk-device-0000000002"}),
        None,
    )
    .await
    .valid();
    // The license page names the device (escaped) in its devices, its sessions, its request
    // history and its file form.
    let page = b.get(&format!("/dashboard/licenses/{id}")).await;
    let label = "ANA-&lt;i&gt;PC&lt;/i&gt; (windows 11)";
    // (Four places, and the forget button's label.)
    assert_eq!(page.text.matches(label).count(), 5, "{}", page.text);
    page.lacks("<i>PC</i>");
    // The search finds the license by the device's name, platform or identifier, not the other.
    for text in ["ana-<i>pc", "WINDOWS", device] {
        let found = b
            .get(&format!(
                "/dashboard/licenses?search={}",
                form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>()
            ))
            .await;
        found
            .has(key)
            .lacks(other["licenseKey"].as_str().unwrap())
            .has("Licenses with a device whose name or platform contains");
    }
    // And the developer API, on the list's `deviceSearch`.
    let listed = s.get(&s.dev("licenses?deviceSearch=windows")).await;
    assert_eq!(listed.ok()["totalResults"], 1);
    assert_eq!(listed.ok()["licenses"][0]["id"], json!(id));
    let none = s.get(&s.dev("licenses?deviceSearch=linux")).await;
    assert_eq!(none.ok()["totalResults"], 0);
}

#[tokio::test]
async fn a_file_for_a_typed_machine_respects_the_device_limit_unless_overridden() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Developer,
    )
    .await;
    let license = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let (id, key) = (
        license["id"].as_str().unwrap(),
        license["licenseKey"].as_str().unwrap(),
    );
    s.client(
        "verify",
        &json!({"licenseKey": key, "hardwareIdentifier": "office-machine-0001", "deviceName": "Office PC"}),
        None,
    )
    .await
    .valid();
    let page_path = format!("/dashboard/licenses/{id}");
    let shown = b.get(&page_path).await;
    // The machine is typed; the known ones are offered by name.
    shown
        .has(r#"<input id="machine" type="text" name="machine" list="known-machines""#)
        .has(r#"<option value="office-machine-0001">Office PC</option>"#);
    let typed = [("machine", "air-gapped-lab-0001"), ("encrypt", "true")];
    let refused = b.submit(&shown, &format!("{page_path}/file"), &typed).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    refused.has("override the limit");
    let listed = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(listed.ok()["totalResults"], 1);
    let shown = b.get(&page_path).await;
    let overridden = [
        ("machine", "air-gapped-lab-0001"),
        ("encrypt", "true"),
        ("override", "true"),
    ];
    let download = b
        .submit(&shown, &format!("{page_path}/file"), &overridden)
        .await;
    assert_eq!(download.status, 200, "{}", download.text);
    let file = licensing_core::crypto::license_file::LicenseFile::parse(&download.text).unwrap();
    file.open(&s.public_keys().await, key, Some("air-gapped-lab-0001"))
        .unwrap();
    let listed = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(listed.ok()["totalResults"], 2);
    // The license page now lists the machine; the audit log says the limit was overridden.
    b.get(&page_path).await.has("air-gapped-lab-0001");
    b.get("/dashboard/audit").await.has("deviceLimitOverridden");
}

/// A license's meters show as bars with their period; staff who may adjust and reset them (a
/// reason is required to adjust, and both are audited); a viewer sees the bars without the
/// forms.
#[tokio::test]
async fn a_licenses_meters_show_as_bars_and_staff_adjust_and_reset_them() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "meters@vendor.example",
        Role::Developer,
    )
    .await;
    let license = s
        .license(r#"{"expirationType":"NEVER","meters":[{"code":"EXPORTS","limit":10,"period":"month"},{"code":"SYNCS","period":"none"}]}"#)
        .await;
    let (id, key) = (
        license["id"].as_str().unwrap(),
        license["licenseKey"].as_str().unwrap(),
    );
    s.usage(&json!({"licenseKey": key, "meter": "EXPORTS", "quantity": 9}))
        .await
        .valid();
    let page_path = format!("/dashboard/licenses/{id}");
    let shown = b.get(&page_path).await;
    shown
        .has(r#"<h2 id="usage">Usage</h2>"#)
        .has(r#"<meter min="0" max="10" value="9" high="8" optimum="0" aria-label="EXPORTS">"#)
        .has("9 of 10 used")
        .has("per month")
        .has("0 used (no limit)")
        .has("Counts for the life of the license.");
    // No reason, no adjustment: refused in words.
    let bare = b
        .submit(
            &shown,
            &format!("{page_path}/usage/EXPORTS/adjust"),
            &[("delta", "-4")],
        )
        .await;
    assert_eq!(bare.status, 400, "{}", bare.text);
    let adjusted = b
        .submit(
            &shown,
            &format!("{page_path}/usage/EXPORTS/adjust"),
            &[("delta", "-4"), ("reason", "Failed exports refunded")],
        )
        .await;
    assert_eq!(adjusted.status, 303, "{}", adjusted.text);
    b.get(adjusted.location()).await.has("5 of 10 used");
    let shown = b.get(&page_path).await;
    let reset = b
        .submit(&shown, &format!("{page_path}/usage/EXPORTS/reset"), &[])
        .await;
    assert_eq!(reset.status, 303, "{}", reset.text);
    b.get(&page_path).await.has("0 of 10 used");
    let audit = s
        .get(&s.dev(&format!(
            "audit-log?resourceId={id}&action=license.usage_changed"
        )))
        .await;
    assert_eq!(audit.ok()["entries"].as_array().unwrap().len(), 2);
    // A viewer sees the bars, not the forms.
    let mut v = Browser::new(&s);
    staff(
        &s,
        &mut v,
        s.team_id(),
        "look-meters@vendor.example",
        Role::Viewer,
    )
    .await;
    v.get(&page_path)
        .await
        .has("0 of 10 used")
        .lacks("/usage/EXPORTS/adjust");
}
