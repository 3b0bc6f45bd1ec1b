//! The staff dashboard in a real browser: Debian's Chromium, headless, driven over WebDriver by
//! its ChromeDriver. Each journey starts from signing in, in a fresh browser profile.
//!
//! Without a `chromedriver` (`LICENSING_CHROMEDRIVER`, else `/usr/bin/chromedriver`, else the
//! `PATH`) these tests print a notice and pass, except under `CI=true`, where they fail;
//! `bash .ci/run` installs the `chromium` and `chromium-driver` packages. Screenshots of every
//! page, at 1280×800 and 390×844, go to `target/screenshots/`, and also to `docs/screenshots/`
//! when `LICENSING_SCREENSHOTS_TO_DOCS=1`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use licensing_core::Timestamp;
use licensing_core::model::Role;
use serde_json::json;

use crate::helpers::TestServer;

const PASSWORD: &str = "a quiet harbour at dawn";

/// The ChromeDriver to use, if any.
fn chromedriver() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("LICENSING_CHROMEDRIVER") {
        return Some(PathBuf::from(path));
    }
    let default = Path::new("/usr/bin/chromedriver");
    if default.exists() {
        return Some(default.to_owned());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromedriver"))
            .find(|p| p.exists())
    })
}

/// A ChromeDriver on a free loopback port, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Driver {
    /// Starts ChromeDriver, or says why not (`None`: not installed, and not under CI).
    async fn start() -> Option<Self> {
        let Some(path) = chromedriver() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "no chromedriver: CI must run the browser tests (apt-get install chromium chromium-driver)"
            );
            eprintln!(
                "note: browser tests skipped: no chromedriver (install Debian's chromium and chromium-driver)"
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&path)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", path.display()));
        let driver = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = http.get(format!("{}/status", driver.url)).send().await
                && r.status().is_success()
            {
                return Some(driver);
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A new headless Chromium with an empty profile, its window `width`×`height`.
    async fn browser(&self, profile: &Path, width: u32, height: u32) -> Client {
        let mut options = json!({
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                "--no-first-run",
                "--hide-scrollbars",
                format!("--window-size={width},{height}"),
                format!("--user-data-dir={}", profile.display()),
            ]
        });
        // The viewport exactly `width`×`height` (a window has a minimum width of its own).
        options["mobileEmulation"] = json!({
            "deviceMetrics": {"width": width, "height": height, "pixelRatio": 1.0, "mobile": width < 600, "touch": width < 600}
        });
        if Path::new("/usr/bin/chromium").exists() {
            options["binary"] = json!("/usr/bin/chromium");
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), options);
        capabilities.insert("pageLoadStrategy".into(), json!("normal"));
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }
}

/// A browser at a test server, signed in or not.
struct Tab {
    client: Client,
    base: String,
    _profile: tempfile::TempDir,
}

impl Tab {
    /// How many pixels the page's first table is wider than its box (0 or less: it fits).
    async fn table_overflow(&self) -> f64 {
        self.client
            .execute(
                "const w = document.querySelector('main .table-wrap'); return w.scrollWidth - w.clientWidth",
                vec![],
            )
            .await
            .unwrap()
            .as_f64()
            .unwrap()
    }

    async fn open(driver: &Driver, s: &TestServer) -> Self {
        Self::open_sized(driver, s, 1280, 800).await
    }

