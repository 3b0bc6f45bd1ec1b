//! Tenant isolation on every developer route: another team's key on this team's path is 403;
//! this team's ids under another team's path (with that team's key) are 404; nothing changes.

use licensing_core::store::StaffStore;
use reqwest::Method;
use serde_json::{Value, json};

use crate::client::{release, release_form, upload};
use crate::dashboard::{Browser, staff};
use crate::helpers::TestServer;

/// Every developer route with a body that would be valid, over team A's records.
fn routes(ids: &Value) -> Vec<(Method, String, Option<String>)> {
    let s = |v: &str| ids[v].as_str().unwrap().to_owned();
    let (webhook, delivery, kid, entitlement, session, policy) = (
        s("webhook"),
        s("delivery"),
        s("kid"),
        s("entitlement"),
        s("session"),
        s("policy"),
    );
    let (provider, rule, event, artifact) = (s("provider"), s("rule"), s("event"), s("artifact"));
    let meter = s("meter");
    let (license, key, customer, product, branch, release, hwid, ip, entry, api_key) = (
        s("license"),
        s("key"),
        s("customer"),
        s("product"),
        s("branch"),
        s("release"),
        s("hwid"),
        s("ip"),
        s("entry"),
        s("apiKey"),
    );
    let body = |v: Value| Some(v.to_string());
    vec![
        (
            Method::POST,
            "licenses".into(),
            body(json!({"expirationType": "NEVER"})),
        ),
        (Method::GET, "licenses".into(), None),
        (Method::GET, format!("licenses/{key}"), None),
        (Method::DELETE, format!("licenses/{key}"), None),
        (Method::GET, format!("licenses/id/{license}"), None),
        (
            Method::PUT,
            format!("licenses/id/{license}"),
            body(json!({"suspended": true})),
        ),
        (Method::POST, format!("licenses/id/{license}/suspend"), None),
        (
            Method::POST,
            "licenses/bulk".into(),
            body(json!({"action": "SUSPEND", "licenseIds": [license]})),
        ),
        (Method::POST, format!("licenses/id/{license}/email"), None),
        (
            Method::POST,
            format!("licenses/id/{license}/extend"),
            body(json!({"days": 30})),
        ),
        (Method::POST, format!("licenses/id/{license}/file"), None),
        (
            Method::POST,
            format!("licenses/id/{license}/unsuspend"),
            None,
        ),
        (Method::DELETE, format!("licenses/id/{license}"), None),
        (Method::GET, format!("licenses/id/{license}/hwid"), None),
        (Method::GET, format!("licenses/id/{license}/sessions"), None),
        (Method::GET, format!("licenses/id/{license}/requests"), None),
        (Method::GET, format!("licenses/id/{license}/usage"), None),
        (
            Method::POST,
            format!("licenses/id/{license}/usage/{meter}/adjust"),
            body(json!({"delta": 1, "reason": "isolation"})),
        ),
        (
            Method::POST,
            format!("licenses/id/{license}/usage/{meter}/reset"),
            None,
        ),
        (
            Method::DELETE,
            format!("licenses/id/{license}/sessions/{session}"),
            None,
        ),
        (
            Method::PATCH,
            format!("licenses/id/{license}/hwid/{hwid}"),
            body(json!({"forgotten": true})),
        ),
        (
            Method::GET,
            format!("licenses/id/{license}/ip-address"),
            None,
        ),
        (
            Method::PATCH,
            format!("licenses/id/{license}/ip-address/{ip}"),
            body(json!({"forgotten": true})),
        ),
        (
            Method::POST,
            "customers".into(),
            body(json!({"email": "x@example.com"})),
        ),
        (Method::GET, "customers".into(), None),
        (Method::GET, format!("customers/{customer}"), None),
        (
            Method::PUT,
            format!("customers/{customer}"),
            body(json!({"fullName": "Changed"})),
        ),
        (
            Method::POST,
            format!("customers/{customer}/portal-sessions"),
            body(json!({})),
        ),
        (Method::DELETE, format!("customers/{customer}"), None),
        (
            Method::POST,
            "entitlements".into(),
            body(json!({"name": "X", "code": "X"})),
        ),
        (Method::GET, "entitlements".into(), None),
        (Method::GET, format!("entitlements/{entitlement}"), None),
        (
            Method::PUT,
            format!("entitlements/{entitlement}"),
            body(json!({"name": "Changed"})),
        ),
        (Method::DELETE, format!("entitlements/{entitlement}"), None),
        (Method::POST, "policies".into(), body(json!({"name": "X"}))),
        (Method::GET, "policies".into(), None),
        (Method::GET, format!("policies/{policy}"), None),
        (
            Method::PUT,
            format!("policies/{policy}"),
            body(json!({"name": "Changed", "hwidLimit": 9})),
        ),
        (
            Method::DELETE,
            format!("policies/{policy}?detach=true"),
            None,
        ),
        (Method::GET, "integrations".into(), None),
        (Method::GET, format!("integrations/{provider}"), None),
        (
            Method::PUT,
            format!("integrations/{provider}"),
            body(json!({"webhookSecret": "whsec_isolation_other"})),
        ),
        (Method::GET, format!("integrations/{provider}/rules"), None),
        (
            Method::POST,
            format!("integrations/{provider}/rules"),
            body(json!({"match": {"priceId": "price_x"}, "policyId": policy})),
        ),
        (
            Method::PUT,
            format!("integrations/{provider}/rules/{rule}"),
            body(json!({"onRefund": "keep"})),
        ),
        (
            Method::DELETE,
            format!("integrations/{provider}/rules/{rule}"),
            None,
        ),
        (Method::GET, "integrations/events".into(), None),
        (Method::GET, format!("integrations/events/{event}"), None),
        (
            Method::POST,
            format!("integrations/events/{event}/replay"),
            None,
        ),
        (Method::DELETE, format!("integrations/{provider}"), None),
        (Method::POST, "products".into(), body(json!({"name": "X"}))),
        (Method::GET, "products".into(), None),
        (Method::GET, format!("products/{product}"), None),
        (
            Method::PUT,
            format!("products/{product}"),
            body(json!({"name": "Changed"})),
        ),
        (Method::DELETE, format!("products/{product}"), None),
        (
            Method::POST,
            format!("products/{product}/branches"),
            body(json!({"name": "gamma"})),
        ),
        (Method::GET, format!("products/{product}/branches"), None),
        (
            Method::DELETE,
            format!("products/{product}/branches/{branch}"),
            None,
        ),
        (Method::GET, "releases".into(), None),
        (Method::GET, format!("releases/{release}"), None),
        (Method::GET, format!("releases/{release}/artifacts"), None),
        (
            Method::DELETE,
            format!("releases/{release}/artifacts/{artifact}"),
            None,
        ),
        (Method::DELETE, format!("releases/{release}"), None),
        (Method::GET, "statistics".into(), None),
        (Method::GET, "settings".into(), None),
        (
            Method::PUT,
            "settings".into(),
            body(json!({"strictCustomers": true})),
        ),
        (
            Method::POST,
            "blacklist".into(),
            body(json!({"type": "IP", "value": "192.0.2.1"})),
        ),
        (Method::GET, "blacklist".into(), None),
        (Method::DELETE, format!("blacklist/{entry}"), None),
        (Method::POST, "api-keys".into(), body(json!({"name": "x"}))),
        (Method::GET, "api-keys".into(), None),
        (Method::DELETE, format!("api-keys/{api_key}"), None),
        (Method::GET, "public-key".into(), None),
        (Method::POST, "signing-keys".into(), None),
        (Method::POST, "signing-keys/rotate".into(), None),
        (Method::POST, format!("signing-keys/{kid}/activate"), None),
        (Method::DELETE, format!("signing-keys/{kid}"), None),
        (Method::GET, "audit-log".into(), None),
        (
            Method::POST,
            "webhooks".into(),
            body(json!({"url": "https://hooks.example.com/b"})),
        ),
        (Method::GET, "webhooks".into(), None),
        (Method::GET, format!("webhooks/{webhook}"), None),
        (
            Method::PATCH,
            format!("webhooks/{webhook}"),
            body(json!({"description": "changed"})),
        ),
        (Method::DELETE, format!("webhooks/{webhook}"), None),
        (
            Method::POST,
            format!("webhooks/{webhook}/rotate-secret"),
            None,
        ),
        (Method::POST, format!("webhooks/{webhook}/test"), None),
        (Method::GET, format!("webhooks/{webhook}/deliveries"), None),
        (
            Method::GET,
            format!("webhooks/{webhook}/deliveries/{delivery}"),
            None,
        ),
        (
            Method::POST,
            format!("webhooks/{webhook}/deliveries/{delivery}/redeliver"),
            None,
        ),
    ]
}

