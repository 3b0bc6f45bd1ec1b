//! (ext) Floating sessions (protocol.md section 6): started under the license's `sessionLimit`
//! in the same atomic step as its other limits, extended by heartbeats, ended by the
//! application or revoked by the developer API, counted while live; both stores, and two
//! instances of one database racing for the last seat.

use serde_json::{Value, json};

use crate::helpers::{TestServer, on_postgres};

async fn floating(s: &TestServer, limit: u32, ttl: u32) -> String {
    let license = s
        .license(
            &json!({"expirationType": "NEVER", "sessionLimit": limit, "sessionTtl": ttl})
                .to_string(),
        )
        .await;
    assert_eq!(license["sessionLimit"], limit, "{license}");
    assert_eq!(license["sessionTtl"], ttl, "{license}");
    license["licenseKey"].as_str().unwrap().to_owned()
}

fn body(key: &str, device: &str) -> Value {
    json!({"licenseKey": key, "hardwareIdentifier": device})
}

#[tokio::test]
async fn sessions_start_under_the_limit_heartbeat_end_and_free_their_seats() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let key = floating(&s, 2, 600).await;
    let start = |device: &'static str| {
        let (s, key) = (&s, key.clone());
        async move { s.client("sessions/start", &body(&key, device), None).await }
    };
    let first = start("machine-one-0001").await;
    first.signed_by(&keys);
    assert_eq!(
        first.body["result"]["details"], "Session started",
        "{}",
        first.body
    );
    let session = first.valid()["session"].clone();
    assert_eq!(session["ttl"], 600);
    assert!(session["expiresAt"].is_string());
    assert!(first.valid()["license"].is_object(), "a verify's data too");
    let id = session["id"].as_str().unwrap().to_owned();
    // A second copy on the same machine takes the second seat; a third copy is refused.
    start("machine-one-0001").await.valid();
    let full = start("machine-two-0002").await;
    full.err(403, "SESSION_LIMIT_REACHED").signed_by(&keys);

    // The developer API lists the live sessions.
    let license = s.get(&s.dev(&format!("licenses/{key}"))).await.ok().clone();
    let license_id = license["id"].as_str().unwrap().to_owned();
    let listed = s
        .get(&s.dev(&format!("licenses/id/{license_id}/sessions")))
        .await
        .ok()
        .clone();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    for member in [
        "id",
        "hardwareIdentifier",
        "ipAddress",
        "startedAt",
        "lastSeenAt",
        "expiresAt",
    ] {
        assert!(sessions[0].get(member).is_some(), "{member} in {listed}");
    }

    // A heartbeat with the session extends it and answers it.
    let beat = s
        .client(
            "heartbeat",
            &json!({"licenseKey": key, "hardwareIdentifier": "machine-one-0001", "sessionId": id}),
            None,
        )
        .await;
    assert_eq!(beat.valid()["session"]["id"], id.as_str());
    // Another machine's heartbeat does not find it; nor does an unknown id.
    for (device, session) in [
        ("machine-two-0002", id.clone()),
        ("machine-one-0001", uuid::Uuid::new_v4().to_string()),
    ] {
        s.client(
            "heartbeat",
            &json!({"licenseKey": key, "hardwareIdentifier": device, "sessionId": session}),
            None,
        )
        .await
        .err(404, "SESSION_NOT_FOUND")
        .signed_by(&keys);
    }

    // Ending frees the seat at once; a second end is 404.
    let end = json!({"licenseKey": key, "sessionId": id});
    let ended = s.client("sessions/end", &end, None).await;
    ended.signed_by(&keys);
    assert_eq!(ended.body["result"]["details"], "Session ended");
    assert_eq!(ended.valid()["session"]["id"], id.as_str());
    s.client("sessions/end", &end, None)
        .await
        .err(404, "SESSION_NOT_FOUND");
    let third = start("machine-two-0002").await;
    let third_id = third.valid()["session"]["id"].as_str().unwrap().to_owned();
    start("machine-three-03")
        .await
        .err(403, "SESSION_LIMIT_REACHED");

    // Revoking frees a seat too: audited, and the revoked session's heartbeat is refused.
    let revoked = s
        .delete(&s.dev(&format!("licenses/id/{license_id}/sessions/{third_id}")))
        .await;
    assert_eq!(revoked.ok()["id"], third_id.as_str());
    s.delete(&s.dev(&format!("licenses/id/{license_id}/sessions/{third_id}")))
        .await
        .err(404, "SESSION_NOT_FOUND");
    s.client(
        "heartbeat",
        &json!({"licenseKey": key, "hardwareIdentifier": "machine-two-0002", "sessionId": third_id}),
        None,
    )
    .await
    .err(404, "SESSION_NOT_FOUND");
    let audit = s
        .get(&s.dev(&format!("audit-log?resourceId={third_id}")))
        .await
        .ok()
        .clone();
    assert_eq!(audit["entries"][0]["action"], "session.revoked", "{audit}");
    start("machine-three-03").await.valid();

    // Bodies: a start needs a device; a session id is heartbeat's; an end needs both members.
    for (endpoint, sent, field) in [
        (
            "sessions/start",
            json!({"licenseKey": key}),
            "hardwareIdentifier",
        ),
        (
            "verify",
            json!({"licenseKey": key, "sessionId": third_id}),
            "sessionId",
        ),
        (
            "heartbeat",
            json!({"licenseKey": key, "hardwareIdentifier": "machine-one-0001", "sessionId": "x"}),
            "sessionId",
        ),
        ("sessions/end", json!({"licenseKey": key}), "sessionId"),
    ] {
        let refused = s.client(endpoint, &sent, None).await;
        refused.err(400, "BAD_REQUEST");
        let fields: Vec<&str> = refused.body["data"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["field"].as_str())
            .collect();
        assert_eq!(fields, [field], "{endpoint} {sent}: {}", refused.body);
    }
    // Another team's key finds neither the license nor its sessions.
    let other = s.other_team().await;
    let elsewhere = s
        .send(
            reqwest::Method::GET,
            &format!(
                "{}/api/v1/dev/teams/{}/licenses/id/{license_id}/sessions",
                s.base, other.team_id
            ),
            Some(&other.api_key),
            None,
        )
        .await;
    elsewhere.err(404, "LICENSE_NOT_FOUND");
}