    async fn open_sized(driver: &Driver, s: &TestServer, width: u32, height: u32) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let client = driver.browser(profile.path(), width, height).await;
        Self {
            client,
            base: s.base.clone(),
            _profile: profile,
        }
    }

    async fn goto(&self, path: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap();
    }

    /// The page's path and query.
    async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    async fn html(&self) -> String {
        self.client.source().await.unwrap()
    }

    /// Waits (up to 15 s: a click's navigation may still be under way on a busy machine) until
    /// the page shows `text`.
    async fn sees(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            // A page still loading may answer with an error: not seen yet.
            let html = self.client.source().await.unwrap_or_default();
            if html.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} not on {}: {html}",
                self.path().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits (up to `seconds`) for an element matching `css`. On a busy machine a search may
    /// meet a navigation still under way (the driver answers "aborted by navigation"): that is
    /// tried again, as a miss is.
    async fn element(&self, css: &str, seconds: u64) -> Element {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            match self.client.find(Locator::Css(css)).await {
                Ok(element) => return element,
                Err(e) => assert!(Instant::now() < deadline, "{css} not found: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn fill(&self, css: &str, text: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
            .click()
            .await
            .unwrap();
    }

    /// Whether an element matches `css`.
    async fn has(&self, css: &str) -> bool {
        !self
            .client
            .find_all(Locator::Css(css))
            .await
            .unwrap()
            .is_empty()
    }

    async fn sign_in(&self, email: &str, password: &str) {
        self.goto("/dashboard/sign-in").await;
        self.fill("#email", email).await;
        self.fill("#password", password).await;
        self.click("main form button[type=submit]").await;
        // Until the answer is in: a signed-in page, or the form with its problem.
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.path().await.starts_with("/dashboard/sign-in")
            && !self.html().await.contains("class=\"problems\"")
        {
            assert!(Instant::now() < deadline, "no answer to signing in");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.settle().await;
    }

    /// Waits (up to 15 s) until the page has finished loading.
    async fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !self
            .client
            .execute("return document.readyState", vec![])
            .await
            .is_ok_and(|state| state == "complete")
        {
            assert!(Instant::now() < deadline, "the page did not finish loading");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Saves a screenshot of the page as `name` (PNG) at the window's size.
    ///
    /// On a busy machine Chromium may still be finishing the page (its driver then answers
    /// "aborted by navigation" or a time-out): this waits until the document is complete and
    /// tries again, for up to 30 s.
    async fn screenshot(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let png = loop {
            let complete = self
                .client
                .execute("return document.readyState", vec![])
                .await
                .is_ok_and(|state| state == "complete");
            if complete {
                match self.client.screenshot().await {
                    Ok(png) => break png,
                    Err(e) if Instant::now() >= deadline => panic!("screenshot {name}: {e}"),
                    Err(_) => {}
                }
            }
            assert!(
                Instant::now() < deadline,
                "screenshot {name}: page never complete"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut dirs = vec![root.join("target/screenshots")];
        if std::env::var("LICENSING_SCREENSHOTS_TO_DOCS").as_deref() == Ok("1") {
            dirs.push(root.join("docs/screenshots"));
        }
        for dir in dirs {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{name}.png")), &png).unwrap();
        }
    }

    async fn close(self) {
        self.client.close().await.ok();
    }
}

/// An account of the server's team with its password set; its e-mail address.
async fn account(s: &TestServer, email: &str, role: Role) -> String {
    let created = licensing_server::staff::create_staff(
        &s.store,
        s.team_id(),
        email,
        role,
        Timestamp::now(),
        None,
    )
    .await
    .unwrap();
    licensing_server::staff::set_password(
        &s.store,
        created.user.id,
        &created.link_secret,
        PASSWORD,
        Timestamp::now(),
        None,
    )
    .await
    .unwrap()
    .unwrap();
    email.to_owned()
}

/// Every journey, in one browser driver (a Chromium each, started fresh).
#[tokio::test]
async fn staff_journeys_in_a_real_browser() {
    let Some(driver) = Driver::start().await else {
        return;
    };
    let s = TestServer::start_with(|c| {
        c.auth_failure_limit_per_minute = 50;
        // The webhook journey's endpoint is on this machine, over plain HTTP.
        c.webhook_allow_http = true;
        c.webhook_allow_private = true;
    })
    .await;
    first_password_then_a_license_created_and_found_by_its_customer(&driver, &s).await;
    support_frees_a_seat_and_suspends(&driver, &s).await;
    a_viewer_changes_nothing(&driver, &s).await;
    a_form_without_its_token_is_refused(&driver, &s).await;
    sign_in_is_throttled(&driver, &s).await;
    an_idle_session_ends(&driver, &s).await;
    a_release_is_uploaded_and_shows_its_checksum(&driver, &s).await;
    a_scoped_api_key_is_refused_beyond_its_scope(&driver, &s).await;
    a_desk_works_from_the_list_and_its_own_time_zone(&driver, &s).await;
    an_admin_edits_a_customer_and_disables_a_webhook(&driver, &s).await;
    a_phone_reaches_every_button(&driver, &s).await;
    screenshots(&driver).await;
}

/// A customer's journeys in the portal, in Chromium: sign in by an e-mailed link on a phone
/// (one click on the link's page), free a device, download, switch to German; screenshots of
/// the portal's pages at 1280 and 390 pixels, without sideways scrolling on the phone.
#[tokio::test]
async fn customer_journeys_in_a_real_browser() {
    let Some(driver) = Driver::start().await else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut inbox) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(crate::mail::smtp_server(listener, tx));
    let s = TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Photo Studio <noreply@example.com>".into());
    })
    .await;
    let team = s.team_id();
    s.put(&s.dev("settings"), r#"{"portalEnabled": true}"#)
        .await
        .ok();
    let product = s
        .post(&s.dev("products"), r#"{"name": "Photo Studio"}"#)
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"email": "ada@engine.example", "fullName": "Ada Lovelace"}"#,
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let license = s
        .license(
            &json!({"expirationType": "DURATION", "expirationDays": 365, "hwidLimit": 2,
                    "productIds": [product], "customerIds": [customer]})
            .to_string(),
        )
        .await;
    let key = license["licenseKey"].as_str().unwrap().to_owned();
    for (device, ip) in [
        ("ada-laptop-0001", "203.0.113.7"),
        ("ada-desktop-0002", "203.0.113.8"),
    ] {
        s.client(
            "verify",
            &json!({"licenseKey": key, "hardwareIdentifier": device}),
            Some(ip),
        )
        .await;
    }
    let release = crate::updates::release(
        &s,
        &product,
        "2.4.0",
        json!({"notes": "Faster exports and a new colour picker."}),
    )
    .await;
    for (name, platform, arch) in [
        ("photo-studio-2.4.0.dmg", "darwin", "universal"),
        ("photo-studio-2.4.0-setup.exe", "windows", "x86_64"),
    ] {
        crate::updates::upload(
            &s,
            &release,
            &[("platform", platform), ("arch", arch)],
            Some((name, vec![7u8; 300 * 1024])),
        )
        .await
        .ok();
    }

    // On the desktop: the sign-in page, then the mail asked for.
    let desk = Tab::open(&driver, &s).await;
    desk.goto(&format!("/portal/{team}")).await;
    desk.fill("#email", "ada@engine.example").await;
    desk.click("form[action$='/email'] button").await;
    desk.sees("Check your e-mail").await;
    let mail = tokio::time::timeout(Duration::from_secs(20), inbox.recv())
        .await
        .expect("a sign-in mail")
        .unwrap()
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=");
    let at = mail.find("/portal/").unwrap();
    let link: String = mail[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();

    // On the phone: the link's page asks for one click.
    let phone = Tab::open_sized(&driver, &s, 390, 844).await;
    phone.goto(&link).await;
    phone.sees("Continue").await;
    phone.click("#continue").await;
    phone.sees(&key).await;
    assert_eq!(phone.path().await, format!("/portal/{team}/licenses"));
    let fits = |tab: &Tab| {
        let client = tab.client.clone();
        async move {
            client
                .execute(
                    "return document.documentElement.scrollWidth <= window.innerWidth",
                    vec![],
                )
                .await
                .unwrap()
        }
    };
    assert_eq!(
        fits(&phone).await,
        json!(true),
        "no sideways scrolling at 390 px"
    );
    phone.click("ul.licenses a").await;
    phone.sees("ada-laptop-0001").await;
    phone.sees("photo-studio-2.4.0.dmg").await;
    assert_eq!(fits(&phone).await, json!(true));
    // A download, fetched as the page's own link.
    let status = phone
        .client
        .execute(
            "return fetch(document.querySelector('#downloads a').href).then(r => r.status)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(status, json!(200));
    // Free the first device.
    phone.click("#devices form button").await;
    phone.sees("Freed.").await;
    let listed = s
        .get(&s.dev(&format!(
            "licenses/id/{}/hwid?showForgotten=true",
            license["id"].as_str().unwrap()
        )))
        .await;
    let freed = listed.ok()["hwids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["forgotten"] == true)
        .count();
    assert_eq!(freed, 1);
    // Switch to German: kept for the next pages.
    phone
        .element("#lang", 5)
        .await
        .select_by_value("de")
        .await
        .unwrap();
    phone.click("form.lang button").await;
    phone.sees("Geräte").await;
    phone.goto(&format!("/portal/{team}/licenses")).await;
    phone.sees("Ihre Lizenzen").await;
    phone.close().await;

    // Screenshots of the portal, at both sizes.
    let lid = license["id"].as_str().unwrap().to_owned();
    for (size, width, height) in [("desktop", 1280, 800), ("phone", 390, 844)] {
        let tab = Tab::open_sized(&driver, &s, width, height).await;
        tab.goto(&format!("/portal/{team}")).await;
        tab.screenshot(&format!("portal-sign-in-{size}")).await;
        tab.fill("#licenseKey", &key).await;
        tab.click("form[action$='/key'] button").await;
        tab.sees("Your licenses").await;
        tab.screenshot(&format!("portal-licenses-{size}")).await;
        tab.goto(&format!("/portal/{team}/licenses/{lid}")).await;
        tab.sees("Downloads").await;
        tab.screenshot(&format!("portal-license-{size}")).await;
        tab.close().await;
    }
    desk.close().await;
}

async fn first_password_then_a_license_created_and_found_by_its_customer(
    driver: &Driver,
    s: &TestServer,
) {
    let created = licensing_server::staff::create_staff(
        &s.store,
        s.team_id(),
        "owner@vendor.example",
        Role::Owner,
        Timestamp::now(),
        None,
    )
    .await
    .unwrap();
    s.post(
        &s.dev("customers"),
        r#"{"fullName":"Ada Lovelace","email":"ada@engine.example"}"#,
    )
    .await
    .ok();
    let tab = Tab::open(driver, s).await;
    tab.goto(&format!(
        "/dashboard/set-password/{}/{}",
        created.user.id, created.link_secret
    ))
    .await;
    tab.sees("owner@vendor.example").await;
    tab.fill("#password", PASSWORD).await;
    tab.fill("#confirm", PASSWORD).await;
    tab.click("main form button[type=submit]").await;
    tab.sees("Your password is set").await;
    assert_eq!(tab.path().await, "/dashboard/?notice=password-set");
    tab.sees("Client requests per day").await;

    tab.goto("/dashboard/licenses").await;
    tab.click("a[href='/dashboard/licenses/new']").await;
    // Pick the customer, choose a duration: the script previews the expiry date.
    tab.client
        .find(Locator::Css("#customerIds option"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    tab.click("input[name=expirationType][value=DURATION]")
        .await;
    tab.fill("#expirationDays", "30").await;
    let preview = tab
        .client
        .find(Locator::Css("[data-expiry-preview]"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(preview.starts_with("Expires on "), "{preview}");
    tab.fill("#hwidLimit", "1").await;
    tab.click("main form[method=post] button[type=submit]")
        .await;
    tab.sees("License created.").await;
    assert!(tab.path().await.ends_with("?notice=license-created"));
    let key = tab
        .client
        .find(Locator::Css("h1 .key"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    tab.sees("Ada Lovelace").await;
    // In the list, and found by the customer's e-mail.
    tab.goto("/dashboard/licenses").await;
    tab.sees(&key).await;
    tab.fill("#search", "ada@engine").await;
    tab.click("form.filters button[type=submit]").await;
    tab.sees(&key).await;
    tab.sees("1–1 of 1").await;
    // The audit log names the staff member.
    let audit = s.get(&s.dev("audit-log?action=license.created")).await;
    let entry = &audit.ok()["entries"][0];
    assert_eq!(entry["actor"]["name"], "owner@vendor.example");
    assert_eq!(entry["actor"]["type"], "USER");
    tab.close().await;
}

async fn support_frees_a_seat_and_suspends(driver: &Driver, s: &TestServer) {
    let email = account(s, "desk@vendor.example", Role::Support).await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let (id, key) = (l["id"].as_str().unwrap(), l["licenseKey"].as_str().unwrap());
    let verify = |device: &'static str| async move {
        s.client(
            "verify",
            &json!({"licenseKey": key, "hardwareIdentifier": device}),
            None,
        )
        .await
    };
    verify("device-aaaa-0001").await.valid();
    verify("device-bbbb-0002")
        .await
        .err(403, "HWID_LIMIT_REACHED");

    let tab = Tab::open(driver, s).await;
    tab.sign_in(&email, PASSWORD).await;
    tab.goto(&format!("/dashboard/licenses/{id}")).await;
    tab.sees("device-aaaa-0001").await;
    tab.click("button[aria-label='Forget device-aaaa-0001']")
        .await;
    tab.sees("Device forgotten").await;
    verify("device-bbbb-0002").await.valid();

    tab.click("form[action$='/suspend'] button").await;
    // The notice (the reasons' filter names "License suspended" too).
    tab.sees("role=\"status\">License suspended").await;
    verify("device-bbbb-0002")
        .await
        .err(403, "LICENSE_SUSPENDED");
    // Why was the customer refused? The license's requests say, refusals only.
    tab.goto(&format!("/dashboard/licenses/{id}")).await;
    tab.click("#requests + p + form select[name='requests'] option[value='refused']")
        .await;
    tab.click("#requests + p + form button[type='submit']")
        .await;
    tab.sees("2 requests").await;
    tab.sees(">License suspended</span>").await;
    tab.sees(">Device limit reached</span>").await;
    assert!(
        !tab.html().await.contains(">Accepted</span>"),
        "refusals only"
    );
    assert!(
        !tab.has("a[href$='/delete']").await,
        "no delete for support"
    );
    tab.close().await;
}

async fn a_viewer_changes_nothing(driver: &Driver, s: &TestServer) {
    let email = account(s, "look@vendor.example", Role::Viewer).await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    let tab = Tab::open(driver, s).await;
    tab.sign_in(&email, PASSWORD).await;
    tab.goto(&format!("/dashboard/licenses/{id}")).await;
    tab.sees(l["licenseKey"].as_str().unwrap()).await;
    for css in [
        "form[action$='/suspend']",
        "a[href$='/delete']",
        "a[href='/dashboard/licenses/new']",
    ] {
        assert!(!tab.has(css).await, "a viewer sees {css}");
    }
    // A suspend form made up in the page, with the session's own token, is still refused.
    tab.client
        .execute(
            "const f = document.createElement('form'); f.method = 'post';\
             f.action = arguments[0]; const t = document.querySelector('input[name=csrf]').cloneNode();\
             f.appendChild(t); document.body.appendChild(f); f.submit();",
            vec![json!(format!("/dashboard/licenses/{id}/suspend"))],
        )
        .await
        .unwrap();
    tab.element("main h1", 30).await;
    tab.sees("may not suspend or unsuspend licenses").await;
    let after = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(after.ok()["suspended"], false);
    tab.close().await;
}

async fn a_form_without_its_token_is_refused(driver: &Driver, s: &TestServer) {
    let email = account(s, "dev@vendor.example", Role::Developer).await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    let tab = Tab::open(driver, s).await;
    tab.sign_in(&email, PASSWORD).await;
    tab.goto(&format!("/dashboard/licenses/{id}")).await;
    tab.client
        .execute(
            "const f = document.querySelector(\"form[action$='/suspend']\");\
             f.querySelector('input[name=csrf]').remove(); f.submit();",
            vec![],
        )
        .await
        .unwrap();
    tab.element("main h1", 30).await;
    tab.sees("did not come from a page of your current session")
        .await;
    let after = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(after.ok()["suspended"], false);

    // The session ends when it is signed out everywhere (from another browser, say).
    let user = licensing_core::store::StaffStore::find_staff_by_email(&s.store, &email)
        .await
        .unwrap()
        .remove(0);
    licensing_core::store::StaffStore::delete_sessions_of(&s.store, user.id)
        .await
        .unwrap();
    tab.goto("/dashboard/licenses").await;
    assert!(
        tab.path()
            .await
            .starts_with("/dashboard/sign-in?notice=session-ended")
    );
    tab.sees("Your session has ended").await;
    tab.close().await;
}

async fn sign_in_is_throttled(driver: &Driver, s: &TestServer) {
    let email = account(s, "slow@vendor.example", Role::Viewer).await;
    let tab = Tab::open(driver, s).await;
    for _ in 0..5 {
        tab.sign_in(&email, "not the right password").await;
        tab.sees("do not match an account").await;
    }
    tab.sign_in(&email, PASSWORD).await;
    tab.sees("Too many failed sign-ins").await;
    assert!(tab.path().await.starts_with("/dashboard/sign-in"));
    tab.close().await;
}

async fn an_idle_session_ends(driver: &Driver, s: &TestServer) {
    use licensing_core::crypto::sha256_hex;
    use licensing_core::model::StaffSession;
    use licensing_core::store::StaffStore;
    let email = account(s, "idle@vendor.example", Role::Viewer).await;
    let user = s.store.find_staff_by_email(&email).await.unwrap().remove(0);
    // A session last used 31 minutes ago (the idle time-out is 30), its cookie in the browser.
    let now = Timestamp::now();
    let secret = "an-idle-sessions-cookie-value-0123456789abc";
    s.store
        .create_session(
            &StaffSession {
                id_sha256: sha256_hex(secret.as_bytes()),
                user_id: user.id,
                team_id: user.team_id,
                csrf_token: "t".repeat(43),
                created_at: Timestamp::from_millis(now.as_millis() - 40 * 60_000),
                last_seen_at: Timestamp::from_millis(now.as_millis() - 31 * 60_000),
            },
            &licensing_core::store::Journal::NONE,
        )
        .await
        .unwrap();
    let tab = Tab::open(driver, s).await;
    tab.goto("/dashboard/sign-in").await;
    tab.client
        .execute(
            "document.cookie = 'session=' + arguments[0] + '; path=/; SameSite=Strict';",
            vec![json!(secret)],
        )
        .await
        .unwrap();
    tab.goto("/dashboard/licenses").await;
    tab.sees("Your session has ended").await;
    assert!(tab.path().await.starts_with("/dashboard/sign-in"));
    tab.close().await;
}

async fn a_release_is_uploaded_and_shows_its_checksum(driver: &Driver, s: &TestServer) {
    let email = account(s, "builds@vendor.example", Role::Developer).await;
    s.product("Desktop app").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app-2.1.0.jar");
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let tab = Tab::open(driver, s).await;
    tab.sign_in(&email, PASSWORD).await;
    tab.goto("/dashboard/releases").await;
    tab.fill("#version", "2.1.0").await;
    tab.client
        .find(Locator::Css("#file"))
        .await
        .unwrap()
        .send_keys(&file.display().to_string())
        .await
        .unwrap();
    tab.click("form[data-upload] button[type=submit]").await;
    // The script uploads with a progress bar, then opens the new release's page.
    tab.element("code.checksum", 20).await;
    tab.sees(&licensing_core::crypto::md5_hex(&bytes)).await;
    tab.sees("Release uploaded").await;
    tab.close().await;
}

async fn a_scoped_api_key_is_refused_beyond_its_scope(driver: &Driver, s: &TestServer) {
    let email = account(s, "keys@vendor.example", Role::Admin).await;
    let tab = Tab::open(driver, s).await;
    tab.sign_in(&email, PASSWORD).await;
    tab.goto("/dashboard/api-keys").await;
    tab.fill("#name", "read-only reporting").await;
    tab.click("input[name=scopes][value='licenses:read']").await;
    tab.click("main form[action='/dashboard/api-keys'] button[type=submit]")
        .await;
    let key = tab.element("#new-key", 15).await.text().await.unwrap();
    s.send(reqwest::Method::GET, &s.dev("licenses"), Some(&key), None)
        .await
        .ok();
    s.send(
        reqwest::Method::POST,
        &s.dev("licenses"),
        Some(&key),
        Some(r#"{"expirationType":"NEVER"}"#),
    )
    .await
    .err(403, "FORBIDDEN");
    tab.close().await;
}

/// Every page at a desktop's and a phone's size.
/// A support desk's day: its own time zone chosen on the account page (times then read in it), a
/// license extended from its page, two licenses chosen on the list and suspended after one
/// confirmation, the list's CSV offered, the audit log read without a sideways scroll.
async fn a_desk_works_from_the_list_and_its_own_time_zone(driver: &Driver, s: &TestServer) {
    let email = account(s, "tz-desk@vendor.example", Role::Support).await;
    let a = s
        .license(r#"{"expirationType":"DATE","expirationDate":"2030-01-01T00:00:00Z"}"#)
        .await;
    let b = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let c = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = |l: &serde_json::Value| l["id"].as_str().unwrap().to_owned();
    let tab = Tab::open(driver, s).await;
    tab.sign_in(&email, PASSWORD).await;

    tab.goto("/dashboard/account").await;
    tab.click("#timeZone option[value='Asia/Kolkata']").await;
    tab.click("form[action$='/time-zone'] button[type=submit]")
        .await;
    tab.sees("Time zone saved").await;
    tab.sees(" IST").await;

    tab.goto(&format!("/dashboard/licenses/{}", id(&a))).await;
    tab.sees(" IST").await;
    tab.fill("#extend-days", "31").await;
    tab.click("form[action$='/extend'] button[type=submit]")
        .await;
    tab.sees("2030-02-01").await;
    let stored = s.get(&s.dev(&format!("licenses/id/{}", id(&a)))).await;
    assert!(
        stored.ok()["expirationDate"]
            .as_str()
            .unwrap()
            .starts_with("2030-02-01"),
        "{stored:?}"
    );

    tab.goto("/dashboard/licenses?pageSize=100").await;
    for l in [&b, &c] {
        tab.click(&format!("input[name=id][value='{}']", id(l)))
            .await;
    }
    tab.click("#bulk-action option[value='suspend']").await;
    tab.click("#bulk button[type=submit]").await;
    tab.sees("Suspend 2 licenses?").await;
    tab.sees(b["licenseKey"].as_str().unwrap()).await;
    tab.click("main form button[type=submit]").await;
    tab.sees("The licenses chosen are suspended.").await;
    for (l, suspended) in [(&a, false), (&b, true), (&c, true)] {
        let stored = s.get(&s.dev(&format!("licenses/id/{}", id(l)))).await;
        assert_eq!(stored.ok()["suspended"], suspended);
    }
    assert!(
        tab.has("a[href^='/dashboard/licenses/export'][download]")
            .await,
        "the list offers its CSV"
    );
    // "Choose every license on this page" ticks every box, and clears them again.
    tab.click("input[data-select-all]").await;
    let ticked = |expected: bool| {
        let tab = &tab;
        async move {
            let all = tab
                .client
                .execute(
                    "return [...document.querySelectorAll('input[name=id]')].every(b => b.checked === arguments[0])",
                    vec![serde_json::json!(expected)],
                )
                .await
                .unwrap();
            assert_eq!(all, serde_json::json!(true), "every box ticked: {expected}");
        }
    };
    ticked(true).await;
    tab.click("input[data-select-all]").await;
    ticked(false).await;
    // At 1280 pixels the license list (keys, long customer and product names, dates) fits its
    // box.
    let long = s
        .post(
            &s.dev("customers"),
            r#"{"fullName":"Maximiliane Theodora Wolfeschlegelsteinhausen-Bergerdorff","email":"maximiliane.theodora.wolfeschlegelsteinhausen@example-enterprise-customer.com"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    let mut products = Vec::new();
    for name in [
        "Professional Studio Edition 2026",
        "Enterprise Analytics Add-on Suite",
    ] {
        products.push(
            s.post(
                &s.dev("products"),
                &serde_json::json!({ "name": name }).to_string(),
            )
            .await
            .ok()["id"]
                .clone(),
        );
    }
    s.put(
        &s.dev(&format!("licenses/id/{}", id(&a))),
        &serde_json::json!({"customerIds": [long], "productIds": products}).to_string(),
    )
    .await
    .ok();
    tab.goto("/dashboard/licenses?pageSize=100").await;
    tab.sees("Wolfeschlegelsteinhausen").await;
    let overflow = tab.table_overflow().await;
    assert!(
        overflow <= 0.0,
        "the license table is {overflow} px wider than its box"
    );
    // At 1280 pixels the audit log's long ids and values wrap inside their column.
    tab.goto("/dashboard/audit").await;
    tab.sees("License created").await;
    let overflow = tab.table_overflow().await;
    assert!(
        overflow <= 0.0,
        "the audit table is {overflow} px wider than the page"
    );
    tab.close().await;
}

/// A customer renamed from its page's Edit form, and a webhook endpoint described and then
/// disabled from its page: each stored, as the API reads it back.
async fn an_admin_edits_a_customer_and_disables_a_webhook(driver: &Driver, s: &TestServer) {
    // An admin: endpoints made with an all-scope key are for owners and admins to see.
    let email = account(s, "editor@vendor.example", Role::Admin).await;
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"fullName":"Grace Old","email":"grace@navy.example"}"#,
        )
        .await
        .ok()
        .clone();
    let customer_id = customer["id"].as_str().unwrap();
    let webhook = s
        .post(
            &s.dev("webhooks"),
            r#"{"url":"http://127.0.0.1:9/hooks/edit","eventTypes":["license.created"]}"#,
        )
        .await
        .ok()
        .clone();
    let webhook_id = webhook["id"].as_str().unwrap();
    let tab = Tab::open(driver, s).await;
    tab.sign_in(&email, PASSWORD).await;

    tab.goto(&format!("/dashboard/customers/{customer_id}"))
        .await;
    tab.click("details.edit summary").await;
    tab.fill("#fullName", "Grace Hopper").await;
    tab.click(&format!(
        "form[action='/dashboard/customers/{customer_id}'] button[type=submit]"
    ))
    .await;
    tab.sees("Customer saved.").await;
    let stored = s.get(&s.dev(&format!("customers/{customer_id}"))).await;
    assert_eq!(stored.ok()["fullName"], "Grace Hopper");
    assert_eq!(stored.ok()["email"], "grace@navy.example");

    tab.goto(&format!("/dashboard/webhooks/{webhook_id}")).await;
    tab.click("details.edit summary").await;
    tab.fill("#description", "The shop's receiver").await;
    tab.click(&format!(
        "form[action='/dashboard/webhooks/{webhook_id}'] button[type=submit]"
    ))
    .await;
    tab.sees("Webhook endpoint saved.").await;
    tab.click("form[action$='/disable'] button").await;
    tab.sees("Webhook endpoint disabled").await;
    let stored = s.get(&s.dev(&format!("webhooks/{webhook_id}"))).await;
    assert_eq!(stored.ok()["description"], "The shop's receiver");
    assert_eq!(stored.ok()["enabled"], false);
    tab.close().await;
}

/// On a 390-pixel phone, a license's device buttons are on screen (no sideways scroll to reach
/// them) and the overview chart's labels are at least 11 pixels tall.
async fn a_phone_reaches_every_button(driver: &Driver, s: &TestServer) {
    let email = account(s, "phone@vendor.example", Role::Support).await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":3}"#)
        .await;
    let device = "a-rather-long-hardware-identifier-0123456789abcdef0123456789abcdef";
    s.client(
        "verify",
        &json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": device}),
        None,
    )
    .await
    .valid();
    let tab = Tab::open_sized(driver, s, 390, 844).await;
    tab.sign_in(&email, PASSWORD).await;
    tab.goto(&format!(
        "/dashboard/licenses/{}",
        l["id"].as_str().unwrap()
    ))
    .await;
    tab.sees(device).await;
    let right = tab
        .client
        .execute(
            "return document.querySelector(\"button[aria-label^='Forget']\").getBoundingClientRect().right",
            vec![],
        )
        .await
        .unwrap();
    let right = right.as_f64().unwrap();
    assert!(right <= 390.0, "the Forget button ends at {right} px");
    // The request history reads without sideways scrolling: each request a block of labelled
    // lines inside the screen.
    let history = tab
        .client
        .execute(
            "const w = document.querySelector('.history .table-wrap'); \
             const row = document.querySelector('.history tbody tr'); \
             return [w.scrollWidth - w.clientWidth, row.getBoundingClientRect().right, \
                     getComputedStyle(row.querySelector('td[data-label]'), '::before').content];",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        history[0].as_f64().unwrap() <= 0.0 && history[1].as_f64().unwrap() <= 390.0,
        "the history is wider than the phone: {history}"
    );
    assert_eq!(history[2], json!("\"Request: \""), "{history}");
    tab.goto("/dashboard/").await;
    let height = tab
        .client
        .execute(
            "return document.querySelector('svg.chart.wide text.axis').getBoundingClientRect().height",
            vec![],
        )
        .await
        .unwrap();
    let height = height.as_f64().unwrap();
    assert!(height >= 11.0, "the chart's labels are {height} px tall");
    tab.close().await;
}

async fn screenshots(driver: &Driver) {
    // A team of its own, with a little of everything, so that no page is empty.
    let server = TestServer::start_with(|c| {
        c.webhook_allow_http = true;
        c.webhook_allow_private = true;
    })
    .await;
    let s = &server;
    let email = account(s, "shots@vendor.example", Role::Owner).await;
    account(s, "desk@vendor.example", Role::Support).await;
    let products: Vec<String> = ["Photo Studio", "Photo Studio Pro"]
        .iter()
        .map(|name| async move {
            s.post(&s.dev("products"), &json!({ "name": name }).to_string())
                .await
                .ok()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect::<futures_util::future::JoinAll<_>>()
        .await;
    let mut customers = Vec::new();
    for (name, mail) in [
        ("Ada Lovelace", "ada@engine.example"),
        ("Grace Hopper", "grace@navy.example"),
        ("Alan Turing", "alan@bletchley.example"),
    ] {
        let c = s
            .post(
                &s.dev("customers"),
                &json!({ "fullName": name, "email": mail }).to_string(),
            )
            .await;
        customers.push(c.ok()["id"].as_str().unwrap().to_owned());
    }
    let mut keys = Vec::new();
    for i in 0..12 {
        let mut body = json!({
            "expirationType": "NEVER",
            "hwidLimit": 2,
            "productIds": [products[i % 2]],
            "customerIds": [customers[i % 3]],
            "suspended": i == 4,
        });
        if i % 3 != 0 {
            body["expirationType"] = json!("DURATION");
            body["expirationDays"] = json!(365);
        }
        keys.push(s.license(&body.to_string()).await);
    }
    for (i, l) in keys.iter().enumerate().take(8) {
        let device = format!("device-{i:04}-aaaa");
        s.client(
            "verify",
            &json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": device,
                "deviceName": format!("STUDIO-PC-{i:02}"), "platform": "windows 11"}),
            Some(&format!("203.0.113.{}", 10 + i)),
        )
        .await;
    }
    s.client(
        "verify",
        &json!({"licenseKey": "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA", "hardwareIdentifier": "device-0000-bbbb"}),
        None,
    )
    .await;
    let release = {
        use reqwest::multipart::{Form, Part};
        let data = json!({"version": "2.4.0", "productId": products[0], "status": "PUBLISHED", "setAsLatest": true});
        let form = Form::new().text("data", data.to_string()).part(
            "file",
            Part::bytes(vec![7u8; 64 * 1024]).file_name("photo-studio-2.4.0.jar"),
        );
        let response = s
            .client
            .post(s.dev("releases"))
            .bearer_auth(s.key())
            .multipart(form)
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = response.json().await.unwrap();
        body["data"]["id"].as_str().unwrap().to_owned()
    };
    s.post(&s.dev("blacklist"), r#"{"type":"COUNTRY","value":"AQ"}"#)
        .await
        .ok();
    s.post(
        &s.dev("webhooks"),
        r#"{"url":"http://127.0.0.1:9/hooks/licensing","eventTypes":["license.*"]}"#,
    )
    .await
    .ok();
    let id = keys[0]["id"].as_str().unwrap().to_owned();
    for (size, width, height) in [("desktop", 1280, 800), ("phone", 390, 844)] {
        let tab = Tab::open_sized(driver, s, width, height).await;
        tab.goto("/dashboard/sign-in").await;
        tab.screenshot(&format!("sign-in-{size}")).await;
        tab.sign_in(&email, PASSWORD).await;
        for (name, path) in [
            ("overview", "/dashboard/".to_owned()),
            ("licenses", "/dashboard/licenses".to_owned()),
            ("license", format!("/dashboard/licenses/{id}")),
            (
                "license-devices",
                format!("/dashboard/licenses/{id}#devices"),
            ),
            (
                "license-requests",
                format!("/dashboard/licenses/{id}#requests"),
            ),
            ("new-license", "/dashboard/licenses/new".to_owned()),
            ("edit-license", format!("/dashboard/licenses/{id}/edit")),
            ("account", "/dashboard/account".to_owned()),
            ("two-step", "/dashboard/account/two-step".to_owned()),
            ("customers", "/dashboard/customers".to_owned()),
            ("products", "/dashboard/products".to_owned()),
            ("blacklist", "/dashboard/blacklist".to_owned()),
            ("settings", "/dashboard/settings".to_owned()),
            ("releases", "/dashboard/releases".to_owned()),
            ("release", format!("/dashboard/releases/{release}")),
            ("api-keys", "/dashboard/api-keys".to_owned()),
            ("webhooks", "/dashboard/webhooks".to_owned()),
            ("audit", "/dashboard/audit".to_owned()),
            ("users", "/dashboard/users".to_owned()),
        ] {
            tab.goto(&path).await;
            tab.screenshot(&format!("{name}-{size}")).await;
        }
        tab.close().await;
    }
}
