//! Secrets at rest and at start-up, against the real binary: the data directory's permissions
//! (BUG-3), the master key that seals private keys, the first start's credentials under a
//! service manager, settings that must refuse to start, and customers' addresses kept out of
//! the log.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::child::{Api, ChildServer, Team, create_team, run, run_in};

/// Every path under `dir` that the group or other users may read or enter.
fn loose(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.permissions().mode() & 0o077 != 0 {
            out.push(path.clone());
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                pending.push(entry.unwrap().path());
            }
        }
    }
    out
}

/// BUG-10: upgrading an older store with a master key left its private keys in the clear in the
/// copy the migration made (`db.format-N-backup`), though the log said no clear copy was left.
/// Now the server removes the copies once the keys are sealed, and says so; `check` finds
/// nothing in the clear.
#[tokio::test]
async fn a_master_key_leaves_no_clear_copy_of_an_upgraded_store() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    crate::fixture::unzip(&crate::fixture::fixtures().join("sled-format-4.zip"), &dir);
    assert!(
        any_file_contains(&dir, b"PRIVATE KEY"),
        "the fixture's keys are in the clear"
    );
    let key = parent.path().join("master.key");
    let made = run(
        &["master-key", "generate", "--out", key.to_str().unwrap()],
        &[],
    );
    assert!(made.status.success());
    let with_key = [("LICENSING_MASTER_KEY_FILE", key.to_str().unwrap())];
    let mut server = ChildServer::start(&dir, &with_key);
    server.terminate();
    assert!(server.wait(Duration::from_secs(30)).success());
    assert!(!any_file_contains(&dir, b"PRIVATE KEY"));
    assert!(!any_file_contains(&dir, b"rsaPrivatePem"));
    let copies: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("-backup"))
        .collect();
    assert!(copies.is_empty(), "{copies:?}");
    let checked = run(&["check", "--data-dir", dir.to_str().unwrap()], &with_key);
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{said}");
    assert!(
        said.contains("0 private keys and secrets in the clear"),
        "{said}"
    );
}

/// Whether any file under `dir` contains `needle`.
fn any_file_contains(dir: &Path, needle: &[u8]) -> bool {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                pending.push(entry.unwrap().path());
            }
        } else if std::fs::read(&path)
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
        {
            return true;
        }
    }
    false
}

/// A verify with a challenge, checked against the team's public key: the private key works.
/// Verifies a new license through `server`; returns the answer's signing key id.
async fn signs_challenges(server: &ChildServer, team: &Team) -> String {
    let api = Api::new(server, team);
    let license = api
        .post("licenses", json!({"expirationType": "NEVER"}))
        .await;
    let url = format!(
        "{}/api/v1/client/teams/{}/verification/verify",
        server.base, team.id
    );
    let response = api
        .client
        .post(url)
        .json(&json!({"licenseKey": license["licenseKey"], "challenge": "challenge-0123456"}))
        .send()
        .await
        .unwrap();
    let kid = response.headers()["x-signature-key-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["code"], "VALID", "{answer}");
    let keys =
        licensing_core::crypto::TeamPublicKeys::parse(&team.public_key, &team.signing_key).unwrap();
    keys.rsa
        .verify_challenge(
            "challenge-0123456",
            answer["result"]["challengeResponse"].as_str().unwrap(),
        )
        .unwrap();
    kid
}

/// BUG-3: each team's RSA private key and Ed25519 seed sat in a 0644 file in 0755 directories.
#[tokio::test]
async fn the_data_directory_is_for_its_user_only() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let team = create_team(&dir);
    let mut server = ChildServer::start(&dir, &[]);
    let api = Api::new(&server, &team);
    let (_, _) = api.product_with_release(vec![7u8; 4096]).await;
    server.terminate();
    assert!(server.wait(Duration::from_secs(30)).success());
    assert_eq!(loose(&dir), Vec::<PathBuf>::new());

    // A directory made loose by hand (or restored so) is tightened at start-up, and the log
    // says so.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for entry in std::fs::read_dir(dir.join("db")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    let log = Arc::new(Mutex::new(String::new()));
    let server = ChildServer::start_logging(&dir, &[("RUST_LOG", "warn")], Some(log.clone()));
    assert_eq!(loose(&dir), Vec::<PathBuf>::new());
    // The log is read by another thread: give it a moment.
    let started = Instant::now();
    while !log.lock().unwrap().contains("readable by other users") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no warning: {}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
}

