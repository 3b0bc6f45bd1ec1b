//! The real `licensing-server` binary as a child process: started on `127.0.0.1:0`, stopped with
//! SIGTERM or killed with SIGKILL, restarted on the same data directory.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BINARY: &str = env!("CARGO_BIN_EXE_licensing-server");

/// A team made with `licensing-server team create` while no server runs.
#[derive(Debug, Clone)]
pub struct Team {
    pub id: String,
    pub api_key: String,
    pub public_key: String,
    pub signing_key: String,
}

/// Creates a team in `data_dir` through the CLI.
pub fn create_team(data_dir: &Path) -> Team {
    create_team_on(data_dir, None)
}

/// Creates a team through the CLI in `data_dir`, or in the database at `url`.
pub fn create_team_on(data_dir: &Path, url: Option<&str>) -> Team {
    let mut command = Command::new(BINARY);
    command.args(["team", "create", "--name", "Durability", "--data-dir"]);
    command.arg(data_dir);
    if let Some(url) = url {
        command.env("LICENSING_DATABASE_URL", url);
    }
    let out = command.output().unwrap();
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

/// A running server process.
pub struct ChildServer {
    child: Child,
    pub base: String,
    data_dir: PathBuf,
    env: Vec<(String, String)>,
}

impl ChildServer {
    /// Starts the server on `data_dir` with every rate limit off, plus `env`; waits until it
    /// listens.
    pub fn start(data_dir: &Path, env: &[(&str, &str)]) -> Self {
        Self::start_logging(data_dir, env, None)
    }

    /// [`start`](Self::start), with the server's log (stderr) appended to `log`.
    pub fn start_logging(
        data_dir: &Path,
        env: &[(&str, &str)],
        log: Option<std::sync::Arc<std::sync::Mutex<String>>>,
    ) -> Self {
        let env: Vec<(String, String)> = [
            ("LICENSING_RATE_LIMIT_PER_MINUTE", "0"),
            ("LICENSING_DEV_RATE_LIMIT_PER_MINUTE", "0"),
            ("LICENSING_UPLOAD_RATE_LIMIT_PER_MINUTE", "0"),
            ("LICENSING_AUTH_FAILURE_LIMIT_PER_MINUTE", "0"),
            ("LICENSING_CACHE_MB", "32"),
            ("RUST_LOG", "warn"),
        ]
        .iter()
        .chain(env)
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let mut child = Command::new(BINARY)
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(if log.is_some() {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .unwrap();
        let stdout_log = log.clone();
        if let (Some(log), Some(stderr)) = (log, child.stderr.take()) {
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&line);
                        log.push('\n');
                    }
                }
            });
        }
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Keep reading (and dropping) the output so the child never blocks on a full pipe.
            let mut sent = false;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(log) = &stdout_log
                    && let Ok(mut log) = log.lock()
                {
                    log.push_str(&line);
                    log.push('\n');
                }
                if !sent && let Some(rest) = line.strip_prefix("Listening on ") {
                    let base = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    tx.send(base).ok();
                    sent = true;
                }
            }
        });
        let started = Instant::now();
        let base = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(base) => break base,
                Err(_) => {
                    if let Some(status) = child.try_wait().unwrap() {
                        panic!("the server exited before listening: {status}");
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(60),
                        "the server did not start within 60 s"
                    );
                }
            }
        };
        Self {
            child,
            base,
            data_dir: data_dir.to_path_buf(),
            env,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Sends SIGTERM without waiting.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits (bounded) for the process to exit; its exit status.
    pub fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if started.elapsed() > limit {
                self.child.kill().ok();
                panic!("the server did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts a new server on the same data directory, with the same settings.
    pub fn start_again(&self) -> Self {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Self::start(&self.data_dir, &env)
    }
}

/// Runs the binary with `args` and `env` to its end (bounded: 60 s); its output.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    run_in(Path::new("."), args, env)
}

/// [`run`] in the working directory `cwd`.
pub fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut child = Command::new(BINARY)
        .current_dir(cwd)
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            panic!("licensing-server {args:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

impl ChildServer {
    /// The resident set size of the process, in KiB (Linux).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.child.kill().ok();
            self.child.wait().ok();
        }
    }
}

/// A release upload's form: the `data` part and a file.
pub fn release_form(data: &Value, bytes: Vec<u8>) -> reqwest::multipart::Form {
    reqwest::multipart::Form::new()
        .text("data", data.to_string())
        .part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name("app.bin"),
        )
}

/// One team's developer and client API on a child server.
pub struct Api {
    pub client: reqwest::Client,
    pub base: String,
    pub team: Team,
}

impl Api {
    pub fn new(server: &ChildServer, team: &Team) -> Self {
        Self {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .unwrap(),
            base: server.base.clone(),
            team: team.clone(),
        }
    }

    /// `{base}/api/v1/dev/teams/{team}/{path}`.
    pub fn dev(&self, path: &str) -> String {
        format!("{}/api/v1/dev/teams/{}/{path}", self.base, self.team.id)
    }

    /// GETs a developer path; asserts a success and returns `data`.
    pub async fn get(&self, path: &str) -> Value {
        let answer: Value = self
            .client
            .get(self.dev(path))
            .bearer_auth(&self.team.api_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            answer["result"]["valid"], true,
            "GET {path}: {}",
            answer["result"]
        );
        answer["data"].clone()
    }

    /// POSTs JSON to a developer path; asserts a 2xx and returns `data`.
    pub async fn post(&self, path: &str, body: Value) -> Value {
        let response = self
            .client
            .post(self.dev(path))
            .bearer_auth(&self.team.api_key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let mut answer: Value = response.json().await.unwrap();
        assert!(status.is_success(), "POST {path}: {status} {answer}");
        answer["data"].take()
    }

    /// A product with a published latest release of `file`, and a license for it: the product id
    /// and the license key.
    pub async fn product_with_release(&self, file: Vec<u8>) -> (String, String) {
        let product = self
            .post("products", serde_json::json!({"name": "App"}))
            .await;
        let product = product["id"].as_str().unwrap().to_owned();
        let data = serde_json::json!({
            "version": "1.0.0", "productId": product, "status": "PUBLISHED", "setAsLatest": true
        });
        let uploaded = self
            .client
            .post(self.dev("releases"))
            .bearer_auth(&self.team.api_key)
            .multipart(release_form(&data, file))
            .send()
            .await
            .unwrap();
        assert_eq!(uploaded.status(), 201);
        let license = self
            .post(
                "licenses",
                serde_json::json!({"expirationType": "NEVER", "productIds": [product]}),
            )
            .await;
        (product, license["licenseKey"].as_str().unwrap().to_owned())
    }

    /// The classloader URL for a download with `session_key`.
    pub fn classloader(&self, license_key: &str, product: &str, session_key: &str) -> String {
        format!(
            "{}/api/v1/client/teams/{}/verification/classloader?licenseKey={license_key}\
             &productId={product}&sessionKey={session_key}&hardwareIdentifier=download-device-1",
            self.base, self.team.id
        )
    }
}
