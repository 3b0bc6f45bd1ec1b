//! (ext) Policies (protocol.md section 7): named plans whose live terms licenses inherit, with
//! overrides, `inherit`, an expiration copied once, grace periods answered `VALID`, deletes that
//! refuse or detach, and isolation between teams. On PostgreSQL, a policy's change reaches another
//! instance's client API within moments.

use std::time::{Duration, Instant};

use licensing_core::model::License;
use licensing_core::store::LicenseStore;
use licensing_core::{LicenseId, Timestamp};
use serde_json::{Value, json};

use crate::helpers::{ClientAnswer, TestServer, on_postgres};

async fn policy(s: &TestServer, body: Value) -> Value {
    let created = s.post(&s.dev("policies"), &body.to_string()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.ok().clone()
}

fn id_of(v: &Value) -> &str {
    v["id"].as_str().unwrap()
}

async fn verify(s: &TestServer, key: &str, device: &str) -> ClientAnswer {
    s.client(
        "verify",
        &json!({"licenseKey": key, "hardwareIdentifier": device}),
        None,
    )
    .await
}

/// Moves a license's expiry to `days_ago` days in the past, in the store (the API refuses past
/// dates).
async fn expired_days_ago(s: &TestServer, license: &Value, days_ago: i64) {
    let id: LicenseId = license["id"].as_str().unwrap().parse().unwrap();
    let mut l: License = s.store.get_license(s.team_id(), id).await.unwrap().unwrap();
    l.expiration_date = Some(Timestamp::from_millis(
        Timestamp::now().as_millis() - days_ago * 86_400_000,
    ));
    s.store
        .update_license(&l, &licensing_core::store::Journal::NONE)
        .await
        .unwrap();
}

#[tokio::test]
async fn policies_are_created_listed_updated_and_checked_field_by_field() {
    let s = TestServer::start().await;
    let pro = policy(
        &s,
        json!({"name": "Pro", "expirationType": "DURATION", "expirationDays": 365, "hwidLimit": 3,
               "sessionLimit": 2, "graceDays": 7, "licenseFileTtl": 86400,
               "selfServiceResets": {"count": 5},
               "meters": [{"code": "EXPORTS", "limit": 100, "period": "month"}],
               "metadata": [{"key": "tier", "value": "pro"}]}),
    )
    .await;
    for (member, value) in [
        ("name", json!("Pro")),
        ("expirationType", json!("DURATION")),
        ("expirationStart", json!("CREATION")),
        ("expirationDays", json!(365)),
        ("hwidLimit", json!(3)),
        ("ipLimit", Value::Null),
        ("sessionLimit", json!(2)),
        ("sessionTtl", Value::Null),
        ("graceDays", json!(7)),
        ("licenseFileTtl", json!(86400)),
        ("selfServiceResets", json!({"count": 5, "periodDays": 30})),
        (
            "meters",
            json!([{"code": "EXPORTS", "limit": 100, "period": "month"}]),
        ),
        ("productIds", json!([])),
        ("entitlementIds", json!([])),
    ] {
        assert_eq!(pro[member], value, "{member} in {pro}");
    }
    policy(&s, json!({"name": "Basic"})).await;
    policy(&s, json!({"name": "Enterprise", "ipLimit": 0})).await;

    // Field-named refusals.
    for (body, fields) in [
        (json!({}), vec!["name"]),
        (
            json!({"name": "x", "expirationType": "DATE"}),
            vec!["expirationType"],
        ),
        (
            json!({"name": "x", "expirationType": "DURATION"}),
            vec!["expirationDays"],
        ),
        (
            json!({"name": "x", "graceDays": 400, "hwidLimit": 0}),
            vec!["hwidLimit", "graceDays"],
        ),
        (
            json!({"name": "x", "meters": [{"code": "lower"}]}),
            vec!["meters[0].code"],
        ),
        (json!({"name": "x", "limit": 1}), vec!["limit"]),
    ] {
        let refused = s.post(&s.dev("policies"), &body.to_string()).await;
        assert_eq!(refused.err(400, "BAD_REQUEST").fields(), fields, "{body}");
    }
    // References must be the team's.
    let unknown = licensing_core::ProductId::new();
    s.post(
        &s.dev("policies"),
        &json!({"name": "x", "productIds": [unknown]}).to_string(),
    )
    .await
    .err(404, "PRODUCT_NOT_FOUND");

    // Lists: search in the name, sorted by name.
    let page = s.get(&s.dev("policies?search=PRO")).await.ok().clone();
    assert_eq!(page["totalResults"], 1);
    let page = s
        .get(&s.dev("policies?sortColumn=name&sortDirection=asc"))
        .await
        .ok()
        .clone();
    let names: Vec<&str> = page["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Basic", "Enterprise", "Pro"]);

    // An update changes what it gives; null clears to the default.
    let url = s.dev(&format!("policies/{}", id_of(&pro)));
    let updated = s
        .put(
            &url,
            r#"{"hwidLimit":5,"graceDays":null,"selfServiceResets":null}"#,
        )
        .await
        .ok()
        .clone();
    assert_eq!(updated["hwidLimit"], 5);
    assert_eq!(updated["graceDays"], 0);
    assert_eq!(
        updated["selfServiceResets"],
        json!({"count": 3, "periodDays": 30})
    );
    assert_eq!(updated["name"], "Pro");
    assert_eq!(s.get(&url).await.ok()["hwidLimit"], 5);
    s.put(&url, r#"{"name":null}"#)
        .await
        .err(400, "BAD_REQUEST");
    let missing = s.dev(&format!("policies/{}", licensing_core::PolicyId::new()));
    s.get(&missing).await.err(404, "BAD_REQUEST");
    s.put(&missing, r#"{"name":"x"}"#)
        .await
        .err(404, "BAD_REQUEST");

    // Audited.
    let log = s
        .get(&s.dev("audit-log?resourceType=policy"))
        .await
        .ok()
        .clone();
    let actions: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(
        actions.contains(&"policy.created") && actions.contains(&"policy.updated"),
        "{log}"
    );
}

#[tokio::test]
async fn licenses_follow_their_policy_live_except_what_they_override() {
    let s = TestServer::start().await;
    let product = s.product("App").await;
    let pro = policy(
        &s,
        json!({"name": "Pro", "expirationType": "DURATION", "expirationDays": 30, "hwidLimit": 1,
               "ipLimit": 10, "productIds": [product["id"]]}),
    )
    .await;
    let policy_url = s.dev(&format!("policies/{}", id_of(&pro)));

    // Created on the policy: its expiration copied, its terms shown, nothing overridden.
    let l = s.license(&json!({"policyId": pro["id"]}).to_string()).await;
    assert_eq!(l["policyId"], pro["id"]);
    assert_eq!(l["expirationType"], "DURATION");
    assert_eq!(l["expirationDays"], 30);
    assert_eq!(l["hwidLimit"], 1);
    assert_eq!(l["productIds"], json!([product["id"]]));
    assert_eq!(l["overrides"], json!([]));
    let expiry = l["expirationDate"].clone();
    assert!(expiry.is_string());
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    let license_url = s.dev(&format!("licenses/id/{}", id_of(&l)));

    // One device; a second is refused by the policy's limit ...
    verify(&s, &key, "policy-device-0001").await.valid();
    verify(&s, &key, "policy-device-0002")
        .await
        .err(403, "HWID_LIMIT_REACHED");
    // ... until the policy allows two: the next request admits it, through the same instance.
    s.put(&policy_url, r#"{"hwidLimit":2,"expirationDays":90}"#)
        .await
        .ok();
    let second = verify(&s, &key, "policy-device-0002").await;
    second.valid();
    assert_eq!(second.body["data"]["license"]["hwidLimit"], 2);
    let shown = s.get(&license_url).await.ok().clone();
    assert_eq!(shown["hwidLimit"], 2);
    // An expiry never moves with the policy.
    assert_eq!(shown["expirationDate"], expiry);
    assert_eq!(shown["expirationDays"], 30);

    // An override survives a policy edit ...
    let overridden = s
        .put(&license_url, r#"{"ipLimit":null,"hwidLimit":3}"#)
        .await
        .ok()
        .clone();
    assert_eq!(overridden["overrides"], json!(["hwidLimit", "ipLimit"]));
    assert_eq!(
        overridden["ipLimit"],
        Value::Null,
        "null overrides as no limit"
    );
    s.put(&policy_url, r#"{"hwidLimit":4,"ipLimit":20}"#)
        .await
        .ok();
    let shown = s.get(&license_url).await.ok().clone();
    assert_eq!(
        (&shown["hwidLimit"], &shown["ipLimit"]),
        (&json!(3), &Value::Null)
    );
    // ... and inherit drops it.
    let inherited = s
        .put(&license_url, r#"{"inherit":["hwidLimit"]}"#)
        .await
        .ok()
        .clone();
    assert_eq!(inherited["hwidLimit"], 4);
    assert_eq!(inherited["overrides"], json!(["ipLimit"]));
    for (body, field) in [
        (r#"{"inherit":["expirationDays"]}"#, "inherit"),
        (r#"{"inherit":["hwidLimit"],"hwidLimit":2}"#, "inherit"),
    ] {
        let refused = s.put(&license_url, body).await;
        assert_eq!(refused.err(400, "BAD_REQUEST").fields(), [field], "{body}");
    }

    // Listed by policy; a license without one is not.
    s.license(r#"{"expirationType":"NEVER"}"#).await;
    let page = s
        .get(&s.dev(&format!("licenses?policyId={}", id_of(&pro))))
        .await
        .ok()
        .clone();
    assert_eq!(page["totalResults"], 1);
    assert_eq!(page["licenses"][0]["hwidLimit"], 4);

    // Taken off the policy: what applied becomes its own.
    let off = s
        .put(&license_url, r#"{"policyId":null}"#)
        .await
        .ok()
        .clone();
    assert_eq!(off["policyId"], Value::Null);
    assert_eq!(off["overrides"], json!([]));
    assert_eq!(
        (&off["hwidLimit"], &off["ipLimit"]),
        (&json!(4), &Value::Null)
    );
    assert_eq!(off["productIds"], json!([product["id"]]));
    s.put(&policy_url, r#"{"hwidLimit":9}"#).await.ok();
    assert_eq!(s.get(&license_url).await.ok()["hwidLimit"], 4);

    // A license's own expiration wins over the policy's; the policy's type is checked against
    // the members a license gives.
    let own = s
        .license(&json!({"policyId": pro["id"], "expirationType": "NEVER"}).to_string())
        .await;
    assert_eq!(own["expirationType"], "NEVER");
    let refused = s
        .post(
            &s.dev("licenses"),
            &json!({"policyId": pro["id"], "expirationDate": "2030-01-01T00:00:00Z"}).to_string(),
        )
        .await;
    assert_eq!(refused.err(400, "BAD_REQUEST").fields(), ["expirationDate"]);
    s.post(
        &s.dev("licenses"),
        &json!({"policyId": licensing_core::PolicyId::new()}).to_string(),
    )
    .await
    .err(404, "BAD_REQUEST");
}

#[tokio::test]
async fn grace_answers_valid_until_it_ends_and_is_gone_with_the_policys_grace() {
    let s = TestServer::start().await;
    let plan = policy(
        &s,
        json!({"name": "Yearly", "expirationType": "DURATION", "expirationDays": 365, "graceDays": 7}),
    )
    .await;
    let l = s
        .license(&json!({"policyId": plan["id"]}).to_string())
        .await;
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    expired_days_ago(&s, &l, 2).await;

    let keys = s.public_keys().await;
    let answer = verify(&s, &key, "grace-device-0001").await;
    answer.valid();
    answer.signed_by(&keys);
    let until = answer.body["data"]["license"]["graceUntil"]
        .as_str()
        .unwrap()
        .to_owned();
    let details = answer.body["result"]["details"].as_str().unwrap();
    assert_eq!(
        details,
        format!("License is valid (grace period until {until})")
    );
    let end = Timestamp::parse(&until).unwrap();
    let expected = Timestamp::now().as_millis() + 5 * 86_400_000;
    assert!((end.as_millis() - expected).abs() < 60_000, "{until}");
    let beat = s
        .client(
            "heartbeat",
            &json!({"licenseKey": key, "hardwareIdentifier": "grace-device-0001"}),
            None,
        )
        .await;
    beat.valid();
    assert_eq!(beat.body["data"]["license"]["graceUntil"], json!(until));
    // A license file issued in grace never reaches past its end.
    let file = s
        .post(
            &s.dev(&format!("licenses/id/{}/file", id_of(&l))),
            r#"{"ttl":2592000}"#,
        )
        .await;
    let expires = file.ok()["expiresAt"].as_str().unwrap().to_owned();
    assert!(
        Timestamp::parse(&expires).unwrap() <= end,
        "{expires} > {until}"
    );

    // Outside grace nothing is said of it.
    let fresh = s
        .license(&json!({"policyId": plan["id"]}).to_string())
        .await;
    let answer = verify(
        &s,
        fresh["licenseKey"].as_str().unwrap(),
        "grace-device-0002",
    )
    .await;
    assert_eq!(answer.body["result"]["details"], "License is valid");
    assert!(answer.body["data"]["license"].get("graceUntil").is_none());

    // The policy's grace removed: expired at once.
    s.put(
        &s.dev(&format!("policies/{}", id_of(&plan))),
        r#"{"graceDays":0}"#,
    )
    .await
    .ok();
    verify(&s, &key, "grace-device-0001")
        .await
        .err(403, "LICENSE_EXPIRED");
    // Past a grace that is back: expired too.
    s.put(
        &s.dev(&format!("policies/{}", id_of(&plan))),
        r#"{"graceDays":1}"#,
    )
    .await
    .ok();
    verify(&s, &key, "grace-device-0001")
        .await
        .err(403, "LICENSE_EXPIRED");
}

#[tokio::test]
async fn deleting_a_policy_in_use_is_refused_or_detaches_its_licenses() {
    let s = TestServer::start().await;
    let plan = policy(
        &s,
        json!({"name": "Team", "hwidLimit": 2, "sessionLimit": 3}),
    )
    .await;
    let url = s.dev(&format!("policies/{}", id_of(&plan)));
    let a = s
        .license(&json!({"policyId": plan["id"]}).to_string())
        .await;
    let b = s
        .license(&json!({"policyId": plan["id"], "hwidLimit": 5}).to_string())
        .await;
    assert_eq!(b["overrides"], json!(["hwidLimit"]));

    let refused = s.delete(&url).await;
    refused.err(409, "CONFLICT");
    assert!(
        refused.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("used by 2 licenses"),
        "{}",
        refused.body
    );
    s.get(&url).await.ok();
    s.delete(&format!("{url}?detach=maybe"))
        .await
        .err(400, "BAD_REQUEST");

    let deleted = s.delete(&format!("{url}?detach=true")).await.ok().clone();
    assert_eq!(deleted["detachedLicenses"], 2);
    s.get(&url).await.err(404, "BAD_REQUEST");
    for (license, hwid) in [(&a, 2), (&b, 5)] {
        let shown = s
            .get(&s.dev(&format!("licenses/id/{}", id_of(license))))
            .await
            .ok()
            .clone();
        assert_eq!(shown["policyId"], Value::Null);
        assert_eq!(shown["overrides"], json!([]));
        assert_eq!(shown["hwidLimit"], hwid);
        assert_eq!(shown["sessionLimit"], 3);
    }
    // An unused policy deletes without detach.
    let unused = policy(&s, json!({"name": "Unused"})).await;
    let deleted = s
        .delete(&s.dev(&format!("policies/{}", id_of(&unused))))
        .await
        .ok()
        .clone();
    assert_eq!(deleted["detachedLicenses"], 0);
}

#[tokio::test]
async fn a_teams_policies_are_invisible_to_another_team() {
    let s = TestServer::start().await;
    let plan = policy(&s, json!({"name": "Mine", "hwidLimit": 1})).await;
    let b = s.other_team().await;
    let theirs = |path: &str| {
        format!(
            "{}/api/v1/dev/teams/{}/{path}",
            s.dev("").split("/api/").next().unwrap(),
            b.team_id
        )
    };
    let with_b = |method: reqwest::Method, url: String, body: Option<&'static str>| {
        let s = &s;
        let key = b.api_key.clone();
        async move { s.send(method, &url, Some(&key), body).await }
    };
    // Team B sees none of A's policies, and cannot use one.
    let page = with_b(reqwest::Method::GET, theirs("policies"), None).await;
    assert_eq!(page.ok()["totalResults"], 0);
    let path = format!("policies/{}", id_of(&plan));
    with_b(reqwest::Method::GET, theirs(&path), None)
        .await
        .err(404, "BAD_REQUEST");
    with_b(reqwest::Method::PUT, theirs(&path), Some(r#"{"name":"x"}"#))
        .await
        .err(404, "BAD_REQUEST");
    with_b(reqwest::Method::DELETE, theirs(&path), None)
        .await
        .err(404, "BAD_REQUEST");
    let body: &'static str = Box::leak(
        json!({"policyId": plan["id"], "expirationType": "NEVER"})
            .to_string()
            .into_boxed_str(),
    );
    with_b(reqwest::Method::POST, theirs("licenses"), Some(body))
        .await
        .err(404, "BAD_REQUEST");
    // B's key on A's path is refused as another team's.
    with_b(reqwest::Method::GET, s.dev(&path), None)
        .await
        .err(403, "FORBIDDEN");
    // A is unchanged.
    assert_eq!(s.get(&s.dev(&path)).await.ok()["name"], "Mine");
}

/// On PostgreSQL: a limit raised on the policy through one instance admits the next device
/// through another within a second, by the database's announcement of the change
/// (milliseconds), well before the team's cached copy would expire on its own (30 seconds).
#[tokio::test]
async fn a_policy_change_reaches_another_instance_at_once() {
    if !on_postgres() {
        eprintln!("a_policy_change_reaches_another_instance_at_once: runs on PostgreSQL only");
        return;
    }
    let writer = TestServer::start().await;
    let reader = writer.second_instance().await;
    let plan = policy(&writer, json!({"name": "One device", "hwidLimit": 1})).await;
    let l = writer
        .license(&json!({"policyId": plan["id"]}).to_string())
        .await;
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    verify(&reader, &key, "instances-device-01").await.valid();
    verify(&reader, &key, "instances-device-02")
        .await
        .err(403, "HWID_LIMIT_REACHED");
    writer
        .put(
            &writer.dev(&format!("policies/{}", id_of(&plan))),
            r#"{"hwidLimit":2}"#,
        )
        .await
        .ok();
    let changed = Instant::now();
    let bound = Duration::from_secs(5);
    loop {
        // When the request was sent: the change must have arrived by then, not its answer.
        let sent = changed.elapsed();
        let answer = verify(&reader, &key, "instances-device-02").await;
        if answer.status == 200 {
            assert_eq!(answer.body["data"]["license"]["hwidLimit"], 2);
            assert!(
                sent < Duration::from_secs(1),
                "the other instance first admitted a request sent {sent:?} after the change"
            );
            break;
        }
        assert_eq!(answer.code(), "HWID_LIMIT_REACHED", "{:?}", answer.body);
        assert!(
            changed.elapsed() < bound,
            "the other instance still refuses after {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eprintln!(
        "a policy's change reached the other instance after {:?}",
        changed.elapsed()
    );
}

/// An archive carries the policies, after the products they name and before the licenses on
/// them, which come back on them with their overrides.
#[tokio::test]
async fn archives_carry_policies_and_the_licenses_on_them() {
    use licensing_core::store::PolicyStore;

    let s = TestServer::start().await;
    let product = s
        .post(&s.dev("products"), r#"{"name":"Desk"}"#)
        .await
        .ok()
        .clone();
    let plan = policy(
        &s,
        json!({"name": "Pro", "hwidLimit": 3, "graceDays": 7, "productIds": [product["id"]]}),
    )
    .await;
    let l = s
        .license(&json!({"policyId": plan["id"], "ipLimit": 4}).to_string())
        .await;
    let files = tempfile::tempdir().unwrap();
    let file_store = licensing_server::files::FileStore::new(files.path()).unwrap();
    let mut archive = Vec::new();
    licensing_server::archive::export(&s.store, &file_store, &mut archive)
        .await
        .unwrap();
    let text = String::from_utf8(archive.clone()).unwrap();
    assert!(text.contains(r#""kind":"policy""#), "{text}");
    assert!(text.contains(r#""version":8"#), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let (restored, _) = crate::helpers::open_test_store(dir.path()).await;
    let restored_files = licensing_server::files::FileStore::new(dir.path()).unwrap();
    licensing_server::archive::import(&restored, &restored_files, archive.as_slice())
        .await
        .unwrap();
    let team = s.team_id();
    let back = restored.list_policies(team).await.unwrap();
    assert_eq!(back, s.store.list_policies(team).await.unwrap());
    let id: LicenseId = l["id"].as_str().unwrap().parse().unwrap();
    let license = restored.get_license(team, id).await.unwrap().unwrap();
    assert_eq!(
        license,
        s.store.get_license(team, id).await.unwrap().unwrap()
    );
    assert_eq!(license.policy_id, Some(back[0].id));
    assert_eq!(license.overrides, [licensing_core::model::Term::IpLimit]);
}

/// A policy's products and entitlements are its licenses': a key restricted to a product reaches
/// the licenses whose policy grants it (and no others), and the license list's product and
/// entitlement filters find them.
#[tokio::test]
async fn a_policys_products_and_entitlements_are_its_licenses_for_reach_and_filters() {
    let s = TestServer::start().await;
    let a = s
        .post(&s.dev("products"), r#"{"name":"A"}"#)
        .await
        .ok()
        .clone();
    let b = s
        .post(&s.dev("products"), r#"{"name":"B"}"#)
        .await
        .ok()
        .clone();
    let sync = s
        .post(&s.dev("entitlements"), r#"{"name":"Sync","code":"SYNC"}"#)
        .await
        .ok()
        .clone();
    let plan_a = policy(
        &s,
        json!({"name": "A plan", "productIds": [a["id"]], "entitlementIds": [sync["id"]]}),
    )
    .await;
    let plan_b = policy(&s, json!({"name": "B plan", "productIds": [b["id"]]})).await;
    let on_a = s
        .license(&json!({"policyId": plan_a["id"]}).to_string())
        .await;
    let on_b = s
        .license(&json!({"policyId": plan_b["id"]}).to_string())
        .await;
    assert_eq!(on_a["productIds"], json!([a["id"]]));

    // The filters.
    let listed = |query: String| {
        let s = &s;
        async move {
            let page = s
                .get(&s.dev(&format!("licenses?{query}")))
                .await
                .ok()
                .clone();
            page["licenses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed(format!("productIds={}", id_of(&a))).await,
        [id_of(&on_a)]
    );
    assert_eq!(
        listed(format!("entitlementId={}", id_of(&sync))).await,
        [id_of(&on_a)]
    );

    // A key restricted to product A.
    let key = s
        .post(
            &s.dev("api-keys"),
            &json!({"name": "A desk", "productIds": [a["id"]]}).to_string(),
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let as_a = |method: reqwest::Method, path: String, body: Option<&'static str>| {
        let s = &s;
        let key = key.clone();
        async move { s.send(method, &s.dev(&path), Some(&key), body).await }
    };
    let page = as_a(reqwest::Method::GET, "licenses".into(), None).await;
    let ids: Vec<&str> = page.ok()["licenses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id_of(&on_a)]);
    as_a(
        reqwest::Method::GET,
        format!("licenses/id/{}", id_of(&on_a)),
        None,
    )
    .await
    .ok();
    as_a(
        reqwest::Method::GET,
        format!("licenses/id/{}", id_of(&on_b)),
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    as_a(
        reqwest::Method::POST,
        format!("licenses/id/{}/suspend", id_of(&on_a)),
        None,
    )
    .await
    .ok();
    as_a(
        reqwest::Method::POST,
        format!("licenses/id/{}/suspend", id_of(&on_b)),
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    // It makes licenses on its product's plan, not on another's, and changes no policy.
    let body: &'static str = Box::leak(
        json!({"policyId": plan_a["id"]})
            .to_string()
            .into_boxed_str(),
    );
    let made = as_a(reqwest::Method::POST, "licenses".into(), Some(body)).await;
    assert_eq!(made.ok()["policyId"], plan_a["id"]);
    let body: &'static str = Box::leak(
        json!({"policyId": plan_b["id"]})
            .to_string()
            .into_boxed_str(),
    );
    as_a(reqwest::Method::POST, "licenses".into(), Some(body))
        .await
        .err(403, "FORBIDDEN");
    as_a(
        reqwest::Method::PUT,
        format!("policies/{}", id_of(&plan_a)),
        Some(r#"{"hwidLimit":1}"#),
    )
    .await
    .err(403, "FORBIDDEN");
}