/// With a master key, private keys are sealed: none is found in the data directory, the server
/// signs with them, a server without the key refuses to start saying why, and a rotation moves
/// them to a new key.
#[tokio::test]
async fn a_master_key_seals_private_keys_at_rest() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let key = parent.path().join("master.key");
    let out = run(
        &["master-key", "generate", "--out", key.to_str().unwrap()],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Generating over an existing file is refused.
    let again = run(
        &["master-key", "generate", "--out", key.to_str().unwrap()],
        &[],
    );
    assert!(!again.status.success());

    // A team made before the key existed has its keys in the clear...
    let team = create_team(&dir);
    assert!(any_file_contains(&dir, b"PRIVATE KEY"));
    // ... until a server starts with the master key: sealed, and no copy in the clear is left.
    let with_key = [("LICENSING_MASTER_KEY_FILE", key.to_str().unwrap())];
    let mut server = ChildServer::start(&dir, &with_key);
    signs_challenges(&server, &team).await;
    server.terminate();
    assert!(server.wait(Duration::from_secs(30)).success());
    assert!(!any_file_contains(&dir, b"PRIVATE KEY"));
    assert!(!any_file_contains(&dir, b"rsaPrivatePem"));

    // Teams made with the key are sealed from the start.
    let made = run(
        &[
            "team",
            "create",
            "--name",
            "Sealed",
            "--data-dir",
            dir.to_str().unwrap(),
        ],
        &with_key,
    );
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    assert!(!any_file_contains(&dir, b"PRIVATE KEY"));

    // Without the key: refused, saying what it needs.
    let refused = run(
        &[
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("sealed with master key") && said.contains("LICENSING_MASTER_KEY_FILE"),
        "{said}"
    );

    // Rotation: the new key works, the old one is refused.
    let new_key = parent.path().join("new.key");
    assert!(
        run(
            &["master-key", "generate", "--out", new_key.to_str().unwrap()],
            &[]
        )
        .status
        .success()
    );
    let rotated = run(
        &[
            "master-key",
            "rotate",
            "--old",
            key.to_str().unwrap(),
            "--new",
            new_key.to_str().unwrap(),
            "--data-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        rotated.status.success(),
        "{}",
        String::from_utf8_lossy(&rotated.stderr)
    );
    let old = run(
        &[
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            dir.to_str().unwrap(),
        ],
        &with_key,
    );
    assert!(!old.status.success());
    assert!(String::from_utf8_lossy(&old.stderr).contains("holds key"));

    // A signing key rotated on the command line is sealed like the others; without the master
    // key the command is refused, saying what it needs.
    let with_new_key = [("LICENSING_MASTER_KEY_FILE", new_key.to_str().unwrap())];
    let team_id = team.id.to_string();
    let rotate = [
        "signing-key",
        "rotate",
        "--team",
        &team_id,
        "--data-dir",
        dir.to_str().unwrap(),
    ];
    let refused = run(&rotate, &[]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("LICENSING_MASTER_KEY_FILE"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let rotated = run(&rotate, &with_new_key);
    assert!(
        rotated.status.success(),
        "{}",
        String::from_utf8_lossy(&rotated.stderr)
    );
    let new_signing: Value = serde_json::from_slice(&rotated.stdout).unwrap();
    assert_eq!(new_signing["active"], true);
    assert!(!any_file_contains(&dir, b"ed25519Seed"));

    let server = ChildServer::start(&dir, &with_new_key);
    let kid = signs_challenges(&server, &team).await;
    assert_eq!(kid, new_signing["kid"].as_str().unwrap());
    assert!(!any_file_contains(&dir, b"PRIVATE KEY"));
}

/// Under a service manager (stdout is no terminal) the first start's API key goes to a file
/// for this user only; the output names the file, never the key.
/// The first start's credentials file in `dir` (waited for, at most 10 s; mode 0600): its text
/// and the API key in it.
fn first_start_credentials(dir: &Path) -> (String, String) {
    let file = dir.join("first-start-credentials.txt");
    let started = Instant::now();
    while !file.exists() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let key = text
        .split_whitespace()
        .find(|w| w.starts_with("lsk_"))
        .unwrap()
        .to_owned();
    (text, key)
}

#[tokio::test]
async fn a_first_start_without_a_terminal_writes_its_credentials_to_a_private_file() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let log = Arc::new(Mutex::new(String::new()));
    let server = ChildServer::start_logging(&dir, &[("RUST_LOG", "info")], Some(log.clone()));
    let (text, key) = first_start_credentials(&dir);
    let team = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("team id:"))
        .unwrap()
        .trim()
        .to_owned();
    // The key works.
    let answer = reqwest::Client::new()
        .get(format!("{}/api/v1/dev/teams/{team}/licenses", server.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let output = log.lock().unwrap().clone();
    assert!(output.contains("first-start-credentials.txt"), "{output}");
    assert!(!output.contains(&key), "the key is not in the output");
}

/// What the container image sets and uses: a first start's credentials in the output as well as
/// in the file (`LICENSING_FIRST_START_CREDENTIALS=log`), a secret read from the file its
/// `_FILE` variable names, and `healthcheck`, which exits 0 for a server that answers and 1 for
/// an address where none does.
#[tokio::test]
async fn a_containers_settings_and_its_health_check() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let token = "t".repeat(40);
    let token_file = parent.path().join("admin-token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let server = ChildServer::start_logging(
        &dir,
        &[
            ("RUST_LOG", "info"),
            ("LICENSING_FIRST_START_CREDENTIALS", "log"),
            ("LICENSING_ADMIN_TOKEN_FILE", token_file.to_str().unwrap()),
        ],
        Some(log.clone()),
    );
    let (text, key) = first_start_credentials(&dir);
    // Printed once, after the file is written: wait for the line that carries the key.
    let started = Instant::now();
    while !log.lock().unwrap().contains(&key) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the key is not in the output: {}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        log.lock().unwrap().matches(&key).count(),
        text.matches(&key).count(),
        "the file's text, printed once"
    );
    // The admin token came from its file, without the line break.
    let teams = reqwest::Client::new()
        .get(format!("{}/api/v1/admin/teams", server.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(teams.status(), 200);
    let listen = server.base.trim_start_matches("http://");
    let healthy = run(&["healthcheck", "--listen", listen], &[]);
    assert!(healthy.status.success(), "{healthy:?}");
    // A socket that listens and never answers (held open: a port let go may be taken).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    let unhealthy = run(
        &[
            "healthcheck",
            "--listen",
            &silent_addr,
            "--timeout-secs",
            "2",
        ],
        &[],
    );
    drop(silent);
    assert_eq!(unhealthy.status.code(), Some(1), "{unhealthy:?}");
    assert!(
        String::from_utf8_lossy(&unhealthy.stderr).contains("did not answer"),
        "{unhealthy:?}"
    );
}

#[test]
fn settings_that_would_run_an_unsafe_server_refuse_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let short = run(
        &["--listen", "127.0.0.1:0", "--data-dir", data],
        &[("LICENSING_ADMIN_TOKEN", "abcd")],
    );
    assert!(!short.status.success());
    let said = String::from_utf8_lossy(&short.stderr);
    assert!(
        said.contains("LICENSING_ADMIN_TOKEN") && said.contains("at least 32"),
        "{said}"
    );
}

/// An empty list setting, as a service manager's environment file may hold, means "none".
#[test]
fn an_empty_list_setting_means_none() {
    let dir = tempfile::tempdir().unwrap();
    let server = ChildServer::start(dir.path(), &[("LICENSING_TRUSTED_PROXIES", "")]);
    drop(server);
}

/// Customers' addresses stay out of the log: a failing delivery logs a masked address.
#[tokio::test]
async fn a_failed_license_email_logs_no_customer_address() {
    let dir = tempfile::tempdir().unwrap();
    let team = create_team(dir.path());
    // Nothing listens on port 1: every delivery fails.
    let log = Arc::new(Mutex::new(String::new()));
    let server = ChildServer::start_logging(
        dir.path(),
        &[
            ("LICENSING_SMTP_URL", "smtp://127.0.0.1:1"),
            ("LICENSING_SMTP_FROM", "Licensing <noreply@example.com>"),
            ("RUST_LOG", "info"),
        ],
        Some(log.clone()),
    );
    let api = Api::new(&server, &team);
    let customer = api
        .post("customers", json!({"email": "jane.customer@example.org"}))
        .await;
    api.post(
        "licenses",
        json!({"expirationType": "NEVER", "customerIds": [customer["id"]], "sendEmailDelivery": true}),
    )
    .await;
    let started = Instant::now();
    while !log.lock().unwrap().contains("license e-mail failed") {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no delivery attempt: {}",
            log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let output = log.lock().unwrap().clone();
    assert!(!output.contains("jane.customer@example.org"), "{output}");
    assert!(output.contains("j***@example.org"), "{output}");
}

/// A team whose API keys are all lost gets a new one from the command line: printed once, with
/// every scope, working on a restarted server, and recorded in the audit log as the command
/// line's. An unknown team is refused, saying so.
#[tokio::test]
async fn the_command_line_gives_a_team_a_new_api_key() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let team = create_team(&dir);
    let data_dir = dir.to_str().unwrap();
    let out = run(
        &[
            "api-key",
            "create",
            "--team",
            &team.id,
            "--name",
            "lost-and-found",
            "--data-dir",
            data_dir,
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "api-key create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(created["name"], "lost-and-found");
    assert_eq!(created["scopes"], json!(["*"]));
    let key = created["key"].as_str().unwrap().to_owned();

    let unknown = uuid::Uuid::new_v4().to_string();
    let refused = run(
        &[
            "api-key",
            "create",
            "--team",
            &unknown,
            "--data-dir",
            data_dir,
        ],
        &[],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Team not found"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let server = ChildServer::start(&dir, &[]);
    let api = Api::new(
        &server,
        &Team {
            api_key: key,
            ..team
        },
    );
    let license = api
        .post("licenses", json!({"expirationType": "NEVER"}))
        .await;
    assert!(license["licenseKey"].is_string());
    let audit: Value = api
        .client
        .get(api.dev("audit-log?action=api_key.created"))
        .bearer_auth(&api.team.api_key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entry = &audit["data"]["entries"][0];
    assert_eq!(entry["resourceId"], created["id"], "{audit}");
    assert_eq!(entry["actor"]["type"], "SYSTEM", "{audit}");
    drop(server);
}

/// `--log-format json` with the access log on writes one JSON line per request, with its method,
/// route, status, duration, client address, team and request id (the key in a path masked).
#[tokio::test]
async fn the_access_log_is_one_json_line_per_request() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let team = create_team(&dir);
    let log = Arc::new(Mutex::new(String::new()));
    let server = ChildServer::start_logging(
        &dir,
        &[
            ("RUST_LOG", "warn,access=debug"),
            ("LICENSING_LOG_FORMAT", "json"),
        ],
        Some(log.clone()),
    );
    let api = Api::new(&server, &team);
    let answer = api
        .client
        .get(api.dev("licenses/ABCDE-12345-FGHIJ-67890-KLMNO"))
        .bearer_auth(&team.api_key)
        .header("x-request-id", "json-log-check-1")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 404);
    let started = Instant::now();
    let line = loop {
        let found = log
            .lock()
            .unwrap()
            .lines()
            .find(|l| l.contains("json-log-check-1"))
            .map(str::to_owned);
        if let Some(line) = found {
            break line;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no access line: {}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let entry: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let fields = &entry["fields"];
    assert_eq!(entry["target"], "access", "{line}");
    assert_eq!(fields["method"], "GET", "{line}");
    assert_eq!(
        fields["route"], "/api/v1/dev/teams/{teamId}/licenses/{licenseKey}",
        "{line}"
    );
    assert_eq!(fields["status"], 404, "{line}");
    assert_eq!(fields["client"], "127.0.0.1", "{line}");
    assert_eq!(fields["team"], team.id.as_str(), "{line}");
    assert_eq!(fields["request_id"], "json-log-check-1", "{line}");
    assert!(fields["micros"].is_u64(), "{line}");
    assert!(!line.contains("ABCDE-12345"), "the key is masked: {line}");
    drop(server);
}

/// The installed server reads its settings from a config file (`LICENSING_CONFIG`): the file's
/// admin token turns the admin API on, an environment variable wins over the file, and a file
/// with an unknown key stops the start naming it.
#[tokio::test]
async fn settings_come_from_the_config_file_below_the_environment() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    create_team(&dir);
    let file_token = "from-the-config-file-0123456789abcdef";
    let env_token = "from-the-environment-0123456789abcdef";
    let config = parent.path().join("server.toml");
    std::fs::write(
        &config,
        format!(
            "# The operator's settings.\nadmin-token = \"{file_token}\"\nmail-daily-limit = 5\n"
        ),
    )
    .unwrap();
    let config_env = config.to_str().unwrap();
    let teams = |server: &ChildServer| format!("{}/api/v1/admin/teams", server.base);
    let client = reqwest::Client::new();
    let status = |url: String, token: &'static str| {
        let client = client.clone();
        async move {
            client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };

    let server = ChildServer::start(&dir, &[("LICENSING_CONFIG", config_env)]);
    assert_eq!(status(teams(&server), file_token).await, 200);
    drop(server);

    let server = ChildServer::start(
        &dir,
        &[
            ("LICENSING_CONFIG", config_env),
            ("LICENSING_ADMIN_TOKEN", env_token),
        ],
    );
    assert_eq!(status(teams(&server), env_token).await, 200);
    assert_eq!(status(teams(&server), file_token).await, 401);
    drop(server);

    std::fs::write(&config, "admin-tokn = \"x\"\n").unwrap();
    let refused = run(
        &["--config", config_env, "--data-dir", dir.to_str().unwrap()],
        &[],
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("unknown key `admin-tokn`"), "{said}");
}

/// Makes team `name` with `team create` on the store in `data`; its id.
fn team_made_by_command(name: &str, data: &str) -> String {
    let made = run(&["team", "create", "--name", name, "--data-dir", data], &[]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let team: Value = serde_json::from_slice(&made.stdout).unwrap();
    team["teamId"]
        .as_str()
        .or_else(|| team["id"].as_str())
        .unwrap()
        .to_owned()
}

/// The `user` commands' links start with the public URL: the flag's, else the config file's
/// `public-url`, else the config file's `listen` address, else the default; a first start's link
/// too.
#[tokio::test]
async fn links_the_commands_print_start_with_the_public_url() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let data = dir.to_str().unwrap();
    let team = team_made_by_command("Links", data);
    let config = parent.path().join("server.toml");
    let link_of = |email: &str, extra: &[&str], config_text: Option<&str>| {
        let mut args = vec![
            "user",
            "create",
            "--team",
            &team,
            "--email",
            email,
            "--role",
            "support",
            "--data-dir",
            data,
        ];
        args.extend_from_slice(extra);
        if let Some(text) = config_text {
            std::fs::write(&config, text).unwrap();
            args.extend_from_slice(&["--config", config.to_str().unwrap()]);
        }
        let out = run(&args, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let printed = link_of(
        "a@vendor.example",
        &[],
        Some("public-url = \"https://licensing.example.com/\"\nlisten = \"127.0.0.1:3000\"\n"),
    );
    assert!(
        printed.contains("\nhttps://licensing.example.com/dashboard/set-password/"),
        "{printed}"
    );
    let printed = link_of(
        "b@vendor.example",
        &["--public-url", "https://desk.example.org"],
        Some("public-url = \"https://licensing.example.com\"\n"),
    );
    assert!(
        printed.contains("\nhttps://desk.example.org/dashboard/set-password/"),
        "{printed}"
    );
    let printed = link_of("c@vendor.example", &[], Some("listen = \"0.0.0.0:8443\"\n"));
    assert!(
        printed.contains("\nhttp://127.0.0.1:8443/dashboard/set-password/"),
        "{printed}"
    );
    let printed = link_of("d@vendor.example", &[], None);
    assert!(
        printed.contains("\nhttp://127.0.0.1:3000/dashboard/set-password/"),
        "{printed}"
    );
    // A public URL with a path is refused, saying what to give.
    let refused = run(
        &[
            "user",
            "create",
            "--team",
            &team,
            "--email",
            "e@vendor.example",
            "--role",
            "support",
            "--data-dir",
            data,
            "--public-url",
            "https://example.com/licensing",
        ],
        &[],
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("https://licensing.example.com"), "{said}");

    // A first start's link.
    let fresh = parent.path().join("fresh");
    let log = Arc::new(Mutex::new(String::new()));
    let _server = ChildServer::start_logging(
        &fresh,
        &[("LICENSING_PUBLIC_URL", "https://licensing.example.com")],
        Some(log.clone()),
    );
    let file = fresh.join("first-start-credentials.txt");
    let started = Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains("set-password") || started.elapsed() > Duration::from_secs(30) {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        text.contains("https://licensing.example.com/dashboard/set-password/"),
        "{text}"
    );
}

/// `user link --config FILE` works on the store the server's config file names (not on an empty
/// `./licensing-data` made in the working directory); with the server running it says at once
/// that the store is in use and how to get a link anyway, instead of waiting for the lock.
#[tokio::test]
async fn user_link_takes_the_store_from_the_config_file_and_says_when_a_server_holds_it() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let data = dir.to_str().unwrap();
    let team = team_made_by_command("Sole", data);
    let owner = run(
        &[
            "user",
            "create",
            "--team",
            &team,
            "--email",
            "sole@vendor.example",
            "--role",
            "owner",
            "--data-dir",
            data,
        ],
        &[],
    );
    assert!(
        owner.status.success(),
        "{}",
        String::from_utf8_lossy(&owner.stderr)
    );
    let config = parent.path().join("server.toml");
    std::fs::write(
        &config,
        format!("data-dir = {data:?}\nlisten = \"127.0.0.1:3999\"\ncache-mb = 32\n"),
    )
    .unwrap();
    let elsewhere = parent.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let link = |dir: &Path| {
        run_in(
            dir,
            &[
                "user",
                "link",
                "--email",
                "sole@vendor.example",
                "--config",
                config.to_str().unwrap(),
            ],
            &[],
        )
    };
    let printed = link(&elsewhere);
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let text = String::from_utf8(printed.stdout).unwrap();
    assert!(
        text.contains("http://127.0.0.1:3999/dashboard/set-password/"),
        "{text}"
    );
    assert!(!elsewhere.join("licensing-data").exists());

    let _server = ChildServer::start(&dir, &[]);
    let refused = link(&elsewhere);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("is in use: a running server holds it"),
        "{said}"
    );
    assert!(
        said.contains("/api/v1/admin/teams/{teamId}/password-links"),
        "{said}"
    );
}
