//! The audit log: every write through the developer and admin APIs leaves one entry, written with
//! the change; failed writes leave none; secrets never appear; the log is the team's own.

use licensing_core::model::{Action, Actor};
use licensing_core::store::{CustomerStore, Journal};
use licensing_core::{AuditId, Timestamp};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::TestServer;

const TOKEN: &str = "admin-token-for-tests-0123456789";

/// The whole log, newest first.
async fn log(s: &TestServer, query: &str) -> Vec<Value> {
    let answer = s
        .get(&s.dev(&format!("audit-log?pageSize=100&{query}")))
        .await;
    answer.ok()["entries"].as_array().unwrap().clone()
}

fn actions(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect()
}

fn change<'a>(entry: &'a Value, field: &str) -> &'a Value {
    entry["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == field)
        .unwrap_or_else(|| panic!("no change of {field} in {entry}"))
}

#[tokio::test]
async fn every_write_is_audited_with_who_where_and_what_changed() {
    let s = TestServer::start().await;
    let initial = s.get(&s.dev("api-keys")).await.ok()["apiKeys"][0].clone();

    let product = s
        .post(&s.dev("products"), r#"{"name":"Editor"}"#)
        .await
        .ok()
        .clone();
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"fullName":"Ann","email":"ann@example.com"}"#,
        )
        .await
        .ok()
        .clone();
    let license = s
        .license(
            &json!({"expirationType": "NEVER", "productIds": [product["id"]], "customerIds": [customer["id"]], "ipLimit": 2})
                .to_string(),
        )
        .await;
    let id = license["id"].as_str().unwrap();
    // Through a trusted proxy: the forwarded address is the client's.
    let suspended = s
        .client
        .put(s.dev(&format!("licenses/id/{id}")))
        .bearer_auth(s.key())
        .header("x-forwarded-for", "203.0.113.9")
        .header("content-type", "application/json")
        .body(r#"{"suspended":true}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(suspended.status(), 200);
    s.put(&s.dev(&format!("licenses/id/{id}")), r#"{"ipLimit":5}"#)
        .await
        .ok();
    s.put(&s.dev("settings"), r#"{"ipTimeout":60}"#).await.ok();
    let spare = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"spare","scopes":["licenses:read"]}"#,
        )
        .await
        .ok()
        .clone();
    let entry = s
        .post(
            &s.dev("blacklist"),
            r#"{"type":"IP","value":"198.51.100.7"}"#,
        )
        .await
        .ok()
        .clone();
    s.delete(&s.dev(&format!("blacklist/{}", entry["id"].as_str().unwrap())))
        .await
        .ok();
    s.delete(&s.dev(&format!("api-keys/{}", spare["id"].as_str().unwrap())))
        .await
        .ok();
    s.delete(&s.dev(&format!("licenses/id/{id}"))).await.ok();

    // The team's creation (on the command line) comes first; then this key's writes.
    let first = log(&s, "sortDirection=asc").await;
    assert_eq!(first[0]["action"], "team.created");
    assert_eq!(
        first[0]["actor"],
        json!({"type": "SYSTEM", "id": null, "name": "command line"})
    );
    assert_eq!(first[0]["address"], Value::Null);
    let all = log(&s, "actor=API_KEY").await;
    assert_eq!(
        actions(&all),
        [
            "license.deleted",
            "api_key.revoked",
            "blacklist.deleted",
            "blacklist.created",
            "api_key.created",
            "settings.updated",
            "license.updated",
            "license.suspended",
            "license.created",
            "customer.created",
            "product.created",
        ],
        "newest first"
    );
    for e in &all {
        assert_eq!(e["teamId"], s.team_id().to_string());
        assert_eq!(
            e["actor"],
            json!({"type": "API_KEY", "id": initial["id"], "name": "initial"})
        );
    }
    // Who suspended this license, from where, and what changed.
    let suspension = &log(&s, &format!("resourceId={id}&action=license.suspended")).await[0];
    assert_eq!(suspension["address"], "203.0.113.9");
    assert_eq!(suspension["resourceType"], "license");
    assert_eq!(
        change(suspension, "suspended"),
        &json!({"field": "suspended", "old": false, "new": true})
    );
    assert_eq!(
        suspension["changes"].as_array().unwrap().len(),
        1,
        "{suspension}"
    );
    let limit = &all[6];
    assert_eq!(limit["address"], "127.0.0.1");
    assert_eq!(
        change(limit, "ipLimit"),
        &json!({"field": "ipLimit", "old": 2, "new": 5})
    );
    assert_eq!(
        change(&all[5], "ipTimeout"),
        &json!({"field": "ipTimeout", "old": null, "new": 60})
    );
    let created = &all[8];
    assert_eq!(change(created, "licenseKey")["new"], license["licenseKey"]);
    let deleted = &all[0];
    assert_eq!(change(deleted, "licenseKey")["old"], license["licenseKey"]);
    assert!(change(deleted, "licenseKey").get("new").is_none());

    // A key's secret appears as changed, never as a value; its hash not at all.
    let key_created = &all[4];
    assert_eq!(
        change(key_created, "key"),
        &json!({"field": "key", "secret": true})
    );
    assert_eq!(change(key_created, "name")["new"], "spare");
    let text = s
        .get(&s.dev("audit-log?pageSize=100"))
        .await
        .body
        .to_string();
    assert!(!text.contains(spare["key"].as_str().unwrap()));
    assert!(!text.contains("hash"), "{text}");

    // Every record's history, by resource.
    assert_eq!(
        actions(&log(&s, &format!("resourceId={id}")).await),
        [
            "license.deleted",
            "license.updated",
            "license.suspended",
            "license.created"
        ]
    );
    assert_eq!(log(&s, "resourceType=blacklist").await.len(), 2);
    assert_eq!(
        log(&s, &format!("actor={}", initial["id"].as_str().unwrap()))
            .await
            .len(),
        11
    );
    assert!(log(&s, "actor=ADMIN").await.is_empty());
}

