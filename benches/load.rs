//! Load benchmark: `cargo bench -p licensing-server --bench load` (add `-- --smoke` for the few-
//! seconds run CI uses to prove it works; `-- --help` lists the options).
//!
//! `-- --webhook` runs each hot-path scenario twice in a row, without and then with a webhook
//! endpoint subscribed to every event type (a loopback receiver in this process), prints each
//! figure beside the one without, and checks that every new device of the second run was
//! delivered as a `device.activated` event.
//!
//! `-- --postgres` runs the same on PostgreSQL (a throw-away cluster started from the installed
//! binaries, with fsync on), `-- --database-url postgres://…` on a server of yours (an empty
//! database).
//!
//! Seeds a data set through the real store, sled by default (full run: 10 teams, 100,000 licenses, 1,000,000
//! device records), starts the real server in a child process (this program re-executed with
//! `--serve-child`), and drives it over loopback with a fixed number of connections for a fixed
//! time per scenario. It prints requests/s and p50/p99/p99.9 latency per scenario, the limits to
//! compare with (a trivial route on the same stack, RSA-2048 signatures/s on every core,
//! AES-256-GCM MiB/s), each scenario's ratio to its limit, the server's peak RSS, the data set's
//! size on disk and the server's start-up time. It asserts nothing about speed.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use licensing_core::crypto::frames::FrameSealer;
use licensing_core::crypto::inbound::Provider;
use licensing_core::crypto::{SessionKey, SessionSecret, TeamKeys, TeamPublicKeys};
use licensing_core::store::{
    Activity, ActivityRules, ActivityStore, DeviceStore, EntitlementStore, LicenseStore,
    PolicyStore, TeamStore, testing,
};
use licensing_core::validate::HardwareId;
use licensing_core::{TeamId, Timestamp};
use licensing_server::{Config, Server, open_configured_store};
use serde_json::json;

/// The sizes and durations of one run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    teams: usize,
    licenses: usize,
    devices_per_license: usize,
    connections: usize,
    seconds: f64,
    /// Only the scenarios whose name contains this (for profiling one of them).
    only: Option<&'static str>,
    /// Server processes on the one database (PostgreSQL only); requests alternate between them.
    instances: usize,
    /// Records each license of the capped scenario holds (the full run: the server's cap).
    capped_records: usize,
}

/// The load benchmark of the licensing server: seeds a data set, starts the real server in a child
/// process, drives it over loopback and prints requests/s, latency and the limits to compare
/// with. Without options it runs the full plan (10 teams, 100,000 licenses, 1,000,000 devices;
/// about four minutes).
#[derive(clap::Parser, Debug)]
#[command(
    name = "load",
    override_usage = "cargo bench -p licensing-server --bench load -- [OPTIONS]"
)]
struct Args {
    /// The small data set (400 licenses with 2 devices each) and 0.5 s per scenario: a few
    /// seconds in all (CI runs this; its figures say nothing about speed).
    #[arg(long, env = "LOAD_SMOKE")]
    smoke: bool,
    /// Seconds per scenario.
    #[arg(long, value_name = "N")]
    seconds: Option<f64>,
    /// Connections the generator keeps open (16 at most for downloads).
    #[arg(long, value_name = "N")]
    connections: Option<usize>,
    /// Licenses per team.
    #[arg(long, value_name = "N")]
    licenses: Option<usize>,
    /// Teams.
    #[arg(long, value_name = "N")]
    teams: Option<usize>,
    /// Device records per license.
    #[arg(long, value_name = "N")]
    devices: Option<usize>,
    /// Only the scenarios whose name contains TEXT, or is TEXT after a leading `=` (for
    /// profiling one of them); several, separated by `|`.
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
    /// Under each scenario, the server's CPU per request by thread (request workers, the
    /// store's threads), for profiling.
    #[arg(long)]
    threads: bool,
    /// At the end, where a sled store's space goes: its live entries by kind beside its files.
    #[arg(long)]
    space: bool,
    /// Run on a throw-away PostgreSQL cluster started from the installed binaries (fsync on).
    #[arg(long, conflicts_with = "database_url")]
    postgres: bool,
    /// Run on this PostgreSQL database (an empty one).
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Server processes on the one PostgreSQL database; requests take turns.
    #[arg(long, value_name = "N")]
    instances: Option<usize>,
    /// Run each hot-path scenario also with a webhook endpoint subscribed to every event.
    #[arg(long)]
    webhook: bool,
    /// Seed the data set into DIR once and reuse it afterwards.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
    /// The server child: data directory, address file and an optional database URL.
    #[arg(long, hide = true, num_args = 2..=3)]
    serve_child: Option<Vec<PathBuf>>,
}

impl Plan {
    /// The full plan, or `--smoke`, with the options that change one part.
    fn of(args: &Args) -> Self {
        let mut plan = if args.smoke {
            Self {
                teams: 2,
                licenses: 400,
                devices_per_license: 2,
                connections: 8,
                seconds: 0.5,
                only: None,
                instances: 1,
                capped_records: 500,
            }
        } else {
            Self {
                teams: 10,
                licenses: 100_000,
                devices_per_license: 10,
                connections: 64,
                seconds: 10.0,
                only: None,
                instances: 1,
                capped_records: CAPPED_RECORDS,
            }
        };
        plan.seconds = args.seconds.unwrap_or(plan.seconds);
        plan.connections = args.connections.unwrap_or(plan.connections);
        plan.licenses = args.licenses.unwrap_or(plan.licenses);
        plan.teams = args.teams.unwrap_or(plan.teams);
        plan.devices_per_license = args.devices.unwrap_or(plan.devices_per_license);
        plan.instances = args.instances.unwrap_or(plan.instances);
        plan.only = args.only.clone().map(|v| &*v.leak());
        plan
    }

    fn runs(&self, scenario: &str) -> bool {
        self.only.is_none_or(|only| {
            only.split('|').any(|only| match only.strip_prefix('=') {
                Some(name) => scenario == name,
                None => scenario.contains(only),
            })
        })
    }
}

/// The code of the entitlement every seeded license of the first team grants.
const BENCH_ENTITLEMENT: &str = "EXPORT";

/// Every seeded license has at most this many devices (a limit, so that the limit check has
/// records to count; high enough for two passes of the new-device scenario at 10,000 req/s).
const HWID_LIMIT: u32 = 1000;

/// The address of seeded device number `n`: distinct for each device of a team.
fn device_ip(n: usize) -> std::net::IpAddr {
    std::net::IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n as u32))
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    if let Some(child) = &args.serve_child {
        serve_child(
            &child[0],
            &child[1],
            child.get(2).map(|u| u.to_string_lossy().into_owned()),
        );
        return;
    }
    let plan = Plan::of(&args);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(plan, &args));
}

/// The child: the real server on 127.0.0.1:0 with rate limits off, its address written to
/// `addr_file`, until its stdin closes.
fn serve_child(data: &Path, addr_file: &Path, database_url: Option<String>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut config = Config::for_data_dir(data);
        config.database_url = database_url;
        // The load comes from 127.0.0.1 as if through a proxy, so that each device keeps the
        // address it was seeded with.
        config.trusted_proxies = "127.0.0.1/32".parse().unwrap();
        config.rate_limit_per_minute = 0;
        config.dev_rate_limit_per_minute = 0;
        config.upload_rate_limit_per_minute = 0;
        config.auth_failure_limit_per_minute = 0;
        // `--webhook`'s receiver listens on loopback over plain HTTP.
        config.webhook_allow_http = true;
        config.webhook_allow_private = true;
        // The dashboard scenarios make their staff account through the admin API.
        config.admin_token = Some(ADMIN_TOKEN.to_owned());
        // The request history is on, as by default; `LICENSING_REQUEST_HISTORY_DAYS=0` turns it
        // off, to measure what it costs.
        // `LICENSING_CACHE_MB` sets sled's cache as it does the server's, to measure what it
        // holds.
        if let Some(mb) = std::env::var("LICENSING_CACHE_MB")
            .ok()
            .and_then(|mb| mb.parse().ok())
        {
            config.cache_mb = mb;
        }
        // `LICENSING_FILE_CACHE_MB=0` serves PostgreSQL's release files from the database on
        // every download, to compare with their copies on disk.
        if let Some(mb) = std::env::var("LICENSING_FILE_CACHE_MB")
            .ok()
            .and_then(|mb| mb.parse().ok())
        {
            config.file_cache_mb = mb;
        }
        if let Some(days) = std::env::var("LICENSING_REQUEST_HISTORY_DAYS")
            .ok()
            .and_then(|d| d.parse().ok())
        {
            config.request_history_days = days;
        }
        let server = Server::bind(config).await.unwrap();
        std::fs::write(addr_file, server.local_addr().to_string()).unwrap();
        let stop = async {
            tokio::task::spawn_blocking(|| {
                let mut sink = String::new();
                std::io::stdin().read_line(&mut sink).ok();
            })
            .await
            .ok();
        };
        server.run(stop).await.unwrap();
    });
}

/// The child server's admin token.
const ADMIN_TOKEN: &str = "bench-admin-token-0123456789abcdef0123456789";

