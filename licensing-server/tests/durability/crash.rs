//! Crash safety: concurrent writes (license creates and updates, device registrations through
//! verify, usage increments with and without an `eventId`, release uploads) against the real binary, SIGKILL at a random moment, restart, and
//! check that every write answered 2xx is there and intact. Several rounds on one data
//! directory, so each restart re-checks everything acknowledged before it.
//!
//! The same on PostgreSQL (`LICENSING_DATABASE_URL`), where the release files live in the
//! database too.
//!
//! The seed of the random moments is printed; `CRASH_SEED=N` replays a run.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::child::{Api, ChildServer, Team, create_team_on, release_form};

const ROUNDS: usize = 6;

#[derive(Debug, Clone)]
struct License {
    id: String,
    key: String,
    hwid_limit: u64,
}

#[derive(Debug, Default)]
struct Update {
    acked: Option<u64>,
    in_flight: Option<u64>,
}

#[derive(Debug, Clone)]
struct Release {
    id: String,
    version: String,
    size: usize,
    md5: String,
}

/// A metered license's increments: those answered, the one in flight, and each answered
/// event id with the count it answered.
#[derive(Debug, Default)]
struct Usage {
    key: String,
    acked: u64,
    in_flight: u64,
    events: Vec<(String, u64)>,
}

/// Everything the server answered 2xx to.
#[derive(Debug, Default)]
struct Ledger {
    licenses: Vec<License>,
    updates: HashMap<String, Update>,
    devices: HashMap<String, BTreeSet<String>>,
    usage: HashMap<String, Usage>,
    releases: Vec<Release>,
}

/// One round's view of the server: where it is and whether it is being killed.
#[derive(Clone)]
struct Target {
    client: reqwest::Client,
    base: String,
    team: Team,
    killing: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
}

impl Target {
    fn dev(&self, path: &str) -> String {
        format!("{}/api/v1/dev/teams/{}/{path}", self.base, self.team.id)
    }

