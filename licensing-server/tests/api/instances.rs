//! Two server instances on one PostgreSQL database, as behind a load balancer: limits hold
//! across them, a session key is spent on both, and a file uploaded through one is served by the
//! other, and an e-mail queued once is delivered once. (On sled, a data directory belongs to one process: these tests say so and return.)

use serde_json::json;

use crate::classloader::{aes_key, decode, query, session, setup};
use crate::client::release;
use crate::helpers::{TestServer, on_postgres};

fn postgres_only(test: &str) -> bool {
    if !on_postgres() {
        eprintln!("{test}: runs on PostgreSQL only (the api_postgres suite)");
        return false;
    }
    true
}

/// New devices verifying at once, half through each instance, never push a license past its
/// `hwidLimit`: the license's row lock is in the database, not in a process.
#[tokio::test]
async fn concurrent_new_devices_through_two_instances_never_exceed_the_limit() {
    if !postgres_only("concurrent_new_devices_through_two_instances") {
        return;
    }
    const DEVICES: usize = 24;
    const LIMIT: u64 = 5;
    let a = TestServer::start().await;
    let b = a.second_instance().await;
    let l = a
        .license(&json!({"expirationType": "NEVER", "hwidLimit": LIMIT}).to_string())
        .await;
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    let mut tasks = Vec::new();
    for i in 0..DEVICES {
        let server = if i % 2 == 0 { &a } else { &b };
        let (client, url) = (server.client.clone(), server.client_url("verify"));
        let body =
            json!({"licenseKey": key, "hardwareIdentifier": format!("device-{i:04}-instances")});
        tasks.push(tokio::spawn(async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            let answer: serde_json::Value = response.json().await.unwrap();
            answer["result"]["code"].as_str().unwrap_or("").to_owned()
        }));
    }
    let mut valid = 0;
    for task in tasks {
        match task.await.unwrap().as_str() {
            "VALID" => valid += 1,
            "HWID_LIMIT_REACHED" => {}
            other => panic!("unexpected answer {other}"),
        }
    }
    assert_eq!(
        valid, LIMIT,
        "exactly the limit admitted across both instances"
    );
    let id = l["id"].as_str().unwrap();
    let listed = b.get(&b.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(listed.ok()["totalResults"], LIMIT);
}

/// A release uploaded through one instance downloads, decrypted and byte-identical, through the
/// other; its session key is then spent on both.
#[tokio::test]
async fn a_file_and_a_spent_session_key_are_shared_by_both_instances() {
    if !postgres_only("a_file_and_a_spent_session_key_are_shared") {
        return;
    }
    let a = TestServer::start().await;
    let b = a.second_instance().await;
    let keys = a.public_keys().await;
    let (p, l) = setup(&a, json!({})).await;
    let mut data = vec![0u8; 3 * 1024 * 1024 + 17];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut data);
    release(
        &a,
        json!({"version": "1.0.0", "productId": p, "status": "PUBLISHED", "setAsLatest": true}),
        Some(("payload.bin", data.clone())),
    )
    .await;
    let key = l["licenseKey"].as_str().unwrap();
    let (secret, text) = session(&keys);
    let got = b.classloader(&query(key, &p, &text, ""), None).await;
    assert_eq!(
        got.status,
        200,
        "{}",
        String::from_utf8_lossy(&got.bytes[..got.bytes.len().min(300)])
    );
    let (plain, _) = decode(&got.bytes, &aes_key(&secret));
    assert!(plain == data, "instance B serves A's upload byte for byte");
    a.classloader(&query(key, &p, &text, ""), None)
        .await
        .err(400, "INVALID_SESSION_KEY");
}