/// A signed-in dashboard session of the first team (a viewer made for this run): the `Cookie`
/// header to send.
async fn dashboard_session(http: &reqwest::Client, base: &str, team: TeamId) -> String {
    let email = format!("bench-{}@bench.example", Timestamp::now().as_millis());
    let made: serde_json::Value = http
        .post(format!("{base}/api/v1/admin/teams/{team}/users"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"email": email, "role": "viewer"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let path = made["data"]["setPasswordPath"]
        .as_str()
        .expect("a set-password path");
    let password = "bench password that is long enough";
    let set = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{base}{path}"))
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(
            form_urlencoded::Serializer::new(String::new())
                .append_pair("password", password)
                .append_pair("confirm", password)
                .finish(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 303, "the password was not set");
    let cookie = set
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.contains("session="))
        .expect("a session cookie");
    let cookie = cookie.split(';').next().unwrap().to_owned();
    // Signed in: a page answers itself, not a redirect to the sign-in form.
    let page = http
        .get(format!("{base}/dashboard/licenses"))
        .header(reqwest::header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.url().path(), "/dashboard/licenses", "not signed in");
    assert_eq!(page.status(), 200);
    cookie
}

/// A seeded device.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Known {
    license_key: String,
    device: String,
    ip: String,
    /// Whether its license is on the team's policy (every other license is; data sets seeded
    /// before policies have none: the scenario that needs one is skipped).
    #[serde(default)]
    on_policy: bool,
}

/// What the load generator needs to know about the seeded data (kept beside a data set seeded
/// with `--data DIR`, so that later runs reuse it).
#[derive(serde::Serialize, serde::Deserialize)]
struct Seeded {
    team: TeamId,
    api_key: String,
    public_key: String,
    signing_key: String,
    /// Known devices of the first team.
    known: Vec<Known>,
    /// License keys of the first team (searched for by the key search scenario).
    #[serde(default)]
    keys: Vec<String>,
    /// The team of two full licenses (the capped scenario), and their keys.
    #[serde(default)]
    capped: Option<(TeamId, Vec<String>)>,
    /// The entitlement code every license of the first team grants (data sets seeded before
    /// entitlements have none: the scenarios that ask for it are skipped).
    #[serde(default)]
    entitlement: Option<String>,
}

/// Records each license of the capped scenario holds: the server's cap per license.
const CAPPED_RECORDS: usize = licensing_core::store::DEFAULT_MAX_RECORDS as usize;

/// A team whose two licenses hold the most device and address records the server keeps, all
/// seen two days ago, with limits of 20 and the team's timeout of an hour: a new address there
/// counts the limit and makes room under the cap (the worst a client can make a license cost).
async fn seed_capped(
    store: &licensing_server::store::AnyStore,
    records: usize,
) -> (TeamId, Vec<String>) {
    let created = licensing_server::teams::create_team(store, "Capped", Timestamp::now())
        .await
        .unwrap();
    let settings = licensing_core::model::TeamSettings {
        hwid_timeout: Some(60),
        ip_timeout: Some(60),
        ..Default::default()
    };
    let team = store
        .update_settings(
            created.team_id,
            &settings,
            Timestamp::now(),
            &licensing_core::store::Journal::NONE,
        )
        .await
        .unwrap();
    let long_ago = Timestamp::from_millis(Timestamp::now().as_millis() - 48 * 3_600_000);
    let mut keys = Vec::new();
    for l in 0..2u32 {
        let mut license = testing::license(team.id, long_ago);
        license.hwid_limit = Some(20);
        license.ip_limit = Some(20);
        store
            .create_license(&license, &licensing_core::store::Journal::NONE)
            .await
            .unwrap();
        let (mut hwids, mut ips) = (Vec::new(), Vec::new());
        for n in 0..records as u32 {
            let activity = Activity {
                label: Default::default(),
                hardware_id: Some(HardwareId::parse(&format!("capped-{l}-{n:08}")).unwrap()),
                ip: std::net::IpAddr::from(std::net::Ipv4Addr::from(0x6400_0000 + (l << 20) + n)),
                country: None,
                session: Default::default(),
            };
            hwids.push(licensing_core::store::new_hwid(
                &license,
                activity.hardware_id.as_ref().unwrap(),
                &Default::default(),
                long_ago,
            ));
            ips.push(licensing_core::store::new_ip(&license, &activity, long_ago));
        }
        store
            .restore_usage(team.id, license.id, &hwids, &ips)
            .await
            .unwrap();
        keys.push(license.license_key.as_str().to_owned());
    }
    (team.id, keys)
}

/// Seeds `data`, or with `--data DIR` reuses what an earlier run seeded there (for profiling a
/// full-size data set without seeding it each time).
async fn seeded(data: &Path, plan: Plan, url: Option<&str>) -> Seeded {
    let manifest = data.join("seeded.json");
    if let Ok(text) = std::fs::read_to_string(&manifest) {
        println!("reusing the data set in {}", data.display());
        return serde_json::from_str(&text).unwrap();
    }
    let seeded = seed(&data.join("store"), plan, url).await;
    std::fs::write(&manifest, serde_json::to_vec(&seeded).unwrap()).unwrap();
    seeded
}

async fn seed(data: &Path, plan: Plan, url: Option<&str>) -> Seeded {
    let store = open_configured_store(data, url, 256, 32).await.unwrap();
    let started = Instant::now();
    let mut first = None;
    let per_team = plan.licenses / plan.teams;
    let devices = Arc::new(AtomicU64::new(0));
    let bulk = url.is_some();
    for t in 0..plan.teams {
        let created =
            licensing_server::teams::create_team(&store, &format!("Team {t}"), Timestamp::now())
                .await
                .unwrap();
        let team = store.get_team(created.team_id).await.unwrap().unwrap();
        // Every license grants one entitlement, so that asking for it costs what it costs.
        let entitlement = licensing_core::model::Entitlement {
            id: licensing_core::EntitlementId::new(),
            name: "Export".into(),
            code: BENCH_ENTITLEMENT.into(),
            metadata: Vec::new(),
            team_id: team.id,
            created_at: Timestamp::now(),
            updated_at: Timestamp::now(),
        };
        store
            .create_entitlement(&entitlement, &licensing_core::store::Journal::NONE)
            .await
            .unwrap();
        // Every other license is on a policy of the same terms (its limit and entitlement
        // inherited), so that a verify of one costs what following a plan costs.
        let mut policy = testing::policy(team.id, "Bench plan", Timestamp::now());
        policy.hwid_limit = Some(HWID_LIMIT);
        policy.entitlement_ids = vec![entitlement.id];
        // An unlimited monthly meter: the usage scenarios count on it (and are never refused).
        policy.meters = vec![licensing_core::model::Meter {
            code: USAGE_METER.into(),
            limit: None,
            period: licensing_core::model::MeterPeriod::Month,
        }];
        store
            .create_policy(&policy, &licensing_core::store::Journal::NONE)
            .await
            .unwrap();
        let policy = Arc::new(policy);
        let workers = 64;
        let mut tasks = Vec::new();
        for w in 0..workers {
            let (store, team, devices) = (store.clone(), team.clone(), devices.clone());
            let entitlement_id = entitlement.id;
            let policy = policy.clone();
            tasks.push(tokio::spawn(async move {
                let (mut known, mut keys) = (Vec::new(), Vec::new());
                for i in (w..per_team).step_by(workers) {
                    let mut license = testing::license(team.id, Timestamp::now());
                    let on_policy = i % 2 == 1;
                    if on_policy {
                        license = license.placed(Some(&policy), &[]);
                    } else {
                        license.hwid_limit = Some(HWID_LIMIT);
                        license.entitlement_ids = vec![entitlement_id];
                    }
                    store
                        .create_license(&license, &licensing_core::store::Journal::NONE)
                        .await
                        .unwrap();
                    if keys.len() < 100 {
                        keys.push(license.license_key.as_str().to_owned());
                    }
                    // On PostgreSQL the records are stored as an import stores them, one
                    // statement per license (through the atomic step, a million devices would
                    // take most of an hour there); on sled through the atomic step, as before.
                    let (mut hwids, mut ips) = (Vec::new(), Vec::new());
                    for d in 0..plan.devices_per_license {
                        let device = format!("seed-device-{i:07}-{d:03}");
                        let ip = device_ip(i * plan.devices_per_license + d);
                        let activity = Activity {
                            label: Default::default(),
                            hardware_id: Some(HardwareId::parse(&device).unwrap()),
                            ip,
                            country: None,
                            session: Default::default(),
                        };
                        if bulk {
                            let now = Timestamp::now();
                            let hardware_id = activity.hardware_id.as_ref().unwrap();
                            hwids.push(licensing_core::store::new_hwid(
                                &license,
                                hardware_id,
                                &Default::default(),
                                now,
                            ));
                            ips.push(licensing_core::store::new_ip(&license, &activity, now));
                        } else {
                            store
                                .record_activity(
                                    team.id,
                                    license.id,
                                    &ActivityRules::new(&team.settings),
                                    &activity,
                                    Timestamp::now(),
                                )
                                .await
                                .unwrap()
                                .unwrap();
                        }
                        devices.fetch_add(1, Ordering::Relaxed);
                        if d == 0 && known.len() < 1000 {
                            known.push(Known {
                                license_key: license.license_key.as_str().to_owned(),
                                device,
                                ip: ip.to_string(),
                                on_policy,
                            });
                        }
                    }
                    if bulk && !hwids.is_empty() {
                        store
                            .restore_usage(team.id, license.id, &hwids, &ips)
                            .await
                            .unwrap();
                    }
                }
                (known, keys)
            }));
        }
        let (mut known, mut keys) = (Vec::new(), Vec::new());
        for task in tasks {
            let (k, l) = task.await.unwrap();
            known.extend(k);
            keys.extend(l);
        }
        if first.is_none() {
            first = Some(Seeded {
                team: created.team_id,
                api_key: created.api_key,
                public_key: created.public_key,
                signing_key: created.signing_key,
                known,
                keys,
                capped: None,
                entitlement: Some(BENCH_ENTITLEMENT.to_owned()),
            });
        }
    }
    if plan.runs(CAPPED)
        && let Some(first) = &mut first
    {
        first.capped = Some(seed_capped(&store, plan.capped_records).await);
    }
    store.flush().await.unwrap();
    drop(store);
    println!(
        "seeded {} teams, {} licenses, {} device records in {:.1} s",
        plan.teams,
        per_team * plan.teams,
        devices.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    first.unwrap()
}

/// Starts the child server and waits until it answers; returns it, its base URL and the time it
/// took to answer.
// The caller waits for the child; if the server never answers, the benchmark panics and exits.
#[allow(clippy::zombie_processes)]
async fn start_child(data: &Path, url: Option<&str>) -> (Child, String, Duration) {
    let addr_file = data.join("addr");
    // A reused data set still has the last run's address file.
    std::fs::remove_file(&addr_file).ok();
    let started = Instant::now();
    let child = Command::new(std::env::current_exe().unwrap())
        .arg("--serve-child")
        .arg(data)
        .arg(&addr_file)
        .args(url)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    loop {
        if let Ok(addr) = std::fs::read_to_string(&addr_file) {
            let base = format!("http://{addr}");
            if http
                .get(format!("{base}/healthz"))
                .send()
                .await
                .is_ok_and(|r| r.status() == 200)
            {
                return (child, base, started.elapsed());
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server did not start"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The developer write scenario, without and with an idempotency key.
const DEV_WRITE: &str = "developer API: create customer";
const DEV_WRITE_KEYED: &str = "developer API: create customer, keyed";
const LICENSE_WRITE: &str = "developer API: create license";
const LICENSE_WRITE_KEYED: &str = "developer API: create license, keyed";

/// A stream of distinct signed Stripe purchases, each making a customer and a license.
const PAYMENT_EVENT: &str = "payment event (Stripe purchase)";

/// The first 64 of those purchases delivered again and again: each a duplicate.
const PAYMENT_REDELIVERED: &str = "payment event redelivered (duplicate)";

/// A Tauri update check of a license of the product (a newer release is offered).
const UPDATE_CHECK: &str = "update check (Tauri feed, known license)";

/// Downloads of one large update artifact at 8 connections.
const ARTIFACT_DOWNLOAD: &str = "artifact download, 8 connections";

/// The suffix of the hot-path scenarios run with a webhook endpoint.
const WITH_WEBHOOK: &str = " + webhook";

/// The scenarios of the hot path, in order.
const HOT_PATH: [&str; 9] = [
    "heartbeat, known device",
    USAGE_MANY,
    USAGE_HOT,
    USAGE_EVENT_IDS,
    "verify with a challenge",
    ON_POLICY,
    ENTITLED,
    CHECKOUT,
    NEW_DEVICE,
];

/// The seeded policy's meter.
const USAGE_METER: &str = "EXPORTS";

/// A usage increment of a known device, each request another license on the policy.
const USAGE_MANY: &str = "usage increment, many licenses";

/// A usage increment of one license, every request on its one counter.
const USAGE_HOT: &str = "usage increment, one hot license";

/// A usage increment of a known device as the SDK sends it: with a fresh `eventId`, whose
/// answer is kept with the counter (each request another license on the policy).
const USAGE_EVENT_IDS: &str = "usage increment with an eventId, many licenses";

/// A verify with a challenge of a known device whose license follows a policy (beside the
/// verify with a challenge, of licenses on none).
const ON_POLICY: &str = "verify, license on a policy";

/// A verify with a challenge that asks for an entitlement the license grants.
const ENTITLED: &str = "verify + entitlement, with a challenge";

/// A checkout of a known device: a verify with a challenge and a signed, encrypted file.
const CHECKOUT: &str = "checkout with a challenge, known device";

const NEW_DEVICE: &str = "verify, new device (recorded)";

/// Another team's verify, measured while full licenses are hammered with new addresses.
const CAPPED: &str = "verify, while full licenses are hammered";

/// The same verify, measured alone just before.
const CAPPED_QUIET: &str = "verify, full licenses quiet (compare)";

/// The hot-path scenarios: heartbeat of a known device, verify with a challenge, verify of a new
/// device; `tag` is appended to their names (and keeps a second pass's new devices new).
async fn hot_path(
    plan: Plan,
    bases: &[String],
    client_path: &str,
    known: &Arc<Vec<Known>>,
    entitlement: Option<&str>,
    tag: &'static str,
) -> Vec<Figures> {
    let named = |name: &str| -> &'static str { format!("{name}{tag}").leak() };
    let c = plan.connections;
    let mut results = Vec::new();

    let name = named("heartbeat, known device");
    if plan.runs(name) {
        // Bodies are serialized once: the generator's cost should stay that of healthz's.
        let bodies: Arc<Vec<(String, String)>> = Arc::new(
            known
                .iter()
                .map(|k| {
                    let body = json!({"licenseKey": k.license_key, "hardwareIdentifier": k.device});
                    (body.to_string(), k.ip.clone())
                })
                .collect(),
        );
        let urls = each(bases, &format!("{client_path}/heartbeat"));
        results.push(
            drive(
                name,
                plan,
                c,
                Arc::new(move |h, n| {
                    let (body, ip) = &bodies[n as usize % bodies.len()];
                    h.post(pick(&urls, n))
                        .header("content-type", "application/json")
                        .header("x-forwarded-for", ip)
                        .body(body.clone())
                }),
            )
            .await,
        );
    }

    // Usage reported by known devices of licenses on the policy (its meter): spread over the
    // licenses, then all on one license's counter.
    for (scenario, hot, event_ids) in [
        (USAGE_MANY, false, false),
        (USAGE_HOT, true, false),
        (USAGE_EVENT_IDS, false, true),
    ] {
        let name = named(scenario);
        let mut k: Vec<Known> = known.iter().filter(|k| k.on_policy).cloned().collect();
        if hot {
            k.truncate(1);
        }
        if !plan.runs(name) || k.is_empty() {
            continue;
        }
        let usage_path = client_path.trim_end_matches("/verification").to_owned() + "/usage";
        let urls = each(bases, &usage_path);
        // A data set seeded before meters has none: said, and skipped.
        let probe = reqwest::Client::new()
            .post(pick(&urls, 0))
            .header("x-forwarded-for", &k[0].ip)
            .json(&json!({"licenseKey": k[0].license_key, "hardwareIdentifier": k[0].device, "meter": USAGE_METER, "quantity": 1}))
            .send()
            .await
            .ok()
            .map(|r| r.status().as_u16());
        if probe != Some(200) {
            println!(
                "{name}: skipped (the data set's policy has no meter {USAGE_METER}: seed it again)"
            );
            continue;
        }
        // Event ids unique to this run, so that a reused data set replays none of them.
        let run = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let bodies: Arc<Vec<(String, String)>> = Arc::new(
            k.iter()
                .map(|k| {
                    let body = json!({"licenseKey": k.license_key, "hardwareIdentifier": k.device, "meter": USAGE_METER, "quantity": 1});
                    (body.to_string(), k.ip.clone())
                })
                .collect(),
        );
        results.push(
            drive(
                name,
                plan,
                c,
                Arc::new(move |h, n| {
                    let (body, ip) = &bodies[n as usize % bodies.len()];
                    // A fresh event id a request: the body's closing brace gives way to it.
                    let body = if event_ids {
                        let open = &body[..body.len() - 1];
                        format!(r#"{open},"eventId":"bench-{run}-{n}"}}"#)
                    } else {
                        body.clone()
                    };
                    h.post(pick(&urls, n))
                        .header("content-type", "application/json")
                        .header("x-forwarded-for", ip)
                        .body(body)
                }),
            )
            .await,
        );
    }

    // A known device with a challenge, as is, asking for an entitlement, and checking out.
    let known_device = [
        ("verify with a challenge", "verify", None),
        (ON_POLICY, "verify", None),
        (
            ENTITLED,
            "verify",
            Some(("entitlements", json!([entitlement.unwrap_or_default()]))),
        ),
        (CHECKOUT, "checkout", Some(("ttl", json!(2_592_000)))),
    ];
    for (scenario, endpoint, extra) in known_device {
        let name = named(scenario);
        // A data set seeded before entitlements has none to ask for.
        if !plan.runs(name) || (scenario == ENTITLED && entitlement.is_none()) {
            continue;
        }
        // The verify with a challenge of licenses on no policy, beside that of licenses on one
        // (a data set seeded before policies has none: all its licenses are on none).
        let k: Vec<Known> = match scenario {
            "verify with a challenge" => known.iter().filter(|k| !k.on_policy).cloned().collect(),
            ON_POLICY => known.iter().filter(|k| k.on_policy).cloned().collect(),
            _ => known.to_vec(),
        };
        if k.is_empty() {
            continue;
        }
        let (urls, k) = (
            each(bases, &format!("{client_path}/{endpoint}")),
            Arc::new(k),
        );
        results.push(
            drive(
                name,
                plan,
                c,
                Arc::new(move |h, n| {
                    let k = &k[n as usize % k.len()];
                    let mut body = json!({
                        "licenseKey": k.license_key,
                        "hardwareIdentifier": k.device,
                        "challenge": format!("challenge-{n:012}"),
                    });
                    if let Some((member, value)) = &extra {
                        body[*member] = value.clone();
                    }
                    h.post(pick(&urls, n))
                        .header("x-forwarded-for", &k.ip)
                        .json(&body)
                }),
            )
            .await,
        );
    }

    let name = named(NEW_DEVICE);
    if plan.runs(name) {
        let (urls, k) = (each(bases, &format!("{client_path}/verify")), known.clone());
        // Each pass has its own devices and addresses.
        let (pass, first_ip) = if tag.is_empty() {
            ('a', 0xac10_0000u32)
        } else {
            ('w', 0xad10_0000u32)
        };
        results.push(
            drive(
                name,
                plan,
                c,
                Arc::new(move |h, n| {
                    let k = &k[n as usize % k.len()];
                    // A new device from a new address: both records are created.
                    let ip = std::net::Ipv4Addr::from(first_ip.wrapping_add(n as u32));
                    h.post(pick(&urls, n))
                        .header("x-forwarded-for", ip.to_string())
                        .json(&json!({
                            "licenseKey": k.license_key,
                            "hardwareIdentifier": format!("new-device-{pass}-{n:012}"),
                        }))
                }),
            )
            .await,
        );
    }
    results
}

const SESSION_START: &str = "session start, known machine (floating license)";
const SESSION_BEAT: &str = "heartbeat with a session";
const SESSION_END: &str = "session end";

/// Seats of each license the session scenarios make.
const SEATS: u32 = 64;

/// A license of the session scenarios: its key, its machine and that machine's address.
#[derive(Clone)]
struct Floating {
    id: String,
    license_key: String,
    device: String,
    ip: String,
}

/// Licenses of [`SEATS`] seats each, enough that the start scenario seldom fills them.
async fn floating_licenses(
    http: &reqwest::Client,
    dev: &str,
    api_key: &str,
    plan: Plan,
) -> Vec<Floating> {
    // (A smoke run's half second of starts, at 8,000 a second, fills 4,000 seats: 200 licenses
    // leave room for three times that.)
    let count = if plan.seconds < 2.0 { 200 } else { 1_000 };
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let created: serde_json::Value = http
            .post(format!("{dev}/licenses"))
            .bearer_auth(api_key)
            .json(&json!({"expirationType": "NEVER", "sessionLimit": SEATS, "sessionTtl": 600}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        out.push(Floating {
            id: created["data"]["id"].as_str().unwrap().to_owned(),
            license_key: created["data"]["licenseKey"].as_str().unwrap().to_owned(),
            device: format!("floating-machine-{i:06}"),
            ip: std::net::Ipv4Addr::from(0xae10_0000u32 + i as u32).to_string(),
        });
    }
    out
}

/// Session starts, heartbeats with a session, and ends. The heartbeats and ends use the
/// sessions the starts made, read back through the developer API.
async fn sessions(
    plan: Plan,
    bases: &[String],
    client_path: &str,
    http: &reqwest::Client,
    dev: &str,
    api_key: &str,
    floating: Vec<Floating>,
) -> Vec<Figures> {
    let c = plan.connections;
    let floating = Arc::new(floating);
    let mut results = Vec::new();
    // The first request of each machine records its device and address: once, before.
    for f in floating.iter() {
        let answer = http
            .post(format!("{}{client_path}/verify", bases[0]))
            .header("x-forwarded-for", &f.ip)
            .json(&json!({"licenseKey": f.license_key, "hardwareIdentifier": f.device}))
            .send()
            .await
            .unwrap();
        assert!(
            answer.status().is_success(),
            "a floating license's verify failed"
        );
    }
    if plan.runs(SESSION_START) {
        let (urls, f) = (
            each(bases, &format!("{client_path}/sessions/start")),
            floating.clone(),
        );
        results.push(
            drive(
                SESSION_START,
                plan,
                c,
                Arc::new(move |h, n| {
                    let f = &f[n as usize % f.len()];
                    h.post(pick(&urls, n))
                        .header("x-forwarded-for", &f.ip)
                        // No challenge, like the new-device verify it is compared with.
                        .json(&json!({
                            "licenseKey": f.license_key,
                            "hardwareIdentifier": f.device,
                        }))
                }),
            )
            .await,
        );
    }
    // The live sessions, in the order of their licenses.
    let mut live: Vec<(Floating, String)> = Vec::new();
    for f in floating.iter() {
        let listed: serde_json::Value = http
            .get(format!("{dev}/licenses/id/{}/sessions", f.id))
            .bearer_auth(api_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for s in listed["data"]["sessions"].as_array().into_iter().flatten() {
            live.push((f.clone(), s["id"].as_str().unwrap().to_owned()));
        }
    }
    if live.is_empty() {
        return results;
    }
    let live = Arc::new(live);
    if plan.runs(SESSION_BEAT) {
        let (urls, l) = (
            each(bases, &format!("{client_path}/heartbeat")),
            live.clone(),
        );
        results.push(
            drive(
                SESSION_BEAT,
                plan,
                c,
                Arc::new(move |h, n| {
                    let (f, session) = &l[n as usize % l.len()];
                    h.post(pick(&urls, n))
                        .header("x-forwarded-for", &f.ip)
                        .json(&json!({
                            "licenseKey": f.license_key,
                            "hardwareIdentifier": f.device,
                            "sessionId": session,
                        }))
                }),
            )
            .await,
        );
    }
    if plan.runs(SESSION_END) {
        // Each session is ended once: the scenario stops early when every one has ended.
        let (urls, l) = (
            each(bases, &format!("{client_path}/sessions/end")),
            live.clone(),
        );
        results.push(
            drive_at_most(
                SESSION_END,
                plan,
                c,
                l.len() as u64,
                Arc::new(move |h, n| {
                    let (f, session) = &l[n as usize % l.len()];
                    h.post(pick(&urls, n))
                        .header("x-forwarded-for", &f.ip)
                        .json(&json!({"licenseKey": f.license_key, "sessionId": session}))
                }),
            )
            .await,
        );
    }
    results
}

/// A webhook receiver on loopback that accepts every delivery and counts the events it got.
struct WebhookReceiver {
    url: String,
    events: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
}

impl WebhookReceiver {
    async fn start() -> Self {
        use hyper::service::service_fn;
        use hyper_util::rt::TokioIo;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        let events: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>> = Arc::default();
        let counted = events.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let counted = counted.clone();
                            async move {
                                use http_body_util::BodyExt;
                                let body = request.into_body().collect().await?.to_bytes();
                                let event: serde_json::Value =
                                    serde_json::from_slice(&body).unwrap_or_default();
                                let kind = event["type"].as_str().unwrap_or("?").to_owned();
                                *counted.lock().unwrap().entry(kind).or_default() += 1;
                                Ok::<_, hyper::Error>(
                                    hyper::Response::builder()
                                        .status(204)
                                        .body(http_body_util::Empty::<bytes::Bytes>::new())
                                        .unwrap(),
                                )
                            }
                        });
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                        .ok();
                });
            }
        });
        Self { url, events }
    }

    /// How many events of `kind` arrived.
    fn count(&self, kind: &str) -> u64 {
        self.events.lock().unwrap().get(kind).copied().unwrap_or(0)
    }
}

/// One scenario's figures.
struct Figures {
    name: &'static str,
    requests: u64,
    bytes: u64,
    seconds: f64,
    p50: Duration,
    p99: Duration,
    p999: Duration,
    errors: u64,
    /// CPU time the server spent meanwhile (see [`server_cpu`]), if it could be read.
    cpu: Option<Duration>,
    /// The same by thread name (see [`server_threads`]), in ticks of 10 ms.
    threads: BTreeMap<String, u64>,
    /// The first server's resident memory when the scenario ended and its peak so far, in KiB
    /// (what each scenario leaves and what raised the peak).
    rss: Option<(u64, u64)>,
}

impl Figures {
    /// The figures of rounds of one scenario as one: requests over the total time, the median
    /// round's p50 and the worst round's p99 and p99.9.
    fn merged(mut rounds: Vec<Figures>) -> Figures {
        rounds.sort_by_key(|f| f.p50);
        let p50 = rounds
            .get(rounds.len() / 2)
            .map(|f| f.p50)
            .unwrap_or_default();
        Figures {
            name: rounds.first().map_or("", |f| f.name),
            requests: rounds.iter().map(|f| f.requests).sum(),
            bytes: rounds.iter().map(|f| f.bytes).sum(),
            seconds: rounds.iter().map(|f| f.seconds).sum(),
            p50,
            p99: rounds.iter().map(|f| f.p99).max().unwrap_or_default(),
            p999: rounds.iter().map(|f| f.p999).max().unwrap_or_default(),
            errors: rounds.iter().map(|f| f.errors).sum(),
            cpu: rounds.iter().map(|f| f.cpu).sum(),
            threads: rounds.iter().flat_map(|f| &f.threads).fold(
                BTreeMap::new(),
                |mut all, (name, ticks)| {
                    *all.entry(name.clone()).or_default() += ticks;
                    all
                },
            ),
            rss: rounds.iter().filter_map(|f| f.rss).max_by_key(|r| r.1),
        }
    }

    /// The server's CPU time per request, in microseconds.
    fn cpu_us(&self) -> Option<f64> {
        let cpu = self.cpu?;
        (self.requests > 0).then(|| cpu.as_secs_f64() * 1e6 / self.requests as f64)
    }

    fn rps(&self) -> f64 {
        self.requests as f64 / self.seconds
    }

    fn mib_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / (1024.0 * 1024.0)
    }
}

/// A request a scenario sends: method, URL, body; built fresh for each request.
type MakeRequest = Arc<dyn Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync>;

async fn drive(name: &'static str, plan: Plan, connections: usize, make: MakeRequest) -> Figures {
    drive_at_most(name, plan, connections, u64::MAX, make).await
}

/// [`drive`], sending no more than `most` requests in all (for requests that each use up
/// something, such as a session to end).
async fn drive_at_most(
    name: &'static str,
    plan: Plan,
    connections: usize,
    most: u64,
    make: MakeRequest,
) -> Figures {
    let deadline = Instant::now() + Duration::from_secs_f64(plan.seconds);
    let counter = Arc::new(AtomicU64::new(0));
    let cpu_before = server_cpu();
    let threads_before = server_threads();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (make, counter) = (make.clone(), counter.clone());
        tasks.push(tokio::spawn(async move {
            // One client per connection: its pool keeps that one connection alive.
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .unwrap();
            let (mut latencies, mut bytes, mut errors) = (Vec::new(), 0u64, 0u64);
            // Bounded in time and in count.
            while Instant::now() < deadline && latencies.len() < 5_000_000 {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                if n >= most {
                    break;
                }
                let sent = Instant::now();
                match make(&http, n).send().await {
                    Ok(response) => {
                        let ok = response.status().is_success();
                        let body = response.bytes().await.map(|b| b.len()).unwrap_or(0);
                        latencies.push(sent.elapsed());
                        bytes += body as u64;
                        if !ok {
                            errors += 1;
                        }
                    }
                    Err(_) => errors += 1,
                }
            }
            (latencies, bytes, errors)
        }));
    }
    let (mut all, mut bytes, mut errors) = (Vec::new(), 0, 0);
    for task in tasks {
        let (l, b, e) = task.await.unwrap();
        all.extend(l);
        bytes += b;
        errors += e;
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu = server_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let threads = server_threads()
        .into_iter()
        .map(|(name, after)| {
            let before = threads_before.get(&name).copied().unwrap_or(0);
            (name, after.saturating_sub(before))
        })
        .collect();
    all.sort_unstable();
    let at = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Figures {
        name,
        requests: all.len() as u64,
        bytes,
        seconds,
        p50: at(0.50),
        p99: at(0.99),
        p999: at(0.999),
        errors,
        cpu,
        threads,
        rss: server_rss(),
    }
}

/// The first server's resident memory now and at its peak, in KiB.
fn server_rss() -> Option<(u64, u64)> {
    let pid = *SERVERS.get()?.0.first()?;
    rss_kib(pid).zip(peak_rss_kib(pid))
}

/// The server processes whose CPU time [`server_cpu`] adds up, and whether the machine's
/// `postgres` processes count too (a cluster this benchmark started).
static SERVERS: std::sync::OnceLock<(Vec<u32>, bool)> = std::sync::OnceLock::new();

/// The CPU time (user and system) the server processes have used so far, with the database's
/// when it runs on this machine: what a request costs the machine, apart from the load
/// generator that shares it. `None` off Linux.
fn server_cpu() -> Option<Duration> {
    let (pids, postgres) = SERVERS.get()?;
    let mut ticks = 0;
    for pid in pids {
        ticks += cpu_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    }
    if *postgres {
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat"))
                && stat.contains(" (postgres) ")
            {
                ticks += cpu_ticks(&stat).unwrap_or(0);
            }
        }
    }
    // /proc counts in USER_HZ, 100 per second on Linux.
    Some(Duration::from_millis(ticks * 10))
}

