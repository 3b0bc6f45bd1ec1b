use licensing_core::Timestamp;
use licensing_core::model::License;
use licensing_core::store::{Journal, LicenseStore};
use serde_json::{Value, json};

use crate::helpers::TestServer;

#[tokio::test]
async fn create_returns_the_license_with_customers_and_products() {
    let s = TestServer::start().await;
    let product = s.product("App").await;
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"email":"jane@example.com","fullName":"Jane"}"#,
        )
        .await
        .ok()
        .clone();
    let body = json!({
        "expirationType": "DURATION", "expirationDays": 30, "expirationStart": "CREATION",
        "ipLimit": 0, "hwidLimit": 2, "suspended": false,
        "customerIds": [customer["id"]], "productIds": [product["id"]],
        "metadata": [{"key": "tier", "value": "gold", "locked": true}]
    });
    let answer = s.post(&s.dev("licenses"), &body.to_string()).await;
    assert_eq!(answer.status, 200, "license create answers 200 (compat)");
    let l = answer.ok();
    let key = l["licenseKey"].as_str().unwrap();
    assert_eq!(key.len(), 29);
    assert!(key.split('-').all(|g| {
        g.len() == 5
            && g.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    }));
    assert_eq!(l["expirationType"], "DURATION");
    assert_eq!(l["expirationDays"], 30);
    assert!(l["expirationDate"].as_str().unwrap().ends_with('Z'));
    assert_eq!(l["ipLimit"], serde_json::Value::Null, "0 is unlimited");
    assert_eq!(l["hwidLimit"], 2);
    assert_eq!(l["teamId"], s.team_id().to_string());
    assert_eq!(l["customers"][0]["email"], "jane@example.com");
    assert_eq!(l["products"][0]["name"], "App");
    assert_eq!(
        l["metadata"][0],
        json!({"key": "tier", "value": "gold", "locked": true})
    );
    assert!(l["createdByUserId"].is_string());
    assert_eq!(l["lastActiveAt"], serde_json::Value::Null);
    assert!(
        answer.body["result"].get("code").is_none(),
        "developer successes carry no code"
    );
}

#[tokio::test]
async fn read_by_key_and_by_id_update_and_delete() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let (id, key) = (l["id"].as_str().unwrap(), l["licenseKey"].as_str().unwrap());
    assert_eq!(
        s.get(&s.dev(&format!("licenses/{key}"))).await.ok()["id"],
        id
    );
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}"))).await.ok()["licenseKey"],
        key
    );

    let updated = s
        .put(
            &s.dev(&format!("licenses/id/{id}")),
            r#"{"suspended":true,"hwidLimit":3,"licenseKey":"AAAAA-BBBBB-CCCCC-DDDDD-EEEEE"}"#,
        )
        .await;
    let u = updated.ok();
    assert_eq!(
        (u["suspended"].as_bool(), u["hwidLimit"].as_u64()),
        (Some(true), Some(3))
    );
    assert_eq!(u["licenseKey"], "AAAAA-BBBBB-CCCCC-DDDDD-EEEEE");
    s.get(&s.dev(&format!("licenses/{key}")))
        .await
        .err(404, "LICENSE_NOT_FOUND");

    // A second license cannot take that key.
    let other = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let clash = s
        .put(
            &s.dev(&format!("licenses/id/{}", other["id"].as_str().unwrap())),
            r#"{"licenseKey":"AAAAA-BBBBB-CCCCC-DDDDD-EEEEE"}"#,
        )
        .await;
    assert_eq!(clash.err(400, "BAD_REQUEST").fields(), ["licenseKey"]);

    let deleted = s
        .delete(&s.dev("licenses/AAAAA-BBBBB-CCCCC-DDDDD-EEEEE"))
        .await;
    assert_eq!(
        deleted.ok(),
        &json!({"licenseKey": "AAAAA-BBBBB-CCCCC-DDDDD-EEEEE", "deleted": true})
    );
    s.get(&s.dev(&format!("licenses/id/{id}")))
        .await
        .err(404, "LICENSE_NOT_FOUND");
    let other_id = other["id"].as_str().unwrap();
    assert_eq!(
        s.delete(&s.dev(&format!("licenses/id/{other_id}")))
            .await
            .ok(),
        &json!({"licenseId": other_id, "deleted": true})
    );
    s.delete(&s.dev(&format!("licenses/id/{other_id}")))
        .await
        .err(404, "LICENSE_NOT_FOUND");
}

