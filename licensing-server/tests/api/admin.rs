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

/// The operator gives a team a new API key (a team whose keys are all lost has no other way
/// back): shown once, with the scopes asked for, working on that team only; an unknown team is
/// a 404 and a bad body names its field.
#[tokio::test]
async fn admin_gives_a_team_a_new_api_key() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let url = format!("{}/api/v1/admin/teams/{}/api-keys", s.base, s.team_id());
    s.send(Method::POST, &url, Some(s.key()), Some(r#"{"name":"x"}"#))
        .await
        .err(401, "UNAUTHORIZED");
    let created = s
        .send(
            Method::POST,
            &url,
            Some(TOKEN),
            Some(r#"{"name":"recovery","scopes":["licenses:read"]}"#),
        )
        .await;
    assert_eq!(created.status, 201);
    let key = created.ok()["key"].as_str().unwrap().to_owned();
    assert_eq!(created.ok()["name"], "recovery");
    let licenses = format!("{}/api/v1/dev/teams/{}/licenses", s.base, s.team_id());
    s.send(Method::GET, &licenses, Some(&key), None).await.ok();
    // Its scopes hold.
    s.send(
        Method::POST,
        &licenses,
        Some(&key),
        Some(r#"{"expirationType":"NEVER"}"#),
    )
    .await
    .err(403, "FORBIDDEN");
    // It is the team's: the key list shows it, and the audit log names the operator.
    let keys = format!("{}/api/v1/dev/teams/{}/api-keys", s.base, s.team_id());
    let listed = s.send(Method::GET, &keys, Some(s.key()), None).await;
    assert!(
        listed.ok()["apiKeys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["id"] == created.ok()["id"])
    );
    let audit = format!(
        "{}/api/v1/dev/teams/{}/audit-log?action=api_key.created",
        s.base,
        s.team_id()
    );
    let entries = s.send(Method::GET, &audit, Some(s.key()), None).await;
    assert_eq!(entries.ok()["entries"][0]["actor"]["type"], "ADMIN");

    let missing = format!(
        "{}/api/v1/admin/teams/{}/api-keys",
        s.base,
        uuid::Uuid::new_v4()
    );
    s.send(Method::POST, &missing, Some(TOKEN), Some(r#"{"name":"x"}"#))
        .await
        .err(404, "TEAM_NOT_FOUND");
    assert_eq!(
        s.send(Method::POST, &url, Some(TOKEN), Some(r#"{"name":""}"#))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["name"]
    );
}

/// The online backup: only with the admin token; the archive streams from its header to its
/// trailer and holds the team and its license.
#[tokio::test]
async fn admin_backup_streams_the_whole_archive() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let license = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let url = format!("{}/api/v1/admin/backup", s.base);
    s.send(Method::GET, &url, Some(s.key()), None)
        .await
        .err(401, "UNAUTHORIZED");
    let answer = reqwest::Client::new()
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-type"], "application/jsonl");
    let text = answer.text().await.unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["kind"], "header");
    assert_eq!(lines[0]["format"], "licensing-archive");
    let last = lines.last().unwrap();
    assert_eq!(last["kind"], "trailer");
    assert_eq!(last["lines"], lines.len() - 1);
    assert!(
        lines
            .iter()
            .any(|l| l["kind"] == "license" && l["license"]["licenseKey"] == license["licenseKey"]),
        "{text}"
    );
    // Every team's log says the operator took its records away (NIT-12), before the first
    // byte (the archive itself holds the entry).
    let other = s.other_team().await;
    reqwest::Client::new()
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let log = s
        .get(&s.dev("audit-log?action=team.backup_downloaded"))
        .await;
    let entries = log.ok()["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "one per download: {entries:?}");
    assert_eq!(entries[0]["actor"]["type"], "ADMIN");
    assert_eq!(entries[0]["address"], "127.0.0.1");
    assert!(text.contains("team.backup_downloaded"));
    let theirs = s
        .send(
            Method::GET,
            &format!(
                "{}/api/v1/dev/teams/{}/audit-log?action=team.backup_downloaded",
                s.base, other.team_id
            ),
            Some(&other.api_key),
            None,
        )
        .await;
    assert_eq!(theirs.ok()["entries"].as_array().unwrap().len(), 1);
}

/// The admin API's table answers like the developer API's: an unknown path 404 and a known path
/// with another method 405 (before the token), then the token (401), then a query where the
/// route takes none and a bad team id (400, naming what to fix).
#[tokio::test]
async fn admin_routes_refuse_in_order() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let admin = |path: &str| format!("{}/api/v1/admin/{path}", s.base);
    s.send(Method::GET, &admin("teams/nowhere"), None, None)
        .await
        .err(404, "BAD_REQUEST");
    s.send(Method::DELETE, &admin("teams"), None, None)
        .await
        .err(405, "BAD_REQUEST");
    s.send(
        Method::PUT,
        &admin("teams/not-a-team/features"),
        None,
        Some("{}"),
    )
    .await
    .err(401, "UNAUTHORIZED");
    let bad_id = s
        .send(
            Method::PUT,
            &admin("teams/not-a-team/features"),
            Some(TOKEN),
            Some(r#"{"classloader":true}"#),
        )
        .await;
    assert!(
        bad_id.body.to_string().contains("teamId"),
        "{:?}",
        bad_id.body
    );
    bad_id.err(400, "BAD_REQUEST");
    s.send(Method::GET, &admin("teams?page=2"), Some(TOKEN), None)
        .await
        .err(400, "BAD_REQUEST");
}
