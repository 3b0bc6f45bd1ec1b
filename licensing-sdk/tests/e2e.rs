//! The SDK against the real server on 127.0.0.1:0: verify, heartbeat, downloads, the background
//! heartbeat, offline grace, the blocking client, and answers that are wrong or tampered with.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default,
    clippy::cloned_ref_to_slice_refs,
    missing_docs
)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use licensing_sdk::core::api::ResultCode;
use licensing_sdk::core::api::requests::ClientBody;
use licensing_sdk::core::model::TeamCreated;
use licensing_sdk::core::validate::HardwareId;
use licensing_sdk::core::{LicenseKey, ProductId, Timestamp};
use licensing_sdk::{
    DownloadRequest, Error, HeartbeatSchedule, LicenseClient, LicenseState, OfflineCache,
};
use licensing_server::{Config, Server, open_store};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running server with one team.
struct Running {
    base: String,
    team: TeamCreated,
    /// The server's store, for what the API refuses on purpose (an expiry in the past).
    store: licensing_server::store::SledStore,
    http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), licensing_server::ServerError>>>,
    _dir: tempfile::TempDir,
}

impl Running {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path()).unwrap();
        let team = licensing_server::teams::create_team(&store, "SDK team", Timestamp::now())
            .await
            .unwrap();
        let mut config = Config::for_data_dir(dir.path());
        config.rate_limit_per_minute = 0;
        config.dev_rate_limit_per_minute = 0;
        let server = Server::bind_with_store(config, store.clone())
            .await
            .unwrap();
        let base = format!("http://{}", server.local_addr());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            stopped.await.ok();
        }));
        Self {
            base,
            team,
            store,
            http: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
            _dir: dir,
        }
    }

    async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }

    fn client(&self, base: &str) -> LicenseClient {
        LicenseClient::new(
            base,
            self.team.team_id,
            &self.team.public_key,
            &self.team.signing_key,
        )
        .unwrap()
    }

    fn dev(&self, path: &str) -> String {
        format!(
            "{}/api/v1/dev/teams/{}/{path}",
            self.base, self.team.team_id
        )
    }

    async fn dev_send(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let response = self
            .http
            .request(method, self.dev(path))
            .bearer_auth(&self.team.api_key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "{status} {body}");
        body["data"].clone()
    }

    async fn upload(&self, product: &str, version: &str, bytes: Vec<u8>) {
        let data = json!({"version": version, "productId": product, "status": "PUBLISHED", "setAsLatest": true});
        let form = reqwest::multipart::Form::new()
            .text("data", data.to_string())
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name("app.bin"),
            );
        let response = self
            .http
            .post(self.dev("releases"))
            .bearer_auth(&self.team.api_key)
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
    }

    /// A product and a license for it (with `extra` members), returning (product id, license).
    async fn license(&self, extra: Value) -> (String, Value) {
        let p = self
            .dev_send(
                reqwest::Method::POST,
                "products",
                json!({"name": "Desk App"}),
            )
            .await;
        let pid = p["id"].as_str().unwrap().to_owned();
        let mut body = json!({"expirationType": "NEVER", "productIds": [pid]});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let l = self.dev_send(reqwest::Method::POST, "licenses", body).await;
        (pid, l)
    }
}

fn body_for(license: &Value, device: &str) -> ClientBody {
    let mut body =
        ClientBody::new(LicenseKey::parse(license["licenseKey"].as_str().unwrap()).unwrap());
    body.hardware_id = Some(HardwareId::parse(device).unwrap());
    body
}

/// A loopback proxy that copies bytes both ways but flips one bit of the first response's body
/// at `body_offset`.
async fn tampering_proxy(upstream: &str, body_offset: usize) -> String {
    let upstream: SocketAddr = upstream.trim_start_matches("http://").parse().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let server = TcpStream::connect(upstream).await.unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    tokio::io::copy(&mut client_read, &mut server_write)
                        .await
                        .ok();
                });
                let mut seen = Vec::new();
                let mut body_start = None;
                let mut flipped = false;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk_start = seen.len();
                    seen.extend_from_slice(&buf[..n]);
                    if body_start.is_none() {
                        body_start = seen
                            .windows(4)
                            .position(|w| w == b"\r\n\r\n")
                            .map(|p| p + 4);
                    }
                    if let Some(start) = body_start {
                        let at = start + body_offset;
                        if !flipped && at >= chunk_start && at < seen.len() {
                            buf[at - chunk_start] ^= 0x01;
                            flipped = true;
                        }
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn verify_heartbeat_and_download_end_to_end() {
    let server = Running::start().await;
    let (pid, l) = server.license(json!({"hwidLimit": 2})).await;
    let file: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    server.upload(&pid, "1.2.3", file.clone()).await;
    let client = server.client(&server.base);
    let body = body_for(&l, "sdk-device-0001");

    let verified = client.verify(&body).await.unwrap();
    assert!(!verified.offline);
    assert_eq!(verified.result.code, Some(ResultCode::Valid));
    assert_eq!(verified.data.license.hwid_limit, Some(2));
    assert_eq!(verified.data.products[0].name, "Desk App");
    assert_eq!(
        verified.data.products[0]
            .latest_release
            .as_ref()
            .unwrap()
            .version,
        "1.2.3"
    );

    let beat = client.heartbeat(&body).await.unwrap();
    assert_eq!(beat.data.license.hwid_limit, Some(2));

    let product: ProductId = pid.parse().unwrap();
    let request =
        DownloadRequest::new(body.license_key, product, body.hardware_id.clone().unwrap());
    let (info, bytes) = client.download_to_vec(&request).await.unwrap();
    assert!(bytes == file);
    assert_eq!(info.version, "1.2.3");
    assert_eq!(info.latest_version.as_deref(), Some("1.2.3"));
    assert_eq!(info.product_name, "Desk App");
    assert_eq!(info.size, file.len() as u64);
    assert!(info.release_created_at.is_some());

    // Refusals are typed, with the code and the details.
    let other = body_for(&l, "sdk-device-0002");
    client.verify(&other).await.unwrap();
    match client.verify(&body_for(&l, "sdk-device-0003")).await {
        Err(Error::Api { code, status, .. }) => {
            assert_eq!((code, status), (ResultCode::HwidLimitReached, 403));
        }
        other => panic!("{other:?}"),
    }
    let mut missing = request.clone();
    missing.product_id = ProductId::new();
    assert_eq!(
        client.download_to_vec(&missing).await.unwrap_err().code(),
        Some(ResultCode::ProductNotFound)
    );
}

#[tokio::test]
async fn a_wrong_public_key_or_a_changed_byte_fails_closed() {
    let server = Running::start().await;
    let (pid, l) = server.license(json!({})).await;
    server.upload(&pid, "1.0.0", vec![7u8; 200_000]).await;
    let body = body_for(&l, "sdk-device-0001");

    // Keys of another team: the signature does not verify.
    let other = Running::start().await;
    let wrong = LicenseClient::new(
        &server.base,
        server.team.team_id,
        &other.team.public_key,
        &other.team.signing_key,
    )
    .unwrap();
    assert!(matches!(wrong.verify(&body).await, Err(Error::Forged(_))));
    // Right signing key, wrong RSA key: the challenge response does not verify.
    let half = LicenseClient::new(
        &server.base,
        server.team.team_id,
        &other.team.public_key,
        &server.team.signing_key,
    )
    .unwrap();
    assert!(matches!(half.verify(&body).await, Err(Error::Forged(_))));

    // One flipped bit of the verify answer.
    for offset in [10, 100, 300] {
        let proxy = tampering_proxy(&server.base, offset).await;
        let result = server.client(&proxy).verify(&body).await;
        assert!(
            matches!(result, Err(Error::Forged(_))),
            "offset {offset}: {result:?}"
        );
    }
    // One flipped bit of a download.
    let request = DownloadRequest::new(
        body.license_key,
        pid.parse().unwrap(),
        body.hardware_id.clone().unwrap(),
    );
    for offset in [3, 20, 40, 100_000] {
        let proxy = tampering_proxy(&server.base, offset).await;
        let result = server.client(&proxy).download_to_vec(&request).await;
        assert!(
            matches!(result, Err(Error::Download(_))),
            "offset {offset}: {result:?}"
        );
    }
    // Untouched, through the same kind of proxy at an offset past the end, it works.
    let proxy = tampering_proxy(&server.base, 10_000_000).await;
    server
        .client(&proxy)
        .download_to_vec(&request)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_background_heartbeat_reports_a_suspension_and_stops_when_dropped() {
    let server = Running::start().await;
    let (_, l) = server.license(json!({})).await;
    let client = server.client(&server.base);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let task = client.spawn_heartbeat(
        body_for(&l, "sdk-device-0001"),
        HeartbeatSchedule {
            interval: Duration::from_millis(100),
            min_retry: Duration::from_millis(50),
            max_retry: Duration::from_millis(200),
        },
        Some(Arc::new(move |state: &LicenseState| {
            record.lock().unwrap().push(state.clone());
        })),
    );
    let mut states = task.subscribe();
    tokio::time::timeout(Duration::from_secs(10), states.wait_for(|s| s.is_valid()))
        .await
        .unwrap()
        .unwrap();
    let id = l["id"].as_str().unwrap();
    server
        .dev_send(
            reqwest::Method::PUT,
            &format!("licenses/id/{id}"),
            json!({"suspended": true}),
        )
        .await;
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == LicenseState::Suspended),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [LicenseState::Valid, LicenseState::Suspended]
    );
    task.stop().await;

    // Against a server that is gone, it reports the server unreachable.
    let gone = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let task = server.client(&gone).spawn_heartbeat(
        body_for(&l, "sdk-device-0001"),
        HeartbeatSchedule {
            interval: Duration::from_millis(100),
            min_retry: Duration::from_millis(20),
            max_retry: Duration::from_millis(40),
        },
        None,
    );
    let mut states = task.subscribe();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == LicenseState::Unreachable),
    )
    .await
    .unwrap()
    .unwrap();
    drop(task);
}