/// Team A's Stripe integration with a rule to `policy`, and one event received: the rule and
/// the event.
async fn integration(s: &TestServer, policy: &Value) -> (Value, Value) {
    const SECRET: &str = "whsec_isolation_team_a";
    s.put(
        &s.dev("integrations/stripe"),
        &json!({"webhookSecret": SECRET}).to_string(),
    )
    .await
    .ok();
    let rule = s
        .post(
            &s.dev("integrations/stripe/rules"),
            &json!({"match": {"priceId": "price_a"}, "policyId": policy["id"]}).to_string(),
        )
        .await
        .ok()
        .clone();
    let ping =
        r#"{"id":"evt_isolation","type":"customer.created","data":{"object":{"id":"cus_a"}}}"#;
    assert_eq!(s.stripe_event(SECRET, ping).await, 200);
    let event = s.get(&s.dev("integrations/events")).await.ok()["events"][0].clone();
    (rule, event)
}

/// Everything team A can read, to compare before and after.
async fn snapshot(s: &TestServer) -> Vec<Value> {
    let mut out = Vec::new();
    for path in [
        "licenses",
        "customers",
        "products",
        "releases",
        "settings",
        "public-key",
        "entitlements",
        "policies",
        "integrations",
        "integrations/events",
        "blacklist",
        "api-keys",
        "audit-log",
        "webhooks",
    ] {
        let mut answer = s.get(&s.dev(path)).await.ok().clone();
        if let Some(keys) = answer.get_mut("apiKeys") {
            // Listing is fine; compare ids only.
            *keys = json!(
                keys.as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k["id"].clone())
                    .collect::<Vec<_>>()
            );
        }
        out.push(answer);
    }
    out
}