#[tokio::test]
async fn forgetting_devices_and_the_admin_api_are_audited() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let license = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let id = license["id"].as_str().unwrap();
    s.activity(id, "device-0000000001", 1).await;
    let hwid = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await.ok()["hwids"][0].clone();
    let hwid_id = hwid["id"].as_str().unwrap();
    s.patch(
        &s.dev(&format!("licenses/id/{id}/hwid/{hwid_id}")),
        r#"{"forgotten":true}"#,
    )
    .await
    .ok();
    let forgot = &log(&s, "resourceType=device").await[0];
    assert_eq!(forgot["action"], "device.forgotten");
    assert_eq!(forgot["resourceId"], hwid_id);
    assert_eq!(change(forgot, "forgotten")["new"], true);

    let url = format!("{}/api/v1/admin/teams/{}/features", s.base, s.team_id());
    s.send(
        Method::PUT,
        &url,
        Some(TOKEN),
        Some(r#"{"classloader":false}"#),
    )
    .await
    .ok();
    let admin = log(&s, "actor=ADMIN").await;
    assert_eq!(actions(&admin), ["team.features_updated"]);
    assert_eq!(
        admin[0]["actor"],
        json!({"type": "ADMIN", "id": null, "name": null})
    );
    assert_eq!(admin[0]["address"], "127.0.0.1");
    assert_eq!(
        change(&admin[0], "classloader"),
        &json!({"field": "classloader", "old": true, "new": false})
    );

    // A team created through the admin API starts its log with its creation.
    let teams = format!("{}/api/v1/admin/teams", s.base);
    let created = s
        .send(
            Method::POST,
            &teams,
            Some(TOKEN),
            Some(r#"{"name":"Acme"}"#),
        )
        .await
        .ok()
        .clone();
    let acme = created["teamId"].as_str().unwrap();
    let url = format!("{}/api/v1/dev/teams/{acme}/audit-log", s.base);
    let acme_log = s
        .send(Method::GET, &url, created["apiKey"].as_str(), None)
        .await
        .ok()
        .clone();
    assert_eq!(acme_log["totalResults"], 1);
    let first = &acme_log["entries"][0];
    assert_eq!(first["action"], "team.created");
    assert_eq!(first["actor"]["type"], "ADMIN");
    assert_eq!(change(first, "name")["new"], "Acme");
    // Team A's log does not show it.
    assert!(log(&s, &format!("resourceId={acme}")).await.is_empty());
}

#[tokio::test]
async fn failed_writes_leave_no_entry() {
    let s = TestServer::start().await;
    let before = log(&s, "").await.len();
    s.post(
        &s.dev("licenses"),
        r#"{"expirationType":"NEVER","ipLimit":-1}"#,
    )
    .await
    .err(400, "BAD_REQUEST");
    s.post(
        &s.dev("licenses"),
        &json!({"expirationType": "NEVER", "customerIds": [uuid::Uuid::new_v4()]}).to_string(),
    )
    .await
    .err(404, "CUSTOMER_NOT_FOUND");
    s.delete(&s.dev(&format!("customers/{}", uuid::Uuid::new_v4())))
        .await
        .err(404, "CUSTOMER_NOT_FOUND");
    s.delete(&s.dev(&format!("blacklist/{}", uuid::Uuid::new_v4())))
        .await
        .err(404, "BAD_REQUEST");
    s.post(
        &s.dev("blacklist"),
        r#"{"type":"IP","value":"198.51.100.7"}"#,
    )
    .await
    .ok();
    s.post(
        &s.dev("blacklist"),
        r#"{"type":"IP","value":"198.51.100.7"}"#,
    )
    .await
    .err(400, "BAD_REQUEST");
    let after = log(&s, "").await;
    assert_eq!(after.len(), before + 1, "{after:?}");
    assert_eq!(after[0]["action"], "blacklist.created");
}

#[tokio::test]
async fn the_log_is_the_teams_own_and_needs_its_scope() {
    let s = TestServer::start().await;
    s.post(&s.dev("products"), r#"{"name":"Editor"}"#)
        .await
        .ok();
    let other = s.other_team().await;
    // Another team's key cannot read this team's log.
    s.send(Method::GET, &s.dev("audit-log"), Some(&other.api_key), None)
        .await
        .err(403, "FORBIDDEN");
    // Its own log holds none of this team's entries.
    let url = format!("{}/api/v1/dev/teams/{}/audit-log", s.base, other.team_id);
    let theirs = s.send(Method::GET, &url, Some(&other.api_key), None).await;
    assert!(
        theirs.ok()["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["action"] != "product.created"),
        "{:?}",
        theirs.body
    );
    // A key without `audit-log:read` is refused, naming the scope.
    let narrow = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"narrow","scopes":["licenses:*"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = s
        .send(Method::GET, &s.dev("audit-log"), Some(&narrow), None)
        .await;
    refused.err(403, "FORBIDDEN");
    assert!(refused.body.to_string().contains("audit-log:read"));
    let reader = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"auditor","scopes":["audit-log:read"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    s.send(Method::GET, &s.dev("audit-log"), Some(&reader), None)
        .await
        .ok();
    // `audit-log:write` is not a scope.
    s.post(
        &s.dev("api-keys"),
        r#"{"name":"x","scopes":["audit-log:write"]}"#,
    )
    .await
    .err(400, "BAD_REQUEST");
}

#[tokio::test]
async fn queries_are_checked_and_pages_follow_each_other() {
    let s = TestServer::start().await;
    for (query, field) in [
        ("action=license.frobbed", "action"),
        ("resourceType=licence", "resourceType"),
        ("actor=someone", "actor"),
        ("from=yesterday", "from"),
        ("pageSize=7", "pageSize"),
        ("color=red", "color"),
    ] {
        let fields = s
            .get(&s.dev(&format!("audit-log?{query}")))
            .await
            .err(400, "BAD_REQUEST")
            .fields();
        assert_eq!(fields, [field], "{query}");
    }
    for i in 0..12 {
        s.post(
            &s.dev("products"),
            &json!({"name": format!("P{i}")}).to_string(),
        )
        .await
        .ok();
    }
    let s = &s;
    let page = |n: u32| {
        let url = s.dev(&format!(
            "audit-log?resourceType=product&pageSize=10&page={n}"
        ));
        async move { s.get(&url).await }
    };
    let first = page(1).await.ok().clone();
    assert_eq!(first["totalResults"], 12);
    assert_eq!(first["hasNextPage"], true);
    assert_eq!(
        change(&first["entries"][0], "name")["new"],
        "P11",
        "newest first"
    );
    let second = page(2).await.ok().clone();
    assert_eq!(second["entries"].as_array().unwrap().len(), 2);
    assert_eq!(second["hasNextPage"], false);
    assert_eq!(change(&second["entries"][1], "name")["new"], "P0");
    let past = page(5).await.ok().clone();
    assert_eq!(
        (
            past["totalResults"].as_u64(),
            past["entries"].as_array().unwrap().len()
        ),
        (Some(12), 0)
    );
    let since = Timestamp::now().plus_days(1).to_string();
    let later = s
        .get(&s.dev(&format!("audit-log?from={since}")))
        .await
        .ok()
        .clone();
    assert_eq!(later["totalResults"], 0);
}

#[tokio::test]
async fn entries_past_the_retention_are_pruned() {
    let s = TestServer::start().await;
    let team = s.team_id();
    let write = |days_ago: u32, name: &str| {
        let at =
            Timestamp::from_millis(Timestamp::now().as_millis() - i64::from(days_ago) * 86_400_000);
        let customer = licensing_core::model::Customer {
            id: licensing_core::CustomerId::new(),
            email: None,
            full_name: Some(name.into()),
            username: None,
            metadata: Vec::new(),
            address: licensing_core::model::Address::default(),
            chat_account: None,
            team_id: team,
            created_by_user_id: licensing_core::UserId::ADMIN,
            created_at: at,
            updated_at: at,
        };
        let journal = Journal::audit(licensing_core::model::AuditEntry {
            id: AuditId::new(),
            team_id: team,
            at,
            actor: Actor::system("test"),
            address: None,
            action: Action::CustomerCreated,
            resource_type: "customer".into(),
            resource_id: customer.id.to_string(),
            changes: Vec::new(),
            product_ids: None,
        });
        (customer, journal)
    };
    for (days, name) in [(400, "old"), (366, "older than a year"), (10, "recent")] {
        let (customer, journal) = write(days, name);
        s.store.create_customer(&customer, &journal).await.unwrap();
    }
    // The pruner runs when the server starts, then hourly.
    let s = s.restart().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = log(&s, "resourceType=customer").await;
        if left.len() == 1 {
            assert_eq!(change_free_name(&s, &left[0]).await, "recent");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not pruned: {left:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The records themselves stay.
    let customers = s.get(&s.dev("customers")).await;
    assert_eq!(customers.ok()["totalResults"], 3, "{:?}", customers.body);
}

/// The name of the customer an entry is about.
async fn change_free_name(s: &TestServer, entry: &Value) -> String {
    let id = entry["resourceId"].as_str().unwrap();
    s.get(&s.dev(&format!("customers/{id}"))).await.ok()["fullName"]
        .as_str()
        .unwrap()
        .to_owned()
}
