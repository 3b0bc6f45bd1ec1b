use std::net::{IpAddr, Ipv4Addr};

use licensing_core::crypto::TeamPublicKeys;
use licensing_core::model::TeamCreated;
use licensing_core::store::{Activity, ActivityStore, TeamStore};
use licensing_core::validate::HardwareId;
use licensing_core::{LicenseId, TeamId, Timestamp};
use licensing_server::files::FileStore;
use licensing_server::store::AnyStore;
use licensing_server::{Config, Server, open_configured_store};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running server with one team.
pub struct TestServer {
    pub base: String,
    /// The separate metrics listener's address, when configured.
    pub metrics_addr: Option<std::net::SocketAddr>,
    pub team: TeamCreated,
    pub store: AnyStore,
    /// The release files.
    pub files: FileStore,
    /// The PostgreSQL database, when this suite runs on PostgreSQL.
    pub database_url: Option<String>,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), licensing_server::ServerError>>>,
    pub dir: tempfile::TempDir,
}

/// An HTTP answer: status and JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn code(&self) -> &str {
        self.body["result"]["code"].as_str().unwrap_or("")
    }

    /// The field names of a validation error.
    pub fn fields(&self) -> Vec<String> {
        self.body["data"]["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e["field"].as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Asserts a 2xx success in the envelope.
    #[track_caller]
    pub fn ok(&self) -> &Value {
        assert!(
            (200..300).contains(&self.status),
            "{} {}",
            self.status,
            self.body
        );
        assert_eq!(self.body["result"]["valid"], true, "{}", self.body);
        &self.body["data"]
    }

    /// Asserts an error with this status and code.
    #[track_caller]
    pub fn err(&self, status: u16, code: &str) -> &Self {
        assert_eq!((self.status, self.code()), (status, code), "{}", self.body);
        assert_eq!(self.body["result"]["valid"], false);
        assert!(
            !self.body["result"]["details"]
                .as_str()
                .unwrap_or("")
                .is_empty()
        );
        self
    }
}

/// The settings tests start from: rate limits and the failed-authentication limit off (tests
/// that check them turn them on), and the
/// loopback peer trusted as a proxy, so a test can speak for any client IP with
/// `X-Forwarded-For`.
pub fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config::for_data_dir(dir);
    config.rate_limit_per_minute = 0;
    config.dev_rate_limit_per_minute = 0;
    config.upload_rate_limit_per_minute = 0;
    config.auth_failure_limit_per_minute = 0;
    config.trusted_proxies = "127.0.0.1/32".parse().unwrap();
    config
}

/// Whether this suite runs on PostgreSQL: the same tests are built twice, as `api` (sled) and
/// `api_postgres`. Without PostgreSQL (outside CI) the second build says so and runs on sled.
pub fn on_postgres() -> bool {
    env!("CARGO_CRATE_NAME").ends_with("postgres")
        && licensing_server::testing::postgres::available()
}