#[tokio::test]
async fn no_route_shows_or_changes_another_teams_data() {
    let s = TestServer::start().await;
    let b = s.other_team().await;
    // Team A's records, one of each.
    let product = s.post(&s.dev("products"), r#"{"name":"App"}"#).await.ok()["id"].clone();
    let branch = s
        .post(
            &s.dev(&format!("products/{}/branches", product.as_str().unwrap())),
            r#"{"name":"beta"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    let customer = s
        .post(&s.dev("customers"), r#"{"email":"a@example.com"}"#)
        .await
        .ok()["id"]
        .clone();
    let policy = s
        .post(&s.dev("policies"), r#"{"name":"Plan","hwidLimit":3}"#)
        .await
        .ok()
        .clone();
    let l = s
        .license(&format!(
            r#"{{"expirationType":"NEVER","productIds":[{product}],"customerIds":[{customer}],"policyId":{}}}"#,
            policy["id"]
        ))
        .await;
    s.activity(l["id"].as_str().unwrap(), "device-aaaa-0001", 1)
        .await;
    let hwid = s
        .get(&s.dev(&format!("licenses/id/{}/hwid", l["id"].as_str().unwrap())))
        .await
        .ok()["hwids"][0]["id"]
        .clone();
    let ip = s
        .get(&s.dev(&format!(
            "licenses/id/{}/ip-address",
            l["id"].as_str().unwrap()
        )))
        .await
        .ok()["ipAddresses"][0]["id"]
        .clone();
    let release = release(
        &s,
        json!({"version": "1.0.0", "productId": product, "status": "PUBLISHED"}),
        None,
    )
    .await;
    let entry = s
        .post(&s.dev("blacklist"), r#"{"type":"COUNTRY","value":"FI"}"#)
        .await
        .ok()["id"]
        .clone();
    let api_key = s.post(&s.dev("api-keys"), r#"{"name":"spare"}"#).await.ok()["id"].clone();
    // Disabled, so that no delivery attempt changes it while the test runs.
    let webhook = s
        .post(
            &s.dev("webhooks"),
            r#"{"url":"https://hooks.example.com/a","enabled":false}"#,
        )
        .await
        .ok()["id"]
        .clone();
    let delivery = s
        .post(
            &s.dev(&format!("webhooks/{}/test", webhook.as_str().unwrap())),
            "",
        )
        .await
        .ok()["id"]
        .clone();
    let (rule, event) = integration(&s, &policy).await;
    let artifact = {
        let form = reqwest::multipart::Form::new()
            .text("platform", "linux")
            .text("arch", "x86_64")
            .part(
                "file",
                reqwest::multipart::Part::bytes(b"A's artifact".to_vec()).file_name("a.AppImage"),
            );
        let response = upload(
            &s,
            Method::POST,
            &s.dev(&format!(
                "releases/{}/artifacts",
                release["id"].as_str().unwrap()
            )),
            s.key(),
            form,
        )
        .await;
        assert_eq!(response.status().as_u16(), 201);
        response.json::<Value>().await.unwrap()["data"]["id"].clone()
    };
    let ids = json!({"artifact": artifact, "license": l["id"], "key": l["licenseKey"], "customer": customer, "product": product, "branch": branch,
                     "release": release["id"], "hwid": hwid, "ip": ip, "entry": entry, "apiKey": api_key,
                     "webhook": webhook, "delivery": delivery,
                     "kid": s.get(&s.dev("public-key")).await.ok()["signingKeys"][0]["kid"],
                     "entitlement": s.post(&s.dev("entitlements"), r#"{"name":"A","code":"A"}"#)
                         .await.ok()["id"],
                     "policy": policy["id"],
                     "provider": "stripe",
                     "meter": "EXPORTS",
                     "rule": rule["id"],
                     "event": event["id"],
                     "session": s.client("sessions/start",
                         &json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": "isolation-session-1"}), None)
                         .await.valid()["session"]["id"]});
    let before = snapshot(&s).await;

    for (method, path, body) in routes(&ids) {
        // B's key on A's path: 403.
        let a_path = s.dev(&path);
        let answer = s
            .send(method.clone(), &a_path, Some(&b.api_key), body.as_deref())
            .await;
        assert_eq!(
            (answer.status, answer.code()),
            (403, "FORBIDDEN"),
            "{method} {path}: {}",
            answer.body
        );
        // A's ids under B's path with B's key: never a success that touches A's records.
        let b_path = format!("{}/api/v1/dev/teams/{}/{}", s.base, b.team_id, path);
        let answer = s
            .send(method.clone(), &b_path, Some(&b.api_key), body.as_deref())
            .await;
        let mentions_a_id = [
            "license", "key", "customer", "product", "branch", "release", "hwid", "ip", "entry",
            "apiKey", "webhook", "delivery", "session", "rule", "event",
        ]
        .iter()
        .any(|k| path.contains(ids[*k].as_str().unwrap()));
        if mentions_a_id {
            assert_eq!(answer.status, 404, "{method} {path}: {}", answer.body);
        } else if path == "licenses/bulk" {
            // A's license named in B's bulk action: refused as no license of B's, the id
            // given echoed back and nothing else.
            let result = answer.ok();
            assert_eq!(result["done"], json!([]), "{}", answer.body);
            assert_eq!(result["refused"][0]["code"], "LICENSE_NOT_FOUND");
        } else {
            assert!(answer.status < 500, "{method} {path}: {}", answer.body);
            // Lists under B show none of A's records.
            let text = answer.body.to_string();
            for k in [
                "license", "customer", "product", "release", "entry", "webhook",
            ] {
                assert!(
                    !text.contains(ids[k].as_str().unwrap()),
                    "{method} {path} shows A's {k}"
                );
            }
        }
    }
    // Unknown ids under A's own path are 404 too.
    let unknown = uuid::Uuid::new_v4().to_string();
    for path in [
        format!("licenses/id/{unknown}"),
        format!("customers/{unknown}"),
        format!("products/{unknown}"),
        format!("releases/{unknown}"),
    ] {
        assert_eq!(s.get(&s.dev(&path)).await.status, 404, "{path}");
    }
    assert_eq!(snapshot(&s).await, before, "team A's data is unchanged");
    let sessions = s
        .get(&s.dev(&format!(
            "licenses/id/{}/sessions",
            ids["license"].as_str().unwrap()
        )))
        .await
        .ok()
        .clone();
    assert_eq!(
        sessions["sessions"][0]["id"], ids["session"],
        "team A's session is live: {sessions}"
    );

    // The dashboard: an owner of team B, signed in, asks for every page and posts every form
    // about A's records (with a valid token of B's session and a body that would be valid): each
    // is 404, B's lists show none of A's records, and nothing of A changes.
    let a_user = licensing_server::staff::create_staff(
        &s.store,
        s.team_id(),
        "a-owner@vendor.example",
        licensing_core::model::Role::Admin,
        licensing_core::Timestamp::now(),
        None,
    )
    .await
    .unwrap();
    let mut ids = ids;
    ids["user"] = json!(a_user.user.id.to_string());
    let before = snapshot(&s).await;
    let mut browser = Browser::new(&s);
    staff(
        &s,
        &mut browser,
        b.team_id,
        "b-owner@vendor.example",
        licensing_core::model::Role::Owner,
    )
    .await;
    let page = browser.get("/dashboard/account").await;
    let fields = [
        ("role", "viewer"),
        ("name", "beta-2"),
        ("status", "ARCHIVED"),
        ("expirationType", "NEVER"),
        ("days", "30"),
        ("eventTypes", "*"),
        ("url", "https://example.com/hook"),
    ];
    for (method, path) in dashboard_routes(&ids) {
        let url = format!("/dashboard/{path}");
        let answer = if method == Method::GET {
            browser.get(&url).await
        } else {
            browser.submit(&page, &url, &fields).await
        };
        assert_eq!(answer.status, 404, "{method} {url}: {}", answer.text);
    }
    for list in [
        "",
        "licenses",
        "customers",
        "products",
        "releases",
        "blacklist",
        "api-keys",
        "webhooks",
        "audit",
        "users",
        "policies",
    ] {
        let answer = browser.get(&format!("/dashboard/{list}")).await;
        assert_eq!(answer.status, 200, "/dashboard/{list}");
        for k in [
            "license", "key", "customer", "product", "release", "entry", "apiKey", "webhook",
            "user",
        ] {
            answer.lacks(ids[k].as_str().unwrap());
        }
        answer
            .lacks("a-owner@vendor.example")
            .lacks("a@example.com");
    }
    assert_eq!(snapshot(&s).await, before, "team A's data is unchanged");
    assert!(
        s.store.get_staff(a_user.user.id).await.unwrap().is_some(),
        "A's account stays"
    );
}

/// Every dashboard page and form that names a record, over team A's records.
fn dashboard_routes(ids: &Value) -> Vec<(Method, String)> {
    let s = |v: &str| ids[v].as_str().unwrap().to_owned();
    let (license, customer, product, branch, release) = (
        s("license"),
        s("customer"),
        s("product"),
        s("branch"),
        s("release"),
    );
    let (entitlement, kid, session, policy, artifact) = (
        s("entitlement"),
        s("kid"),
        s("session"),
        s("policy"),
        s("artifact"),
    );
    let (hwid, ip, entry, api_key, webhook, delivery, user) = (
        s("hwid"),
        s("ip"),
        s("entry"),
        s("apiKey"),
        s("webhook"),
        s("delivery"),
        s("user"),
    );
    let (rule, event) = (s("rule"), s("event"));
    let get = |p: String| (Method::GET, p);
    let post = |p: String| (Method::POST, p);
    vec![
        post(format!("payments/events/{event}/replay")),
        post(format!("payments/stripe/rules/{rule}/delete")),
        get(format!("licenses/{license}")),
        get(format!("licenses/{license}/edit")),
        get(format!("licenses/{license}/delete")),
        post(format!("licenses/{license}/edit")),
        post(format!("licenses/{license}/suspend")),
        post(format!("licenses/{license}/unsuspend")),
        post(format!("licenses/{license}/email")),
        post(format!("licenses/{license}/extend")),
        post(format!("licenses/{license}/file")),
        post(format!("licenses/{license}/delete")),
        post(format!("licenses/{license}/devices/{hwid}/forget")),
        post(format!("licenses/{license}/addresses/{ip}/forget")),
        post(format!("licenses/{license}/sessions/{session}/revoke")),
        get(format!("customers/{customer}")),
        post(format!("customers/{customer}")),
        get(format!("customers/{customer}/delete")),
        post(format!("customers/{customer}/delete")),
        get(format!("products/{product}")),
        post(format!("products/{product}")),
        get(format!("products/{product}/delete")),
        post(format!("products/{product}/branches")),
        post(format!("products/{product}/branches/{branch}/delete")),
        post(format!("products/{product}/delete")),
        get(format!("releases/{release}")),
        get(format!("releases/{release}/delete")),
        post(format!("releases/{release}")),
        post(format!("releases/{release}/delete")),
        post(format!("releases/{release}/artifacts/{artifact}/delete")),
        post(format!("blacklist/{entry}/delete")),
        get(format!("entitlements/{entitlement}/delete")),
        post(format!("entitlements/{entitlement}/delete")),
        get(format!("policies/{policy}")),
        post(format!("policies/{policy}")),
        get(format!("policies/{policy}/delete")),
        post(format!("policies/{policy}/delete")),
        get(format!("settings/signing-keys/{kid}/retire")),
        post(format!("settings/signing-keys/{kid}/retire")),
        get(format!("settings/signing-keys/{kid}/activate")),
        post(format!("settings/signing-keys/{kid}/activate")),
        get(format!("api-keys/{api_key}/revoke")),
        post(format!("api-keys/{api_key}/revoke")),
        get(format!("webhooks/{webhook}")),
        post(format!("webhooks/{webhook}")),
        post(format!("webhooks/{webhook}/enable")),
        post(format!("webhooks/{webhook}/disable")),
        get(format!("webhooks/{webhook}/rotate-secret")),
        post(format!("webhooks/{webhook}/rotate-secret")),
        get(format!("webhooks/{webhook}/delete")),
        post(format!("webhooks/{webhook}/test")),
        post(format!(
            "webhooks/{webhook}/deliveries/{delivery}/redeliver"
        )),
        post(format!("webhooks/{webhook}/delete")),
        get(format!("users/{user}/delete")),
        post(format!("users/{user}/role")),
        post(format!("users/{user}/link")),
        post(format!("users/{user}/two-step/off")),
        post(format!("users/{user}/delete")),
    ]
}

/// The multipart routes, which `routes` (JSON bodies) leaves out.
const MULTIPART_ROUTES: [(&str, &str); 3] = [
    ("POST", "releases"),
    ("PUT", "releases/{releaseId}"),
    ("POST", "releases/{releaseId}/artifacts"),
];

/// The route list above, plus the multipart routes, is every developer operation documented.
#[tokio::test]
async fn the_isolation_route_list_covers_every_developer_operation() {
    let s = TestServer::start().await;
    let document = s.openapi().await;
    let prefix = "/api/v1/dev/teams/{teamId}/";
    let mut documented: Vec<String> = Vec::new();
    for (path, methods) in document["paths"].as_object().unwrap() {
        if let Some(rest) = path.strip_prefix(prefix) {
            for method in methods.as_object().unwrap().keys() {
                documented.push(format!("{} {rest}", method.to_uppercase()));
            }
        }
    }
    let templates = json!({
        "license": "{licenseId}", "key": "{licenseKey}", "customer": "{customerId}",
        "product": "{productId}", "branch": "{branchId}", "release": "{releaseId}",
        "hwid": "{hwidId}", "ip": "{ipId}", "entry": "{blacklistId}", "apiKey": "{apiKeyId}",
        "webhook": "{webhookId}", "delivery": "{deliveryId}", "kid": "{kid}",
        "entitlement": "{entitlementId}", "session": "{sessionId}", "policy": "{policyId}",
        "provider": "{provider}", "rule": "{ruleId}", "event": "{eventId}",
        "artifact": "{artifactId}", "meter": "{meter}",
    });
    let mut covered: Vec<String> = routes(&templates)
        .into_iter()
        .map(|(method, path, _)| format!("{method} {}", path.split('?').next().unwrap_or("")))
        .chain(MULTIPART_ROUTES.iter().map(|(m, p)| format!("{m} {p}")))
        .collect();
    documented.sort();
    covered.sort();
    assert_eq!(covered, documented);
}

/// Another team's ids inside bodies and queries (licenses, releases, the client API), the
/// multipart routes, and ids of deleted records: refused, and nothing of team A changes.
#[tokio::test]
async fn ids_of_other_teams_in_bodies_and_of_deleted_records_reach_nothing() {
    let s = TestServer::start().await;
    let b = s.other_team().await;
    let b_dev = |path: &str| format!("{}/api/v1/dev/teams/{}/{path}", s.base, b.team_id);
    let b_client = |endpoint: &str| {
        format!(
            "{}/api/v1/client/teams/{}/verification/{endpoint}",
            s.base, b.team_id
        )
    };
    // Team A: a product, a customer, a license for both, a release.
    let product = s.product("A's app").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let customer = s
        .post(&s.dev("customers"), r#"{"email":"a@example.com"}"#)
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let license = s
        .license(
            &json!({"expirationType": "NEVER", "productIds": [product], "customerIds": [customer]})
                .to_string(),
        )
        .await;
    let (license_id, license_key) = (
        license["id"].as_str().unwrap().to_owned(),
        license["licenseKey"].as_str().unwrap().to_owned(),
    );
    let release = release(
        &s,
        json!({"version": "1.0.0", "productId": product, "status": "PUBLISHED"}),
        Some(("app.jar", b"A's bytes".to_vec())),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = snapshot(&s).await;

    // B's key on A's multipart routes: 403; A's release under B's path: 404.
    for (method, path) in [
        (Method::POST, s.dev("releases")),
        (Method::PUT, s.dev(&format!("releases/{release}"))),
        (Method::PUT, b_dev(&format!("releases/{release}"))),
    ] {
        let data = json!({
            "version": "9.9.9", "productId": product, "status": "PUBLISHED",
            "setAsLatest": false, "branchId": null, "metadata": [], "licenseIds": [],
            "keepExistingFile": false,
        });
        let form = release_form(&data, Some(("app.jar", b"bytes".to_vec())));
        let response = upload(&s, method.clone(), &path, &b.api_key, form).await;
        let status = response.status().as_u16();
        assert!(
            matches!(status, 403 | 404),
            "{method} {path}: {status} {}",
            response.text().await.unwrap()
        );
    }
    // An artifact for A's release: B's key on A's path 403, under B's path 404.
    for (path, status) in [
        (s.dev(&format!("releases/{release}/artifacts")), 403),
        (b_dev(&format!("releases/{release}/artifacts")), 404),
    ] {
        let form = reqwest::multipart::Form::new()
            .text("platform", "linux")
            .text("arch", "x86_64")
            .part(
                "file",
                reqwest::multipart::Part::bytes(b"B's bytes".to_vec()).file_name("b.AppImage"),
            );
        let response = upload(&s, Method::POST, &path, &b.api_key, form).await;
        assert_eq!(response.status().as_u16(), status, "{path}");
    }

    // A's ids in B's bodies, under B's own path with B's key: never accepted.
    let b_license = s
        .send(
            Method::POST,
            &b_dev("licenses"),
            Some(&b.api_key),
            Some(r#"{"expirationType":"NEVER"}"#),
        )
        .await;
    let b_license = b_license.ok()["id"].as_str().unwrap().to_owned();
    for (method, path, body) in [
        (
            Method::POST,
            b_dev("licenses"),
            json!({"expirationType": "NEVER", "customerIds": [customer]}),
        ),
        (
            Method::POST,
            b_dev("licenses"),
            json!({"expirationType": "NEVER", "productIds": [product]}),
        ),
        (
            Method::PUT,
            b_dev(&format!("licenses/id/{b_license}")),
            json!({"customerIds": [customer], "productIds": [product]}),
        ),
    ] {
        let body = body.to_string();
        let answer = s
            .send(method.clone(), &path, Some(&b.api_key), Some(&body))
            .await;
        assert!(
            (400..500).contains(&answer.status),
            "{method} {path} {body}: {} {}",
            answer.status,
            answer.body
        );
    }
    for data in [
        json!({"version": "1.0.0", "productId": product, "status": "PUBLISHED"}),
        json!({"version": "1.0.0", "productId": product, "status": "PUBLISHED", "licenseIds": [license_id]}),
    ] {
        let form = release_form(&data, Some(("app.jar", b"bytes".to_vec())));
        let response = upload(&s, Method::POST, &b_dev("releases"), &b.api_key, form).await;
        let status = response.status().as_u16();
        assert!((400..500).contains(&status), "release {data}: {status}");
    }

    // A's license key through B's client API: not found, and no device recorded on it.
    for endpoint in ["verify", "heartbeat"] {
        let answer = s
            .client_raw(
                &b_client(endpoint),
                &json!({"licenseKey": license_key, "hardwareIdentifier": "device-bbbb-0001"})
                    .to_string(),
                None,
            )
            .await;
        answer.err(404, "LICENSE_NOT_FOUND");
    }
    let classloader = format!(
        "{}?licenseKey={license_key}&productId={product}&sessionKey={}&hardwareIdentifier=device-bbbb-0001",
        b_client("classloader"),
        "ab".repeat(256)
    );
    let status = s.client.get(&classloader).send().await.unwrap().status();
    assert!(status.is_client_error(), "classloader: {status}");
    assert_eq!(snapshot(&s).await, before, "team A's data is unchanged");
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{license_id}/hwid")))
            .await
            .ok()["totalResults"],
        0
    );

    // Deleted records stay gone: every route on their ids is 404, and a deleted license key
    // verifies nothing.
    s.delete(&s.dev(&format!("licenses/id/{license_id}")))
        .await
        .ok();
    s.delete(&s.dev(&format!("customers/{customer}")))
        .await
        .ok();
    s.delete(&s.dev(&format!("releases/{release}"))).await.ok();
    for (method, path, body) in [
        (Method::GET, format!("licenses/id/{license_id}"), None),
        (Method::GET, format!("licenses/{license_key}"), None),
        (
            Method::PUT,
            format!("licenses/id/{license_id}"),
            Some(r#"{"suspended":false}"#),
        ),
        (Method::DELETE, format!("licenses/id/{license_id}"), None),
        (Method::GET, format!("licenses/id/{license_id}/hwid"), None),
        (Method::GET, format!("customers/{customer}"), None),
        (
            Method::PUT,
            format!("customers/{customer}"),
            Some(r#"{"fullName":"Back"}"#),
        ),
        (Method::DELETE, format!("customers/{customer}"), None),
        (Method::GET, format!("releases/{release}"), None),
        (Method::DELETE, format!("releases/{release}"), None),
    ] {
        let answer = s
            .send(method.clone(), &s.dev(&path), Some(s.key()), body)
            .await;
        assert_eq!(answer.status, 404, "{method} {path}: {}", answer.body);
    }
    s.client_raw(
        &s.client_url("verify"),
        &json!({"licenseKey": license_key, "hardwareIdentifier": "device-aaaa-0002"}).to_string(),
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    assert_eq!(s.get(&s.dev("licenses")).await.ok()["totalResults"], 0);
    assert_eq!(s.get(&s.dev("customers")).await.ok()["totalResults"], 0);
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);
}
