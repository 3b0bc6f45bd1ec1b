use reqwest::Method;

use crate::helpers::TestServer;

#[tokio::test]
async fn credentials_401_and_another_teams_key_403() {
    let s = TestServer::start().await;
    let url = s.dev("licenses");
    for key in [
        None,
        Some("nope"),
        Some("lsk_0000000000000000000000000000000000000000000000000000000000000000"),
    ] {
        s.send(Method::GET, &url, key, None)
            .await
            .err(401, "UNAUTHORIZED");
    }
    // Scheme other than Bearer.
    let basic = s
        .client
        .get(&url)
        .header("authorization", format!("Basic {}", s.key()))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);
    // The scheme name is case-insensitive.
    let lower = s
        .client
        .get(&url)
        .header("authorization", format!("bearer {}", s.key()))
        .send()
        .await
        .unwrap();
    assert_eq!(lower.status(), 200);
    let other = s.other_team().await;
    s.send(Method::GET, &url, Some(&other.api_key), None)
        .await
        .err(403, "FORBIDDEN");
}

#[tokio::test]
async fn another_teams_ids_are_404_and_its_data_unchanged() {
    let s = TestServer::start().await;
    let other = s.other_team().await;
    let mine = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let (id, key) = (
        mine["id"].as_str().unwrap(),
        mine["licenseKey"].as_str().unwrap(),
    );
    let theirs = |path: &str| format!("{}/api/v1/dev/teams/{}/{}", s.base, other.team_id, path);
    let k = Some(other.api_key.as_str());
    s.send(Method::GET, &theirs(&format!("licenses/id/{id}")), k, None)
        .await
        .err(404, "LICENSE_NOT_FOUND");
    s.send(Method::GET, &theirs(&format!("licenses/{key}")), k, None)
        .await
        .err(404, "LICENSE_NOT_FOUND");
    s.send(
        Method::PUT,
        &theirs(&format!("licenses/id/{id}")),
        k,
        Some(r#"{"suspended":true}"#),
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    s.send(
        Method::DELETE,
        &theirs(&format!("licenses/id/{id}")),
        k,
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    s.send(Method::DELETE, &theirs(&format!("licenses/{key}")), k, None)
        .await
        .err(404, "LICENSE_NOT_FOUND");
    s.send(
        Method::GET,
        &theirs(&format!("licenses/id/{id}/hwid")),
        k,
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    let listed = s.send(Method::GET, &theirs("licenses"), k, None).await;
    assert_eq!(listed.ok()["totalResults"], 0);
    // Intact.
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}"))).await.ok(),
        &mine
    );
}

#[tokio::test]
async fn malformed_ids_in_paths_are_400_naming_them() {
    let s = TestServer::start().await;
    let bad_team = format!("{}/api/v1/dev/teams/not-a-team/licenses", s.base);
    assert_eq!(
        s.get(&bad_team).await.err(400, "BAD_REQUEST").fields(),
        ["teamId"]
    );
    assert_eq!(
        s.get(&s.dev("licenses/id/xyz"))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["licenseId"]
    );
    assert_eq!(
        s.get(&s.dev("licenses/abcde-12345-fghij-67890-klmno"))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["licenseKey"]
    );
    assert_eq!(
        s.get(&s.dev("customers/42"))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["customerId"]
    );
    // The team id is checked before the credentials.
    let no_key = s.send(Method::GET, &bad_team, None, None).await;
    assert_eq!(no_key.err(400, "BAD_REQUEST").fields(), ["teamId"]);
}

#[tokio::test]
async fn unknown_routes_wrong_methods_and_oversize_bodies() {
    let s = TestServer::start().await;
    s.get(&format!("{}/api/v1/nothing", s.base))
        .await
        .err(404, "BAD_REQUEST");
    s.get(&s.dev("licences")).await.err(404, "BAD_REQUEST");
    s.send(Method::PATCH, &s.dev("licenses"), Some(s.key()), Some("{}"))
        .await
        .err(405, "BAD_REQUEST");
    s.send(Method::POST, &s.dev("settings"), Some(s.key()), Some("{}"))
        .await
        .err(405, "BAD_REQUEST");
    let big = format!(
        r#"{{"expirationType":"NEVER","metadata":[{{"key":"k","value":"{}"}}]}}"#,
        "x".repeat(1024 * 1024)
    );
    s.post(&s.dev("licenses"), &big)
        .await
        .err(413, "BAD_REQUEST");
    // A chunked body (no Content-Length) is limited too.
    let chunks =
        futures_util::stream::iter((0..40).map(|_| Ok::<_, std::io::Error>(vec![b' '; 64 * 1024])));
    let response = s
        .client
        .post(s.dev("licenses"))
        .bearer_auth(s.key())
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let health = s
        .send(Method::GET, &format!("{}/healthz", s.base), None, None)
        .await;
    assert_eq!(
        (health.status, health.body["status"].as_str()),
        (200, Some("ok"))
    );
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status() {
    let s = TestServer::start().await;
    s.get(&s.dev("licenses")).await.ok();
    s.get(&s.dev("licenses?pageSize=3"))
        .await
        .err(400, "BAD_REQUEST");
    s.get(&format!("{}/no/such/{}", s.base, uuid::Uuid::new_v4()))
        .await
        .err(404, "BAD_REQUEST");
    let response = s
        .client
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    let route = "/api/v1/dev/teams/{teamId}/licenses";
    assert!(
        text.contains(&format!(
            r#"licensing_http_requests_total{{route="{route}",method="GET",status="200"}} 1"#
        )),
        "{text}"
    );
    assert!(text.contains(&format!(
        r#"licensing_http_requests_total{{route="{route}",method="GET",status="400"}} 1"#
    )));
    assert!(text.contains(r#"route="unmatched",method="GET",status="404""#));
    assert!(text.contains("licensing_http_request_duration_seconds_count"));
}

/// `/metrics` shows the work waiting (e-mails in the outbox, webhook events and deliveries) as
/// the store holds it at the scrape, and on PostgreSQL the server's database connections.
#[tokio::test]
async fn metrics_show_the_backlog_and_the_database_pool() {
    // Nothing listens on these: the e-mail and the deliveries wait for their next attempt.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let s = TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
        c.webhook_allow_http = true;
        c.webhook_allow_private = true;
    })
    .await;
    // Each gauge by its exact name (the helper sums the lines a prefix starts).
    let server = &s;
    let gauge = |name: &'static str| async move { server.metric(&format!("{name} ")).await };
    assert_eq!(gauge("licensing_outbox_messages").await, 0.0);
    assert_eq!(gauge("licensing_webhook_deliveries_pending").await, 0.0);
    let max = s
        .metric(r#"licensing_store_pool_connections{state="max"}"#)
        .await;
    assert_eq!(max > 0.0, crate::helpers::on_postgres(), "pool max {max}");

    s.post(
        &s.dev("webhooks"),
        &serde_json::json!({"url": format!("http://127.0.0.1:{port}/hook"), "eventTypes": ["customer.created"]})
            .to_string(),
    )
    .await
    .ok();
    let jane = s
        .post(&s.dev("customers"), r#"{"email":"jane@example.com"}"#)
        .await
        .ok()["id"]
        .clone();
    s.post(
        &s.dev("licenses"),
        &serde_json::json!({"expirationType": "NEVER", "sendEmailDelivery": true, "customerIds": [jane]})
            .to_string(),
    )
    .await
    .ok();
    // The event becomes a delivery in the background; both wait for their next attempt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let pending = gauge("licensing_webhook_deliveries_pending").await;
        let queued = gauge("licensing_webhook_events_queued").await;
        if (pending == 1.0 && queued == 0.0) || std::time::Instant::now() > deadline {
            assert_eq!((pending, queued), (1.0, 0.0));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(gauge("licensing_outbox_messages").await, 1.0);
}

/// `docs/error-codes.md` lists every result code with its HTTP status.
#[test]
fn the_error_code_reference_names_every_code() {
    let doc = include_str!("../../../docs/error-codes.md");
    for code in licensing_core::api::ResultCode::ALL {
        let name = serde_json::to_value(code).unwrap();
        let name = name.as_str().unwrap();
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("docs/error-codes.md lacks {name}"));
        let status = row.split(" | ").nth(1).unwrap();
        assert!(
            status.starts_with(&code.http_status().to_string()),
            "{name}: {status}, the server answers {}",
            code.http_status()
        );
    }
}
