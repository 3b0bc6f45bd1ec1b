//! Webhook events survive SIGKILL: customers are created and new devices verified concurrently
//! while the receiver refuses every delivery, the server is killed mid-flight, and after a
//! restart (the receiver now accepting) the event of every write answered 2xx arrives, and no
//! event arrives for a write that failed or for a record that does not exist.
//!
//! The same on PostgreSQL (`LICENSING_DATABASE_URL`).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use crate::child::{Api, ChildServer, create_team_on};

/// A receiver on 127.0.0.1 that answers `status` and keeps the bodies it got while accepting.
#[derive(Clone)]
struct Receiver {
    url: String,
    status: Arc<AtomicU16>,
    accepted: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Receiver {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Receiver {
            url: format!("http://{}/in", listener.local_addr().unwrap()),
            status: Arc::new(AtomicU16::new(503)),
            accepted: Arc::default(),
        };
        let me = r.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let me = me.clone();
                tokio::spawn(async move {
                    let Some(body) = read_body(&mut conn).await else {
                        return;
                    };
                    let status = me.status.load(Ordering::SeqCst);
                    if status == 200
                        && let Ok(body) = serde_json::from_slice::<Value>(&body)
                    {
                        me.accepted.lock().unwrap().push(body);
                    }
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                    conn.write_all(head.as_bytes()).await.ok();
                    conn.shutdown().await.ok();
                });
            }
        });
        r
    }

    /// The `data.id` (or for a device, `data.identifier`) of each accepted event of `kind`.
    fn subjects(&self, kind: &str) -> BTreeSet<String> {
        let field = if kind == "device.activated" {
            "identifier"
        } else {
            "id"
        };
        self.accepted
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b["data"][field].as_str().map(str::to_owned))
            .collect()
    }
}

async fn read_body(conn: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + 4 + length {
            let n = conn.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        return Some(buf[end + 4..end + 4 + length].to_vec());
    }
}

/// What the server answered.
#[derive(Default)]
struct Ledger {
    /// Customers whose creation was answered 2xx.
    customers: BTreeSet<String>,
    /// Devices whose first verify was answered 2xx.
    devices: BTreeSet<String>,
    /// Ids named by writes that failed with a 4xx (an update of a customer that does not exist).
    refused: BTreeSet<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_event_is_delivered_after_sigkill() {
    events_survive(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_event_is_delivered_after_sigkill_on_postgres() {
    let Some(url) = licensing_server::testing::postgres::database().await else {
        eprintln!(
            "every_acknowledged_event_is_delivered_after_sigkill_on_postgres: skipped, no PostgreSQL"
        );
        return;
    };
    events_survive(Some(url)).await;
}

async fn events_survive(url: Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let team = create_team_on(dir.path(), url.as_deref());
    let mut env: Vec<(&str, &str)> = vec![
        ("LICENSING_WEBHOOK_ALLOW_HTTP", "true"),
        ("LICENSING_WEBHOOK_ALLOW_PRIVATE", "true"),
        (
            "LICENSING_WEBHOOK_RETRY_DELAYS",
            "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
        ),
    ];
    if let Some(url) = &url {
        env.push(("LICENSING_DATABASE_URL", url.as_str()));
    }
    let receiver = Receiver::start().await;
    let mut server = ChildServer::start(dir.path(), &env);
    let api = Api::new(&server, &team);
    api.post(
        "webhooks",
        json!({"url": receiver.url, "eventTypes": ["*"]}),
    )
    .await;
    let license = api
        .post("licenses", json!({"expirationType": "NEVER"}))
        .await;
    let license_key = license["licenseKey"].as_str().unwrap().to_owned();

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut workers = Vec::new();
    for w in 0..4 {
        let (client, ledger, stop, api) = (
            client.clone(),
            ledger.clone(),
            stop.clone(),
            Api::new(&server, &team),
        );
        let license_key = license_key.clone();
        workers.push(tokio::spawn(async move {
            for i in 0..400 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                // A customer.
                let created = client
                    .post(api.dev("customers"))
                    .bearer_auth(&api.team.api_key)
                    .json(&json!({"fullName": format!("Crash {w}-{i}")}))
                    .send()
                    .await;
                if let Ok(response) = created
                    && response.status().is_success()
                    && let Ok(answer) = response.json::<Value>().await
                {
                    let id = answer["data"]["id"].as_str().unwrap().to_owned();
                    ledger.lock().await.customers.insert(id);
                }
                // A new device.
                let device = format!("crash-device-{w}-{i:04}");
                let verified = client
                    .post(format!(
                        "{}/api/v1/client/teams/{}/verification/verify",
                        api.base, api.team.id
                    ))
                    .json(&json!({"licenseKey": license_key, "hardwareIdentifier": device}))
                    .send()
                    .await;
                if let Ok(response) = verified
                    && response.status().is_success()
                {
                    ledger.lock().await.devices.insert(device);
                }
                // A write that fails: an update of a customer that does not exist.
                if i % 10 == 0 {
                    let missing = uuid::Uuid::new_v4().to_string();
                    let refused = client
                        .put(api.dev(&format!("customers/{missing}")))
                        .bearer_auth(&api.team.api_key)
                        .json(&json!({"fullName": "Nobody"}))
                        .send()
                        .await;
                    if let Ok(response) = refused
                        && response.status().is_client_error()
                    {
                        ledger.lock().await.refused.insert(missing);
                    }
                }
            }
        }));
    }
    // Kill while the writes run, with their events still queued (the receiver refuses them).
    let started = Instant::now();
    while ledger.lock().await.customers.len() < 40 && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.await.unwrap();
    }
    let ledger = ledger.lock().await;
    assert!(
        ledger.customers.len() >= 40,
        "too few writes before the kill"
    );
    assert!(receiver.accepted.lock().unwrap().is_empty());

    // Restart with the receiver accepting: every acknowledged event arrives.
    receiver.status.store(200, Ordering::SeqCst);
    let server = server.start_again();
    let api = Api::new(&server, &team);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let customers = receiver.subjects("customer.created");
        let devices = receiver.subjects("device.activated");
        if ledger.customers.is_subset(&customers) && ledger.devices.is_subset(&devices) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after 120 s, {} of {} acknowledged customers and {} of {} devices had their events",
            ledger.customers.intersection(&customers).count(),
            ledger.customers.len(),
            ledger.devices.intersection(&devices).count(),
            ledger.devices.len(),
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Let what else is queued arrive, then compare with what the store holds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stored: HashSet<String> = {
        let mut ids = HashSet::new();
        let mut page = 1;
        loop {
            let answer: Value = client
                .get(api.dev(&format!("customers?pageSize=100&page={page}")))
                .bearer_auth(&api.team.api_key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let items = answer["data"]["customers"].as_array().unwrap().clone();
            ids.extend(items.iter().map(|c| c["id"].as_str().unwrap().to_owned()));
            if items.len() < 100 {
                break;
            }
            page += 1;
        }
        ids
    };
    for id in receiver.subjects("customer.created") {
        assert!(
            stored.contains(&id),
            "an event for customer {id}, which the store does not hold"
        );
    }
    for id in receiver.subjects("customer.updated") {
        assert!(
            !ledger.refused.contains(&id),
            "an event for the failed update of {id}"
        );
    }
    assert!(!ledger.refused.is_empty());
    println!(
        "events after SIGKILL: {} customers, {} devices acknowledged; all delivered",
        ledger.customers.len(),
        ledger.devices.len()
    );
}