#[tokio::test]
async fn create_validation_names_every_bad_field_and_stores_nothing() {
    let s = TestServer::start().await;
    let answer = s
        .post(
            &s.dev("licenses"),
            r#"{"expirationType":"DURATION","expirationDays":0,"ipLimit":-1,"hwidLimit":0}"#,
        )
        .await;
    assert_eq!(
        answer.err(400, "BAD_REQUEST").fields(),
        ["expirationDays", "ipLimit", "hwidLimit"]
    );
    assert_eq!(
        answer.body["result"]["details"],
        "expirationDays: must be at least 1 (got 0)"
    );
    let cases = [
        (r#"{}"#, "expirationType"),
        (
            r#"{"expirationType":"DATE","expirationDate":"2001-01-01T00:00:00Z"}"#,
            "expirationDate",
        ),
        (
            r#"{"expirationType":"NEVER","customerIds":["not-a-uuid"]}"#,
            "customerIds[0]",
        ),
        (r#"{"expirationType":"NEVER","hwidLimt":2}"#, "hwidLimt"),
        (
            r#"{"expirationType":"NEVER","suspended":"no"}"#,
            "suspended",
        ),
        (
            r#"{"expirationType":"NEVER","sendEmailDelivery":true}"#,
            "sendEmailDelivery",
        ),
        ("{\"expirationType\":", "body"),
        ("", "body"),
    ];
    for (body, field) in cases {
        let answer = s.post(&s.dev("licenses"), body).await;
        assert_eq!(answer.err(400, "BAD_REQUEST").fields(), [field], "{body}");
    }
    // Unknown customers and products are 404, with their codes.
    let missing = uuid::Uuid::new_v4();
    s.post(
        &s.dev("licenses"),
        &format!(r#"{{"expirationType":"NEVER","customerIds":["{missing}"]}}"#),
    )
    .await
    .err(404, "CUSTOMER_NOT_FOUND");
    s.post(
        &s.dev("licenses"),
        &format!(r#"{{"expirationType":"NEVER","productIds":["{missing}"]}}"#),
    )
    .await
    .err(404, "PRODUCT_NOT_FOUND");
    let list = s.get(&s.dev("licenses")).await;
    assert_eq!(list.ok()["totalResults"], 0, "nothing was created");
}

#[tokio::test]
async fn failed_updates_change_nothing() {
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":2}"#)
        .await;
    let url = s.dev(&format!("licenses/id/{}", l["id"].as_str().unwrap()));
    for body in [
        r#"{"hwidLimit":0,"suspended":true}"#,
        r#"{"suspended":null}"#,
        r#"{"expirationType":"DATE"}"#,
        r#"{"productIds":["6f9619ff-8b86-4011-b42d-00c04fc964ff"],"suspended":true}"#,
        r#"{"unknown":1}"#,
    ] {
        let answer = s.put(&url, body).await;
        assert!(
            answer.status == 400 || answer.status == 404,
            "{body}: {}",
            answer.body
        );
    }
    let after = s.get(&url).await.ok().clone();
    assert_eq!(after, l);
}

#[tokio::test]
async fn list_pages_sorts_and_filters() {
    let s = TestServer::start().await;
    let p1 = s.product("One").await;
    let p2 = s.product("Two").await;
    let c = s
        .post(&s.dev("customers"), r#"{"email":"c@example.com"}"#)
        .await
        .ok()
        .clone();
    let mut ids = Vec::new();
    for i in 0..27 {
        let mut body = json!({"expirationType": "NEVER"});
        if i % 2 == 0 {
            body["productIds"] = json!([p1["id"]]);
        }
        if i % 3 == 0 {
            body["productIds"] = json!([p2["id"]]);
            body["customerIds"] = json!([c["id"]]);
            body["metadata"] = json!([{"key": "plan", "value": format!("pro-{i}")}]);
        }
        ids.push(s.license(&body.to_string()).await["id"].clone());
        // Timestamps have millisecond precision: keep creations apart so the order is determined.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let page = s.get(&s.dev("licenses")).await;
    let page = page.ok();
    assert_eq!(
        (
            page["licenses"].as_array().unwrap().len(),
            page["totalResults"].as_u64(),
            page["hasNextPage"].as_bool()
        ),
        (25, Some(27), Some(true))
    );
    assert_eq!(page["licenses"][0]["id"], ids[26], "newest first");
    assert!(
        page["licenses"][0].get("customers").is_none(),
        "lists show no customers"
    );
    let page2 = s.get(&s.dev("licenses?page=2")).await;
    assert_eq!(page2.ok()["licenses"].as_array().unwrap().len(), 2);
    assert_eq!(page2.ok()["hasNextPage"], false);
    let asc = s
        .get(&s.dev("licenses?pageSize=10&sortDirection=asc&sortColumn=createdAt"))
        .await;
    assert_eq!(asc.ok()["licenses"][0]["id"], ids[0]);
    assert_eq!(asc.ok()["licenses"].as_array().unwrap().len(), 10);
    let by_updated = s
        .get(&s.dev("licenses?sortColumn=updatedAt&pageSize=50"))
        .await;
    assert_eq!(by_updated.ok()["totalResults"], 27);

    let with_p1 = s
        .get(&s.dev(&format!(
            "licenses?pageSize=100&productIds={}",
            p1["id"].as_str().unwrap()
        )))
        .await;
    assert_eq!(
        with_p1.ok()["totalResults"],
        (0..27).filter(|i| i % 2 == 0 && i % 3 != 0).count()
    );
    let either = s
        .get(&s.dev(&format!(
            "licenses?pageSize=100&productIds={},{}",
            p1["id"].as_str().unwrap(),
            p2["id"].as_str().unwrap()
        )))
        .await;
    assert_eq!(
        either.ok()["totalResults"],
        (0..27).filter(|i| i % 2 == 0 || i % 3 == 0).count()
    );
    let by_customer = s
        .get(&s.dev(&format!(
            "licenses?customerIds={}",
            c["id"].as_str().unwrap()
        )))
        .await;
    assert_eq!(by_customer.ok()["totalResults"], 9);
    let by_meta = s
        .get(&s.dev("licenses?metadataKey=plan&metadataValue=pro-2"))
        .await;
    assert_eq!(by_meta.ok()["totalResults"], 2, "pro-21 and pro-24");
    let key = s
        .get(&s.dev(&format!("licenses/id/{}", ids[5].as_str().unwrap())))
        .await
        .ok()["licenseKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let search = s
        .get(&s.dev(&format!("licenses?search={}", key[6..17].to_lowercase())))
        .await;
    assert_eq!(search.ok()["licenses"][0]["licenseKey"], key);
    // A key (or a piece of one across its groups) typed without its hyphens is found too.
    let bare = key.replace('-', "");
    for piece in [bare.clone(), bare[3..14].to_lowercase()] {
        let found = s.get(&s.dev(&format!("licenses?search={piece}"))).await;
        assert_eq!(found.ok()["totalResults"], 1, "{piece}");
        assert_eq!(found.ok()["licenses"][0]["licenseKey"], key, "{piece}");
    }
    let other = if bare.as_bytes()[20] == b'A' {
        'B'
    } else {
        'A'
    };
    let none = s
        .get(&s.dev(&format!("licenses?search={}{other}", &bare[..20])))
        .await;
    assert_eq!(none.ok()["totalResults"], 0);

    for (query, field) in [
        ("page=0", "page"),
        ("page=abc", "page"),
        ("pageSize=30", "pageSize"),
        ("sortColumn=name", "sortColumn"),
        ("sortDirection=sideways", "sortDirection"),
        ("productIds=abc", "productIds[0]"),
        ("customerIds=abc", "customerIds[0]"),
        ("search=", "search"),
        ("metadataValue=x", "metadataValue"),
        ("unknown=1", "unknown"),
    ] {
        let answer = s.get(&s.dev(&format!("licenses?{query}"))).await;
        assert_eq!(answer.err(400, "BAD_REQUEST").fields(), [field], "{query}");
    }
}

#[tokio::test]
async fn lists_filter_by_status_expiration_type_and_suspension() {
    let s = TestServer::start().await;
    let a_year = Timestamp::from_millis(Timestamp::now().as_millis() + 365 * 86_400_000);
    let never = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let never_suspended = s
        .license(r#"{"expirationType":"NEVER","suspended":true}"#)
        .await;
    let date = s
        .license(&json!({"expirationType": "DATE", "expirationDate": a_year}).to_string())
        .await;
    let expired = s
        .license(&json!({"expirationType": "DATE", "expirationDate": a_year}).to_string())
        .await;
    // Its date passes (the API refuses a date in the past at creation).
    let id = expired["id"].as_str().unwrap().parse().unwrap();
    let mut l: License = s.store.get_license(s.team_id(), id).await.unwrap().unwrap();
    l.expiration_date = Some(Timestamp::from_millis(
        Timestamp::now().as_millis() - 60_000,
    ));
    s.store.update_license(&l, &Journal::NONE).await.unwrap();
    // Never used: its clock has not started, so it has not expired.
    let unstarted = s
        .license(
            r#"{"expirationType":"DURATION","expirationStart":"ACTIVATION","expirationDays":30}"#,
        )
        .await;
    let duration_suspended = s
        .license(r#"{"expirationType":"DURATION","expirationDays":30,"suspended":true}"#)
        .await;

    let ids = |answer: &Value| {
        let mut ids: Vec<String> = answer["licenses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let of = |licenses: &[&Value]| {
        let mut ids: Vec<String> = licenses
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    for (query, wanted) in [
        ("status=EXPIRED", of(&[&expired])),
        (
            "status=ACTIVE",
            of(&[
                &never,
                &never_suspended,
                &date,
                &unstarted,
                &duration_suspended,
            ]),
        ),
        ("expirationType=DATE", of(&[&date, &expired])),
        ("expirationType=NEVER", of(&[&never, &never_suspended])),
        (
            "expirationType=DURATION",
            of(&[&unstarted, &duration_suspended]),
        ),
        (
            "suspended=true",
            of(&[&never_suspended, &duration_suspended]),
        ),
        (
            "suspended=false",
            of(&[&never, &date, &expired, &unstarted]),
        ),
        (
            "status=ACTIVE&suspended=false&expirationType=DATE",
            of(&[&date]),
        ),
        ("status=EXPIRED&suspended=true", Vec::new()),
    ] {
        let answer = s.get(&s.dev(&format!("licenses?{query}"))).await;
        let page = answer.ok();
        assert_eq!(ids(page), wanted, "{query}");
        assert_eq!(page["totalResults"], wanted.len(), "{query}");
        // Sorted and paged like any list; a page past the end still counts the matches.
        let past = s
            .get(&s.dev(&format!(
                "licenses?{query}&pageSize=10&page=3&sortColumn=updatedAt"
            )))
            .await;
        assert_eq!(past.ok()["licenses"], json!([]), "{query}");
        assert_eq!(past.ok()["totalResults"], wanted.len(), "{query}");
    }
    for (query, field) in [
        ("status=LIVE", "status"),
        ("status=expired", "status"),
        ("expirationType=SOMETIMES", "expirationType"),
        ("suspended=yes", "suspended"),
    ] {
        let answer = s.get(&s.dev(&format!("licenses?{query}"))).await;
        assert_eq!(answer.err(400, "BAD_REQUEST").fields(), [field], "{query}");
    }
}

#[tokio::test]
async fn an_update_checks_the_body_before_looking_the_license_up() {
    let s = TestServer::start().await;
    let missing = s.dev(&format!("licenses/id/{}", uuid::Uuid::new_v4()));
    let a = s.put(&missing, r#"{"suspended":"yes"}"#).await;
    a.err(400, "BAD_REQUEST");
    assert_eq!(a.fields(), ["suspended"]);
    s.put(&missing, r#"{"hwidLimt":2}"#)
        .await
        .err(400, "BAD_REQUEST");
    s.put(&missing, r#"{"suspended":true}"#)
        .await
        .err(404, "LICENSE_NOT_FOUND");
    // Credentials still come first.
    let bad_key = s
        .send(reqwest::Method::PUT, &missing, Some("lsk_nope"), Some("{"))
        .await;
    bad_key.err(401, "UNAUTHORIZED");
}

/// One action on many licenses: each goes through its own operation (a suspended license is
/// refused by verify, a deleted one is gone, each has its audit entry); what one refuses (an id
/// of no license, another team's) is listed with its route's code, the others are done; the
/// request's own problems are 400 naming each; deleting takes `licenses:write`.
#[tokio::test]
async fn a_bulk_action_does_each_license_and_lists_what_it_refused() {
    let s = TestServer::start().await;
    let mut ids = Vec::new();
    let mut keys = Vec::new();
    for _ in 0..3 {
        let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
        ids.push(l["id"].as_str().unwrap().to_owned());
        keys.push(l["licenseKey"].as_str().unwrap().to_owned());
    }
    let theirs = {
        let b = s.other_team().await;
        let url = format!("{}/api/v1/dev/teams/{}/licenses", s.base, b.team_id);
        let answer = s
            .send(
                reqwest::Method::POST,
                &url,
                Some(&b.api_key),
                Some(r#"{"expirationType":"NEVER"}"#),
            )
            .await;
        answer.ok()["id"].as_str().unwrap().to_owned()
    };
    let nobody = licensing_core::LicenseId::new().to_string();

    let body = json!({
        "action": "SUSPEND",
        "licenseIds": [ids[0], ids[1], theirs, ids[0], nobody],
    });
    let answer = s.post(&s.dev("licenses/bulk"), &body.to_string()).await;
    let result = answer.ok();
    assert_eq!(result["action"], "SUSPEND");
    assert_eq!(
        result["done"],
        json!([ids[0], ids[1]]),
        "each once, in order"
    );
    let refused = result["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 2);
    for (refusal, id) in refused.iter().zip([&theirs, &nobody]) {
        assert_eq!(refusal["licenseId"], json!(id));
        assert_eq!(refusal["code"], "LICENSE_NOT_FOUND");
        assert!(!refusal["details"].as_str().unwrap().is_empty());
    }
    for (i, key) in keys.iter().enumerate() {
        let verify = s.client("verify", &json!({"licenseKey": key}), None).await;
        if i < 2 {
            verify.err(403, "LICENSE_SUSPENDED");
        } else {
            verify.valid();
        }
    }
    let audit = s
        .get(&s.dev("audit-log?pageSize=100&action=license.suspended"))
        .await;
    assert_eq!(
        audit.ok()["entries"].as_array().unwrap().len(),
        2,
        "one entry each"
    );

    // Unsuspend, then delete with a key that may only suspend: refused whole.
    let back = json!({"action": "unsuspend", "licenseIds": [ids[0], ids[1]]});
    let answer = s.post(&s.dev("licenses/bulk"), &back.to_string()).await;
    assert_eq!(answer.ok()["done"].as_array().unwrap().len(), 2);
    s.client("verify", &json!({"licenseKey": keys[0]}), None)
        .await
        .valid();
    let support = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"desk","scopes":["licenses:suspend"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let delete = json!({"action": "DELETE", "licenseIds": [ids[2]]}).to_string();
    s.send(
        reqwest::Method::POST,
        &s.dev("licenses/bulk"),
        Some(&support),
        Some(&delete),
    )
    .await
    .err(403, "FORBIDDEN");
    let answer = s.post(&s.dev("licenses/bulk"), &delete).await;
    assert_eq!(answer.ok()["done"], json!([ids[2]]));
    s.get(&s.dev(&format!("licenses/id/{}", ids[2])))
        .await
        .err(404, "LICENSE_NOT_FOUND");

    // The request's own problems, each named; nothing done.
    let many: Vec<String> = (0..101)
        .map(|_| licensing_core::LicenseId::new().to_string())
        .collect();
    for (body, fields) in [
        (json!({"licenseIds": [ids[0]]}), vec!["action"]),
        (
            json!({"action": "ARCHIVE", "licenseIds": []}),
            vec!["action", "licenseIds"],
        ),
        (
            json!({"action": "SUSPEND", "licenseIds": ["x", ids[0]]}),
            vec!["licenseIds[0]"],
        ),
        (
            json!({"action": "SUSPEND", "licenseIds": many}),
            vec!["licenseIds"],
        ),
    ] {
        let answer = s.post(&s.dev("licenses/bulk"), &body.to_string()).await;
        answer.err(400, "BAD_REQUEST");
        assert_eq!(answer.fields(), fields, "{body}");
    }
    s.post(&s.dev("licenses/bulk"), r#"{"action":"SUSPEND","ids":[]}"#)
        .await
        .err(400, "BAD_REQUEST");
    s.client("verify", &json!({"licenseKey": keys[0]}), None)
        .await
        .valid();
}

/// A suspension keeps its reason: given to the suspend route, the update and the bulk action,
/// shown with the license, audited, cleared when the suspension is lifted, never told to a
/// client; a reason on a license that is not suspended is refused, naming the field.
#[tokio::test]
async fn a_suspension_keeps_its_reason_until_it_is_lifted() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let (id, key) = (
        l["id"].as_str().unwrap().to_owned(),
        l["licenseKey"].as_str().unwrap().to_owned(),
    );
    assert_eq!(l["suspensionReason"], Value::Null);
    let suspend = s.dev(&format!("licenses/id/{id}/suspend"));
    let reason = "Chargeback on order ORD-2026-0777 <b>";

    // Bad reasons: empty, too long, an unknown member; nothing changes.
    for (body, field) in [
        (json!({"reason": "  "}), "reason"),
        (json!({"reason": "x".repeat(501)}), "reason"),
        (json!({"reason": "a\u{7}b"}), "reason"),
    ] {
        let refused = s.post(&suspend, &body.to_string()).await;
        assert_eq!(refused.err(400, "BAD_REQUEST").fields(), [field], "{body}");
    }
    s.post(&suspend, r#"{"why":"x"}"#)
        .await
        .err(400, "BAD_REQUEST");
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}"))).await.ok()["suspended"],
        false
    );

    let suspended = s
        .post(
            &suspend,
            &json!({ "reason": format!("  {reason} ") }).to_string(),
        )
        .await;
    let suspended = suspended.ok().clone();
    assert_eq!(suspended["suspended"], true);
    assert_eq!(suspended["suspensionReason"], reason, "trimmed");
    // Suspending again without a reason keeps it; with another replaces it.
    let again = s.post(&suspend, "").await.ok().clone();
    assert_eq!(again["suspensionReason"], reason);
    let replaced = s
        .post(&suspend, r#"{"reason":"Fraud review"}"#)
        .await
        .ok()
        .clone();
    assert_eq!(replaced["suspensionReason"], "Fraud review");

    // The client learns only that the license is suspended.
    let answer = s
        .client(
            "verify",
            &json!({"licenseKey": key, "hardwareIdentifier": "device-reason-0001"}),
            None,
        )
        .await;
    assert!(
        !answer.body.to_string().contains("Fraud review"),
        "{}",
        answer.body
    );
    answer.err(403, "LICENSE_SUSPENDED");

    // Audited: the suspension with its reason, then the new reason.
    let log = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&pageSize=10")))
        .await
        .ok()
        .clone();
    let entries = log["entries"].as_array().unwrap();
    let changed = |action: &str| {
        entries
            .iter()
            .find(|e| e["action"] == action)
            .unwrap_or_else(|| panic!("no {action} in {log}"))["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["field"] == "suspensionReason")
            .cloned()
            .unwrap_or_else(|| panic!("no reason in {action}: {log}"))
    };
    assert_eq!(changed("license.suspended")["new"], reason);
    assert_eq!(changed("license.updated")["new"], "Fraud review");

    // Lifting the suspension clears the reason; a reason without a suspension is refused.
    let lifted = s
        .post(&s.dev(&format!("licenses/id/{id}/unsuspend")), "")
        .await
        .ok()
        .clone();
    assert_eq!(lifted["suspensionReason"], Value::Null);
    let licence = s.dev(&format!("licenses/id/{id}"));
    let refused = s.put(&licence, r#"{"suspensionReason":"late"}"#).await;
    assert_eq!(
        refused.err(400, "BAD_REQUEST").fields(),
        ["suspensionReason"]
    );
    let updated = s
        .put(
            &licence,
            r#"{"suspended":true,"suspensionReason":"Paused by request"}"#,
        )
        .await
        .ok()
        .clone();
    assert_eq!(updated["suspensionReason"], "Paused by request");
    let unsuspended = s.put(&licence, r#"{"suspended":false}"#).await.ok().clone();
    assert_eq!(unsuspended["suspensionReason"], Value::Null);

    // Created suspended with a reason, and in bulk.
    let made = s
        .license(
            r#"{"expirationType":"NEVER","suspended":true,"suspensionReason":"Awaiting payment"}"#,
        )
        .await;
    assert_eq!(made["suspensionReason"], "Awaiting payment");
    let refused = s
        .post(
            &s.dev("licenses"),
            r#"{"expirationType":"NEVER","suspensionReason":"Awaiting payment"}"#,
        )
        .await;
    assert_eq!(
        refused.err(400, "BAD_REQUEST").fields(),
        ["suspensionReason"]
    );
    let bulk = s
        .post(
            &s.dev("licenses/bulk"),
            &json!({"action": "SUSPEND", "licenseIds": [id], "reason": "Seat audit"}).to_string(),
        )
        .await
        .ok()
        .clone();
    assert_eq!(bulk["done"], json!([id]));
    assert_eq!(s.get(&licence).await.ok()["suspensionReason"], "Seat audit");
    let refused = s
        .post(
            &s.dev("licenses/bulk"),
            &json!({"action": "UNSUSPEND", "licenseIds": [id], "reason": "x"}).to_string(),
        )
        .await;
    assert_eq!(refused.err(400, "BAD_REQUEST").fields(), ["reason"]);
}