#[tokio::test]
async fn offline_grace_accepts_only_a_fresh_authentic_answer_for_this_device() {
    let mut server = Running::start().await;
    let (_, l) = server.license(json!({})).await;
    let client = server.client(&server.base);
    let dir = tempfile::tempdir().unwrap();
    let cache = OfflineCache::new(
        dir.path().join("last-verify.json"),
        Duration::from_secs(3600),
    );
    let body = body_for(&l, "sdk-device-0001");
    let online = client.verify_with_grace(&body, &cache).await.unwrap();
    assert!(!online.offline);
    assert!(cache.path().exists());

    server.shutdown().await;
    let offline = client.verify_with_grace(&body, &cache).await.unwrap();
    assert!(offline.offline);
    assert_eq!(offline.data, online.data);
    // Another device, or no cache, gets the transport error.
    let other = body_for(&l, "sdk-device-0002");
    assert!(
        client
            .verify_with_grace(&other, &cache)
            .await
            .unwrap_err()
            .is_transport()
    );
    // Past the grace period, or with the clock before the answer: refused.
    let at = online.result.timestamp;
    assert!(cache.load(&client, &body, at).unwrap().is_some());
    let later = Timestamp::from_millis(at.as_millis() + 3_600_001);
    assert!(cache.load(&client, &body, later).unwrap().is_none());
    let earlier = Timestamp::from_millis(at.as_millis() - 1);
    assert!(cache.load(&client, &body, earlier).unwrap().is_none());
    // A cache file changed by one byte is not authentic.
    let mut stored: Value = serde_json::from_slice(&std::fs::read(cache.path()).unwrap()).unwrap();
    let response = stored["response"].as_str().unwrap().to_owned();
    let changed = format!(
        "{}{}",
        &response[..20],
        if &response[20..21] == "A" { "B" } else { "A" }
    );
    stored["response"] = json!(format!("{changed}{}", &response[21..]));
    std::fs::write(cache.path(), stored.to_string()).unwrap();
    assert!(cache.load(&client, &body, at).unwrap().is_none());
    assert!(
        client
            .verify_with_grace(&body, &cache)
            .await
            .unwrap_err()
            .is_transport()
    );
}

#[test]
fn the_blocking_client_works_from_a_plain_main() {
    // The server runs on its own runtime thread, as another process would.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (server, license) = runtime.block_on(async {
        let server = Running::start().await;
        let (_, l) = server.license(json!({})).await;
        (server, l)
    });
    let client = licensing_sdk::blocking::LicenseClient::new(
        &server.base,
        server.team.team_id,
        &server.team.public_key,
        &server.team.signing_key,
    )
    .unwrap();
    let body = body_for(&license, "sdk-device-0001");
    let verified = client.verify(&body).unwrap();
    assert_eq!(verified.result.code, Some(ResultCode::Valid));
    client.heartbeat(&body).unwrap();
    let task = client.spawn_heartbeat(
        body,
        HeartbeatSchedule {
            interval: Duration::from_millis(50),
            ..HeartbeatSchedule::default()
        },
        None,
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !task.state().is_valid() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(task.state().is_valid());
    drop(task);
    drop(client);
    runtime.block_on(async move {
        let mut server = server;
        server.shutdown().await;
    });
}

/// (ext) Policies through the developer client, and a license in its policy's grace period:
/// verify and heartbeat say until when, the background heartbeat reports `Grace`, and once the
/// policy's grace is removed the license is expired.
#[tokio::test]
async fn a_policys_grace_period_is_reported_to_the_application() {
    use licensing_sdk::core::api::requests::{LicenseCreate, Patch, PolicyBody};
    use licensing_sdk::core::store::LicenseStore;

    let server = Running::start().await;
    let dev = dev_client(&server);
    let plan = dev
        .create_policy(&PolicyBody {
            name: Patch::Value("Yearly".into()),
            expiration_type: Patch::Value("DURATION".into()),
            expiration_days: Patch::Value(365),
            grace_days: Patch::Value(7),
            ..PolicyBody::default()
        })
        .await
        .unwrap();
    assert_eq!(dev.get_policy(plan.id).await.unwrap().grace_days, 7);
    let made = dev
        .create_license(&LicenseCreate {
            policy_id: Some(plan.id.to_string()),
            ..LicenseCreate::default()
        })
        .await
        .unwrap();
    assert_eq!(made.license.policy_id, Some(plan.id));
    // Expired two days ago, in the store (the API refuses past dates).
    let mut stored = made.license.clone();
    stored.expiration_date = Some(Timestamp::from_millis(
        Timestamp::now().as_millis() - 2 * 86_400_000,
    ));
    server
        .store
        .update_license(&stored, &licensing_sdk::core::store::Journal::NONE)
        .await
        .unwrap();

    let l = json!({"licenseKey": made.license.license_key.as_str()});
    let client = server.client(&server.base);
    let verified = client
        .verify(&body_for(&l, "sdk-grace-0001"))
        .await
        .unwrap();
    let until = verified.grace_until().expect("in its grace period");
    assert!(verified.result.details.contains("grace period until"));
    let task = client.spawn_heartbeat(
        body_for(&l, "sdk-grace-0001"),
        HeartbeatSchedule {
            interval: Duration::from_millis(100),
            min_retry: Duration::from_millis(50),
            max_retry: Duration::from_millis(200),
        },
        None,
    );
    let mut states = task.subscribe();
    let state = tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| matches!(s, LicenseState::Grace { .. })),
    )
    .await
    .unwrap()
    .unwrap()
    .clone();
    assert_eq!(state, LicenseState::Grace { until });
    assert!(state.is_valid());
    task.stop().await;

    // The grace removed from the policy: expired at once.
    dev.update_policy(
        plan.id,
        &PolicyBody {
            grace_days: Patch::Null,
            ..PolicyBody::default()
        },
    )
    .await
    .unwrap();
    let refused = client.verify(&body_for(&l, "sdk-grace-0001")).await;
    assert!(
        matches!(
            refused,
            Err(Error::Api {
                code: ResultCode::LicenseExpired,
                ..
            })
        ),
        "{refused:?}"
    );
    // In use: a delete is refused, unless it detaches.
    assert!(dev.delete_policy(plan.id, false).await.is_err());
    assert_eq!(
        dev.delete_policy(plan.id, true)
            .await
            .unwrap()
            .detached_licenses,
        1
    );
}