/// The CPU time (in ticks of 10 ms) the live threads of the server processes have used so
/// far, by thread name without a trailing number (`sled-io-3` counts as `sled-io`). A thread
/// that ends between two readings takes its time with it: the threads' sum can fall short of
/// [`server_cpu`]'s. Empty off Linux.
fn server_threads() -> BTreeMap<String, u64> {
    let mut by_name = BTreeMap::new();
    let Some((pids, _)) = SERVERS.get() else {
        return by_name;
    };
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            let name = stat
                .split_once('(')
                .and_then(|(_, rest)| rest.rsplit_once(')'))
                .map_or("?", |(name, _)| name);
            let name = match name.rsplit_once('-') {
                Some((stem, n)) if n.bytes().all(|b| b.is_ascii_digit()) => stem,
                _ => name,
            };
            *by_name.entry(name.to_owned()).or_default() += cpu_ticks(&stat).unwrap_or(0);
        }
    }
    by_name
}

/// `utime + stime` of a `/proc/PID/stat` line (fields 14 and 15; the command name, in
/// parentheses, may hold spaces).
fn cpu_ticks(stat: &str) -> Option<u64> {
    let mut fields = stat.get(stat.rfind(')')? + 2..)?.split(' ');
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The table of `--space`: a sled store's live entries by kind, and its files.
fn print_space(space: &licensing_server::store::sled::Space, compacted: u64) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!();
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>8}",
        "live entries by kind", "entries", "keys MiB", "values MiB", "B/entry"
    );
    for k in &space.kinds {
        println!(
            "{:<44} {:>10} {:>10.1} {:>10.1} {:>8.0}",
            k.kind,
            k.entries,
            mib(k.key_bytes),
            mib(k.value_bytes),
            k.bytes() as f64 / k.entries.max(1) as f64
        );
    }
    let entries: u64 = space.kinds.iter().map(|k| k.entries).sum::<u64>();
    println!(
        "live: {entries} entries, {:.1} MiB; files: {:.1} MiB; \
         all of them rewritten into fresh files (a copy, compacted): {:.1} MiB",
        mib(space.live_bytes()),
        mib(space.records_on_disk),
        mib(compacted)
    );
}