/// Opens the store the suite runs on: a fresh PostgreSQL database, or the data directory's.
pub async fn open_test_store(dir: &std::path::Path) -> (AnyStore, Option<String>) {
    let url = if on_postgres() {
        licensing_server::testing::postgres::database().await
    } else {
        None
    };
    let store = open_configured_store(dir, url.as_deref(), 64, 8)
        .await
        .unwrap();
    (store, url)
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts with adjusted settings.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (store, database_url) = open_test_store(dir.path()).await;
        let team = licensing_server::teams::create_team(&store, "Team A", Timestamp::now())
            .await
            .unwrap();
        let mut config = test_config(dir.path());
        config.database_url = database_url;
        adjust(&mut config);
        Self::run(dir, store, team, config).await
    }

    async fn run(
        dir: tempfile::TempDir,
        store: AnyStore,
        team: TeamCreated,
        config: Config,
    ) -> Self {
        let database_url = config.database_url.clone();
        let server = Server::bind_with_store(config, store.clone())
            .await
            .unwrap();
        let base = format!("http://{}", server.local_addr());
        let metrics_addr = server.metrics_addr();
        let files = server.files().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            stopped.await.ok();
        }));
        Self {
            base,
            metrics_addr,
            team,
            store,
            files,
            database_url,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
            dir,
        }
    }

    /// Stops gracefully and starts again on the same data directory.
    pub async fn restart(mut self) -> Self {
        self.shutdown().await;
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        let team = self.team.clone();
        let database_url = self.database_url.clone();
        drop(self);
        let store = open_configured_store(dir.path(), database_url.as_deref(), 64, 8)
            .await
            .unwrap();
        let mut config = test_config(dir.path());
        config.database_url = database_url;
        Self::run(dir, store, team, config).await
    }

    pub async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }

    /// A second server on the same PostgreSQL database (its own data directory, pool and
    /// in-process caches), serving the same team: another instance behind a load balancer.
    pub async fn second_instance(&self) -> TestServer {
        self.second_instance_with(|_| {}).await
    }

    /// [`second_instance`](Self::second_instance) with adjusted settings.
    pub async fn second_instance_with(&self, adjust: impl FnOnce(&mut Config)) -> TestServer {
        let url = self
            .database_url
            .clone()
            .expect("a second instance needs PostgreSQL");
        let dir = tempfile::tempdir().unwrap();
        let store = open_configured_store(dir.path(), Some(&url), 64, 8)
            .await
            .unwrap();
        let mut config = test_config(dir.path());
        config.database_url = Some(url);
        adjust(&mut config);
        Self::run(dir, store, self.team.clone(), config).await
    }

    /// A stored release file's bytes (`None` when it is not stored).
    pub async fn stored_file(&self, key: &str) -> Option<Vec<u8>> {
        self.files.read(key).await.unwrap()
    }

    pub fn key(&self) -> &str {
        &self.team.api_key
    }

    pub fn team_id(&self) -> TeamId {
        self.team.team_id
    }

    /// `{base}/api/v1/dev/teams/{team}/{path}`.
    pub fn dev(&self, path: &str) -> String {
        format!(
            "{}/api/v1/dev/teams/{}/{}",
            self.base, self.team.team_id, path
        )
    }

    /// Another team in the same server.
    pub async fn other_team(&self) -> TeamCreated {
        licensing_server::teams::create_team(&self.store, "Team B", Timestamp::now())
            .await
            .unwrap()
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> Answer {
        let mut request = self.client.request(method, url);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_owned());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
        Answer { status, body }
    }

    pub async fn get(&self, url: &str) -> Answer {
        self.send(reqwest::Method::GET, url, Some(self.key()), None)
            .await
    }

    pub async fn post(&self, url: &str, body: &str) -> Answer {
        self.send(reqwest::Method::POST, url, Some(self.key()), Some(body))
            .await
    }

    pub async fn put(&self, url: &str, body: &str) -> Answer {
        self.send(reqwest::Method::PUT, url, Some(self.key()), Some(body))
            .await
    }

    pub async fn patch(&self, url: &str, body: &str) -> Answer {
        self.send(reqwest::Method::PATCH, url, Some(self.key()), Some(body))
            .await
    }

    pub async fn delete(&self, url: &str) -> Answer {
        self.send(reqwest::Method::DELETE, url, Some(self.key()), None)
            .await
    }

    /// Delivers `body` to the team's Stripe inbox, signed now with `secret` as Stripe signs; the
    /// answer's status.
    pub async fn stripe_event(&self, secret: &str, body: &str) -> u16 {
        let signature = licensing_core::crypto::inbound::Provider::Stripe.sign(
            secret,
            body.as_bytes(),
            Timestamp::now().as_millis() / 1000,
        );
        self.client
            .post(format!(
                "{}/api/v1/integrations/stripe?teamId={}",
                self.base,
                self.team_id()
            ))
            .header("stripe-signature", signature)
            .body(body.to_owned())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// Creates a license from a JSON body and returns its data.
    pub async fn license(&self, body: &str) -> Value {
        self.post(&self.dev("licenses"), body).await.ok().clone()
    }

    pub async fn product(&self, name: &str) -> Value {
        // Products are created through the store until their routes exist.
        use licensing_core::model::Product;
        use licensing_core::store::ProductStore;
        let product = Product {
            id: licensing_core::ProductId::new(),
            name: name.into(),
            url: None,
            metadata: Vec::new(),
            entitlement_ids: Vec::new(),
            team_id: self.team_id(),
            created_by_user_id: licensing_core::UserId::ADMIN,
            created_at: Timestamp::now(),
            updated_at: Timestamp::now(),
            updater_public_key: None,
            sparkle_public_key: None,
            sign_updates: false,
            update_feed: Default::default(),
        };
        self.store
            .create_product(&product, &licensing_core::store::Journal::NONE)
            .await
            .unwrap();
        serde_json::to_value(product).unwrap()
    }

    /// Records a device and an address on a license, as a client request would.
    pub async fn activity(&self, license: &str, device: &str, ip_last: u8) {
        self.activity_at(license, device, ip_last, Timestamp::now())
            .await;
    }

    /// Like [`Self::activity`], at a given time.
    pub async fn activity_at(&self, license: &str, device: &str, ip_last: u8, at: Timestamp) {
        let license: LicenseId = license.parse().unwrap();
        let team = self.store.get_team(self.team_id()).await.unwrap().unwrap();
        let activity = Activity {
            label: Default::default(),
            hardware_id: Some(HardwareId::parse(device).unwrap()),
            ip: IpAddr::V4(Ipv4Addr::new(203, 0, 113, ip_last)),
            country: None,
            session: Default::default(),
        };
        self.store
            .record_activity(
                team.id,
                license,
                &licensing_core::store::ActivityRules::new(&team.settings),
                &activity,
                at,
            )
            .await
            .unwrap()
            .unwrap();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
    }
}

