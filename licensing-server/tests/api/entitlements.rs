//! (ext) Entitlements (protocol.md section 6): definitions with immutable codes, granted by
//! licenses and their products, asked for by clients, carried by archives.

use serde_json::{Value, json};

use crate::helpers::TestServer;

async fn entitlement(s: &TestServer, name: &str, code: &str) -> Value {
    let created = s
        .post(
            &s.dev("entitlements"),
            &json!({"name": name, "code": code}).to_string(),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.ok().clone()
}

#[tokio::test]
async fn entitlements_are_created_listed_updated_and_deleted_with_immutable_codes() {
    let s = TestServer::start().await;
    let export = entitlement(&s, "Export to PDF", "PRO_EXPORT").await;
    let keys: Vec<&str> = export
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for member in ["id", "name", "code", "metadata", "createdAt", "updatedAt"] {
        assert!(keys.contains(&member), "{member} in {export}");
    }
    entitlement(&s, "Single sign-on", "SSO").await;
    entitlement(&s, "API access", "API_V2").await;

    // Codes: well formed, unique in the team, free in another.
    for (body, field) in [
        (json!({"name": "x", "code": "pro-export"}), "code"),
        (json!({"name": "x", "code": "1ABC"}), "code"),
        (json!({"name": "x"}), "code"),
        (json!({"code": "OK"}), "name"),
        (json!({"name": "x", "code": "A", "extra": true}), "extra"),
    ] {
        let refused = s.post(&s.dev("entitlements"), &body.to_string()).await;
        assert_eq!(refused.err(400, "BAD_REQUEST").fields(), [field], "{body}");
    }
    let taken = s
        .post(
            &s.dev("entitlements"),
            r#"{"name":"Again","code":"PRO_EXPORT"}"#,
        )
        .await;
    assert_eq!(taken.err(400, "BAD_REQUEST").fields(), ["code"]);

    // Lists: search in the name or the code, sorted by code.
    let page = s.get(&s.dev("entitlements?search=sign")).await.ok().clone();
    assert_eq!(page["totalResults"], 1);
    assert_eq!(page["entitlements"][0]["code"], "SSO");
    let page = s
        .get(&s.dev("entitlements?sortColumn=code&sortDirection=asc"))
        .await
        .ok()
        .clone();
    let codes: Vec<&str> = page["entitlements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["API_V2", "PRO_EXPORT", "SSO"]);
    s.get(&s.dev("entitlements?sortColumn=priority"))
        .await
        .err(400, "BAD_REQUEST");

    // Update: the name and metadata change, the code cannot.
    let id = export["id"].as_str().unwrap();
    let url = s.dev(&format!("entitlements/{id}"));
    let updated = s
        .put(
            &url,
            r#"{"name":"PDF export","code":"PRO_EXPORT","metadata":[{"key":"tier","value":"pro"}]}"#,
        )
        .await;
    assert_eq!(updated.ok()["name"], "PDF export");
    assert_eq!(updated.ok()["metadata"][0]["key"], "tier");
    let changed = s.put(&url, r#"{"code":"OTHER"}"#).await;
    assert_eq!(changed.err(400, "BAD_REQUEST").fields(), ["code"]);
    assert_eq!(s.get(&url).await.ok()["code"], "PRO_EXPORT");

    // Another team sees none of it.
    let other = s.other_team().await;
    let theirs = format!(
        "{}/api/v1/dev/teams/{}/entitlements/{id}",
        s.base, other.team_id
    );
    s.send(reqwest::Method::GET, &theirs, Some(&other.api_key), None)
        .await
        .err(404, "BAD_REQUEST");

    // Scopes: entitlements:read reads, and may not write.
    let key = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"reader","scopes":["entitlements:read"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    s.send(reqwest::Method::GET, &url, Some(&key), None)
        .await
        .ok();
    s.send(
        reqwest::Method::POST,
        &s.dev("entitlements"),
        Some(&key),
        Some(r#"{"name":"x","code":"X"}"#),
    )
    .await
    .err(403, "FORBIDDEN");

    // Deleted, then gone; audited.
    assert_eq!(s.delete(&url).await.ok()["deleted"], true);
    s.get(&url).await.err(404, "BAD_REQUEST");
    s.delete(&url).await.err(404, "BAD_REQUEST");
    let audit = s
        .get(&s.dev("audit-log?resourceType=entitlement&pageSize=100"))
        .await
        .ok()
        .clone();
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "entitlement.deleted",
            "entitlement.updated",
            "entitlement.created",
            "entitlement.created",
            "entitlement.created"
        ]
    );
}

/// What a license grants is its own entitlements and its products'; a client asking for a code
/// the license lacks (or the team does not know) is refused after the suspension and expiry
/// checks and before the limits, naming the missing codes in request order, and nothing of the
/// device is recorded. Deleting an entitlement takes it from every license and product at once.
#[tokio::test]
async fn clients_are_granted_their_licenses_and_products_entitlements() {
    let s = TestServer::start().await;
    let export = entitlement(&s, "Export", "EXPORT").await;
    let sso = entitlement(&s, "SSO", "SSO").await;
    let api = entitlement(&s, "API", "API").await;
    let product = s
        .post(
            &s.dev("products"),
            &json!({"name": "Desk", "entitlementIds": [sso["id"], api["id"]]}).to_string(),
        )
        .await
        .ok()
        .clone();
    assert_eq!(product["entitlementIds"], json!([sso["id"], api["id"]]));
    // Unknown entitlement ids are 404, on products and licenses alike.
    let unknown = json!([uuid::Uuid::new_v4().to_string()]);
    s.post(
        &s.dev("products"),
        &json!({"name": "X", "entitlementIds": unknown}).to_string(),
    )
    .await
    .err(404, "BAD_REQUEST");
    s.post(
        &s.dev("licenses"),
        &json!({"expirationType": "NEVER", "entitlementIds": unknown}).to_string(),
    )
    .await
    .err(404, "BAD_REQUEST");
    let license = s
        .post(
            &s.dev("licenses"),
            &json!({"expirationType": "NEVER", "hwidLimit": 1, "productIds": [product["id"]],
                    "entitlementIds": [export["id"]]})
            .to_string(),
        )
        .await
        .ok()
        .clone();
    assert_eq!(license["entitlementIds"], json!([export["id"]]));
    let keys = s.public_keys().await;
    let body = |device: &str, wanted: Value| {
        json!({"licenseKey": license["licenseKey"], "hardwareIdentifier": device,
               "entitlements": wanted})
    };

    let verified = s
        .client(
            "verify",
            &body("device-0000-0001", json!(["SSO", "EXPORT"])),
            None,
        )
        .await;
    assert_eq!(
        verified.valid()["license"]["entitlements"],
        json!(["API", "EXPORT", "SSO"])
    );
    let beat = s
        .client("heartbeat", &body("device-0000-0001", json!([])), None)
        .await;
    assert_eq!(
        beat.valid()["license"]["entitlements"],
        json!(["API", "EXPORT", "SSO"])
    );

    // Missing codes, in request order (an unknown code is missing too); signed.
    let refused = s
        .client(
            "verify",
            &body("device-0000-0001", json!(["SSO", "AUDIT", "EXPORT", "pro"])),
            None,
        )
        .await;
    refused.err(403, "ENTITLEMENTS_MISSING").signed_by(&keys);
    let details = refused.body["result"]["details"].as_str().unwrap();
    assert!(details.ends_with("AUDIT, pro"), "{details}");
    // Before the limits: a second device is told what it lacks, not that the seat is taken,
    // and it is not recorded.
    s.client("verify", &body("device-0000-0002", json!(["AUDIT"])), None)
        .await
        .err(403, "ENTITLEMENTS_MISSING");
    let devices = s
        .get(&s.dev(&format!(
            "licenses/id/{}/hwid",
            license["id"].as_str().unwrap()
        )))
        .await
        .ok()
        .clone();
    assert_eq!(devices["totalResults"], 1, "{devices}");
    s.client("verify", &body("device-0000-0002", json!(["SSO"])), None)
        .await
        .err(403, "HWID_LIMIT_REACHED");
    // After the suspension check.
    let license_url = s.dev(&format!("licenses/id/{}", license["id"].as_str().unwrap()));
    s.put(&license_url, r#"{"suspended":true}"#).await.ok();
    s.client("verify", &body("device-0000-0001", json!(["AUDIT"])), None)
        .await
        .err(403, "LICENSE_SUSPENDED");
    s.put(&license_url, r#"{"suspended":false}"#).await.ok();
    // Too many codes, or an empty one: 400.
    let many: Vec<String> = (0..101).map(|i| format!("C{i}")).collect();
    s.client("verify", &body("device-0000-0001", json!(many)), None)
        .await
        .err(400, "BAD_REQUEST");
    s.client("verify", &body("device-0000-0001", json!([""])), None)
        .await
        .err(400, "BAD_REQUEST");

    // A product's entitlements change: the next request sees it.
    s.put(
        &s.dev(&format!("products/{}", product["id"].as_str().unwrap())),
        &json!({"entitlementIds": [api["id"]]}).to_string(),
    )
    .await
    .ok();
    let verified = s
        .client("verify", &body("device-0000-0001", json!(["API"])), None)
        .await;
    assert_eq!(
        verified.valid()["license"]["entitlements"],
        json!(["API", "EXPORT"])
    );

    // Deleting an entitlement detaches it everywhere at once.
    s.delete(&s.dev(&format!("entitlements/{}", api["id"].as_str().unwrap())))
        .await
        .ok();
    let product = s
        .get(&s.dev(&format!("products/{}", product["id"].as_str().unwrap())))
        .await
        .ok()
        .clone();
    assert_eq!(product["entitlementIds"], json!([]));
    s.client("verify", &body("device-0000-0001", json!(["API"])), None)
        .await
        .err(403, "ENTITLEMENTS_MISSING");
    s.put(&license_url, r#"{"entitlementIds":[]}"#).await.ok();
    let verified = s
        .client("verify", &body("device-0000-0001", json!([])), None)
        .await;
    assert_eq!(verified.valid()["license"]["entitlements"], json!([]));
}

/// An archive carries the entitlements and what grants them, and every signing key.
#[tokio::test]
async fn archives_carry_entitlements() {
    let s = TestServer::start().await;
    s.post(&s.dev("signing-keys/rotate"), "").await.ok();
    let export = entitlement(&s, "Export", "EXPORT").await;
    let product = s
        .post(
            &s.dev("products"),
            &json!({"name": "Desk", "entitlementIds": [export["id"]]}).to_string(),
        )
        .await
        .ok()
        .clone();
    let license = s
        .post(
            &s.dev("licenses"),
            &json!({"expirationType": "NEVER", "entitlementIds": [export["id"]]}).to_string(),
        )
        .await
        .ok()
        .clone();
    let files = tempfile::tempdir().unwrap();
    let file_store = licensing_server::files::FileStore::new(files.path()).unwrap();
    let mut archive = Vec::new();
    licensing_server::archive::export(&s.store, &file_store, &mut archive)
        .await
        .unwrap();
    let text = String::from_utf8(archive.clone()).unwrap();
    assert!(text.contains(r#""kind":"entitlement""#), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let (restored, _) = crate::helpers::open_test_store(dir.path()).await;
    let restored_files = licensing_server::files::FileStore::new(dir.path()).unwrap();
    licensing_server::archive::import(&restored, &restored_files, archive.as_slice())
        .await
        .unwrap();
    use licensing_core::store::{EntitlementStore, LicenseStore, ProductStore, TeamStore};
    let team = s.team_id();
    let (before, after) = (
        s.store.get_team(team).await.unwrap().unwrap(),
        restored.get_team(team).await.unwrap().unwrap(),
    );
    assert_eq!(after.signing_keys.len(), 2);
    assert_eq!(
        (after.signing_keys, after.keys),
        (before.signing_keys, before.keys)
    );
    let back = restored.list_entitlements(team).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].code, "EXPORT");
    let license = restored
        .get_license(team, license["id"].as_str().unwrap().parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(license.entitlement_ids, vec![back[0].id]);
    let product = restored
        .get_product(team, product["id"].as_str().unwrap().parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(product.entitlement_ids, vec![back[0].id]);
}

/// The license list's `entitlementId`: the licenses that grant it, themselves or through a
/// product; malformed ids are 400.
#[tokio::test]
async fn licenses_are_listed_by_the_entitlement_they_grant() {
    let s = TestServer::start().await;
    let export = entitlement(&s, "Export", "EXPORT").await;
    let sso = entitlement(&s, "SSO", "SSO").await;
    let product = s
        .post(
            &s.dev("products"),
            &json!({"name": "Desk", "entitlementIds": [sso["id"]]}).to_string(),
        )
        .await
        .ok()
        .clone();
    let direct = s
        .license(&json!({"expirationType": "NEVER", "entitlementIds": [export["id"]]}).to_string())
        .await;
    let through = s
        .license(&json!({"expirationType": "NEVER", "productIds": [product["id"]]}).to_string())
        .await;
    let neither = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let s = &s;
    let listed = |id: &Value| {
        let url = s.dev(&format!("licenses?entitlementId={}", id.as_str().unwrap()));
        async move {
            let page = s.get(&url).await.ok().clone();
            let mut keys: Vec<String> = page["licenses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["licenseKey"].as_str().unwrap().to_owned())
                .collect();
            keys.sort();
            (page["totalResults"].as_u64().unwrap(), keys)
        }
    };
    let key = |l: &Value| l["licenseKey"].as_str().unwrap().to_owned();
    assert_eq!(listed(&export["id"]).await, (1, vec![key(&direct)]));
    assert_eq!(listed(&sso["id"]).await, (1, vec![key(&through)]));
    // With other filters: both apply.
    let page = s
        .get(&s.dev(&format!(
            "licenses?entitlementId={}&suspended=true",
            sso["id"].as_str().unwrap()
        )))
        .await
        .ok()
        .clone();
    assert_eq!(page["totalResults"], 0);
    let all = s.get(&s.dev("licenses")).await.ok()["totalResults"].clone();
    assert_eq!(all, 3, "{neither}");
    let refused = s.get(&s.dev("licenses?entitlementId=nope")).await;
    assert_eq!(refused.err(400, "BAD_REQUEST").fields(), ["entitlementId"]);
}
