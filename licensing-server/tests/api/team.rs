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
    let defaults = json!({"strictCustomers": false, "strictProducts": false, "strictReleases": false, "hwidTimeout": null, "ipTimeout": null});
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
    for (body, field) in [
        (r#"{"hwidTimeout":0}"#, "hwidTimeout"),
        (r#"{"strictReleases":null}"#, "strictReleases"),
        (r#"{"strict":true}"#, "strict"),
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
