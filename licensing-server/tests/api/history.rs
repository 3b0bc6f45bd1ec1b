//! (ext) The support desk on a license's page: its request history (every client request that
//! reached the license, accepted or refused, listed by the developer API with filters and pages,
//! shown with refusals highlighted, and counted by reason in the statistics and the overview),
//! and extending its expiry; both stores.

use licensing_core::model::Role;
use serde_json::{Value, json};

use crate::dashboard::{Browser, staff};
use crate::helpers::TestServer;

fn verify_body(key: &str, device: &str, product: &str) -> Value {
    json!({"licenseKey": key, "hardwareIdentifier": device, "productId": product})
}

/// One device allowed: a verify and a heartbeat pass, a second device is refused, then the
/// license is suspended and refused again; a key nobody holds reaches no license.
async fn a_day_of_requests(s: &TestServer) -> (String, String) {
    let product = s.product("Desk App").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let l = s
        .license(
            &json!({"expirationType": "NEVER", "hwidLimit": 1, "productIds": [product]})
                .to_string(),
        )
        .await;
    let (id, key) = (
        l["id"].as_str().unwrap().to_owned(),
        l["licenseKey"].as_str().unwrap().to_owned(),
    );
    let from = Some("203.0.113.7");
    s.client(
        "verify",
        &verify_body(&key, "machine-a-000001", &product),
        from,
    )
    .await
    .valid();
    let beat =
        json!({"licenseKey": key, "hardwareIdentifier": "machine-a-000001", "version": "1.2.3"});
    s.client("heartbeat", &beat, from).await.valid();
    s.client(
        "verify",
        &verify_body(&key, "machine-b-000002", &product),
        from,
    )
    .await
    .err(403, "HWID_LIMIT_REACHED");
    s.post(&s.dev(&format!("licenses/id/{id}/suspend")), "")
        .await
        .ok();
    s.client(
        "verify",
        &verify_body(&key, "machine-a-000001", &product),
        None,
    )
    .await
    .err(403, "LICENSE_SUSPENDED");
    s.client(
        "verify",
        &verify_body(
            "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA",
            "machine-c-000003",
            &product,
        ),
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    (id, product)
}

fn codes(page: &Value) -> Vec<&str> {
    page["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn every_request_that_reached_a_license_is_listed_with_why_it_was_refused() {
    let s = TestServer::start().await;
    let (id, product) = a_day_of_requests(&s).await;
    let url = |query: &str| s.dev(&format!("licenses/id/{id}/requests{query}"));

    let all = s.get(&url("")).await.ok().clone();
    assert_eq!(all["totalResults"], 4, "{all}");
    assert_eq!(
        codes(&all),
        ["LICENSE_SUSPENDED", "HWID_LIMIT_REACHED", "VALID", "VALID"]
    );
    let requests = all["requests"].as_array().unwrap();
    let refused = &requests[1];
    assert_eq!(refused["endpoint"], "VERIFY");
    assert_eq!(refused["hardwareIdentifier"], "machine-b-000002");
    assert_eq!(refused["ipAddress"], "203.0.113.7");
    assert_eq!(refused["productId"], product.as_str());
    assert!(refused.get("version").is_none(), "{refused}");
    assert_eq!(refused["licenseId"], id.as_str());
    assert_eq!(requests[2]["endpoint"], "HEARTBEAT");
    assert_eq!(requests[2]["version"], "1.2.3");
    assert!(requests[2].get("productId").is_none(), "{}", requests[2]);
    assert_eq!(requests[0]["ipAddress"], "127.0.0.1");
    // Newest first, to the millisecond.
    let times: Vec<&str> = requests.iter().map(|r| r["at"].as_str().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted);

    let only = |query: &'static str| {
        let url = url(query);
        let s = &s;
        async move { s.get(&url).await.ok().clone() }
    };
    assert_eq!(
        codes(&only("?refused=true").await),
        ["LICENSE_SUSPENDED", "HWID_LIMIT_REACHED"]
    );
    assert_eq!(codes(&only("?refused=false").await), ["VALID", "VALID"]);
    assert_eq!(
        codes(&only("?code=HWID_LIMIT_REACHED").await),
        ["HWID_LIMIT_REACHED"]
    );
    assert_eq!(codes(&only("?endpoint=HEARTBEAT").await), ["VALID"]);
    assert_eq!(
        codes(&only("?sortDirection=asc&pageSize=10").await)[0],
        "VALID"
    );
    let future = only("?from=2999-01-01T00:00:00Z").await;
    assert_eq!(future["totalResults"], 0);
    let bad = s.get(&url("?code=NOPE&refused=perhaps")).await;
    bad.err(400, "BAD_REQUEST");
    assert_eq!(bad.fields(), ["code", "refused"]);

    // Another team's key finds no such license through its own path.
    let other = s.other_team().await;
    let theirs = s
        .send(
            reqwest::Method::GET,
            &format!(
                "{}/api/v1/dev/teams/{}/licenses/id/{id}/requests",
                s.base, other.team_id
            ),
            Some(&other.api_key),
            None,
        )
        .await;
    theirs.err(404, "LICENSE_NOT_FOUND");

    // The statistics count refusals by reason.
    let stats = s.get(&s.dev("statistics")).await.ok().clone();
    let reasons = stats["topRefusals"].as_array().unwrap().clone();
    for code in [
        "HWID_LIMIT_REACHED",
        "LICENSE_SUSPENDED",
        "LICENSE_NOT_FOUND",
    ] {
        assert!(
            reasons
                .iter()
                .any(|r| r["code"] == code && r["requests"] == 1),
            "{code} in {reasons:?}"
        );
    }
}

#[tokio::test]
async fn support_reads_on_the_license_page_why_a_customer_was_refused() {
    let s = TestServer::start().await;
    let (id, _) = a_day_of_requests(&s).await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Support,
    )
    .await;
    let page = b.get(&format!("/dashboard/licenses/{id}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    page.has("id=\"requests\"")
        .has("<tr class=\"refused\">")
        .has("Device limit reached")
        .has("License suspended")
        .has("machine-b-000002")
        .has("203.0.113.7")
        .has("Desk App")
        .has("4 requests");
    // Refusals only: the two refused, none of the accepted.
    let refused = b
        .get(&format!("/dashboard/licenses/{id}?requests=refused"))
        .await;
    refused
        .has("2 requests")
        .lacks("<span class=\"badge ok\">Accepted</span>");
    let one = b
        .get(&format!("/dashboard/licenses/{id}?code=HWID_LIMIT_REACHED"))
        .await;
    one.has("1 request<").has("machine-b-000002");
    // The reason filter offers what a license's history can hold, not the API's every code.
    one.has("<option value=\"LICENSE_SUSPENDED\"")
        .lacks("<option value=\"TEAM_NOT_FOUND\"")
        .lacks("<option value=\"RATE_LIMIT\"")
        .lacks("<option value=\"IDEMPOTENCY_KEY_IN_USE\"");
    let none = b
        .get(&format!("/dashboard/licenses/{id}?day=2001-01-01"))
        .await;
    none.has("No request matches.");

    // The overview names the reasons (a role that reads statistics).
    let mut owner = Browser::new(&s);
    staff(
        &s,
        &mut owner,
        s.team_id(),
        "own@vendor.example",
        Role::Owner,
    )
    .await;
    owner
        .get("/dashboard/")
        .await
        .has("Top refusal reasons")
        .has("Device limit reached")
        .has("License not found");
}

#[tokio::test]
async fn with_history_off_nothing_is_kept_and_the_page_says_so() {
    let s = TestServer::start_with(|c| c.request_history_days = 0).await;
    let (id, _) = a_day_of_requests(&s).await;
    let listed = s
        .get(&s.dev(&format!("licenses/id/{id}/requests")))
        .await
        .ok()
        .clone();
    assert_eq!(listed["totalResults"], 0);
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Support,
    )
    .await;
    b.get(&format!("/dashboard/licenses/{id}"))
        .await
        .has("keeps no request history");
}