/// What decides an answer and is cached per instance (a team's blacklist) follows a change
/// made through the other instance within the bound the README states (a notification on commit;
/// the test allows 5 s); a revoked API key is refused by the other instance at once (keys are
/// read from the database on every request).
#[tokio::test]
async fn changes_through_one_instance_take_effect_on_the_other() {
    if !postgres_only("changes_through_one_instance_take_effect_on_the_other") {
        return;
    }
    let a = TestServer::start().await;
    let b = a.second_instance().await;
    let l = a
        .license(&json!({"expirationType": "NEVER"}).to_string())
        .await;
    let body = json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": "device-0000000001"});
    // B caches the team (and its empty blacklist) on this request.
    b.client("verify", &body, Some("198.51.100.7"))
        .await
        .valid();
    a.post(
        &a.dev("blacklist"),
        &json!({"type": "IP", "value": "198.51.100.0/24"}).to_string(),
    )
    .await
    .ok();
    let started = std::time::Instant::now();
    loop {
        let answer = b.client("verify", &body, Some("198.51.100.7")).await;
        if answer.code() == "IP_BLACKLISTED" {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "instance B still admits a blacklisted address after 5 s: {}",
            answer.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let created = a
        .post(&a.dev("api-keys"), r#"{"name":"ci"}"#)
        .await
        .ok()
        .clone();
    let (id, key) = (
        created["id"].as_str().unwrap().to_owned(),
        created["key"].as_str().unwrap().to_owned(),
    );
    let list = b.dev("licenses");
    assert_eq!(
        b.send(reqwest::Method::GET, &list, Some(&key), None)
            .await
            .status,
        200
    );
    a.delete(&a.dev(&format!("api-keys/{id}"))).await.ok();
    b.send(reqwest::Method::GET, &list, Some(&key), None)
        .await
        .err(401, "UNAUTHORIZED");
}

/// A rate limit counts the requests sent to either instance: 10 a minute means 10 in all.
#[tokio::test]
async fn a_rate_limit_counts_requests_to_both_instances() {
    if !postgres_only("a_rate_limit_counts_requests_to_both_instances") {
        return;
    }
    let a = TestServer::start_with(|c| c.rate_limit_per_minute = 10).await;
    let b = a
        .second_instance_with(|c| c.rate_limit_per_minute = 10)
        .await;
    let l = a
        .license(&json!({"expirationType": "NEVER"}).to_string())
        .await;
    let body = json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": "device-0000000001"});
    let mut admitted = 0;
    for i in 0..30 {
        let server = if i % 2 == 0 { &a } else { &b };
        let answer = server.client("verify", &body, Some("192.0.2.44")).await;
        match answer.status {
            200 => admitted += 1,
            429 => assert_eq!(answer.code(), "RATE_LIMIT"),
            other => panic!("unexpected {other}: {}", answer.body),
        }
    }
    assert_eq!(admitted, 10, "one limit across both instances");
}

/// Two instances sending from one outbox (each with its mail worker, to one SMTP server):
/// every license e-mail queued through either is delivered exactly once.
#[tokio::test]
async fn an_email_queued_once_is_delivered_once_with_two_instances() {
    use std::collections::HashMap;
    use std::time::Duration;
    if !postgres_only("an_email_queued_once_is_delivered_once_with_two_instances") {
        return;
    }
    const LICENSES: usize = 20;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp = format!("smtp://{}", listener.local_addr().unwrap());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(crate::mail::smtp_server(listener, tx));
    let with_smtp = |c: &mut licensing_server::config::Config| {
        c.smtp_url = Some(smtp.clone());
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
    };
    let a = TestServer::start_with(with_smtp).await;
    let b = a.second_instance_with(with_smtp).await;
    let customer = a
        .post(&a.dev("customers"), r#"{"email":"jane@example.com"}"#)
        .await
        .ok()["id"]
        .clone();
    let mut keys = Vec::new();
    for i in 0..LICENSES {
        let server = if i % 2 == 0 { &a } else { &b };
        let body = json!({"expirationType": "NEVER", "sendEmailDelivery": true, "customerIds": [customer]});
        let l = server.license(&body.to_string()).await;
        keys.push(l["licenseKey"].as_str().unwrap().to_owned());
    }
    let mut delivered: HashMap<String, usize> = HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    // Every key arrives, then nothing more for a while (both workers poll meanwhile).
    loop {
        let quiet = if delivered.len() == LICENSES {
            Duration::from_secs(3)
        } else {
            deadline.saturating_duration_since(tokio::time::Instant::now())
        };
        match tokio::time::timeout(quiet, rx.recv()).await {
            Ok(Some(message)) => {
                let key = keys
                    .iter()
                    .find(|k| message.contains(k.as_str()))
                    .unwrap_or_else(|| panic!("an e-mail with no queued key: {message}"));
                *delivered.entry(key.clone()).or_default() += 1;
            }
            Ok(None) => panic!("the SMTP server stopped"),
            Err(_) => break,
        }
    }
    assert_eq!(delivered.len(), LICENSES, "every e-mail delivered");
    let twice: Vec<_> = delivered.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
}
