//! The binary on PostgreSQL (`LICENSING_DATABASE_URL`): the CLI and the server on one database,
//! a newer schema and foreign schemes refused, and one of two instances killed under load while
//! the other keeps answering and nothing acknowledged is lost.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::child::{Api, ChildServer, Team, run};

/// A fresh database, or `None` (with a notice) where PostgreSQL cannot be had.
async fn database(test: &str) -> Option<String> {
    let url = licensing_server::testing::postgres::database().await;
    if url.is_none() {
        eprintln!("{test}: skipped, no PostgreSQL");
    }
    url
}

fn team_create(url: &str) -> Team {
    let out = run(
        &["team", "create", "--name", "On PostgreSQL"],
        &[("LICENSING_DATABASE_URL", url)],
    );
    assert!(
        out.status.success(),
        "team create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let team: Value = serde_json::from_slice(&out.stdout).unwrap();
    Team {
        id: team["teamId"].as_str().unwrap().to_owned(),
        api_key: team["apiKey"].as_str().unwrap().to_owned(),
        public_key: team["publicKey"].as_str().unwrap().to_owned(),
        signing_key: team["signingKey"].as_str().unwrap().to_owned(),
    }
}

/// `team create` and `serve` with the database URL use PostgreSQL (migrated), not the data
/// directory: a team made by the CLI is served, and no embedded store is created.
#[tokio::test]
async fn the_cli_and_the_server_run_on_postgres() {
    let Some(url) = database("the_cli_and_the_server_run_on_postgres").await else {
        return;
    };
    let team = team_create(&url);
    let dir = tempfile::tempdir().unwrap();
    let server = ChildServer::start(dir.path(), &[("LICENSING_DATABASE_URL", url.as_str())]);
    let api = Api::new(&server, &team);
    let license = api
        .post("licenses", json!({"expirationType": "NEVER"}))
        .await;
    let verified: Value = api
        .client
        .post(format!(
            "{}/api/v1/client/teams/{}/verification/verify",
            server.base, team.id
        ))
        .json(&json!({"licenseKey": license["licenseKey"], "hardwareIdentifier": "device-0000000001"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(verified["result"]["code"], "VALID", "{verified}");
    assert!(
        !dir.path().join("db").exists(),
        "no embedded store next to PostgreSQL"
    );
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    let version: i64 = sqlx::query_scalar("SELECT max(version) FROM schema_migrations")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(version, licensing_server::store::postgres::SCHEMA_VERSION);
}

/// A database written by a newer server, and a URL of another scheme, refuse to start, saying
/// why (and without echoing the URL, which may hold a password).
#[tokio::test]
async fn a_newer_schema_and_other_schemes_are_refused() {
    let Some(url) = database("a_newer_schema_and_other_schemes_are_refused").await else {
        return;
    };
    team_create(&url);
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    sqlx::query("INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')")
        .execute(&mut conn)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let out = run(
        &["--listen", "127.0.0.1:0", "--data-dir", data],
        &[("LICENSING_DATABASE_URL", url.as_str())],
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("newer than this server knows"), "{said}");

    let out = run(
        &["--listen", "127.0.0.1:0", "--data-dir", data],
        &[(
            "LICENSING_DATABASE_URL",
            "mysql://root:hunter2@db/licensing",
        )],
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("only PostgreSQL"), "{said}");
    assert!(
        !said.contains("hunter2"),
        "the URL's password is not echoed: {said}"
    );
}

/// Two instances on one database under a stream of license creates; one is killed with
/// SIGKILL half-way. The other keeps answering, and every create either instance acknowledged
/// is there afterwards.
#[tokio::test]
async fn one_instance_killed_under_load_loses_nothing_and_the_other_answers() {
    let Some(url) = database("one_instance_killed_under_load").await else {
        return;
    };
    let team = team_create(&url);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let env = [("LICENSING_DATABASE_URL", url.as_str())];
    let mut a = ChildServer::start(dir_a.path(), &env);
    let b = ChildServer::start(dir_b.path(), &env);
    let (api_a, api_b) = (Api::new(&a, &team), Api::new(&b, &team));
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let stop_at = Instant::now() + Duration::from_secs(4);
    let mut writers = Vec::new();
    for w in 0..4 {
        let api = if w % 2 == 0 { &api_a } else { &api_b };
        let (client, url, key) = (
            api.client.clone(),
            api.dev("licenses"),
            team.api_key.clone(),
        );
        let acknowledged = acknowledged.clone();
        writers.push(tokio::spawn(async move {
            let mut b_failures = 0;
            while Instant::now() < stop_at {
                let sent = client
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&json!({"expirationType": "NEVER"}))
                    .timeout(Duration::from_secs(5))
                    .send()
                    .await;
                match sent {
                    Ok(response) if response.status().is_success() => {
                        match response.json::<Value>().await {
                            Ok(body) => {
                                let id = body["data"]["id"].as_str().unwrap().to_owned();
                                acknowledged.lock().unwrap().push(id);
                            }
                            // Instance A killed in the middle of its answer: the client never
                            // got it, so the write is not acknowledged (stored or not).
                            Err(_) if w % 2 == 0 => {}
                            Err(e) => {
                                b_failures += 1;
                                eprintln!("instance B cut an answer short: {e}");
                            }
                        }
                    }
                    _ if w % 2 == 0 => {
                        // Instance A is gone: nothing acknowledged, back off a little.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    other => {
                        b_failures += 1;
                        eprintln!("instance B failed a write: {other:?}");
                    }
                }
            }
            b_failures
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    a.kill();
    let mut b_failures = 0;
    for writer in writers {
        b_failures += writer.await.unwrap();
    }
    assert_eq!(b_failures, 0, "instance B kept answering");
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > 20,
        "the load ran: {}",
        acknowledged.len()
    );
    for id in &acknowledged {
        let response = api_b
            .client
            .get(api_b.dev(&format!("licenses/id/{id}")))
            .bearer_auth(&team.api_key)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            200,
            "acknowledged license {id} is present"
        );
    }
    drop(b);
}

/// What a team looks like through the developer API: every list, and each license's devices and
/// addresses (`lastUsedAt` of API keys left out: reading through a key moves it).
async fn snapshot(api: &Api) -> Value {
    let get = |path: String| {
        let (client, url, key) = (api.client.clone(), api.dev(&path), api.team.api_key.clone());
        async move {
            let response = client.get(url).bearer_auth(key).send().await.unwrap();
            assert_eq!(response.status(), 200, "GET {path}");
            let mut body: Value = response.json().await.unwrap();
            body["data"].take()
        }
    };
    let licenses = get("licenses?pageSize=100".into()).await;
    let mut usage = Vec::new();
    for l in licenses["licenses"].as_array().unwrap() {
        let id = l["id"].as_str().unwrap();
        usage.push(json!({
            "hwid": get(format!("licenses/id/{id}/hwid?showForgotten=true&pageSize=100")).await,
            "ip": get(format!("licenses/id/{id}/ip-address?showForgotten=true&pageSize=100")).await,
        }));
    }
    let mut keys = get("api-keys".into()).await;
    for k in keys["apiKeys"].as_array_mut().unwrap() {
        k.as_object_mut().unwrap().remove("lastUsedAt");
    }
    json!({
        "licenses": licenses,
        "usage": usage,
        "customers": get("customers?pageSize=100".into()).await,
        "products": get("products?pageSize=100".into()).await,
        "releases": get("releases?pageSize=100".into()).await,
        "blacklist": get("blacklist".into()).await,
        "apiKeys": keys,
        "publicKey": get("public-key".into()).await,
    })
}

/// `export` from sled and `import` into PostgreSQL (the documented migration) lose nothing:
/// every list and record equal, the release file byte-identical, the API key still valid and the
/// team's keys unchanged (a download still decrypts with the session key the old public key
/// sealed).
#[tokio::test]
async fn an_export_from_sled_imports_into_postgres_unchanged() {
    use licensing_core::crypto::frames::FrameDecoder;
    use licensing_core::crypto::{CryptoError, SessionSecret, TeamPublicKeys};
    let Some(url) = database("an_export_from_sled_imports_into_postgres_unchanged").await else {
        return;
    };
    let sled_dir = tempfile::tempdir().unwrap();
    let team = crate::child::create_team(sled_dir.path());
    let mut server = ChildServer::start(sled_dir.path(), &[]);
    let api = Api::new(&server, &team);
    let mut file = vec![0u8; 2 * 1024 * 1024 + 5];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut file);
    let (product, license_key) = api.product_with_release(file.clone()).await;
    let customer = api
        .post(
            "customers",
            json!({"email": "ada@example.com", "fullName": "Ada"}),
        )
        .await;
    api.post(
        &format!("products/{product}/branches"),
        json!({"name": "beta"}),
    )
    .await;
    api.post(
        "licenses",
        json!({"expirationType": "DURATION", "expirationDays": 30, "hwidLimit": 3,
               "customerIds": [customer["id"]], "productIds": [product],
               "metadata": [{"key": "plan", "value": "pro", "locked": true}]}),
    )
    .await;
    api.post("blacklist", json!({"type": "COUNTRY", "value": "SWE"}))
        .await;
    api.post(
        "api-keys",
        json!({"name": "shop", "scopes": ["licenses:read"]}),
    )
    .await;
    for device in ["device-0000000001", "device-0000000002"] {
        let answer: Value = api
            .client
            .post(format!(
                "{}/api/v1/client/teams/{}/verification/verify",
                server.base, team.id
            ))
            .json(&json!({"licenseKey": license_key, "hardwareIdentifier": device}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["result"]["code"], "VALID", "{answer}");
    }
    let before = snapshot(&api).await;
    server.terminate();
    server.wait(Duration::from_secs(30));

    let archive = sled_dir.path().join("export.jsonl");
    let data = sled_dir.path().to_str().unwrap();
    let out = run(
        &[
            "export",
            "--out",
            archive.to_str().unwrap(),
            "--data-dir",
            data,
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pg_dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "import",
            "--in",
            archive.to_str().unwrap(),
            "--data-dir",
            pg_dir.path().to_str().unwrap(),
        ],
        &[("LICENSING_DATABASE_URL", url.as_str())],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (counts["teams"].as_u64(), counts["files"].as_u64()),
        (Some(1), Some(1))
    );

    let server = ChildServer::start(pg_dir.path(), &[("LICENSING_DATABASE_URL", url.as_str())]);
    let api = Api::new(&server, &team);
    assert_eq!(snapshot(&api).await, before, "every record as it was");

    // The old public key still seals session keys the new server opens; the file is the same.
    let keys = TeamPublicKeys::parse(&team.public_key, &team.signing_key).unwrap();
    let secret = SessionSecret::generate();
    let session_key = keys.rsa.encrypt_session_secret(&secret).unwrap();
    let response = api
        .client
        .get(api.classloader(&license_key, &product, &session_key))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body = response.bytes().await.unwrap();
    let mut decoder = FrameDecoder::new(&secret.derive_key());
    let mut plain = Vec::new();
    decoder
        .update::<CryptoError>(&body, &mut |p| {
            plain.extend_from_slice(p);
            Ok(())
        })
        .unwrap();
    decoder.finish().unwrap();
    assert!(plain == file, "the release file is byte for byte the same");

    // An archive is imported into an empty store only.
    let out = run(
        &["import", "--in", archive.to_str().unwrap()],
        &[("LICENSING_DATABASE_URL", url.as_str())],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

/// Two instances started at once on an empty database: the first start's team is created once,
/// by one of them, and both serve it.
#[tokio::test]
async fn instances_starting_together_on_an_empty_database_create_one_team() {
    let Some(url) =
        database("instances_starting_together_on_an_empty_database_create_one_team").await
    else {
        return;
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let env = [("LICENSING_DATABASE_URL", url.as_str())];
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| ChildServer::start(dir_a.path(), &env));
        let b = s.spawn(|| ChildServer::start(dir_b.path(), &env));
        (a.join().unwrap(), b.join().unwrap())
    });
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    let teams: i64 = sqlx::query_scalar("SELECT count(*) FROM teams")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(teams, 1, "one first team for two instances");
    let credentials = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains("credentials"))
            .count()
    };
    assert_eq!(
        credentials(dir_a.path()) + credentials(dir_b.path()),
        1,
        "one instance announced it"
    );
    for server in [&a, &b] {
        let health = reqwest::get(format!("{}/healthz", server.base))
            .await
            .unwrap();
        assert_eq!(health.status(), 200);
    }
}