fn dev_client(server: &Running) -> licensing_sdk::DevClient {
    licensing_sdk::DevClient::new(&server.base, server.team.team_id, &server.team.api_key).unwrap()
}

#[tokio::test]
async fn the_developer_client_covers_every_endpoint() {
    use licensing_sdk::Upload;
    use licensing_sdk::core::LicenseSessionId;
    use licensing_sdk::core::api::LicenseFileBody;
    use licensing_sdk::core::api::requests::{
        ApiKeyBody, BlacklistBody, CustomerBody, CustomerListQuery, DeviceListQuery,
        EntitlementBody, EntitlementListQuery, LicenseCreate, LicenseListQuery, LicenseUpdate,
        Paging, Patch, ProductBody, ProductListQuery, RawMetadata, ReleaseData, ReleaseListQuery,
        RequestLogQuery, SettingsBody,
    };
    use licensing_sdk::core::model::{Resource, Scope};

    let server = Running::start().await;
    let dev = dev_client(&server);

    // Products and branches.
    let product = dev
        .create_product(&ProductBody {
            name: Patch::Value("Desk App".into()),
            url: Patch::Value("https://example.com".into()),
            metadata: Patch::Value(vec![RawMetadata::new("tier", "pro")]),
            ..ProductBody::default()
        })
        .await
        .unwrap();
    assert_eq!(dev.get_product(product.id).await.unwrap(), product);
    let renamed = dev
        .update_product(
            product.id,
            &ProductBody {
                name: Patch::Value("Desk App 2".into()),
                ..ProductBody::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(renamed.name, "Desk App 2");
    assert_eq!(
        renamed.url, product.url,
        "left-out members keep their values"
    );
    let beta = dev.create_branch(product.id, "beta").await.unwrap();
    assert_eq!(dev.list_branches(product.id).await.unwrap(), [beta.clone()]);
    let scratch = dev
        .create_product(&ProductBody {
            name: Patch::Value("Scratch".into()),
            ..ProductBody::default()
        })
        .await
        .unwrap();
    let page = dev
        .list_products(&ProductListQuery::default())
        .await
        .unwrap();
    assert_eq!(page.total_results, 2);
    dev.delete_product(scratch.id).await.unwrap();
    assert_eq!(
        dev.all_products(&ProductListQuery::default())
            .await
            .unwrap()
            .len(),
        1
    );

    // Customers.
    let customer = dev
        .create_customer(&CustomerBody {
            email: Patch::Value("jane@example.com".into()),
            full_name: Patch::Value("Jane Doe".into()),
            ..CustomerBody::default()
        })
        .await
        .unwrap();
    assert_eq!(dev.get_customer(customer.id).await.unwrap(), customer);
    let updated = dev
        .update_customer(
            customer.id,
            &CustomerBody {
                username: Patch::Value("jane".into()),
                ..CustomerBody::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.username.as_deref(), Some("jane"));
    assert_eq!(
        dev.list_customers(&CustomerListQuery::default())
            .await
            .unwrap()
            .customers,
        [updated.clone()]
    );

    // Licenses, with a typed validation error first.
    let refused = dev
        .create_license(&LicenseCreate {
            expiration_type: Some("DURATION".into()),
            hwid_limit: Patch::Value(0),
            ..LicenseCreate::default()
        })
        .await
        .unwrap_err();
    match &refused {
        Error::Api {
            status,
            code,
            errors,
            ..
        } => {
            assert_eq!((*status, *code), (400, ResultCode::BadRequest));
            let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
            assert!(
                fields.contains(&"expirationDays") && fields.contains(&"hwidLimit"),
                "{fields:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let license = dev
        .create_license(&LicenseCreate {
            expiration_type: Some("NEVER".into()),
            hwid_limit: Patch::Value(2),
            product_ids: Some(vec![product.id.to_string()]),
            customer_ids: Some(vec![customer.id.to_string()]),
            ..LicenseCreate::default()
        })
        .await
        .unwrap();
    let key = license.license.license_key;
    let id = license.license.id;
    assert_eq!(dev.get_license(&key).await.unwrap(), license);
    assert_eq!(dev.get_license_by_id(id).await.unwrap(), license);
    let suspended = dev
        .update_license(
            id,
            &LicenseUpdate {
                suspended: Patch::Value(true),
                hwid_limit: Patch::Null,
                ..LicenseUpdate::default()
            },
        )
        .await
        .unwrap();
    assert!(suspended.license.suspended);
    assert_eq!(suspended.license.hwid_limit, None, "null clears");
    for n in 0..12 {
        dev.create_license(&LicenseCreate {
            expiration_type: Some("NEVER".into()),
            metadata: Some(vec![RawMetadata::new("batch", format!("b{n}"))]),
            ..LicenseCreate::default()
        })
        .await
        .unwrap();
    }
    let mut small_pages = LicenseListQuery::default();
    small_pages.paging.page_size = 10;
    let first = dev.list_licenses(&small_pages).await.unwrap();
    assert_eq!(
        (
            first.licenses.len(),
            first.total_results,
            first.has_next_page
        ),
        (10, 13, true)
    );
    assert_eq!(dev.all_licenses(&small_pages).await.unwrap().len(), 13);

    // Devices, recorded by a client request.
    dev.update_license(
        id,
        &LicenseUpdate {
            suspended: Patch::Value(false),
            ..LicenseUpdate::default()
        },
    )
    .await
    .unwrap();
    assert!(dev.suspend_license(id).await.unwrap().license.suspended);
    let because = dev.suspend_license_because(id, "Chargeback").await.unwrap();
    assert_eq!(
        because.license.suspension_reason.as_deref(),
        Some("Chargeback")
    );
    let lifted = dev.unsuspend_license(id).await.unwrap().license;
    assert!(!lifted.suspended && lifted.suspension_reason.is_none());
    let client = server.client(&server.base);
    let mut body = ClientBody::new(key);
    body.hardware_id = Some(HardwareId::parse("sdk-device-0001").unwrap());
    client.verify(&body).await.unwrap();
    let hwids = dev
        .list_hwids(id, &DeviceListQuery::default())
        .await
        .unwrap();
    assert_eq!(hwids.hwids[0].hwid.identifier.as_str(), "sdk-device-0001");
    // The client named the device by this machine's host name and OS; one told not to sends
    // neither.
    let here = licensing_sdk::this_device();
    assert!(here.platform.is_some());
    assert_eq!(hwids.hwids[0].hwid.name, here.name);
    assert_eq!(hwids.hwids[0].hwid.platform, here.platform);
    // The request is in the license's history (refused ones too; none here).
    let history = dev
        .license_requests(id, &RequestLogQuery::default())
        .await
        .unwrap();
    assert_eq!(history.total_results, 1);
    assert_eq!(history.requests[0].code, ResultCode::Valid);
    assert_eq!(
        history.requests[0].hardware_identifier.as_deref(),
        Some("sdk-device-0001")
    );
    let mut refused = RequestLogQuery::default();
    refused.refused = Some(true);
    assert_eq!(
        dev.license_requests(id, &refused)
            .await
            .unwrap()
            .total_results,
        0
    );
    let forgotten = dev
        .set_hwid_forgotten(id, hwids.hwids[0].hwid.id, true)
        .await
        .unwrap();
    assert!(forgotten.forgotten);
    let ips = dev.list_ips(id, &DeviceListQuery::default()).await.unwrap();
    assert_eq!(ips.total_results, 1);
    dev.set_ip_forgotten(id, ips.ip_addresses[0].ip.id, true)
        .await
        .unwrap();
    let mut all = DeviceListQuery::default();
    all.filter = true;
    assert_eq!(dev.list_ips(id, &all).await.unwrap().total_results, 1);
    assert_eq!(
        dev.list_ips(id, &DeviceListQuery::default())
            .await
            .unwrap()
            .total_results,
        0
    );
    let quiet = server.client(&server.base).without_device_label();
    let mut unnamed = ClientBody::new(key);
    unnamed.hardware_id = Some(HardwareId::parse("sdk-device-0009").unwrap());
    quiet.verify(&unnamed).await.unwrap();
    let listed = dev
        .list_hwids(id, &DeviceListQuery::default())
        .await
        .unwrap();
    let quiet_one = listed
        .hwids
        .iter()
        .find(|h| h.hwid.identifier.as_str() == "sdk-device-0009")
        .unwrap();
    assert_eq!(
        (&quiet_one.hwid.name, &quiet_one.hwid.platform),
        (&None, &None)
    );

    // Releases: from bytes and from a path.
    let data = ReleaseData {
        version: Some("1.0.0".into()),
        product_id: Some(product.id.to_string()),
        status: Some("PUBLISHED".into()),
        set_as_latest: Patch::Value(true),
        ..ReleaseData::default()
    };
    let first = dev
        .create_release(&data, Some(Upload::from_bytes("app.bin", vec![1, 2, 3])))
        .await
        .unwrap();
    assert_eq!(first.release.file.as_ref().unwrap().size, 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app-2.bin");
    std::fs::write(&path, vec![9u8; 1000]).unwrap();
    let second = dev
        .create_release(
            &ReleaseData {
                version: Some("2.0.0".into()),
                branch_id: Patch::Value(beta.id.to_string()),
                ..data.clone()
            },
            Some(Upload::from_path(&path).await.unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(second.release.file.as_ref().unwrap().name, "app-2.bin");
    assert_eq!(dev.get_release(second.release.id).await.unwrap(), second);
    let updated = dev
        .update_release(
            first.release.id,
            &ReleaseData {
                status: Some("DEPRECATED".into()),
                keep_existing_file: Patch::Value(true),
                // An update states every member (null where none).
                branch_id: Patch::Null,
                metadata: Patch::Value(Vec::new()),
                license_ids: Patch::Value(Vec::new()),
                ..data.clone()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(updated.release.file, first.release.file);
    let mut by_product = ReleaseListQuery::default();
    by_product.filter.product_id = Some(product.id);
    assert_eq!(dev.all_releases(&by_product).await.unwrap().len(), 2);
    assert_eq!(
        dev.list_releases(&by_product).await.unwrap().total_results,
        2
    );
    dev.delete_release(second.release.id).await.unwrap();
    dev.delete_branch(product.id, beta.id).await.unwrap();
    assert!(dev.list_branches(product.id).await.unwrap().is_empty());

    // Settings, blacklist, keys, statistics.
    let settings = dev
        .update_settings(&SettingsBody {
            strict_products: Patch::Value(true),
            hwid_timeout: Patch::Value(60),
            ..SettingsBody::default()
        })
        .await
        .unwrap();
    assert!(settings.strict_products);
    assert_eq!(dev.settings().await.unwrap(), settings);
    let entry = dev
        .create_blacklist_entry(&BlacklistBody {
            kind: Some("COUNTRY".into()),
            value: Some("FIN".into()),
        })
        .await
        .unwrap();
    assert_eq!(dev.list_blacklist().await.unwrap(), [entry.clone()]);
    dev.delete_blacklist_entry(entry.id).await.unwrap();
    // A scoped key: reads settings, nothing else.
    let reader = dev
        .create_api_key(
            &ApiKeyBody::named("settings reader").with_scopes([Scope::read(Resource::Settings)]),
        )
        .await
        .unwrap();
    assert_eq!(reader.scopes.names(), ["settings:read"]);
    let reading =
        licensing_sdk::DevClient::new(&server.base, server.team.team_id, &reader.key).unwrap();
    assert_eq!(reading.settings().await.unwrap(), settings);
    assert_eq!(
        reading.statistics().await.unwrap_err().code(),
        Some(ResultCode::Forbidden)
    );
    dev.revoke_api_key(reader.id).await.unwrap();
    let created = dev.create_api_key(&ApiKeyBody::named("ci")).await.unwrap();
    assert!(created.key.starts_with("lsk_"));
    let second_key =
        licensing_sdk::DevClient::new(&server.base, server.team.team_id, &created.key).unwrap();
    assert_eq!(second_key.settings().await.unwrap(), settings);
    assert_eq!(dev.list_api_keys().await.unwrap().api_keys.len(), 2);
    dev.revoke_api_key(created.id).await.unwrap();
    assert_eq!(
        second_key.settings().await.unwrap_err().code(),
        Some(ResultCode::Unauthorized)
    );
    let keys = dev.public_keys().await.unwrap();
    assert_eq!(keys.public_key, server.team.public_key);
    assert_eq!(keys.signing_key, server.team.signing_key);
    let stats = dev.statistics().await.unwrap();
    assert_eq!(stats.overview.total_licenses, 13);
    assert_eq!(stats.requests.by_type.verify, 2);

    // Entitlements.
    let export = dev
        .create_entitlement(&EntitlementBody {
            name: Patch::Value("Export".into()),
            code: Patch::Value("EXPORT".into()),
            ..EntitlementBody::default()
        })
        .await
        .unwrap();
    assert_eq!(dev.get_entitlement(export.id).await.unwrap(), export);
    let renamed = dev
        .update_entitlement(
            export.id,
            &EntitlementBody {
                name: Patch::Value("Export to PDF".into()),
                ..EntitlementBody::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (renamed.name.as_str(), renamed.code.as_str()),
        ("Export to PDF", "EXPORT")
    );
    assert_eq!(
        dev.list_entitlements(&EntitlementListQuery::default())
            .await
            .unwrap()
            .entitlements,
        [renamed.clone()]
    );
    assert_eq!(
        dev.all_entitlements(&EntitlementListQuery::default())
            .await
            .unwrap(),
        [renamed]
    );
    dev.delete_entitlement(export.id).await.unwrap();
    match dev.get_entitlement(export.id).await.unwrap_err() {
        Error::Api { status, .. } => assert_eq!(status, 404),
        other => panic!("{other:?}"),
    }

    // A license's file, sessions and e-mail (refused: this server has no SMTP).
    let file = dev
        .issue_license_file(id, &LicenseFileBody::default())
        .await
        .unwrap();
    assert!(
        file.certificate.contains("LICENSE FILE"),
        "{}",
        file.certificate
    );
    assert_eq!(
        dev.list_sessions(id, &Paging::default())
            .await
            .unwrap()
            .total_results,
        0
    );
    assert_eq!(
        dev.revoke_session(id, LicenseSessionId::new())
            .await
            .unwrap_err()
            .code(),
        Some(ResultCode::SessionNotFound)
    );
    match dev.email_license(id).await.unwrap_err() {
        Error::Api { status, code, .. } => {
            assert_eq!((status, code), (400, ResultCode::BadRequest))
        }
        other => panic!("{other:?}"),
    }

    // Deletes.
    dev.delete_license(&key).await.unwrap();
    assert_eq!(
        dev.get_license(&key).await.unwrap_err().code(),
        Some(ResultCode::LicenseNotFound)
    );
    let other = dev
        .all_licenses(&LicenseListQuery::default())
        .await
        .unwrap();
    dev.delete_license_by_id(other[0].id).await.unwrap();

    // A portal link for the customer: refused while the team's portal is off, then minted.
    match dev
        .create_portal_session(customer.id, None)
        .await
        .unwrap_err()
    {
        Error::Api { status, code, .. } => {
            assert_eq!((status, code), (403, ResultCode::Forbidden))
        }
        other => panic!("{other:?}"),
    }
    let opened = dev
        .update_settings(&SettingsBody {
            portal_enabled: Patch::Value(true),
            ..SettingsBody::default()
        })
        .await
        .unwrap();
    assert!(opened.portal_enabled);
    let link = dev.create_portal_session(customer.id, None).await.unwrap();
    assert!(
        link.url
            .contains(&format!("/portal/{}/enter/", server.team.team_id)),
        "{}",
        link.url
    );
    dev.delete_customer(customer.id).await.unwrap();
    assert_eq!(
        dev.get_customer(customer.id).await.unwrap_err().code(),
        Some(ResultCode::CustomerNotFound)
    );

    // The audit log: the deletes just made, newest first, filtered by the SDK's query.
    let query = licensing_core::api::requests::AuditQuery {
        resource_type: Some("customer".into()),
        ..Default::default()
    };
    let log = dev.audit_log(&query).await.unwrap();
    assert_eq!(
        log.entries[0].action,
        licensing_core::model::Action::CustomerDeleted
    );
    assert_eq!(log.entries[0].resource_id, customer.id.to_string());
    let query = licensing_core::api::requests::AuditQuery {
        action: Some(licensing_core::model::Action::ApiKeyRevoked),
        ..Default::default()
    };
    assert_eq!(dev.audit_log(&query).await.unwrap().total_results, 2);
}

/// Every operation of the developer API, walked from the one list the server's routes are
/// made of, performed through the SDK's [`licensing_sdk::DevClient::perform`] with ids that
/// parse but name nothing: each request reaches its route (answered by the operation, with
/// its own refusal or a success), never "no such endpoint" (404) or "method not allowed" (405).
#[tokio::test]
async fn the_sdk_reaches_every_declared_operation() {
    use licensing_sdk::ReleaseUpload;
    use licensing_sdk::core::api::requests::ReleaseData;
    use licensing_sdk::core::operations::releases::{CreateRelease, UpdateRelease};
    use licensing_sdk::core::operations::{Body, DevOperation, PathIds};

    /// The operation a request of `O` with sample ids (and `{}` as its body) asks for.
    fn sample<O: DevOperation>() -> O {
        let ids: Vec<(&'static str, String)> = O::PATH
            .split('/')
            .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| {
                let text = match name {
                    "licenseKey" => "ABCDE-12345-FGHIJ-67890-KLMNO".to_owned(),
                    "kid" => "0123456789abcdef".to_owned(),
                    "provider" => "stripe".to_owned(),
                    "meter" => "EXPORTS".to_owned(),
                    _ => uuid::Uuid::new_v4().to_string(),
                };
                (name, text)
            })
            .collect();
        let pairs: Vec<(&'static str, &str)> = ids.iter().map(|(n, t)| (*n, t.as_str())).collect();
        let ids = O::Ids::parse(&pairs).unwrap_or_else(|e| panic!("{}: {e:?}", O::NAME));
        let body: &[u8] = match O::BODY {
            Body::Json | Body::Empty => b"{}",
            _ => b"",
        };
        O::from_parts(ids, "", body).unwrap_or_else(|e| panic!("{}: {e:?}", O::NAME))
    }

    async fn reaches<O: DevOperation>(dev: &licensing_sdk::DevClient, op: O) -> &'static str {
        match dev.perform(&op).await {
            Ok(_) => {}
            Err(Error::Api {
                status, details, ..
            }) => assert!(
                !(status == 404 && details.starts_with("No such endpoint")) && status != 405,
                "{} {} {}: {status} {details}",
                O::NAME,
                O::METHOD.as_str(),
                O::PATH
            ),
            Err(other) => panic!("{}: {other:?}", O::NAME),
        }
        O::NAME
    }

    macro_rules! walk {
        ([$($op:ty),* $(,)?] [$($form:ty),* $(,)?]) => {{
            let server = Running::start().await;
            let dev = dev_client(&server);
            let mut reached = Vec::new();
            $(reached.push(reaches(&dev, sample::<$op>()).await);)*
            // A form is sent by its holder: a release's, here with no file.
            let form = || ReleaseUpload::new(&ReleaseData::default(), None);
            reached.push(reaches(&dev, CreateRelease(form())).await);
            reached.push(reaches(&dev, UpdateRelease(licensing_sdk::core::ReleaseId::new(), form())).await);
            // An artifact's, for a release that does not exist.
            let artifact = licensing_sdk::ArtifactUpload::new(
                licensing_sdk::core::model::Platform::Linux,
                licensing_sdk::core::model::Arch::X86_64,
                licensing_sdk::Upload::from_bytes("app.AppImage", b"x".to_vec()),
            );
            reached.push(reaches(&dev, licensing_sdk::core::operations::releases::UploadArtifact(licensing_sdk::core::ReleaseId::new(), artifact)).await);
            let forms = [$(<$form as licensing_sdk::core::operations::Operation>::NAME),*];
            assert_eq!(forms, ["create_release", "update_release", "upload_artifact"]);
            reached
        }};
    }
    let reached =
        licensing_core::dev_operations!(walk, ReleaseUpload, licensing_sdk::ArtifactUpload);
    assert!(reached.len() >= 67, "{}", reached.len());
}

/// After a rotation, answers name the new key: a client that trusts only the former key fails
/// closed, one that was also given the new key (from the public keys' `signingKeys`) accepts
/// them, and the developer client rotates and retires.
#[tokio::test]
async fn a_client_trusts_several_signing_keys_and_picks_by_key_id() {
    let server = Running::start().await;
    let (_, l) = server.license(json!({})).await;
    let body = body_for(&l, "sdk-device-0001");
    let dev =
        licensing_sdk::DevClient::new(&server.base, server.team.team_id, &server.team.api_key)
            .unwrap();
    server.client(&server.base).verify(&body).await.unwrap();

    let new = dev.rotate_signing_key().await.unwrap();
    assert!(new.active);
    let only_old = server.client(&server.base);
    assert!(matches!(
        only_old.verify(&body).await,
        Err(Error::Forged(_))
    ));
    let both = server
        .client(&server.base)
        .trust_signing_key(&new.key)
        .unwrap();
    let verified = both.verify(&body).await.unwrap();
    assert!(!verified.offline);
    assert!(
        server
            .client(&server.base)
            .trust_signing_key("AAAA")
            .is_err()
    );

    let keys = dev.public_keys().await.unwrap();
    assert_eq!(keys.signing_key, new.key);
    assert_eq!(keys.signing_keys.len(), 2);
    let former = keys.signing_keys.iter().find(|k| !k.active).unwrap();
    let retired = dev.retire_signing_key(&former.kid).await.unwrap();
    assert_eq!(retired.kid, former.kid);
    assert_eq!(dev.public_keys().await.unwrap().signing_keys.len(), 1);
}

/// Offline use: one checkout stores a machine file; with the server gone it is accepted for
/// this machine and refused, each with its own error, when tampered with, for another machine,
/// for another license key, with an untrusted key, after its expiry and with the clock set back.
#[tokio::test]
async fn a_checked_out_file_is_checked_offline_and_every_refusal_is_its_own() {
    use licensing_sdk::{Clock, FileError, LicenseFile};

    let mut server = Running::start().await;
    let (_, l) = server.license(json!({})).await;
    let body = body_for(&l, "sdk-device-0001");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("license.lic");
    let client = server.client(&server.base);
    let out = client.checkout(&body, Some(7200), &path).await.unwrap();
    assert!(!out.verified.offline);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), out.file.text());
    assert!(out.file.text().starts_with("-----BEGIN MACHINE FILE-----"));
    // A file in the clear of another license, for any machine: it opens with any key, so the
    // license key it names must be the one given (NIT-16).
    let (_, other_license) = server.license(json!({})).await;
    let plain = server
        .dev_send(
            reqwest::Method::POST,
            &format!("licenses/id/{}/file", other_license["id"].as_str().unwrap()),
            json!({"encrypt": false}),
        )
        .await;
    let plain = LicenseFile::parse(plain["certificate"].as_str().unwrap()).unwrap();
    server.shutdown().await;

    // The network is gone: the stored file is all there is.
    let keys = client.public_keys();
    let key = l["licenseKey"].as_str().unwrap();
    let machine = body.hardware_id.clone().unwrap();
    let clock = Clock::new(dir.path().join("clock"));
    let file = LicenseFile::load(&path).unwrap();
    let payload = file.verify(keys, key, Some(&machine), &clock).unwrap();
    assert_eq!(payload.data.license.key.as_str(), key);
    assert_eq!(payload.meta.ttl, Some(7200));
    let issued = payload.meta.issued;
    assert_eq!(
        plain.verify(keys, key, Some(&machine), &clock),
        Err(FileError::WrongKey),
        "another license's file in the clear"
    );
    assert!(
        plain
            .verify(
                keys,
                other_license["licenseKey"].as_str().unwrap(),
                None,
                &clock
            )
            .is_ok()
    );

    let other_machine = HardwareId::parse("sdk-device-0002").unwrap();
    assert_eq!(
        file.verify(keys, key, Some(&other_machine), &clock),
        Err(FileError::WrongKey)
    );
    assert_eq!(
        file.verify(
            keys,
            "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA",
            Some(&machine),
            &clock
        ),
        Err(FileError::WrongKey)
    );
    let other = Running::start().await;
    let strangers = LicenseClient::new(
        &other.base,
        other.team.team_id,
        &other.team.public_key,
        &other.team.signing_key,
    )
    .unwrap();
    assert!(matches!(
        file.verify(strangers.public_keys(), key, Some(&machine), &clock),
        Err(FileError::UntrustedKey(_))
    ));
    // One byte of the certificate's body changed: refused (as malformed or forged, never
    // accepted).
    let text = file.text();
    let at = text.find('\n').unwrap() + 20;
    let mut bytes = text.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    match LicenseFile::parse(&tampered) {
        Ok(f) => assert!(f.verify(keys, key, Some(&machine), &clock).is_err()),
        Err(e) => assert!(matches!(e, FileError::Malformed(_)), "{e}"),
    }
    // Past its expiry.
    let later = issued.plus_seconds(7201);
    assert_eq!(
        file.verify_at(keys, key, Some(&machine), &clock, later),
        Err(FileError::Expired(issued.plus_seconds(7200)))
    );
    // The clock set back: before the latest time seen (the expired check above saw `later`).
    assert!(matches!(
        file.verify_at(keys, key, Some(&machine), &clock, issued),
        Err(FileError::ClockBackwards { .. })
    ));
    // And before the file's issue, with a fresh clock file.
    let fresh = Clock::new(dir.path().join("fresh-clock"));
    assert!(matches!(
        file.verify_at(
            keys,
            key,
            Some(&machine),
            &fresh,
            licensing_sdk::core::Timestamp::from_millis(issued.as_millis() - 3_600_000)
        ),
        Err(FileError::ClockBackwards { .. })
    ));
}

/// Floating sessions: a guard holds a seat and heartbeats; the sixth copy of five is refused;
/// `end` and a drop give the seat back; a revoked session is reported lost.
#[tokio::test]
async fn a_session_guard_holds_a_seat_reports_it_lost_and_ends_on_drop() {
    let server = Running::start().await;
    let (_, l) = server
        .license(json!({"sessionLimit": 2, "sessionTtl": 10}))
        .await;
    let client = server.client(&server.base);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let first = client
        .start_session(
            &body_for(&l, "sdk-seat-00001"),
            Some(Arc::new(move |state: &licensing_sdk::SessionState| {
                record.lock().unwrap().push(state.clone());
            })),
        )
        .await
        .unwrap();
    assert_eq!(first.started().ttl, 10);
    assert!(first.state().is_held());
    assert_eq!(first.verified().result.code, Some(ResultCode::Valid));
    let second = client
        .start_session(&body_for(&l, "sdk-seat-00002"), None)
        .await
        .unwrap();
    let full = client
        .start_session(&body_for(&l, "sdk-seat-00003"), None)
        .await
        .unwrap_err();
    assert_eq!(full.code(), Some(ResultCode::SessionLimitReached), "{full}");

    // `end` frees the seat at once.
    second.end().await.unwrap();
    let third = client
        .start_session(&body_for(&l, "sdk-seat-00003"), None)
        .await
        .unwrap();

    // A revoked session is reported lost at the next heartbeat (a third of 10 s).
    let id = l["id"].as_str().unwrap();
    server
        .dev_send(
            reqwest::Method::DELETE,
            &format!("licenses/id/{id}/sessions/{}", first.id()),
            json!(null),
        )
        .await;
    let mut states = first.subscribe();
    tokio::time::timeout(
        Duration::from_secs(30),
        states.wait_for(|s| *s == licensing_sdk::SessionState::Lost(ResultCode::SessionNotFound)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        seen.lock().unwrap().last(),
        Some(&licensing_sdk::SessionState::Lost(
            ResultCode::SessionNotFound
        ))
    );
    drop(first);

    // Dropping a guard ends its session in the background: the seat frees (bounded wait).
    drop(third);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut held = Vec::new();
    loop {
        match client
            .start_session(&body_for(&l, "sdk-seat-00004"), None)
            .await
        {
            Ok(session) => {
                held.push(session);
                if held.len() == 2 {
                    break;
                }
            }
            Err(e) => {
                assert_eq!(e.code(), Some(ResultCode::SessionLimitReached), "{e}");
                assert!(
                    std::time::Instant::now() < deadline,
                    "a dropped guard kept its seat"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    for session in held {
        session.end().await.unwrap();
    }

    // The blocking guard ends its session before its drop returns.
    let blocking_l = l.clone();
    let base = server.base.clone();
    let team = server.team.clone();
    tokio::task::spawn_blocking(move || {
        let client = licensing_sdk::blocking::LicenseClient::new(
            &base,
            team.team_id,
            &team.public_key,
            &team.signing_key,
        )
        .unwrap();
        for _ in 0..3 {
            let a = client
                .start_session(&body_for(&blocking_l, "sdk-seat-00005"), None)
                .unwrap();
            let b = client
                .start_session(&body_for(&blocking_l, "sdk-seat-00006"), None)
                .unwrap();
            assert!(a.state().is_held());
            drop(a);
            b.end().unwrap();
        }
    })
    .await
    .unwrap();
}

/// A session whose server is gone is reported unreachable while its seat lasts, then lost
/// when its TTL passes; its end is then an error the application can tell apart.
#[tokio::test]
async fn a_session_without_its_server_is_lost_when_its_ttl_passes() {
    let mut server = Running::start().await;
    let (_, l) = server
        .license(json!({"sessionLimit": 1, "sessionTtl": 10}))
        .await;
    let client = server.client(&server.base);
    let session = client
        .start_session(&body_for(&l, "sdk-seat-gone-1"), None)
        .await
        .unwrap();
    server.shutdown().await;
    let mut states = session.subscribe();
    tokio::time::timeout(
        Duration::from_secs(30),
        states.wait_for(|s| matches!(s, licensing_sdk::SessionState::Unreachable { .. })),
    )
    .await
    .unwrap()
    .unwrap();
    tokio::time::timeout(
        Duration::from_secs(30),
        states.wait_for(|s| *s == licensing_sdk::SessionState::Lost(ResultCode::SessionNotFound)),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(!session.state().is_held());
    assert!(session.end().await.unwrap_err().is_transport());
}

/// What a [`lossy_proxy`] does to the connections it takes, in order; later ones pass.
#[derive(Clone, Copy, Debug)]
enum Loss {
    /// Forwards the request, waits for the server's answer, then closes the client's connection
    /// without passing it on: the write is done, and the client never hears.
    Answer,
    /// Answers 503 itself, without a word to the server.
    Unavailable,
}

/// A loopback proxy to `upstream` that spoils its first connections as `losses` says, and the
/// number of connections it took.
async fn lossy_proxy(upstream: &str, losses: Vec<Loss>) -> (String, Arc<Mutex<usize>>) {
    let upstream: SocketAddr = upstream.trim_start_matches("http://").parse().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let taken = Arc::new(Mutex::new(0usize));
    let counter = taken.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let n = {
                let mut taken = counter.lock().unwrap();
                *taken += 1;
                *taken - 1
            };
            let loss = losses.get(n).copied();
            tokio::spawn(async move {
                let server = TcpStream::connect(upstream).await.unwrap();
                match loss {
                    Some(Loss::Unavailable) => {
                        let mut buf = vec![0u8; 64 * 1024];
                        let _request = client.read(&mut buf).await;
                        let body = br#"{"data":null,"result":{"code":"INTERNAL_SERVER_ERROR","details":"down","timestamp":"2026-11-27T00:00:00Z","valid":false}}"#;
                        let head = format!(
                            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        client.write_all(head.as_bytes()).await.ok();
                        client.write_all(body).await.ok();
                    }
                    Some(Loss::Answer) => {
                        let (mut client_read, client_write) = client.into_split();
                        let (mut server_read, mut server_write) = server.into_split();
                        tokio::spawn(async move {
                            tokio::io::copy(&mut client_read, &mut server_write)
                                .await
                                .ok();
                        });
                        // The first bytes of the answer: the server did the write.
                        let mut buf = vec![0u8; 64 * 1024];
                        let _answer = server_read.read(&mut buf).await;
                        drop(client_write);
                    }
                    None => {
                        let (mut client_read, mut client_write) = client.into_split();
                        let (mut server_read, mut server_write) = server.into_split();
                        tokio::spawn(async move {
                            tokio::io::copy(&mut client_read, &mut server_write)
                                .await
                                .ok();
                        });
                        tokio::io::copy(&mut server_read, &mut client_write)
                            .await
                            .ok();
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), taken)
}

/// The developer client sends a key with every write and the same key again when it retries:
/// an answer lost after the server did the write, then a 503, and the customer exists once. A
/// key of the caller's own makes a later call with it answer the same record. Without retries,
/// the lost answer is an error (and the write was done).
#[tokio::test]
async fn the_developer_client_retries_a_write_whose_answer_was_lost_and_it_runs_once() {
    use licensing_sdk::RetryPolicy;
    use licensing_sdk::core::api::requests::{CustomerBody, CustomerListQuery, Patch};
    let mut server = Running::start().await;
    let (proxy, taken) = lossy_proxy(&server.base, vec![Loss::Answer, Loss::Unavailable]).await;
    let policy = RetryPolicy {
        attempts: 4,
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        timeout: Duration::from_secs(30),
    };
    let retrying = licensing_sdk::DevClient::new(&proxy, server.team.team_id, &server.team.api_key)
        .unwrap()
        .with_retries(policy);
    let body = CustomerBody {
        email: Patch::Value("retried@example.com".into()),
        ..CustomerBody::default()
    };
    let created = retrying.create_customer(&body).await.unwrap();
    assert_eq!(
        *taken.lock().unwrap(),
        3,
        "lost, unavailable, then answered"
    );
    let direct = dev_client(&server);
    let all = direct
        .all_customers(&CustomerListQuery::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].id, created.id);

    // A key of one's own: the second call with it answers the first one's record.
    let keyed = direct.with_idempotency_key("order-2026-0042");
    let first = keyed.create_customer(&body).await.unwrap();
    let again = keyed.create_customer(&body).await.unwrap();
    assert_eq!(first.id, again.id);
    let other = CustomerBody {
        email: Patch::Value("someone-else@example.com".into()),
        ..CustomerBody::default()
    };
    let refused = keyed.create_customer(&other).await.unwrap_err();
    assert_eq!(refused.code(), Some(ResultCode::IdempotencyKeyMismatch));
    let count = direct
        .all_customers(&CustomerListQuery::default())
        .await
        .unwrap()
        .len();
    assert_eq!(count, 2);

    // Without retries the lost answer is the caller's error.
    let (proxy, _) = lossy_proxy(&server.base, vec![Loss::Answer]).await;
    let once = licensing_sdk::DevClient::new(&proxy, server.team.team_id, &server.team.api_key)
        .unwrap()
        .with_retries(RetryPolicy::none());
    let lost = once.create_customer(&body).await.unwrap_err();
    assert!(matches!(lost, Error::Transport(_)), "{lost:?}");
    let count = direct
        .all_customers(&CustomerListQuery::default())
        .await
        .unwrap()
        .len();
    assert_eq!(count, 3, "the write was done all the same");
    server.shutdown().await;
}

/// (ext) The developer client sets up a payment integration and its rules, and reads the events
/// it received.
#[tokio::test]
async fn the_developer_client_manages_payment_integrations() {
    use licensing_sdk::core::api::requests::{
        InboundQuery, IntegrationBody, Patch, PolicyBody, RawMatch, RuleBody,
    };
    use licensing_sdk::core::crypto::inbound::Provider;

    let server = Running::start().await;
    let dev = dev_client(&server);
    let policy = dev
        .create_policy(&PolicyBody {
            name: Patch::Value("Pro".into()),
            ..PolicyBody::default()
        })
        .await
        .unwrap();
    let view = dev
        .put_integration(
            Provider::Paddle,
            &IntegrationBody {
                enabled: Some(true),
                webhook_secret: Some("pdl_ntfset_sdk_0123".into()),
                api_key: Patch::Missing,
            },
        )
        .await
        .unwrap();
    assert_eq!(view.webhook_secret, "…0123");
    let rule = dev
        .create_rule(
            Provider::Paddle,
            &RuleBody {
                matches: Some(RawMatch {
                    price_id: Some(json!("pri_sdk")),
                    ..RawMatch::default()
                }),
                policy_id: Some(policy.id.to_string()),
                ..RuleBody::default()
            },
        )
        .await
        .unwrap();
    let changed = dev
        .update_rule(
            Provider::Paddle,
            rule.id,
            &RuleBody {
                on_refund: Some("delete".into()),
                ..RuleBody::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(changed.matches, rule.matches);
    assert_eq!(
        dev.list_rules(Provider::Paddle).await.unwrap().rules.len(),
        1
    );
    assert_eq!(dev.list_integrations().await.unwrap().integrations.len(), 1);
    let events = dev
        .list_payment_events(&InboundQuery::default())
        .await
        .unwrap();
    assert_eq!(events.total_results, 0);
    dev.delete_rule(Provider::Paddle, rule.id).await.unwrap();
    dev.delete_integration(Provider::Paddle).await.unwrap();
    let gone = dev.get_integration(Provider::Paddle).await.unwrap_err();
    assert!(matches!(gone, Error::Api { status: 404, .. }), "{gone:?}");
}

/// (ext) A Rust application updates itself: the feed's answer is checked like verify's, and a
/// download is kept only when its size, SHA-256 and minisign signature check out against the
/// team's keys or a vendor key the application trusts; anything else is forged and removed.
#[tokio::test]
async fn updates_are_offered_and_downloads_kept_only_when_their_signature_checks_out() {
    use licensing_sdk::core::api::requests::{LicenseCreate, Patch, ProductBody, ReleaseData};
    use licensing_sdk::core::crypto::updater::{Blake2b512, MinisignPublicKey, MinisignSignature};
    use licensing_sdk::core::model::{Arch, Platform};
    use licensing_sdk::{ArtifactUpload, Upload};

    let server = Running::start().await;
    let dev = dev_client(&server);
    let product = |name: &'static str, sign: bool| {
        let dev = dev.clone();
        async move {
            dev.create_product(&ProductBody {
                name: Patch::Value(name.into()),
                sign_updates: Patch::Value(sign),
                ..ProductBody::default()
            })
            .await
            .unwrap()
        }
    };
    let release = |product: licensing_sdk::core::ProductId| {
        let dev = dev.clone();
        async move {
            dev.create_release(
                &ReleaseData {
                    version: Some("2.0.0".into()),
                    product_id: Some(product.to_string()),
                    status: Some("PUBLISHED".into()),
                    ..ReleaseData::default()
                },
                None,
            )
            .await
            .unwrap()
            .release
            .id
        }
    };
    let license = |product: licensing_sdk::core::ProductId| {
        let dev = dev.clone();
        async move {
            dev.create_license(&LicenseCreate {
                expiration_type: Some("NEVER".into()),
                product_ids: Some(vec![product.to_string()]),
                ..LicenseCreate::default()
            })
            .await
            .unwrap()
            .license
            .license_key
        }
    };
    let build = vec![7u8; 100_000];
    let client = server.client(&server.base);
    let dir = tempfile::tempdir().unwrap();

    // Signed by the server: offered, downloaded and verified with the team's key.
    let signed = product("Signed", true).await;
    let r = release(signed.id).await;
    dev.upload_artifact(
        r,
        &ArtifactUpload::new(
            Platform::Linux,
            Arch::X86_64,
            Upload::from_bytes("a.AppImage", build.clone()),
        ),
    )
    .await
    .unwrap();
    let key = license(signed.id).await;
    let update = client
        .check_for_update(&key, signed.id, "1.0.0", Platform::Linux, Arch::X86_64)
        .await
        .unwrap()
        .expect("2.0.0 is offered");
    assert_eq!(update.version, "2.0.0");
    let path = dir.path().join("a.AppImage");
    client
        .download_update(&key, &update.artifacts[0], &path)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), build);
    assert!(
        client
            .check_for_update(&key, signed.id, "2.0.0", Platform::Linux, Arch::X86_64)
            .await
            .unwrap()
            .is_none()
    );
    // A feed answer whose SHA-256 was changed on the way: refused, the file removed.
    let mut tampered = update.artifacts[0].clone();
    tampered.artifact.sha256 = "00".repeat(32);
    let path = dir.path().join("tampered.AppImage");
    assert!(matches!(
        client.download_update(&key, &tampered, &path).await,
        Err(Error::Forged(_))
    ));
    assert!(!path.exists());

    // Signed by the vendor: refused until the application trusts the vendor's key.
    let vendor = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
    let public = MinisignPublicKey::new([3; 8], vendor.verifying_key().as_bytes()).unwrap();
    let digest: [u8; 64] =
        blake2::Digest::finalize(<Blake2b512 as blake2::Digest>::new_with_prefix(&build)).into();
    let signature = MinisignSignature::sign([3; 8], &digest, "timestamp:1\tfile:b", |m| {
        ed25519_dalek::Signer::sign(&vendor, m).to_bytes()
    });
    let theirs = product("Vendor signed", false).await;
    let r = release(theirs.id).await;
    let mut upload = ArtifactUpload::new(
        Platform::Linux,
        Arch::X86_64,
        Upload::from_bytes("b.AppImage", build.clone()),
    );
    upload.signature = Some(signature.to_base64());
    dev.upload_artifact(r, &upload).await.unwrap();
    let key = license(theirs.id).await;
    let update = client
        .check_for_update(&key, theirs.id, "1.0.0", Platform::Linux, Arch::X86_64)
        .await
        .unwrap()
        .unwrap();
    let path = dir.path().join("b.AppImage");
    assert!(matches!(
        client
            .download_update(&key, &update.artifacts[0], &path)
            .await,
        Err(Error::Forged(_))
    ));
    let trusting = server
        .client(&server.base)
        .trust_updater_key(&public.to_base64())
        .unwrap();
    trusting
        .download_update(&key, &update.artifacts[0], &path)
        .await
        .unwrap();

    // Unsigned: never kept.
    let unsigned = product("Unsigned", false).await;
    let r = release(unsigned.id).await;
    dev.upload_artifact(
        r,
        &ArtifactUpload::new(
            Platform::Linux,
            Arch::X86_64,
            Upload::from_bytes("c.AppImage", build.clone()),
        ),
    )
    .await
    .unwrap();
    let key = license(unsigned.id).await;
    let update = client
        .check_for_update(&key, unsigned.id, "1.0.0", Platform::Linux, Arch::X86_64)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        client
            .download_update(&key, &update.artifacts[0], &dir.path().join("c"))
            .await,
        Err(Error::Forged("the artifact is not signed"))
    ));
}

/// (ext) Usage: a report is counted, a meter at its limit answers `counted: false` with its
/// standing, a report whose answer was lost (then a 503) is retried with its event id and
/// counted once, a batch answers each event, and the developer client reads and adjusts the
/// counters.
#[tokio::test]
async fn usage_is_reported_once_through_retries_and_read_back() {
    use licensing_sdk::core::api::requests::UsageEvent;
    let mut server = Running::start().await;
    let (_, license) = server
        .license(json!({"meters": [{"code": "EXPORTS", "limit": 3, "period": "month"}]}))
        .await;
    let body = body_for(&license, "usage-machine-0001");
    let client = server.client(&server.base);
    let first = client.record_usage(&body, "EXPORTS", 1).await.unwrap();
    assert!(first.counted);
    assert_eq!((first.state.used, first.state.remaining), (1, Some(2)));
    // The answer of the first attempt is lost and the second finds the server unavailable:
    // the third attempt, under the same event id, is answered, and the event counted once.
    let (proxy, taken) = lossy_proxy(&server.base, vec![Loss::Answer, Loss::Unavailable]).await;
    let retried = server
        .client(&proxy)
        .record_usage(&body, "EXPORTS", 1)
        .await
        .unwrap();
    assert_eq!(*taken.lock().unwrap(), 3);
    assert!(retried.counted);
    assert_eq!(retried.state.used, 2, "counted once");
    // At the limit: answered, not counted.
    client.record_usage(&body, "EXPORTS", 1).await.unwrap();
    let full = client.record_usage(&body, "EXPORTS", 1).await.unwrap();
    assert!(!full.counted);
    assert_eq!((full.state.used, full.state.remaining), (3, Some(0)));
    // An unknown meter is an error naming it.
    let unknown = client.record_usage(&body, "PRINTS", 1).await.unwrap_err();
    assert_eq!(unknown.code(), Some(ResultCode::MeterNotFound));
    // The developer client reads and adjusts; a batch answers each event.
    let dev = dev_client(&server);
    let id = licensing_sdk::core::LicenseId::parse(license["id"].as_str().unwrap()).unwrap();
    let usage = dev.usage(id).await.unwrap();
    assert_eq!(usage.meters[0].used, 3);
    let adjusted = dev
        .adjust_usage(id, "EXPORTS", -2, "two exports failed")
        .await
        .unwrap();
    assert_eq!(adjusted.used, 1);
    let event = |quantity| UsageEvent {
        meter: "EXPORTS".into(),
        quantity,
        event_id: None,
        at: None,
    };
    let results = client
        .record_usage_batch(&body, &[event(1), event(5), event(1)])
        .await
        .unwrap();
    let codes: Vec<ResultCode> = results.iter().map(|r| r.code).collect();
    assert_eq!(
        codes,
        [
            ResultCode::Valid,
            ResultCode::UsageLimitReached,
            ResultCode::Valid
        ]
    );
    assert!(results.iter().all(|r| r.event_id.is_some()));
    let reset = dev.reset_usage(id, "EXPORTS", None).await.unwrap();
    assert_eq!(reset.used, 0);
    server.shutdown().await;
}