#[tokio::test]
async fn an_expired_session_stops_counting_at_once_and_the_sweep_deletes_it() {
    let s = TestServer::start().await;
    let key = floating(&s, 1, 10).await;
    let first = s
        .client("sessions/start", &body(&key, "machine-one-0001"), None)
        .await;
    let id = first.valid()["session"]["id"].as_str().unwrap().to_owned();
    s.client("sessions/start", &body(&key, "machine-two-0002"), None)
        .await
        .err(403, "SESSION_LIMIT_REACHED");
    // Wait (bounded) until the first session's 10 seconds pass: the seat is free at once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let second = loop {
        let answer = s
            .client("sessions/start", &body(&key, "machine-two-0002"), None)
            .await;
        if answer.code() == "VALID" {
            break answer;
        }
        answer.err(403, "SESSION_LIMIT_REACHED");
        assert!(std::time::Instant::now() < deadline, "the seat never freed");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    second.valid();
    s.client(
        "heartbeat",
        &json!({"licenseKey": key, "hardwareIdentifier": "machine-one-0001", "sessionId": id}),
        None,
    )
    .await
    .err(404, "SESSION_NOT_FOUND");
    // The sweep deletes the expired session (it runs every 10 seconds).
    let license = s.get(&s.dev(&format!("licenses/{key}"))).await.ok().clone();
    assert_eq!(license["sessionLimit"], 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        use licensing_core::store::LicenseSessionStore;
        let license_id = licensing_core::LicenseId::parse(license["id"].as_str().unwrap()).unwrap();
        let session = licensing_core::LicenseSessionId::parse(&id).unwrap();
        let stored = s
            .store
            .get_license_session(s.team_id(), license_id, session)
            .await
            .unwrap();
        if stored.is_none() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the sweep never ran");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Two instances on one database race for the last seats: exactly the limit is admitted.
#[tokio::test]
async fn two_instances_admit_exactly_the_limit_between_them() {
    if !on_postgres() {
        return;
    }
    const LIMIT: usize = 3;
    const STARTS: usize = 12;
    let a = TestServer::start().await;
    let b = a.second_instance().await;
    let key = floating(&a, LIMIT as u32, 600).await;
    let bodies: Vec<Value> = (0..STARTS)
        .map(|i| body(&key, &format!("machine-race-{i:04}")))
        .collect();
    let mut tasks = Vec::new();
    for (i, sent) in bodies.iter().enumerate() {
        let server = if i % 2 == 0 { &a } else { &b };
        tasks.push(server.client("sessions/start", sent, None));
    }
    let answers = futures_util::future::join_all(tasks).await;
    let admitted = answers.iter().filter(|a| a.code() == "VALID").count();
    let refused = answers
        .iter()
        .filter(|a| a.code() == "SESSION_LIMIT_REACHED")
        .count();
    assert_eq!((admitted, refused), (LIMIT, STARTS - LIMIT));

    // The last seat: one of two is taken, and each instance sends four starts at once.
    let key = floating(&a, 2, 600).await;
    a.client("sessions/start", &body(&key, "machine-first-01"), None)
        .await
        .valid();
    let bodies: Vec<Value> = (0..8)
        .map(|i| body(&key, &format!("machine-last-{i:04}")))
        .collect();
    let tasks = bodies.iter().enumerate().map(|(i, sent)| {
        let server = if i % 2 == 0 { &a } else { &b };
        server.client("sessions/start", sent, None)
    });
    let answers = futures_util::future::join_all(tasks).await;
    let codes: Vec<&str> = answers.iter().map(|a| a.code()).collect();
    assert_eq!(
        codes.iter().filter(|c| **c == "VALID").count(),
        1,
        "exactly one takes the last seat: {codes:?}"
    );
}

/// An archive carries the license members and the team's `sessionTtl`; live sessions stay
/// behind (an application starts a new one against the restored server).
#[tokio::test]
async fn archives_carry_the_session_members() {
    let s = TestServer::start().await;
    s.put(&s.dev("settings"), r#"{"sessionTtl":300}"#)
        .await
        .ok();
    let key = floating(&s, 4, 120).await;
    s.client("sessions/start", &body(&key, "machine-one-0001"), None)
        .await
        .valid();
    let files = tempfile::tempdir().unwrap();
    let file_store = licensing_server::files::FileStore::new(files.path()).unwrap();
    let mut archive = Vec::new();
    licensing_server::archive::export(&s.store, &file_store, &mut archive)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (restored, _) = crate::helpers::open_test_store(dir.path()).await;
    let restored_files = licensing_server::files::FileStore::new(dir.path()).unwrap();
    licensing_server::archive::import(&restored, &restored_files, archive.as_slice())
        .await
        .unwrap();
    use licensing_core::store::{LicenseSessionStore, LicenseStore, TeamStore};
    let team = s.team_id();
    let settings = restored.get_team(team).await.unwrap().unwrap().settings;
    assert_eq!(settings.session_ttl, 300);
    let key = licensing_core::LicenseKey::parse(&key).unwrap();
    let license = restored
        .get_license_by_key(team, &key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (license.session_limit, license.session_ttl),
        (Some(4), Some(120))
    );
    let live = restored
        .list_license_sessions(
            team,
            license.id,
            licensing_core::Timestamp::now(),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(live.total, 0, "{live:?}");
}

/// The license members are validated and cleared like the other limits; a license without a
/// `sessionTtl` takes the team's (900 s unless set); a start runs every check of a verify; a
/// license without a `sessionLimit` starts sessions without limit.
#[tokio::test]
async fn members_defaults_and_the_checks_of_a_verify() {
    let s = TestServer::start().await;
    for (sent, field) in [
        (
            json!({"expirationType": "NEVER", "sessionLimit": 0}),
            "sessionLimit",
        ),
        (
            json!({"expirationType": "NEVER", "sessionTtl": 9}),
            "sessionTtl",
        ),
        (
            json!({"expirationType": "NEVER", "sessionTtl": 86_401}),
            "sessionTtl",
        ),
        (
            json!({"expirationType": "NEVER", "sessionLimit": "5"}),
            "sessionLimit",
        ),
    ] {
        let refused = s.post(&s.dev("licenses"), &sent.to_string()).await;
        assert_eq!(refused.err(400, "BAD_REQUEST").fields(), [field], "{sent}");
    }
    let license = s.license(r#"{"expirationType":"NEVER"}"#).await;
    assert_eq!(license["sessionLimit"], Value::Null);
    assert_eq!(license["sessionTtl"], Value::Null);
    let (id, key) = (
        license["id"].as_str().unwrap().to_owned(),
        license["licenseKey"].as_str().unwrap().to_owned(),
    );
    // Without a limit: any number of sessions, each of the team's TTL.
    for i in 0..6 {
        let started = s
            .client(
                "sessions/start",
                &body(&key, &format!("machine-free-{i:04}")),
                None,
            )
            .await;
        assert_eq!(started.valid()["session"]["ttl"], 900);
    }
    s.put(&s.dev("settings"), r#"{"sessionTtl":120}"#)
        .await
        .ok();
    let started = s
        .client("sessions/start", &body(&key, "machine-free-0100"), None)
        .await;
    assert_eq!(started.valid()["session"]["ttl"], 120, "the team's new TTL");
    // Set, refused, cleared through an update.
    let url = s.dev(&format!("licenses/id/{id}"));
    let set = s.put(&url, r#"{"sessionLimit":1,"sessionTtl":30}"#).await;
    assert_eq!(
        (
            set.ok()["sessionLimit"].clone(),
            set.ok()["sessionTtl"].clone()
        ),
        (json!(1), json!(30))
    );
    s.client("sessions/start", &body(&key, "machine-free-0200"), None)
        .await
        .err(403, "SESSION_LIMIT_REACHED");
    let bad = s.put(&url, r#"{"sessionLimit":0}"#).await;
    assert_eq!(bad.err(400, "BAD_REQUEST").fields(), ["sessionLimit"]);
    let cleared = s
        .put(&url, r#"{"sessionLimit":null,"sessionTtl":null}"#)
        .await;
    assert_eq!(cleared.ok()["sessionLimit"], Value::Null);
    let started = s
        .client("sessions/start", &body(&key, "machine-free-0200"), None)
        .await;
    assert_eq!(started.valid()["session"]["ttl"], 120);

    // Every check of a verify: a suspended license starts nothing; neither does an unknown key,
    // nor a blacklisted device.
    s.put(&url, r#"{"suspended":true}"#).await.ok();
    s.client("sessions/start", &body(&key, "machine-free-0300"), None)
        .await
        .err(403, "LICENSE_SUSPENDED");
    s.client(
        "sessions/start",
        &body("AAAAA-AAAAA-AAAAA-AAAAA-AAAAA", "machine-free-0300"),
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    s.put(&url, r#"{"suspended":false}"#).await.ok();
    s.post(
        &s.dev("blacklist"),
        r#"{"type":"HARDWARE_IDENTIFIER","value":"machine-banned-01"}"#,
    )
    .await
    .ok();
    s.client("sessions/start", &body(&key, "machine-banned-01"), None)
        .await
        .err(403, "HARDWARE_IDENTIFIER_BLACKLISTED");
    // A device limit is checked in the same step: a second machine is refused before a seat.
    s.put(&url, r#"{"hwidLimit":1,"sessionLimit":5}"#)
        .await
        .ok();
    let devices = s
        .get(&s.dev(&format!("licenses/id/{id}/hwid?pageSize=100")))
        .await;
    assert!(devices.ok()["totalResults"].as_u64().unwrap() > 1);
    s.client("sessions/start", &body(&key, "machine-new-09999"), None)
        .await
        .err(403, "HWID_LIMIT_REACHED");
}

/// Starts and ends are rate limited per address like verifies.
#[tokio::test]
async fn starts_and_ends_are_rate_limited_like_verifies() {
    let s = TestServer::start_with(|c| c.rate_limit_per_minute = 3).await;
    let key = floating(&s, 10, 600).await;
    let ip = Some("198.51.100.77");
    let first = s
        .client("sessions/start", &body(&key, "machine-rate-0001"), ip)
        .await;
    let id = first.valid()["session"]["id"].as_str().unwrap().to_owned();
    assert_eq!(first.header("x-ratelimit-limit"), Some("3"));
    s.client("verify", &body(&key, "machine-rate-0001"), ip)
        .await
        .valid();
    s.client(
        "sessions/end",
        &json!({"licenseKey": key, "sessionId": id}),
        ip,
    )
    .await
    .valid();
    let limited = s
        .client("sessions/start", &body(&key, "machine-rate-0001"), ip)
        .await;
    limited.err(429, "RATE_LIMIT");
    assert!(limited.header("retry-after").is_some());
}