    /// The answer, or `None` when the request failed because the server is being killed.
    /// Any other failure, and any 5xx, fails the test.
    async fn answer(&self, request: reqwest::RequestBuilder) -> Option<(u16, Value)> {
        let result = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, body))
        }
        .await;
        match result {
            Ok((status, body)) => {
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                assert!(status < 500, "{status} {body}");
                Some((status, body))
            }
            Err(e) => {
                assert!(
                    self.killing.load(Ordering::SeqCst),
                    "request failed while the server was up: {e}"
                );
                None
            }
        }
    }

    fn dev_request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.dev(path))
            .bearer_auth(&self.team.api_key)
    }

    async fn create_license(&self, hwid_limit: u64) -> Option<License> {
        let body = json!({"expirationType": "NEVER", "hwidLimit": hwid_limit});
        let (status, answer) = self
            .answer(
                self.dev_request(reqwest::Method::POST, "licenses")
                    .json(&body),
            )
            .await?;
        assert_eq!(status, 200, "{answer}");
        let license = License {
            id: answer["data"]["id"].as_str().unwrap().to_owned(),
            key: answer["data"]["licenseKey"].as_str().unwrap().to_owned(),
            hwid_limit,
        };
        self.ledger.lock().await.licenses.push(license.clone());
        Some(license)
    }

    async fn creates(self) {
        let mut n = 0;
        while !self.killing.load(Ordering::SeqCst) {
            n += 1;
            if self.create_license(1 + n % 7).await.is_none() {
                return;
            }
        }
    }

    async fn updates(self) {
        let Some(license) = self.create_license(1).await else {
            return;
        };
        let mut value = 0;
        while !self.killing.load(Ordering::SeqCst) {
            value += 1;
            self.ledger
                .lock()
                .await
                .updates
                .entry(license.id.clone())
                .or_default()
                .in_flight = Some(value);
            let request = self
                .dev_request(reqwest::Method::PUT, &format!("licenses/id/{}", license.id))
                .json(&json!({"ipLimit": value}));
            let Some((status, answer)) = self.answer(request).await else {
                return;
            };
            assert_eq!(status, 200, "{answer}");
            assert_eq!(answer["data"]["ipLimit"], value);
            let mut ledger = self.ledger.lock().await;
            let update = ledger.updates.get_mut(&license.id).unwrap();
            update.acked = Some(value);
            update.in_flight = None;
        }
    }

    async fn devices(self, round: usize, worker: usize) {
        let Some(license) = self.create_license(10_000).await else {
            return;
        };
        let url = format!(
            "{}/api/v1/client/teams/{}/verification/verify",
            self.base, self.team.id
        );
        let mut n = 0;
        while !self.killing.load(Ordering::SeqCst) {
            n += 1;
            let hwid = format!("crash-device-{round}-{worker}-{n:05}");
            let request = self
                .client
                .post(&url)
                .json(&json!({"licenseKey": license.key, "hardwareIdentifier": hwid}));
            let Some((status, answer)) = self.answer(request).await else {
                return;
            };
            assert_eq!((status, &answer["result"]["code"]), (200, &json!("VALID")));
            self.ledger
                .lock()
                .await
                .devices
                .entry(license.id.clone())
                .or_default()
                .insert(hwid);
        }
    }

    /// Increments of one unlimited meter of a new license, every other one with an `eventId`.
    async fn increments(self, round: usize, worker: usize) {
        let body =
            json!({"expirationType": "NEVER", "meters": [{"code": "CALLS", "period": "none"}]});
        let Some((status, answer)) = self
            .answer(
                self.dev_request(reqwest::Method::POST, "licenses")
                    .json(&body),
            )
            .await
        else {
            return;
        };
        assert_eq!(status, 200, "{answer}");
        let id = answer["data"]["id"].as_str().unwrap().to_owned();
        let key = answer["data"]["licenseKey"].as_str().unwrap().to_owned();
        self.ledger.lock().await.usage.insert(
            id.clone(),
            Usage {
                key: key.clone(),
                ..Usage::default()
            },
        );
        let url = format!("{}/api/v1/client/teams/{}/usage", self.base, self.team.id);
        let mut n = 0;
        while !self.killing.load(Ordering::SeqCst) {
            n += 1;
            let quantity = 1 + n % 3;
            let event = (n % 2 == 0).then(|| format!("crash-{round}-{worker}-{n}"));
            let mut body = json!({"licenseKey": key, "meter": "CALLS", "quantity": quantity});
            if let Some(event) = &event {
                body["eventId"] = json!(event);
            }
            self.ledger
                .lock()
                .await
                .usage
                .get_mut(&id)
                .unwrap()
                .in_flight = quantity;
            let Some((status, answer)) = self.answer(self.client.post(&url).json(&body)).await
            else {
                return;
            };
            assert_eq!(
                (status, &answer["result"]["code"]),
                (200, &json!("VALID")),
                "{answer}"
            );
            let used = answer["data"]["used"].as_u64().unwrap();
            let mut ledger = self.ledger.lock().await;
            let usage = ledger.usage.get_mut(&id).unwrap();
            usage.acked += quantity;
            usage.in_flight = 0;
            assert_eq!(used, usage.acked, "license {id}: the answer's count");
            if let Some(event) = event {
                usage.events.push((event, used));
            }
        }
    }

    async fn uploads(self, product: String, round: usize, seed: u64) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut n = 0;
        while !self.killing.load(Ordering::SeqCst) {
            n += 1;
            let version = format!("{round}.{n}.0");
            let mut bytes = vec![0u8; rng.gen_range(1..=512 * 1024)];
            rng.fill(&mut bytes[..]);
            let data = json!({"version": version, "productId": product, "status": "PUBLISHED"});
            let form = release_form(&data, bytes.clone());
            let request = self
                .dev_request(reqwest::Method::POST, "releases")
                .multipart(form);
            let Some((status, answer)) = self.answer(request).await else {
                return;
            };
            assert_eq!(status, 201, "{answer}");
            self.ledger.lock().await.releases.push(Release {
                id: answer["data"]["id"].as_str().unwrap().to_owned(),
                version,
                size: bytes.len(),
                md5: licensing_core::crypto::md5_hex(&bytes),
            });
        }
    }

    async fn get(&self, path: &str) -> Value {
        let (status, answer) = self
            .answer(self.dev_request(reqwest::Method::GET, path))
            .await
            .unwrap();
        assert_eq!(status, 200, "GET {path}: {answer}");
        answer["data"].clone()
    }

    /// Checks every acknowledged write; settles in-flight updates to what the store holds.
    /// Release files are read where the store keeps them (`files` for PostgreSQL).
    async fn check(
        &self,
        data_dir: &std::path::Path,
        files: Option<&licensing_server::files::FileStore>,
    ) -> usize {
        let mut ledger = self.ledger.lock().await;
        let mut checked = 0;
        for license in &ledger.licenses {
            let stored = self.get(&format!("licenses/id/{}", license.id)).await;
            assert_eq!(stored["licenseKey"], license.key.as_str(), "{stored}");
            assert_eq!(stored["hwidLimit"], license.hwid_limit, "{stored}");
            checked += 1;
        }
        for (id, update) in &mut ledger.updates {
            let stored = self.get(&format!("licenses/id/{id}")).await;
            let stored = stored["ipLimit"].as_u64();
            let allowed = [update.acked, update.in_flight];
            assert!(
                allowed.contains(&stored),
                "license {id}: ipLimit {stored:?}, acknowledged {:?}, in flight {:?}",
                update.acked,
                update.in_flight
            );
            update.acked = stored;
            update.in_flight = None;
            checked += 1;
        }
        for (id, devices) in &ledger.devices {
            let mut listed = BTreeSet::new();
            for page in 1.. {
                let list = self
                    .get(&format!("licenses/id/{id}/hwid?pageSize=100&page={page}"))
                    .await;
                for record in list["hwids"].as_array().unwrap() {
                    listed.insert(record["identifier"].as_str().unwrap().to_owned());
                }
                if list["hasNextPage"] != true {
                    break;
                }
            }
            let missing: Vec<_> = devices.difference(&listed).collect();
            assert!(missing.is_empty(), "license {id}: lost devices {missing:?}");
            checked += devices.len();
        }
        let url = format!("{}/api/v1/client/teams/{}/usage", self.base, self.team.id);
        for (id, usage) in &mut ledger.usage {
            let stored = self.get(&format!("licenses/id/{id}/usage")).await;
            let used = stored["meters"][0]["used"].as_u64().unwrap_or(0);
            assert!(
                (usage.acked..=usage.acked + usage.in_flight).contains(&used),
                "license {id}: {used} used, {} acknowledged, {} in flight",
                usage.acked,
                usage.in_flight
            );
            usage.acked = used;
            usage.in_flight = 0;
            // An acknowledged event, sent again, answers as it did and counts nothing.
            if let Some((event, answered)) = usage.events.last() {
                let body = json!({"licenseKey": usage.key, "meter": "CALLS", "quantity": 1, "eventId": event});
                let (status, again) = self
                    .answer(self.client.post(&url).json(&body))
                    .await
                    .unwrap();
                assert_eq!(status, 200, "{again}");
                assert_eq!(again["data"]["used"].as_u64(), Some(*answered), "{again}");
                let after = self.get(&format!("licenses/id/{id}/usage")).await;
                assert_eq!(after["meters"][0]["used"].as_u64(), Some(used), "{after}");
            }
            checked += 1 + usage.events.len();
        }
        for release in &ledger.releases {
            let stored = self.get(&format!("releases/{}", release.id)).await;
            assert_eq!(stored["version"], release.version.as_str(), "{stored}");
            let file = &stored["file"];
            assert_eq!(file["size"], release.size, "{stored}");
            assert_eq!(file["checksum"], release.md5.as_str(), "{stored}");
            let key = file["key"].as_str().unwrap();
            let stored = match files {
                None => std::fs::read(data_dir.join("files").join(key)).unwrap(),
                Some(files) => files.read(key).await.unwrap().expect("the release's file"),
            };
            assert_eq!(licensing_core::crypto::md5_hex(&stored), release.md5);
            checked += 1;
        }
        checked
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_write_survives_sigkill() {
    crash_rounds(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_write_survives_sigkill_on_postgres() {
    let Some(url) = licensing_server::testing::postgres::database().await else {
        eprintln!("every_acknowledged_write_survives_sigkill_on_postgres: skipped, no PostgreSQL");
        return;
    };
    crash_rounds(Some(url)).await;
}

/// [`ROUNDS`] rounds of writes and SIGKILL on one store: the data directory's, or the
/// database at `url`.
async fn crash_rounds(url: Option<String>) {
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    println!("CRASH_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let team = create_team_on(dir.path(), url.as_deref());
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let env: Vec<(&str, &str)> = url
        .iter()
        .map(|url| ("LICENSING_DATABASE_URL", url.as_str()))
        .collect();
    let mut server = ChildServer::start(dir.path(), &env);
    // The test's own view of the database's files (none on sled: they are in the directory).
    let files = match &url {
        None => None,
        Some(url) => {
            let store = licensing_server::open_configured_store(dir.path(), Some(url), 0, 2)
                .await
                .unwrap();
            Some(licensing_server::server::file_store_for(&store, dir.path()).unwrap())
        }
    };
    let product = Api::new(&server, &team)
        .post("products", json!({"name": "Crash"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for round in 0..ROUNDS {
        let target = Target {
            client: client.clone(),
            base: server.base.clone(),
            team: team.clone(),
            killing: Arc::new(AtomicBool::new(false)),
            ledger: ledger.clone(),
        };
        let workers = vec![
            tokio::spawn(target.clone().creates()),
            tokio::spawn(target.clone().creates()),
            tokio::spawn(target.clone().updates()),
            tokio::spawn(target.clone().updates()),
            tokio::spawn(target.clone().devices(round, 0)),
            tokio::spawn(target.clone().devices(round, 1)),
            tokio::spawn(target.clone().increments(round, 0)),
            tokio::spawn(target.clone().increments(round, 1)),
            tokio::spawn(target.clone().uploads(product.clone(), round, rng.r#gen())),
        ];
        tokio::time::sleep(Duration::from_millis(rng.gen_range(100..1_500))).await;
        target.killing.store(true, Ordering::SeqCst);
        server.kill();
        for worker in workers {
            worker.await.unwrap();
        }

        // The store opens without error, and everything acknowledged is there.
        server = server.start_again();
        let target = Target {
            base: server.base.clone(),
            ..target
        };
        target.killing.store(false, Ordering::SeqCst);
        let checked = target.check(dir.path(), files.as_ref()).await;
        let ledger = ledger.lock().await;
        println!(
            "round {round}: {checked} acknowledged writes intact \
             ({} licenses, {} updated, {} devices, {} usage counted, {} releases so far)",
            ledger.licenses.len(),
            ledger.updates.len(),
            ledger.devices.values().map(BTreeSet::len).sum::<usize>(),
            ledger.usage.values().map(|u| u.acked).sum::<u64>(),
            ledger.releases.len()
        );
    }
    let ledger = ledger.lock().await;
    assert!(
        ledger.licenses.len() > ROUNDS * 2,
        "too few writes to prove anything"
    );
    assert!(!ledger.releases.is_empty(), "no upload was acknowledged");
    assert!(!ledger.devices.is_empty(), "no device was acknowledged");
    assert!(
        ledger.usage.values().any(|u| !u.events.is_empty()),
        "no usage event was acknowledged"
    );
}
