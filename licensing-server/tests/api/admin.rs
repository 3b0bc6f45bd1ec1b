use reqwest::Method;
use serde_json::json;

use crate::helpers::TestServer;

const TOKEN: &str = "admin-token-for-tests-0123456789";

#[tokio::test]
async fn admin_api_is_absent_without_a_token() {
    let s = TestServer::start().await;
    let url = format!("{}/api/v1/admin/teams", s.base);
    s.send(Method::GET, &url, Some(TOKEN), None)
        .await
        .err(404, "BAD_REQUEST");
}

#[tokio::test]
async fn admin_creates_lists_and_switches_features() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let teams = format!("{}/api/v1/admin/teams", s.base);
    s.send(Method::GET, &teams, None, None)
        .await
        .err(401, "UNAUTHORIZED");
    s.send(Method::GET, &teams, Some("wrong-token"), None)
        .await
        .err(401, "UNAUTHORIZED");
    s.send(Method::GET, &teams, Some(s.key()), None)
        .await
        .err(401, "UNAUTHORIZED");

    let created = s
        .send(
            Method::POST,
            &teams,
            Some(TOKEN),
            Some(r#"{"name":"Acme"}"#),
        )
        .await;
    assert_eq!(created.status, 201);
    let t = created.ok().clone();
    for member in ["teamId", "apiKey", "publicKey", "signingKey"] {
        assert!(t[member].is_string(), "{member}");
    }
    // The new team's key works on its own team.
    let own = format!(
        "{}/api/v1/dev/teams/{}/licenses",
        s.base,
        t["teamId"].as_str().unwrap()
    );
    s.send(Method::GET, &own, t["apiKey"].as_str(), None)
        .await
        .ok();

    let listed = s.send(Method::GET, &teams, Some(TOKEN), None).await;
    let names: Vec<&str> = listed.ok()["teams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Acme") && names.contains(&"Team A"));
    assert!(
        listed.ok()["teams"][0].get("keys").is_none(),
        "no key material in the list"
    );

    let features = format!(
        "{}/api/v1/admin/teams/{}/features",
        s.base,
        t["teamId"].as_str().unwrap()
    );
    let off = s
        .send(
            Method::PUT,
            &features,
            Some(TOKEN),
            Some(r#"{"classloader":false}"#),
        )
        .await;
    assert_eq!(off.ok()["features"], json!({"classloader": false}));
    assert_eq!(
        s.send(Method::PUT, &features, Some(TOKEN), Some(r#"{}"#))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["classloader"]
    );
    let missing = format!(
        "{}/api/v1/admin/teams/{}/features",
        s.base,
        uuid::Uuid::new_v4()
    );
    s.send(
        Method::PUT,
        &missing,
        Some(TOKEN),
        Some(r#"{"classloader":true}"#),
    )
    .await
    .err(404, "TEAM_NOT_FOUND");
    assert_eq!(
        s.send(Method::POST, &teams, Some(TOKEN), Some(r#"{"name":""}"#))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["name"]
    );
}
