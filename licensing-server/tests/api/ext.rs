//! The (ext) resources: products, branches, API keys, blacklist.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::TestServer;

#[tokio::test]
async fn products_and_branches() {
    let s = TestServer::start().await;
    let created = s.post(&s.dev("products"), r#"{"name":"Editor","url":"https://example.com/editor","metadata":[{"key":"sku","value":"ED-1"}]}"#).await;
    assert_eq!(created.status, 201);
    let p = created.ok().clone();
    let id = p["id"].as_str().unwrap();
    s.post(&s.dev("products"), r#"{"name":"Archiver"}"#)
        .await
        .ok();
    let by_name = s
        .get(&s.dev("products?sortColumn=name&sortDirection=asc"))
        .await;
    assert_eq!(by_name.ok()["products"][0]["name"], "Archiver");
    assert_eq!(by_name.ok()["totalResults"], 2);
    assert_eq!(s.get(&s.dev(&format!("products/{id}"))).await.ok(), &p);
    let updated = s
        .put(&s.dev(&format!("products/{id}")), r#"{"url":null}"#)
        .await;
    assert_eq!(
        (updated.ok()["name"].as_str(), &updated.ok()["url"]),
        (Some("Editor"), &serde_json::Value::Null)
    );

    let beta = s
        .post(
            &s.dev(&format!("products/{id}/branches")),
            r#"{"name":"beta"}"#,
        )
        .await;
    assert_eq!(beta.status, 201);
    let beta = beta.ok().clone();
    assert_eq!(
        (beta["name"].as_str(), beta["productId"].as_str()),
        (Some("beta"), Some(id))
    );
    assert_eq!(
        s.post(
            &s.dev(&format!("products/{id}/branches")),
            r#"{"name":"beta"}"#
        )
        .await
        .err(400, "BAD_REQUEST")
        .fields(),
        ["name"]
    );
    assert_eq!(
        s.post(
            &s.dev(&format!("products/{id}/branches")),
            r#"{"name":"b/1"}"#
        )
        .await
        .err(400, "BAD_REQUEST")
        .fields(),
        ["name"]
    );
    assert_eq!(
        s.get(&s.dev(&format!("products/{id}/branches"))).await.ok()["branches"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let branch_id = beta["id"].as_str().unwrap();
    assert_eq!(
        s.delete(&s.dev(&format!("products/{id}/branches/{branch_id}")))
            .await
            .ok(),
        &json!({"id": branch_id, "deleted": true})
    );
    s.delete(&s.dev(&format!("products/{id}/branches/{branch_id}")))
        .await
        .err(404, "RELEASE_NOT_FOUND");

    // Deleting the product detaches it from licenses.
    let l = s
        .license(&format!(
            r#"{{"expirationType":"NEVER","productIds":["{id}"]}}"#
        ))
        .await;
    assert_eq!(
        s.delete(&s.dev(&format!("products/{id}"))).await.ok(),
        &json!({"id": id, "deleted": true})
    );
    s.get(&s.dev(&format!("products/{id}")))
        .await
        .err(404, "PRODUCT_NOT_FOUND");
    let l = s
        .get(&s.dev(&format!("licenses/id/{}", l["id"].as_str().unwrap())))
        .await;
    assert_eq!(l.ok()["productIds"], json!([]));

    for (body, field) in [
        (r#"{}"#, "name"),
        (r#"{"name":"X","url":"ftp://x"}"#, "url"),
        (r#"{"name":"X","price":1}"#, "price"),
    ] {
        assert_eq!(
            s.post(&s.dev("products"), body)
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field]
        );
    }
    assert_eq!(
        s.get(&s.dev("products?sortColumn=price"))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["sortColumn"]
    );
}

#[tokio::test]
async fn api_keys_are_shown_once_expire_and_revoke() {
    let s = TestServer::start().await;
    let created = s.post(&s.dev("api-keys"), r#"{"name":"ci"}"#).await;
    assert_eq!(created.status, 201);
    let ci = created.ok().clone();
    let key = ci["key"].as_str().unwrap();
    // A recognisable prefix, 32 random characters and a 6-character checksum.
    assert!(key.starts_with("lsk_") && key.len() == 42, "{key}");
    assert_eq!(ci["scopes"], json!(["*"]));
    assert_eq!(ci["productIds"], Value::Null);
    let list = s.get(&s.dev("api-keys")).await;
    let listed = list.ok()["apiKeys"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 2);
    assert!(
        listed.iter().all(|k| k.get("key").is_none()),
        "never shown again"
    );
    // The creating key is named; the first key was made by the operator (the nil id).
    let first_id = listed[0]["id"].as_str().unwrap();
    assert_eq!(
        listed[0]["createdByUserId"],
        "00000000-0000-0000-0000-000000000000"
    );
    assert_eq!(listed[1]["createdByUserId"], first_id);
    assert_eq!(listed[1]["lastUsedAt"], Value::Null, "not used yet");
    assert!(
        listed[0]["lastUsedAt"].is_string(),
        "used by this very list"
    );
    // The new key works, then is revoked and stops working.
    s.send(Method::GET, &s.dev("licenses"), Some(key), None)
        .await
        .ok();
    let used = s.get(&s.dev("api-keys")).await;
    assert!(used.ok()["apiKeys"][1]["lastUsedAt"].is_string());
    let id = ci["id"].as_str().unwrap();
    s.delete(&s.dev(&format!("api-keys/{id}"))).await.ok();
    s.send(Method::GET, &s.dev("licenses"), Some(key), None)
        .await
        .err(401, "UNAUTHORIZED");
    // The last usable key cannot revoke itself.
    let mine = s.get(&s.dev("api-keys")).await.ok()["apiKeys"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        s.delete(&s.dev(&format!("api-keys/{mine}")))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["apiKeyId"]
    );
    // Another team's key id is not found here.
    let other = s.other_team().await;
    let theirs = s
        .send(
            Method::GET,
            &format!("{}/api/v1/dev/teams/{}/api-keys", s.base, other.team_id),
            Some(&other.api_key),
            None,
        )
        .await;
    let their_id = theirs.ok()["apiKeys"][0]["id"].as_str().unwrap().to_owned();
    s.delete(&s.dev(&format!("api-keys/{their_id}")))
        .await
        .err(404, "BAD_REQUEST");
    for (body, field) in [
        (r#"{}"#, "name"),
        (
            r#"{"name":"x","expiresAt":"2000-01-01T00:00:00Z"}"#,
            "expiresAt",
        ),
    ] {
        assert_eq!(
            s.post(&s.dev("api-keys"), body)
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field]
        );
    }
}

#[tokio::test]
async fn blacklist_entries() {
    let s = TestServer::start().await;
    let created = s
        .post(
            &s.dev("blacklist"),
            r#"{"type":"IP","value":"203.0.113.9/24"}"#,
        )
        .await;
    assert_eq!(created.status, 201);
    let e = created.ok().clone();
    assert_eq!(
        (e["type"].as_str(), e["value"].as_str(), e["hits"].as_u64()),
        (Some("IP"), Some("203.0.113.0/24"), Some(0))
    );
    s.post(&s.dev("blacklist"), r#"{"type":"COUNTRY","value":"fin"}"#)
        .await
        .ok();
    s.post(
        &s.dev("blacklist"),
        r#"{"type":"HARDWARE_IDENTIFIER","value":"stolen-device-01"}"#,
    )
    .await
    .ok();
    assert_eq!(
        s.post(
            &s.dev("blacklist"),
            r#"{"type":"IP","value":"203.0.113.0/24"}"#
        )
        .await
        .err(400, "BAD_REQUEST")
        .fields(),
        ["value"]
    );
    for (body, field) in [
        (r#"{"type":"IP","value":"999.1.1.1"}"#, "value"),
        (r#"{"type":"ASN","value":"1"}"#, "type"),
        (r#"{"type":"COUNTRY","value":"Narnia"}"#, "value"),
    ] {
        assert_eq!(
            s.post(&s.dev("blacklist"), body)
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field],
            "{body}"
        );
    }
    assert_eq!(
        s.get(&s.dev("blacklist")).await.ok()["blacklist"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let id = e["id"].as_str().unwrap();
    s.delete(&s.dev(&format!("blacklist/{id}"))).await.ok();
    s.delete(&s.dev(&format!("blacklist/{id}")))
        .await
        .err(404, "BAD_REQUEST");
    assert_eq!(
        s.get(&s.dev("blacklist")).await.ok()["blacklist"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// BUG-11: a key expiring in an hour made keys without expiry (and one for 2099) that kept
/// working after it was revoked. Now a key's expiry is capped at its maker's, and revoking a
/// key revokes every key it made, directly or through them.
#[tokio::test]
async fn keys_never_outlive_the_key_that_made_them() {
    let s = TestServer::start().await;
    let in_an_hour = chrono::Utc::now() + chrono::Duration::hours(1);
    let parent = s
        .post(
            &s.dev("api-keys"),
            &json!({"name": "temporary", "expiresAt": in_an_hour.to_rfc3339()}).to_string(),
        )
        .await;
    let parent = parent.ok().clone();
    let parent_key = parent["key"].as_str().unwrap().to_owned();
    let limit = parent["expiresAt"].as_str().unwrap().to_owned();
    let make = |body: Value| {
        let s = &s;
        let key = parent_key.clone();
        async move {
            s.send(
                Method::POST,
                &s.dev("api-keys"),
                Some(&key),
                Some(&body.to_string()),
            )
            .await
        }
    };
    let forever = make(json!({"name": "forever"})).await;
    assert_eq!(forever.status, 201);
    assert_eq!(forever.body["data"]["expiresAt"], limit.as_str());
    assert!(
        forever.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("expires when the key that made it does")
    );
    let far = make(json!({"name": "2099", "expiresAt": "2099-01-01T00:00:00Z"})).await;
    assert_eq!(far.body["data"]["expiresAt"], limit.as_str());
    let sooner_at = (chrono::Utc::now() + chrono::Duration::minutes(30))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let sooner = make(json!({"name": "sooner", "expiresAt": sooner_at})).await;
    assert_eq!(sooner.body["data"]["expiresAt"], sooner_at.as_str(), "kept");
    // A grandchild, made by a child.
    let child_key = forever.body["data"]["key"].as_str().unwrap().to_owned();
    let grandchild = s
        .send(
            Method::POST,
            &s.dev("api-keys"),
            Some(&child_key),
            Some(r#"{"name":"grandchild"}"#),
        )
        .await;
    assert_eq!(grandchild.body["data"]["expiresAt"], limit.as_str());
    let made: Vec<String> = [&forever, &far, &sooner, &grandchild]
        .iter()
        .map(|a| a.body["data"]["key"].as_str().unwrap().to_owned())
        .collect();
    for key in made.iter().chain([&parent_key]) {
        s.send(Method::GET, &s.dev("licenses"), Some(key), None)
            .await
            .ok();
    }
    // A key unrelated to it stays.
    let bystander = s.post(&s.dev("api-keys"), r#"{"name":"bystander"}"#).await;
    let bystander = bystander.ok()["key"].as_str().unwrap().to_owned();

    let parent_id = parent["id"].as_str().unwrap();
    let revoked = s.delete(&s.dev(&format!("api-keys/{parent_id}"))).await;
    revoked.ok();
    assert!(
        revoked.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("the keys it made")
    );
    for key in made.iter().chain([&parent_key]) {
        s.send(Method::GET, &s.dev("licenses"), Some(key), None)
            .await
            .err(401, "UNAUTHORIZED");
    }
    s.send(Method::GET, &s.dev("licenses"), Some(&bystander), None)
        .await
        .ok();
    // One audit entry and one event per key; the ones carried along name the key they went
    // with.
    let log = s
        .get(&s.dev("audit-log?action=api_key.revoked&pageSize=100"))
        .await;
    let entries = log.ok()["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 5, "{entries:#?}");
    let with: Vec<&Value> = entries
        .iter()
        .filter_map(|e| {
            e["changes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["field"] == "revokedWith")
                .map(|c| &c["new"])
        })
        .collect();
    assert_eq!(with.len(), 4, "{entries:#?}");
    let child_id = forever.body["data"]["id"].as_str().unwrap();
    assert!(
        with.iter().all(|w| *w == parent_id || *w == child_id),
        "{with:?}"
    );
}

/// Revoking a key whose made keys are the team's only other usable keys is refused: the team
/// would be left without a usable key.
#[tokio::test]
async fn a_revocation_that_would_leave_no_usable_key_is_refused() {
    let s = TestServer::start().await;
    let initial = s.get(&s.dev("api-keys")).await.ok()["apiKeys"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.post(&s.dev("api-keys"), r#"{"name":"made by initial"}"#)
        .await
        .ok();
    let refused = s.delete(&s.dev(&format!("api-keys/{initial}"))).await;
    refused.err(400, "BAD_REQUEST");
    assert!(
        refused.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("the keys it made go with it"),
        "{}",
        refused.body
    );
    assert_eq!(
        s.get(&s.dev("api-keys")).await.ok()["apiKeys"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