/// The size of the store in `data` once rewritten into fresh files (as `master-key` does), so
/// without the earlier versions sled's log still holds: measured on a copy, which is removed.
fn compacted_size(data: &Path) -> u64 {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
    let scratch = tempfile::tempdir().unwrap();
    copy(&data.join("db"), &scratch.path().join("db"));
    licensing_server::compact_store(scratch.path()).unwrap();
    dir_size(&scratch.path().join("db"))
}

/// RSA-2048 PKCS#1 v1.5 SHA-256 signatures per second, on every core at once.
fn rsa_signatures_per_second(seconds: f64) -> f64 {
    let keys = Arc::new(TeamKeys::generate().unwrap());
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let threads: Vec<_> = (0..cores)
        .map(|_| {
            let keys = keys.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    keys.sign_challenge("challenge-0123456789abcdef").unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    total as f64 / started.elapsed().as_secs_f64()
}

/// AES-256-GCM MiB/s sealing 64 KiB frames on one core.
fn aes_mib_per_second(seconds: f64) -> f64 {
    let sealer = FrameSealer::new(&SessionKey::from_bytes([7; 32]));
    let chunk = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(80 * 1024);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut bytes = 0u64;
    while Instant::now() < deadline {
        out.clear();
        sealer.seal_into(&chunk, &mut out).unwrap();
        bytes += chunk.len() as u64;
    }
    bytes as f64 / started.elapsed().as_secs_f64() / (1024.0 * 1024.0)
}

/// `path` on every instance.
fn each(bases: &[String], path: &str) -> Vec<String> {
    bases.iter().map(|b| format!("{b}{path}")).collect()
}

/// The URL of request `n`: the instances take turns.
fn pick(urls: &[String], n: u64) -> &str {
    &urls[n as usize % urls.len()]
}

fn dir_size(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_size(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The server's resident memory now, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// The server's peak resident memory, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// A size line of `/proc/{pid}/status`, in KiB.
fn status_kib(pid: u32, line: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(line))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

async fn upload(
    http: &reqwest::Client,
    dev: &str,
    key: &str,
    product: &str,
    version: &str,
    size: usize,
) {
    let data = json!({"version": version, "productId": product, "status": "PUBLISHED"});
    let form = reqwest::multipart::Form::new()
        .text("data", data.to_string())
        .part(
            "file",
            reqwest::multipart::Part::bytes(vec![0x5a; size]).file_name("app.bin"),
        );
    let answer = http
        .post(format!("{dev}/releases"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 201);
}

/// A product whose updates the server signs, release 2.0.0 with a Linux artifact of `size`
/// bytes, and a license of it: the Tauri feed's address for version 1.0.0, the artifact's
/// download address, and the license key.
async fn update_feed(
    http: &reqwest::Client,
    dev: &str,
    key: &str,
    base: &str,
    team: &TeamId,
    size: usize,
) -> (String, String, String) {
    let post = |path: &str, body: serde_json::Value| {
        http.post(format!("{dev}/{path}"))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    let product: serde_json::Value = post(
        "products",
        json!({"name": format!("Bench Updates {}", Timestamp::now().as_millis()), "signUpdates": true}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let product = product["data"]["id"].as_str().unwrap().to_owned();
    let data = json!({"version": "2.0.0", "productId": product, "status": "PUBLISHED"});
    let release: serde_json::Value = http
        .post(format!("{dev}/releases"))
        .bearer_auth(key)
        .multipart(reqwest::multipart::Form::new().text("data", data.to_string()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let release = release["data"]["id"].as_str().unwrap().to_owned();
    let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let form = reqwest::multipart::Form::new()
        .text("platform", "linux")
        .text("arch", "x86_64")
        .part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name("bench-2.0.0.AppImage"),
        );
    let artifact: serde_json::Value = http
        .post(format!("{dev}/releases/{release}/artifacts"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let artifact = artifact["data"]["id"].as_str().unwrap().to_owned();
    let license: serde_json::Value = post(
        "licenses",
        json!({"expirationType": "NEVER", "productIds": [product]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let license = license["data"]["licenseKey"].as_str().unwrap().to_owned();
    let feed = format!("{base}/api/v1/client/teams/{team}/updates/{product}");
    (
        format!("{feed}/tauri/linux/x86_64/1.0.0"),
        format!("{feed}/download/{artifact}/bench-2.0.0.AppImage"),
        license,
    )
}

async fn run(plan: Plan, args: &Args) {
    println!("plan: {plan:?}");
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = args
        .data
        .clone()
        .unwrap_or_else(|| dir.path().to_path_buf());
    std::fs::create_dir_all(&root).unwrap();
    // `--database-url URL` runs on that PostgreSQL; `--postgres` on a throw-away cluster started
    // here (from Debian's `postgresql` package), flushing to disk like a production one.
    let url = match &args.database_url {
        Some(url) => Some(url.clone()),
        None if args.postgres => {
            licensing_server::testing::postgres::durable();
            Some(
                licensing_server::testing::postgres::database()
                    .await
                    .expect("--postgres needs PostgreSQL's binaries"),
            )
        }
        None => None,
    };
    println!(
        "store: {}",
        if url.is_some() { "PostgreSQL" } else { "sled" }
    );
    let seeded = seeded(&root, plan, url.as_deref()).await;
    let data = root.join("store");
    let keys = TeamPublicKeys::parse(&seeded.public_key, &seeded.signing_key).unwrap();
    let (mut child, base, startup) = start_child(&data, url.as_deref()).await;
    let pid = child.id();
    // More instances on the same database (each with a directory for its temporary files).
    let mut others = Vec::new();
    if plan.instances > 1 {
        assert!(url.is_some(), "--instances needs PostgreSQL");
        for i in 1..plan.instances {
            let own = root.join(format!("instance-{i}"));
            std::fs::create_dir_all(&own).unwrap();
            others.push(start_child(&own, url.as_deref()).await);
        }
    }
    let bases: Vec<String> = std::iter::once(base.clone())
        .chain(others.iter().map(|(_, b, _)| b.clone()))
        .collect();
    println!("instances: {}", bases.len());
    let _ = SERVERS.set((
        std::iter::once(pid)
            .chain(others.iter().map(|(c, ..)| c.id()))
            .collect(),
        args.postgres,
    ));
    let http = reqwest::Client::new();
    let dev_path = format!("/api/v1/dev/teams/{}", seeded.team);
    let client_path = format!("/api/v1/client/teams/{}/verification", seeded.team);
    let dev = format!("{base}{dev_path}");

    // A product with a 1 MiB and a 10 MiB release, and a license for it.
    let product: serde_json::Value = http
        .post(format!("{dev}/products"))
        .bearer_auth(&seeded.api_key)
        .json(&json!({"name": format!("Bench App {}", Timestamp::now().as_millis())}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let product = product["data"]["id"].as_str().unwrap().to_owned();
    upload(&http, &dev, &seeded.api_key, &product, "1.0.0", 1024 * 1024).await;
    upload(
        &http,
        &dev,
        &seeded.api_key,
        &product,
        "10.0.0",
        10 * 1024 * 1024,
    )
    .await;
    let license: serde_json::Value = http
        .post(format!("{dev}/licenses"))
        .bearer_auth(&seeded.api_key)
        .json(&json!({"expirationType": "NEVER", "productIds": [product]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let download_key = license["data"]["licenseKey"].as_str().unwrap().to_owned();

    let known = Arc::new(seeded.known.clone());
    let mut results = Vec::new();
    let c = plan.connections;

    let name = "healthz (trivial route)";
    if plan.runs(name) {
        let urls = each(&bases, "/healthz");
        results.push(drive(name, plan, c, Arc::new(move |h, n| h.get(pick(&urls, n)))).await);
    }

    // `--webhook`: each hot-path scenario runs twice in a row, without and then with an endpoint
    // subscribed to every event type (a loopback receiver that accepts each delivery; disabled
    // for the first run, which then raises no event), so that the two figures are measured side
    // by side on the same store.
    let webhook = if args.webhook {
        let receiver = WebhookReceiver::start().await;
        let created = http
            .post(format!("{dev}/webhooks"))
            .bearer_auth(&seeded.api_key)
            .json(&json!({"url": receiver.url}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            created.status(),
            201,
            "the webhook endpoint was not created"
        );
        let created: serde_json::Value = created.json().await.unwrap();
        let endpoint = format!("{dev}/webhooks/{}", created["data"]["id"].as_str().unwrap());
        Some((receiver, endpoint))
    } else {
        None
    };
    let enable = |on: bool| {
        let (http, key) = (http.clone(), seeded.api_key.clone());
        let endpoint = webhook.as_ref().map(|(_, e)| e.clone());
        let instances = bases.len();
        async move {
            let Some(endpoint) = endpoint else { return };
            let answer = http
                .patch(endpoint)
                .bearer_auth(key)
                .json(&json!({"enabled": on}))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 200, "the webhook endpoint was not changed");
            if instances > 1 {
                // The other instances see the change when their cached team expires.
                tokio::time::sleep(licensing_server::runtime::contexts::SHARED_MAX_AGE).await;
            }
        }
    };
    // Every new device of the run with the endpoint is delivered as a `device.activated` event
    // (waited for, up to a minute, while the server keeps running).
    let mut delivered = None;
    for scenario in HOT_PATH {
        if !plan.runs(scenario) {
            continue;
        }
        let one = Plan {
            only: Some(scenario),
            ..plan
        };
        enable(false).await;
        let entitlement = seeded.entitlement.as_deref();
        results.extend(hot_path(one, &bases, &client_path, &known, entitlement, "").await);
        let Some((receiver, _)) = &webhook else {
            continue;
        };
        enable(true).await;
        let before = receiver.count("device.activated");
        let with = hot_path(one, &bases, &client_path, &known, entitlement, WITH_WEBHOOK).await;
        if scenario == NEW_DEVICE {
            let expected = before + with.iter().map(|f| f.requests - f.errors).sum::<u64>();
            let waited = Instant::now();
            while receiver.count("device.activated") < expected
                && waited.elapsed() < Duration::from_secs(60)
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            delivered = Some((
                receiver.count("device.activated") - before,
                expected - before,
                waited.elapsed(),
            ));
        }
        results.extend(with);
    }
    enable(false).await;

    // Another team's verify, alone and then while four connections send new addresses to two
    // full licenses (each admission counts a limit with the team's timeout and makes room under
    // the cap; each refusal still counts the limit).
    if let (true, Some((team, capped))) = (plan.runs(CAPPED), &seeded.capped) {
        let hammer_urls = each(
            &bases,
            &format!("/api/v1/client/teams/{team}/verification/verify"),
        );
        let capped = Arc::new(capped.clone());
        let hammering: MakeRequest = Arc::new(move |h, n| {
            let key = &capped[n as usize % capped.len()];
            let ip = std::net::Ipv4Addr::from(0xc612_0000u32.wrapping_add(n as u32));
            h.post(pick(&hammer_urls, n))
                .header("x-forwarded-for", ip.to_string())
                .json(&json!({
                    "licenseKey": key,
                    "hardwareIdentifier": format!("capped-new-{n:012}"),
                }))
        });
        let (urls, k) = (
            each(&bases, &format!("{client_path}/verify")),
            known.clone(),
        );
        let verify: MakeRequest = Arc::new(move |h, n| {
            let k = &k[n as usize % k.len()];
            h.post(pick(&urls, n))
                .header("x-forwarded-for", &k.ip)
                .json(&json!({"licenseKey": k.license_key, "hardwareIdentifier": k.device}))
        });
        results.push(drive(CAPPED_QUIET, plan, 4, verify.clone()).await);
        let hammer = tokio::spawn(drive(
            "  (new addresses to two full licenses, beside it)",
            plan,
            4,
            hammering,
        ));
        results.push(drive(CAPPED, plan, 4, verify).await);
        // The hammer's requests are refused once the two licenses reach their limits: what it
        // shows is how fast they are answered.
        let mut hammer = hammer.await.unwrap();
        println!(
            "(the full licenses: {} of {} new addresses refused at their limits)",
            hammer.errors, hammer.requests
        );
        hammer.errors = 0;
        results.push(hammer);
    }

    // Floating sessions: starts (a known machine taking one more seat), heartbeats with a
    // session, and ends, on licenses of 64 seats made for them.
    if [SESSION_START, SESSION_BEAT, SESSION_END]
        .iter()
        .any(|s| plan.runs(s))
    {
        let floating = floating_licenses(&http, &dev, &seeded.api_key, plan).await;
        results.extend(
            sessions(
                plan,
                &bases,
                &client_path,
                &http,
                &dev,
                &seeded.api_key,
                floating,
            )
            .await,
        );
    }

    for (name, version) in [
        ("classloader, 1 MiB", "1.0.0"),
        ("classloader, 10 MiB", "10.0.0"),
    ] {
        if !plan.runs(name) {
            continue;
        }
        let (url, keys, license, product) = (
            format!("{base}{client_path}/classloader"),
            keys.clone(),
            download_key.clone(),
            product.clone(),
        );
        results.push(
            drive(
                name,
                plan,
                c.min(16),
                Arc::new(move |h, _| {
                    let session = keys
                        .rsa
                        .encrypt_session_secret(&SessionSecret::generate())
                        .unwrap();
                    // Every value is URL-safe: key, UUID, hex, version.
                    h.get(format!(
                        "{url}?licenseKey={license}&productId={product}&sessionKey={session}&hardwareIdentifier=bench-download-0001&version={version}"
                    ))
                }),
            )
            .await,
        );
    }

    // Update feeds: a Tauri check by a license of the product, and downloads of one large
    // artifact (100 MiB; 8 MiB in a smoke run) at 8 connections, the server's resident memory
    // sampled every 20 ms while they run: it must not follow the size or the count of downloads.
    if plan.runs(UPDATE_CHECK) || plan.runs(ARTIFACT_DOWNLOAD) {
        let size = if plan.licenses <= 1_000 { 8 } else { 100 } * 1024 * 1024;
        let (update_url, download_url, key) =
            update_feed(&http, &dev, &seeded.api_key, &base, &seeded.team, size).await;
        if plan.runs(UPDATE_CHECK) {
            let (url, key) = (update_url.clone(), key.clone());
            results.push(
                drive(
                    UPDATE_CHECK,
                    plan,
                    c,
                    Arc::new(move |h, _| {
                        h.get(&url)
                            .header("authorization", format!("License {key}"))
                    }),
                )
                .await,
            );
        }
        if plan.runs(ARTIFACT_DOWNLOAD) {
            let before = rss_kib(pid);
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let sampler = {
                let stop = stop.clone();
                tokio::spawn(async move {
                    let mut peak = 0;
                    // Bounded: the scenario's time and a little more.
                    for _ in 0..100_000 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        peak = peak.max(rss_kib(pid).unwrap_or(0));
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    peak
                })
            };
            let (url, key) = (download_url.clone(), key.clone());
            let figures = drive(
                ARTIFACT_DOWNLOAD,
                plan,
                8,
                Arc::new(move |h, _| {
                    h.get(&url)
                        .header("authorization", format!("License {key}"))
                }),
            )
            .await;
            stop.store(true, Ordering::Relaxed);
            let peak = sampler.await.unwrap();
            let mib =
                |k: Option<u64>| k.map_or("?".into(), |k| format!("{:.0}", k as f64 / 1024.0));
            println!(
                "(artifact download: {} downloads of {} MiB; server RSS {} MiB before, at most {} MiB while they ran)",
                figures.requests,
                size / (1024 * 1024),
                mib(before),
                mib(Some(peak))
            );
            results.push(figures);
        }
    }

    // Developer writes, without and with an `Idempotency-Key` (a fresh one per request, as the
    // SDK sends): the key's claim and the keeping of the answer are what the second one adds.
    // The lightest write (a customer) and the one a shop's back end retries (a license for a
    // product). Each pair alternates in four rounds, in the order plain-keyed, keyed-plain,
    // keyed-plain, plain-keyed, so that neither gains from running earlier on a smaller store.
    let writes = [
        (DEV_WRITE, DEV_WRITE_KEYED, "customers", None),
        (
            LICENSE_WRITE,
            LICENSE_WRITE_KEYED,
            "licenses",
            Some(json!({"expirationType": "NEVER", "productIds": [product]})),
        ),
    ];
    for (plain_name, keyed_name, resource, fixed) in writes {
        if !plan.runs(plain_name) && !plan.runs(keyed_name) {
            continue;
        }
        const ROUNDS: u32 = 4;
        let round = Plan {
            seconds: plan.seconds / f64::from(ROUNDS),
            ..plan
        };
        let mut rounds: [Vec<Figures>; 2] = [Vec::new(), Vec::new()];
        let sent = Arc::new(AtomicU64::new(0));
        for r in 0..ROUNDS {
            let mut order = [(0, plain_name, false), (1, keyed_name, true)];
            if r % 3 != 0 {
                order.reverse();
            }
            for (i, name, keyed) in order {
                if !plan.runs(name) {
                    continue;
                }
                let (urls, key, sent, fixed) = (
                    each(&bases, &format!("{dev_path}/{resource}")),
                    seeded.api_key.clone(),
                    sent.clone(),
                    fixed.clone(),
                );
                let make: MakeRequest = Arc::new(move |h, _| {
                    let n = sent.fetch_add(1, Ordering::Relaxed);
                    let body = fixed.clone().unwrap_or_else(|| {
                        json!({"email": format!("bench-{n}@bench.example"), "username": format!("bench{n}")})
                    });
                    let request = h.post(pick(&urls, n)).bearer_auth(&key).json(&body);
                    if keyed {
                        request.header("Idempotency-Key", format!("bench-{resource}-{n}"))
                    } else {
                        request
                    }
                });
                rounds[i].push(drive(name, round, c, make).await);
            }
        }
        results.extend(
            rounds
                .into_iter()
                .filter(|r| !r.is_empty())
                .map(Figures::merged),
        );
    }

    // Payment events: a stream of distinct Stripe purchases, each signed as Stripe signs, each
    // making its customer and a license on a policy (the rule's), exactly once.
    if plan.runs(PAYMENT_EVENT) || plan.runs(PAYMENT_REDELIVERED) {
        const SECRET: &str = "whsec_bench_payments_0123456789";
        let policy = http
            .post(format!("{dev}/policies"))
            .bearer_auth(&seeded.api_key)
            .json(&json!({"name": format!("Bench payments {}", std::process::id()), "hwidLimit": 2, "productIds": [product]}))
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap()["data"]["id"]
            .clone();
        for (path, body) in [
            ("integrations/stripe", json!({"webhookSecret": SECRET})),
            (
                "integrations/stripe/rules",
                json!({"match": {"priceId": "price_bench"}, "policyId": policy, "sendLicenseEmail": false}),
            ),
        ] {
            let method = if path.ends_with("rules") {
                reqwest::Method::POST
            } else {
                reqwest::Method::PUT
            };
            let answer = http
                .request(method, format!("{dev}/{path}"))
                .bearer_auth(&seeded.api_key)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(answer.status().is_success(), "{path}: {}", answer.status());
        }
        let urls = each(
            &bases,
            &format!("/api/v1/integrations/stripe?teamId={}", seeded.team),
        );
        let (run, end) = (
            std::process::id(),
            Timestamp::now().as_millis() / 1000 + 30 * 86_400,
        );
        // The same purchases delivered again (as a provider retries): each a duplicate.
        for (name, redelivered) in [(PAYMENT_EVENT, false), (PAYMENT_REDELIVERED, true)] {
            if !plan.runs(name) {
                continue;
            }
            let urls = urls.clone();
            results.push(
            drive(
                name,
                plan,
                c,
                Arc::new(move |h, n| {
                    let n = if redelivered { n % 64 } else { n };
                    let now = Timestamp::now().as_millis() / 1000;
                    let body = json!({
                        "id": format!("evt_bench_{run}_{n}"), "object": "event", "type": "invoice.paid", "created": now,
                        "data": {"object": {"id": format!("in_bench_{run}_{n}"), "object": "invoice",
                            "billing_reason": "subscription_create", "customer": format!("cus_bench_{n}"),
                            "customer_email": format!("buyer-{run}-{n}@bench.example"),
                            "parent": {"subscription_details": {"subscription": format!("sub_bench_{run}_{n}")}},
                            "lines": {"data": [{"period": {"end": end},
                                "pricing": {"price_details": {"price": "price_bench", "product": "prod_bench"}}}]}}}
                    })
                    .to_string();
                    let signature = Provider::Stripe.sign(SECRET, body.as_bytes(), now);
                    h.post(pick(&urls, n))
                        .header("stripe-signature", signature)
                        .header("content-type", "application/json")
                        .body(body)
                }),
            )
            .await,
        );
        }
    }

    let name = "developer API: license list page";
    if plan.runs(name) {
        let (urls, key) = (
            each(&bases, &format!("{dev_path}/licenses?page=2&pageSize=25")),
            seeded.api_key.clone(),
        );
        results.push(
            drive(
                name,
                plan,
                c,
                Arc::new(move |h, n| h.get(pick(&urls, n)).bearer_auth(&key)),
            )
            .await,
        );
    }

    let name = "developer API: key search";
    if plan.runs(name) && !seeded.keys.is_empty() {
        // Two groups of a key, as a support person pastes them: one license matches.
        let (urls, key, keys) = (
            each(&bases, &format!("{dev_path}/licenses?pageSize=25&search=")),
            seeded.api_key.clone(),
            Arc::new(seeded.keys.clone()),
        );
        results.push(
            drive(
                name,
                plan,
                c,
                Arc::new(move |h, n| {
                    let k = &keys[n as usize % keys.len()];
                    h.get(format!("{}{}", pick(&urls, n), &k[6..17]))
                        .bearer_auth(&key)
                }),
            )
            .await,
        );
    }

    // The dashboard's pages as a signed-in staff member sees them (server-rendered HTML, each
    // made from the developer API's own calls).
    let dashboard = [
        ("dashboard: license list page", "/dashboard/licenses?page=2"),
        (
            "dashboard: list filtered (suspended)",
            "/dashboard/licenses?suspended=true",
        ),
        ("dashboard: overview", "/dashboard/"),
    ];
    if dashboard.iter().any(|(name, _)| plan.runs(name)) {
        let cookie = dashboard_session(&http, &base, seeded.team).await;
        for (name, path) in dashboard {
            if !plan.runs(name) {
                continue;
            }
            let (urls, cookie) = (each(&bases, path), cookie.clone());
            results.push(
                drive(
                    name,
                    plan,
                    c,
                    Arc::new(move |h, n| {
                        h.get(pick(&urls, n))
                            .header(reqwest::header::COOKIE, &cookie)
                    }),
                )
                .await,
            );
        }
    }

    let rss = peak_rss_kib(pid);
    let other_rss: Vec<Option<u64>> = others.iter().map(|(c, ..)| peak_rss_kib(c.id())).collect();
    for (mut other, ..) in others {
        drop(other.stdin.take());
        other.wait().ok();
    }
    drop(child.stdin.take());
    child.wait().ok();
    let disk = match &url {
        None => dir_size(&data),
        Some(url) => open_configured_store(&data, Some(url), 0, 1)
            .await
            .unwrap()
            .size_on_disk()
            .await
            .unwrap(),
    };
    // Measured after the disk figure: opening the store again writes to its files.
    let space = match (&url, args.space) {
        (None, true) => {
            let cache = licensing_server::store::DEFAULT_CACHE_MB;
            let space = match open_configured_store(&data, None, cache, 1).await.unwrap() {
                licensing_server::store::AnyStore::Sled(sled) => sled.space().unwrap(),
                _ => unreachable!("a store without a database URL is sled"),
            };
            Some((space, compacted_size(&data)))
        }
        _ => None,
    };

    let limit_seconds = plan.seconds.max(0.5);
    let rsa = rsa_signatures_per_second(limit_seconds);
    let aes = aes_mib_per_second(limit_seconds);
    let healthz = results
        .iter()
        .find(|f| f.name.starts_with("healthz"))
        .map_or(f64::NAN, Figures::rps);

    println!();
    println!(
        "{:<40} {:>10} {:>9} {:>9} {:>9} {:>10} {:>8} {:>8} {:>11}  ratio to its limit",
        "scenario",
        "req/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "MiB/s",
        "errors",
        "CPU µs",
        "RSS/peak MiB"
    );
    for f in &results {
        let ratio = match f.name {
            n if n.ends_with(WITH_WEBHOOK) => {
                let without = n.trim_end_matches(WITH_WEBHOOK);
                results
                    .iter()
                    .find(|w| w.name == without)
                    .map_or(String::new(), |w| {
                        format!(
                            "{:.0}% of the same without an endpoint",
                            100.0 * f.rps() / w.rps()
                        )
                    })
            }
            n if n.starts_with("heartbeat") => {
                format!("{:.0}% of healthz req/s", 100.0 * f.rps() / healthz)
            }
            n if n.starts_with("usage increment") => results
                .iter()
                .find(|w| w.name.starts_with("heartbeat"))
                .map_or(String::new(), |w| {
                    format!("{:.0}% of heartbeat req/s", 100.0 * f.rps() / w.rps())
                }),
            DEV_WRITE_KEYED | LICENSE_WRITE_KEYED => {
                let plain = if f.name == DEV_WRITE_KEYED {
                    DEV_WRITE
                } else {
                    LICENSE_WRITE
                };
                results
                    .iter()
                    .find(|w| w.name == plain)
                    .map_or(String::new(), |w| {
                        let cpu = f.cpu_us().zip(w.cpu_us()).map_or(String::new(), |(k, p)| {
                            format!("; server CPU per request {:+.0}%", 100.0 * (k / p - 1.0))
                        });
                        format!(
                            "{:.0}% of the same without a key (p50 {:+.0}%{cpu})",
                            100.0 * f.rps() / w.rps(),
                            100.0 * (f.p50.as_secs_f64() / w.p50.as_secs_f64() - 1.0)
                        )
                    })
            }
            n if n.contains("with a challenge") => {
                format!("{:.0}% of RSA signatures/s", 100.0 * f.rps() / rsa)
            }
            n if n.starts_with("classloader") => {
                format!("{:.0}% of AES-GCM MiB/s", 100.0 * f.mib_s() / aes)
            }
            _ => String::new(),
        };
        println!(
            "{:<40} {:>10.0} {:>9.2} {:>9.2} {:>9.2} {:>10.1} {:>8} {:>8} {:>11}  {ratio}",
            f.name,
            f.rps(),
            f.p50.as_secs_f64() * 1e3,
            f.p99.as_secs_f64() * 1e3,
            f.p999.as_secs_f64() * 1e3,
            f.mib_s(),
            f.errors,
            f.cpu_us().map_or("?".into(), |us| format!("{us:.0}")),
            f.rss.map_or("?".into(), |(now, peak)| format!(
                "{}/{}",
                now / 1024,
                peak / 1024
            ))
        );
        if args.threads && f.requests > 0 {
            let mut threads: Vec<_> = f.threads.iter().filter(|(_, t)| **t > 0).collect();
            threads.sort_by_key(|(_, t)| std::cmp::Reverse(**t));
            let us = |ticks: u64| ticks as f64 * 1e4 / f.requests as f64;
            let listed: Vec<String> = threads
                .iter()
                .map(|(name, ticks)| format!("{name} {:.1}", us(**ticks)))
                .collect();
            println!("    CPU µs per request by thread: {}", listed.join(", "));
        }
    }
    println!();
    println!(
        "limits: RSA-2048 signatures/s on all cores {rsa:.0}; AES-256-GCM {aes:.0} MiB/s on one core; healthz {healthz:.0} req/s"
    );
    let mib = |k: Option<u64>| k.map_or("?".into(), |k| format!("{:.0}", k as f64 / 1024.0));
    for (i, rss) in other_rss.into_iter().enumerate() {
        println!("instance {}: peak RSS {} MiB", i + 2, mib(rss));
    }
    println!(
        "server: peak RSS {} MiB; data set on disk {:.1} MiB; start-up on the seeded store {} ms",
        mib(rss),
        disk as f64 / (1024.0 * 1024.0),
        startup.as_millis()
    );
    if let Some((got, expected, waited)) = delivered {
        println!(
            "webhook: {got} of {expected} device.activated events delivered {:.1} s after the last request",
            waited.as_secs_f64()
        );
        assert!(got >= expected, "webhook events were not delivered");
    }
    if let Some((space, compacted)) = &space {
        print_space(space, *compacted);
    }
    let failed: u64 = results.iter().map(|f| f.errors).sum();
    assert!(failed == 0, "{failed} requests failed");
}