#[tokio::test]
async fn support_extends_a_license_from_its_page_and_is_told_in_words_what_is_wrong() {
    let s = TestServer::start().await;
    let tomorrow = (chrono::Utc::now() + chrono::TimeDelta::days(1)).to_rfc3339();
    let dated = s
        .license(&json!({"expirationType": "DATE", "expirationDate": tomorrow}).to_string())
        .await;
    let id = dated["id"].as_str().unwrap().to_owned();
    let never = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Support,
    )
    .await;
    let path = format!("/dashboard/licenses/{id}");
    let page = b.get(&path).await;
    page.has(&format!("action=\"{path}/extend\""));
    let done = b
        .submit(&page, &format!("{path}/extend"), &[("days", "30")])
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert_eq!(done.location(), format!("{path}?notice=license-extended"));
    let after = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    let date = after.ok()["expirationDate"].as_str().unwrap().to_owned();
    let until = chrono::DateTime::parse_from_rfc3339(&date).unwrap();
    let hours = (until.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_hours();
    assert!((30 * 24..=31 * 24).contains(&hours), "{date}");
    b.get(&format!("{path}?notice=license-extended"))
        .await
        .has("License extended");

    let wrong = b
        .submit(&page, &format!("{path}/extend"), &[("days", "a month")])
        .await;
    assert_eq!(wrong.status, 400, "{}", wrong.text);
    wrong
        .has("a whole number from 1 to 3650")
        .lacks("days: must");

    // Nothing to extend on a license that never expires: no form.
    let never_page = b
        .get(&format!(
            "/dashboard/licenses/{}",
            never["id"].as_str().unwrap()
        ))
        .await;
    never_page.lacks("/extend\"");
}