/// A client-API answer with its headers and exact bytes.
#[derive(Debug)]
pub struct ClientAnswer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    /// The exact response body.
    pub bytes: Vec<u8>,
    /// The body as JSON (`Null` for a download).
    pub body: Value,
    /// The exact request bytes the signature covers (body, or query for a GET).
    pub request: Vec<u8>,
}

impl ClientAnswer {
    pub fn code(&self) -> &str {
        self.body["result"]["code"].as_str().unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts `VALID` with status 200 and returns `data`.
    #[track_caller]
    pub fn valid(&self) -> &Value {
        assert_eq!((self.status, self.code()), (200, "VALID"), "{}", self.body);
        assert_eq!(self.body["result"]["valid"], true);
        &self.body["data"]
    }

    /// Asserts an error with this status and code.
    #[track_caller]
    pub fn err(&self, status: u16, code: &str) -> &Self {
        assert_eq!((self.status, self.code()), (status, code), "{}", self.body);
        assert_eq!(self.body["result"]["valid"], false);
        assert!(
            !self.body["result"]["details"]
                .as_str()
                .unwrap_or("")
                .is_empty()
        );
        self
    }

    /// Asserts that `X-Signature` verifies with the team's signing key that
    /// `X-Signature-Key-Id` names.
    #[track_caller]
    pub fn signed_by(&self, keys: &TeamPublicKeys) -> &Self {
        let signature = self
            .header("x-signature")
            .unwrap_or_else(|| panic!("no X-Signature on {} {}", self.status, self.body));
        let kid = self
            .header("x-signature-key-id")
            .unwrap_or_else(|| panic!("no X-Signature-Key-Id on {} {}", self.status, self.body));
        keys.verify_response(Some(kid), &self.request, &self.bytes, signature)
            .unwrap_or_else(|_| panic!("X-Signature does not verify: {}", self.body));
        self
    }

    /// Asserts that the answer carries no `X-Signature` (the team is not known).
    #[track_caller]
    pub fn unsigned(&self) -> &Self {
        assert!(self.header("x-signature").is_none(), "{}", self.body);
        assert!(self.header("x-signature-key-id").is_none(), "{}", self.body);
        self
    }
}

impl TestServer {
    /// `{base}/api/v1/client/teams/{team}/verification/{endpoint}`.
    pub fn client_url(&self, endpoint: &str) -> String {
        format!(
            "{}/api/v1/client/teams/{}/verification/{endpoint}",
            self.base, self.team.team_id
        )
    }

    /// POSTs a raw body to a client endpoint, as client IP `ip` (through the trusted loopback
    /// proxy) when given.
    pub async fn client_raw(&self, url: &str, body: &str, ip: Option<&str>) -> ClientAnswer {
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(ip) = ip {
            request = request.header("x-forwarded-for", ip);
        }
        let response = request.send().await.unwrap();
        Self::client_answer(response, body.as_bytes().to_vec()).await
    }

    /// Verify (`endpoint` = "verify") or heartbeat with a JSON body.
    pub async fn client(&self, endpoint: &str, body: &Value, ip: Option<&str>) -> ClientAnswer {
        self.client_raw(&self.client_url(endpoint), &body.to_string(), ip)
            .await
    }

    /// A classloader GET with a raw query.
    pub async fn classloader(&self, query: &str, ip: Option<&str>) -> ClientAnswer {
        let url = format!("{}?{query}", self.client_url("classloader"));
        let mut request = self.client.get(url);
        if let Some(ip) = ip {
            request = request.header("x-forwarded-for", ip);
        }
        let response = request.send().await.unwrap();
        Self::client_answer(response, query.as_bytes().to_vec()).await
    }

    async fn client_answer(response: reqwest::Response, request: Vec<u8>) -> ClientAnswer {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap().to_vec();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        ClientAnswer {
            status,
            headers,
            bytes,
            body,
            request,
        }
    }

    /// The team's public keys, as `GET {dev}/public-key` gives them.
    pub async fn public_keys(&self) -> TeamPublicKeys {
        let keys = self.get(&self.dev("public-key")).await.ok().clone();
        TeamPublicKeys::parse(
            keys["publicKeyBase64"].as_str().unwrap(),
            keys["signingKey"].as_str().unwrap(),
        )
        .unwrap()
    }

    /// The OpenAPI document the server serves.
    pub async fn openapi(&self) -> Value {
        self.client
            .get(format!("{}/api/openapi.json", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The value of a Prometheus counter line starting with `prefix` (0 when absent).
    pub async fn metric(&self, prefix: &str) -> f64 {
        let text = self
            .client
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}
