use licensing_core::crypto::TeamPublicKeys;
use serde_json::json;

use crate::helpers::TestServer;

#[tokio::test]
async fn public_key_forms_match_the_team() {
    let s = TestServer::start().await;
    let answer = s.get(&s.dev("public-key")).await;
    let keys = answer.ok();
    assert_eq!(keys["publicKey"], s.team.public_key);
    assert_eq!(keys["signingKey"], s.team.signing_key);
    let parsed = TeamPublicKeys::parse(
        keys["publicKeyBase64"].as_str().unwrap(),
        keys["signingKey"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(parsed.rsa.to_pem().unwrap(), s.team.public_key);
}

#[tokio::test]
async fn settings_read_and_partial_update() {
    let s = TestServer::start().await;
    let defaults = json!({"strictCustomers": false, "strictProducts": false, "strictReleases": false, "requireHardwareIdentifier": true, "hwidTimeout": null, "ipTimeout": null, "sessionTtl": 900,
                          "maxLiveSessionsPerLicense": 1000, "checkoutEnabled": true, "checkoutMaxTtl": 2_592_000,
                          "portalEnabled": false, "portalSignIn": ["email", "licenseKey"]});
    assert_eq!(s.get(&s.dev("settings")).await.ok(), &defaults);
    let updated = s
        .put(
            &s.dev("settings"),
            r#"{"strictProducts":true,"ipTimeout":60}"#,
        )
        .await;
    assert_eq!(updated.ok()["strictProducts"], true);
    assert_eq!(updated.ok()["ipTimeout"], 60);
    assert_eq!(updated.ok()["strictCustomers"], false);
    let again = s.put(&s.dev("settings"), r#"{"ipTimeout":null}"#).await;
    assert_eq!(again.ok()["ipTimeout"], serde_json::Value::Null);
    assert_eq!(again.ok()["strictProducts"], true, "left out: kept");
    let ttl = s.put(&s.dev("settings"), r#"{"sessionTtl":60}"#).await;
    assert_eq!(ttl.ok()["sessionTtl"], 60);
    for (body, field) in [
        (r#"{"hwidTimeout":0}"#, "hwidTimeout"),
        (r#"{"sessionTtl":9}"#, "sessionTtl"),
        (r#"{"sessionTtl":86401}"#, "sessionTtl"),
        (r#"{"sessionTtl":null}"#, "sessionTtl"),
        (r#"{"strictReleases":null}"#, "strictReleases"),
        (r#"{"strict":true}"#, "strict"),
        (
            r#"{"maxLiveSessionsPerLicense":0}"#,
            "maxLiveSessionsPerLicense",
        ),
        (
            r#"{"maxLiveSessionsPerLicense":100001}"#,
            "maxLiveSessionsPerLicense",
        ),
        (r#"{"checkoutMaxTtl":315360001}"#, "checkoutMaxTtl"),
        (r#"{"checkoutEnabled":null}"#, "checkoutEnabled"),
        (r#"{"portalEnabled":null}"#, "portalEnabled"),
        (r#"{"portalSignIn":["sms"]}"#, "portalSignIn"),
    ] {
        assert_eq!(
            s.put(&s.dev("settings"), body)
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field]
        );
    }
}

#[tokio::test]
async fn statistics_are_assembled_and_cached() {
    use licensing_core::model::{HourlyStats, RequestType};
    use licensing_core::store::StatsStore;

    let s = TestServer::start().await;
    let p = s
        .post(&s.dev("products"), r#"{"name":"App"}"#)
        .await
        .ok()
        .clone();
    let l = s
        .license(&format!(
            r#"{{"expirationType":"NEVER","productIds":["{}"]}}"#,
            p["id"].as_str().unwrap()
        ))
        .await;
    s.license(r#"{"expirationType":"NEVER"}"#).await;
    s.post(&s.dev("customers"), r#"{"email":"a@example.com"}"#)
        .await
        .ok();
    s.activity(l["id"].as_str().unwrap(), "device-aaaa-0001", 1)
        .await;
    let mut bucket = HourlyStats::new(licensing_core::Timestamp::now());
    bucket.record(RequestType::Verify, true, Some("FI"));
    bucket.record(RequestType::Verify, true, Some("FI"));
    bucket.record(RequestType::Heartbeat, false, Some("SE"));
    bucket.record(RequestType::Download, true, None);
    s.store.add_hourly(s.team_id(), &bucket).await.unwrap();

    let stats = s.get(&s.dev("statistics")).await;
    let d = stats.ok().clone();
    assert_eq!(
        d["overview"],
        json!({"totalLicenses": 2, "totalCustomers": 1, "totalProducts": 1, "activeLicenses": 1, "totalRequests": 4})
    );
    assert_eq!(
        d["requests"],
        json!({"total": 4, "successful": 3, "failed": 1, "successRate": 75.0, "byType": {"VERIFY": 2, "HEARTBEAT": 1, "DOWNLOAD": 1}})
    );
    assert_eq!(
        d["topCountries"][0],
        json!({"country": "Finland", "alpha3": "FIN", "alpha2": "FI", "requests": 2})
    );
    assert_eq!(
        d["topProducts"],
        json!([{"id": p["id"], "name": "App", "licenses": 1}])
    );
    assert_eq!(
        d["recentActivity"],
        json!({"last24h": 4, "last7d": 4, "last30d": 4})
    );

    // Cached for 15 minutes: a new license does not show yet.
    s.license(r#"{"expirationType":"NEVER"}"#).await;
    assert_eq!(
        s.get(&s.dev("statistics")).await.ok()["overview"]["totalLicenses"],
        2
    );
}

/// Signing keys have ids; a rotation makes a new key sign answers at once (here and after a
/// restart), lists the former one as inactive until it is retired, keeps the RSA key, and is
/// audited; the active key cannot be retired.
#[tokio::test]
async fn signing_keys_rotate_and_retire() {
    use licensing_core::crypto::SigningPublicKey;

    let s = TestServer::start().await;
    let first = s.get(&s.dev("public-key")).await.ok().clone();
    let old = SigningPublicKey::from_base64(first["signingKey"].as_str().unwrap()).unwrap();
    let listed = first["signingKeys"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["kid"], old.kid());
    assert_eq!(listed[0]["key"], first["signingKey"]);
    assert_eq!(listed[0]["active"], true);
    assert_eq!(listed[0]["state"], "active");
    assert!(listed[0]["createdAt"].is_string());

    let license = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let verify = json!({"licenseKey": license["licenseKey"], "hardwareIdentifier": "device-0001"});
    let before = s.client("verify", &verify, None).await;
    before.valid();
    assert_eq!(before.header("x-signature-key-id"), Some(old.kid()));
    before.signed_by(&s.public_keys().await);

    let rotated = s.post(&s.dev("signing-keys/rotate"), "").await;
    assert_eq!(rotated.status, 201, "{}", rotated.body);
    let new = rotated.ok().clone();
    let new_key = SigningPublicKey::from_base64(new["key"].as_str().unwrap()).unwrap();
    assert_eq!(new["kid"], new_key.kid());
    assert_ne!(new_key.kid(), old.kid());
    assert_eq!(new["active"], true);
    assert_eq!(new["state"], "active");

    let after = s.get(&s.dev("public-key")).await.ok().clone();
    assert_eq!(after["signingKey"], new["key"]);
    assert_eq!(after["publicKey"], first["publicKey"], "the RSA key stays");
    let kids: Vec<(String, bool)> = after["signingKeys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["kid"].as_str().unwrap().to_owned(), k["active"] == true))
        .collect();
    assert_eq!(
        kids,
        [
            (old.kid().to_owned(), false),
            (new_key.kid().to_owned(), true)
        ]
    );

    // Answers are signed with the new key from now on, and say so.
    let answer = s.client("verify", &verify, None).await;
    answer.valid();
    assert_eq!(answer.header("x-signature-key-id"), Some(new_key.kid()));
    let signature = answer.header("x-signature").unwrap();
    new_key
        .verify_response(&answer.request, &answer.bytes, signature)
        .unwrap();
    assert!(
        old.verify_response(&answer.request, &answer.bytes, signature)
            .is_err()
    );
    // An error answer once the team is known is signed with it too.
    let refused = s
        .client(
            "verify",
            &json!({"licenseKey": "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA"}),
            None,
        )
        .await;
    assert_eq!(refused.header("x-signature-key-id"), Some(new_key.kid()));

    // The active key cannot be retired; a malformed or unknown id is refused.
    let refused = s
        .delete(&s.dev(&format!("signing-keys/{}", new_key.kid())))
        .await;
    assert_eq!(refused.err(400, "BAD_REQUEST").fields(), ["kid"]);
    let malformed = s.delete(&s.dev("signing-keys/NOT-A-KID")).await;
    assert_eq!(malformed.err(400, "BAD_REQUEST").fields(), ["kid"]);
    s.delete(&s.dev("signing-keys/0123456789abcdef"))
        .await
        .err(404, "SIGNING_KEY_NOT_FOUND");
    // Another team's key id is unknown here.
    let other = s.other_team().await;
    let other_kid = SigningPublicKey::from_base64(&other.signing_key)
        .unwrap()
        .kid()
        .to_owned();
    s.delete(&s.dev(&format!("signing-keys/{other_kid}")))
        .await
        .err(404, "SIGNING_KEY_NOT_FOUND");

    let retired = s
        .delete(&s.dev(&format!("signing-keys/{}", old.kid())))
        .await;
    assert_eq!(retired.ok()["kid"], old.kid());
    let listed = s.get(&s.dev("public-key")).await.ok()["signingKeys"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["kid"], new_key.kid());
    s.delete(&s.dev(&format!("signing-keys/{}", old.kid())))
        .await
        .err(404, "SIGNING_KEY_NOT_FOUND");

    let audit = s
        .get(&s.dev("audit-log?resourceType=signing_key"))
        .await
        .ok()
        .clone();
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["signing_key.retired", "signing_key.rotated"]);

    // The new key survives a restart (it is the stored key, not a cached one).
    let s = s.restart().await;
    let answer = s.client("verify", &verify, None).await;
    answer.valid();
    assert_eq!(answer.header("x-signature-key-id"), Some(new_key.kid()));
    new_key
        .verify_response(
            &answer.request,
            &answer.bytes,
            answer.header("x-signature").unwrap(),
        )
        .unwrap();
}

/// Rotation in two steps, so that applications ship the next key before it signs: a `next` key
/// is listed and signs nothing; activating it makes it sign; the former active key stays
/// trusted until retired. At most one next key; the actions take no body.
#[tokio::test]
async fn a_next_signing_key_signs_nothing_until_it_is_activated() {
    use licensing_core::crypto::SigningPublicKey;

    let s = TestServer::start().await;
    let first = s.get(&s.dev("public-key")).await.ok().clone();
    let old = SigningPublicKey::from_base64(first["signingKey"].as_str().unwrap()).unwrap();
    let license = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let verify = json!({"licenseKey": license["licenseKey"], "hardwareIdentifier": "device-0001"});
    let file_url = s.dev(&format!(
        "licenses/id/{}/file",
        license["id"].as_str().unwrap()
    ));
    let file_kid = |answer: &crate::helpers::Answer| {
        licensing_core::crypto::license_file::LicenseFile::parse(
            answer.ok()["certificate"].as_str().unwrap(),
        )
        .unwrap()
        .envelope()
        .kid
        .clone()
    };

    let created = s.post(&s.dev("signing-keys"), "{}").await;
    assert_eq!(created.status, 201, "{}", created.body);
    let next = created.ok().clone();
    let next_key = SigningPublicKey::from_base64(next["key"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&next["state"], &next["active"], next["kid"].as_str()),
        (&json!("next"), &json!(false), Some(next_key.kid()))
    );
    let listed = s.get(&s.dev("public-key")).await.ok().clone();
    assert_eq!(
        listed["signingKey"], first["signingKey"],
        "the active key is unchanged"
    );
    let states: Vec<(&str, &str)> = listed["signingKeys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["kid"].as_str().unwrap(), k["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [(old.kid(), "active"), (next_key.kid(), "next")]);
    // It signs nothing yet: answers and files are the active key's.
    let answer = s.client("verify", &verify, None).await;
    answer.valid();
    assert_eq!(answer.header("x-signature-key-id"), Some(old.kid()));
    assert_eq!(file_kid(&s.post(&file_url, "").await), old.kid());
    // One next key at a time, and no one-step rotation while it is staged.
    s.post(&s.dev("signing-keys"), "")
        .await
        .err(409, "CONFLICT");
    s.post(&s.dev("signing-keys/rotate"), "")
        .await
        .err(409, "CONFLICT");
    // The actions take no body.
    for (url, body) in [
        (s.dev("signing-keys/rotate"), r#"{"force":true}"#),
        (s.dev("signing-keys"), "[]"),
        (
            s.dev(&format!("signing-keys/{}/activate", next_key.kid())),
            r#"{"kid":"x"}"#,
        ),
    ] {
        s.post(&url, body).await.err(400, "BAD_REQUEST");
    }
    // An unknown key; a former key cannot come back.
    s.post(&s.dev("signing-keys/0123456789abcdef/activate"), "")
        .await
        .err(404, "SIGNING_KEY_NOT_FOUND");

    let activated = s
        .post(
            &s.dev(&format!("signing-keys/{}/activate", next_key.kid())),
            "",
        )
        .await;
    assert_eq!(activated.status, 200, "{}", activated.body);
    assert_eq!(activated.ok()["state"], "active");
    let answer = s.client("verify", &verify, None).await;
    answer.valid();
    assert_eq!(answer.header("x-signature-key-id"), Some(next_key.kid()));
    next_key
        .verify_response(
            &answer.request,
            &answer.bytes,
            answer.header("x-signature").unwrap(),
        )
        .unwrap();
    assert_eq!(file_kid(&s.post(&file_url, "").await), next_key.kid());
    let listed = s.get(&s.dev("public-key")).await.ok().clone();
    assert_eq!(listed["signingKey"], next["key"]);
    let states: Vec<(&str, &str)> = listed["signingKeys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["kid"].as_str().unwrap(), k["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [(old.kid(), "former"), (next_key.kid(), "active")]);
    s.post(&s.dev(&format!("signing-keys/{}/activate", old.kid())), "")
        .await
        .err(409, "CONFLICT");

    // A staged key may be retired instead of activated; it leaves with its private half.
    let another = s.post(&s.dev("signing-keys"), "").await.ok().clone();
    let retired = s
        .delete(&s.dev(&format!(
            "signing-keys/{}",
            another["kid"].as_str().unwrap()
        )))
        .await;
    assert_eq!(retired.ok()["kid"], another["kid"]);
    use licensing_core::store::TeamStore;
    let team = s.store.get_team(s.team_id()).await.unwrap().unwrap();
    assert!(team.next_keys.is_none());
    let audit = s
        .get(&s.dev("audit-log?resourceType=signing_key"))
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
            "signing_key.retired",
            "signing_key.created",
            "signing_key.rotated",
            "signing_key.created"
        ]
    );
}

/// With a master key, a rotated signing key is stored sealed like the others, and the server
/// signs with it.
#[tokio::test]
async fn a_rotated_signing_key_is_sealed_under_the_master_key() {
    use licensing_core::store::TeamStore;

    let keys = tempfile::tempdir().unwrap();
    let key_file = crate::webhooks::master_key_in(keys.path());
    let s = TestServer::start_with(|c| c.master_key_file = Some(key_file.clone())).await;
    let new = s.post(&s.dev("signing-keys/rotate"), "").await;
    assert_eq!(new.status, 201, "{}", new.body);
    let kid = new.ok()["kid"].as_str().unwrap().to_owned();
    let team = s.store.get_team(s.team_id()).await.unwrap().unwrap();
    assert!(team.keys.sealed_by().is_some(), "{:?}", team.keys);
    let license = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let answer = s
        .client(
            "verify",
            &json!({"licenseKey": license["licenseKey"], "hardwareIdentifier": "device-0000-0001",
                    "entitlements": []}),
            None,
        )
        .await;
    answer.valid();
    assert_eq!(answer.header("x-signature-key-id"), Some(kid.as_str()));
    answer.signed_by(&{
        let mut trusted = s.public_keys().await;
        trusted.trust(new.ok()["key"].as_str().unwrap()).unwrap();
        trusted
    });
    // A staged next key's private half is sealed too.
    s.post(&s.dev("signing-keys"), "").await.ok();
    let team = s.store.get_team(s.team_id()).await.unwrap().unwrap();
    assert!(
        team.next_keys
            .as_ref()
            .is_some_and(|k| k.sealed_by().is_some()),
        "{:?}",
        team.next_keys
    );
}
