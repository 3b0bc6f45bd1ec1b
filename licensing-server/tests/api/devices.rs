use serde_json::json;

use crate::helpers::TestServer;

#[tokio::test]
async fn hwids_and_ips_list_forget_and_remember() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    // Distinct times, so that the orders below are fully determined.
    let t0 = licensing_core::Timestamp::now();
    s.activity_at(id, "device-aaaa-0001", 1, t0).await;
    s.activity_at(id, "device-bbbb-0002", 2, t0.plus_minutes(1))
        .await;
    s.activity_at(id, "device-cccc-0003", 2, t0.plus_minutes(2))
        .await;

    let hwids = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    let page = hwids.ok();
    assert_eq!(
        (page["totalResults"].as_u64(), page["hasNextPage"].as_bool()),
        (Some(3), Some(false))
    );
    let first = &page["hwids"][0];
    assert_eq!(first["identifier"], "device-cccc-0003", "last seen first");
    assert_eq!(first["status"], "active");
    assert_eq!(first["forgotten"], false);
    assert_eq!(first["licenseId"], id);
    for member in ["id", "teamId", "lastSeenAt", "createdAt", "updatedAt"] {
        assert!(first.get(member).is_some(), "{member}");
    }
    let ips = s
        .get(&s.dev(&format!(
            "licenses/id/{id}/ip-address?sortColumn=createdAt&sortDirection=asc"
        )))
        .await;
    let ips = ips.ok();
    assert_eq!(ips["totalResults"], 2);
    assert_eq!(ips["ipAddresses"][0]["address"], "203.0.113.1");

    let hwid_id = first["id"].as_str().unwrap();
    let patched = s
        .patch(
            &s.dev(&format!("licenses/id/{id}/hwid/{hwid_id}")),
            r#"{"forgotten":true}"#,
        )
        .await;
    assert_eq!(patched.ok(), &json!({"hwidId": hwid_id, "forgotten": true}));
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await.ok()["totalResults"],
        2
    );
    let all = s
        .get(&s.dev(&format!("licenses/id/{id}/hwid?showForgotten=true")))
        .await;
    let all = all.ok();
    assert_eq!(all["totalResults"], 3);
    let forgotten = all["hwids"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == hwid_id)
        .unwrap();
    assert_eq!(forgotten["status"], "forgotten");
    s.patch(
        &s.dev(&format!("licenses/id/{id}/hwid/{hwid_id}")),
        r#"{"forgotten":false}"#,
    )
    .await
    .ok();
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await.ok()["totalResults"],
        3
    );

    let ip_id = ips["ipAddresses"][0]["id"].as_str().unwrap();
    let patched = s
        .patch(
            &s.dev(&format!("licenses/id/{id}/ip-address/{ip_id}")),
            r#"{"forgotten":true}"#,
        )
        .await;
    assert_eq!(patched.ok(), &json!({"ipId": ip_id, "forgotten": true}));

    // Errors.
    let missing = uuid::Uuid::new_v4();
    s.patch(
        &s.dev(&format!("licenses/id/{id}/hwid/{missing}")),
        r#"{"forgotten":true}"#,
    )
    .await
    .err(404, "BAD_REQUEST");
    s.patch(
        &s.dev(&format!("licenses/id/{missing}/hwid/{hwid_id}")),
        r#"{"forgotten":true}"#,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    assert_eq!(
        s.patch(&s.dev(&format!("licenses/id/{id}/hwid/{hwid_id}")), r#"{}"#)
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["forgotten"]
    );
    assert_eq!(
        s.patch(
            &s.dev(&format!("licenses/id/{id}/hwid/nope")),
            r#"{"forgotten":true}"#
        )
        .await
        .err(400, "BAD_REQUEST")
        .fields(),
        ["hwidId"]
    );
    for (query, field) in [
        ("showForgotten=yes", "showForgotten"),
        ("sortColumn=name", "sortColumn"),
        ("page=-1", "page"),
    ] {
        assert_eq!(
            s.get(&s.dev(&format!("licenses/id/{id}/ip-address?{query}")))
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field]
        );
    }
}

#[tokio::test]
async fn status_is_inactive_past_the_team_timeout() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    let two_minutes_ago = licensing_core::Timestamp::now().plus(-chrono::TimeDelta::minutes(2));
    s.activity_at(id, "device-old-00001", 1, two_minutes_ago)
        .await;
    s.activity(id, "device-new-00002", 1).await;
    let status = |page: &serde_json::Value, device: &str| {
        page["hwids"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["identifier"] == device)
            .unwrap()["status"]
            .clone()
    };
    // Without a timeout every record is active.
    let page = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(status(page.ok(), "device-old-00001"), "active");
    // With a one-minute timeout, the one seen two minutes ago is inactive.
    s.put(&s.dev("settings"), r#"{"hwidTimeout":1}"#).await.ok();
    let page = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(status(page.ok(), "device-old-00001"), "inactive");
    assert_eq!(status(page.ok(), "device-new-00002"), "active");
}
