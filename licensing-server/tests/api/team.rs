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
    let defaults = json!({"strictCustomers": false, "strictProducts": false, "strictReleases": false, "requireHardwareIdentifier": true, "hwidTimeout": null, "ipTimeout": null});
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
