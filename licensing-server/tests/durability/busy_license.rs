//! BUG-5: one license holding 16,900 address records made each of its verifies read and decode
//! them all, under a writer lock shared by the whole server; four clients verifying it pushed an
//! unrelated team's verify from 1.9 ms to 226 ms. Now a request reads only its own records and
//! a license's atomic step locks that license only.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use licensing_core::Timestamp;
use licensing_core::store::{
    Activity, ActivityRules, ActivityStore, LicenseStore, TeamStore, testing,
};
use licensing_server::open_store;
use serde_json::{Value, json};

use crate::child::ChildServer;

/// Address records on the busy license.
const RECORDS: usize = 20_000;

fn address(n: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, (n >> 16) as u8, (n >> 8) as u8, n as u8))
}

/// The times of `samples` verifies of `body` on `url`, one after another; panics when they
/// take more than 30 s in all (the test stays bounded in time even when it fails).
async fn latencies(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    samples: usize,
) -> Vec<Duration> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        assert!(
            started < deadline,
            "{samples} verifies of another team took more than 30 s ({} done)",
            times.len()
        );
        let response = client
            .post(url)
            .header("x-forwarded-for", "203.0.113.50")
            .json(body)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
        times.push(started.elapsed());
    }
    times
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_license_with_20000_addresses_does_not_slow_another_team() {
    let dir = tempfile::tempdir().unwrap();
    // Seed through the store: team A's license without limits holds 20,000 addresses.
    let (busy_team, busy_key, quiet_team, quiet_key) = {
        let store = open_store(dir.path()).unwrap();
        let a = licensing_server::teams::create_team(&store, "Busy", Timestamp::now())
            .await
            .unwrap();
        let b = licensing_server::teams::create_team(&store, "Quiet", Timestamp::now())
            .await
            .unwrap();
        let busy = testing::license(a.team_id, Timestamp::now());
        store
            .create_license(&busy, &licensing_core::store::Journal::NONE)
            .await
            .unwrap();
        let quiet = testing::license(b.team_id, Timestamp::now());
        store
            .create_license(&quiet, &licensing_core::store::Journal::NONE)
            .await
            .unwrap();
        let settings = store.get_team(a.team_id).await.unwrap().unwrap().settings;
        let next = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let (store, settings, next) = (store.clone(), settings.clone(), next.clone());
            let (team, license) = (a.team_id, busy.id);
            tasks.push(tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= RECORDS {
                        return;
                    }
                    let activity = Activity {
                        label: Default::default(),
                        hardware_id: None,
                        ip: address(n),
                        country: None,
                        session: Default::default(),
                    };
                    let rules = ActivityRules {
                        max_records: 50_000,
                        ..ActivityRules::new(&settings)
                    };
                    store
                        .record_activity(team, license, &rules, &activity, Timestamp::now())
                        .await
                        .unwrap()
                        .unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        store.flush().await.unwrap();
        (
            a.team_id,
            busy.license_key.as_str().to_owned(),
            b.team_id,
            quiet.license_key.as_str().to_owned(),
        )
    };
    let server = ChildServer::start(
        dir.path(),
        &[
            ("LICENSING_TRUSTED_PROXIES", "127.0.0.1"),
            ("LICENSING_MAX_RECORDS_PER_LICENSE", "50000"),
        ],
    );
    let verify = |team| {
        format!(
            "{}/api/v1/client/teams/{team}/verification/verify",
            server.base
        )
    };
    let client = reqwest::Client::new();
    let quiet_url = verify(quiet_team);
    let quiet_body = json!({"licenseKey": quiet_key});
    // Warm up (the first verify records the quiet client's address).
    latencies(&client, &quiet_url, &quiet_body, 20).await;

    // Four clients verify the busy license, at a steady pace (the test measures what one
    // license's records and locks cost others, not a saturated CPU: that is the load
    // benchmark's business). Most come from known addresses, some from new ones. The load is
    // switched on and off in turns, and the quiet team's verifies are timed in both, so that
    // whatever else the machine does weighs on both sides alike.
    let loaded = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let served = Arc::new(AtomicUsize::new(0));
    let busy_url = verify(busy_team);
    let load: Vec<_> = (0..4)
        .map(|worker| {
            let (client, url, key) = (client.clone(), busy_url.clone(), busy_key.clone());
            let (loaded, stop, served) = (loaded.clone(), stop.clone(), served.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(20));
                let mut i = worker;
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    if !loaded.load(Ordering::Relaxed) {
                        continue;
                    }
                    i += 4;
                    let ip = if i % 10 == 0 {
                        address(RECORDS + i)
                    } else {
                        address((i * 7919) % RECORDS)
                    };
                    let sent = client
                        .post(&url)
                        .header("x-forwarded-for", ip.to_string())
                        .json(&json!({"licenseKey": key}))
                        .timeout(Duration::from_secs(10))
                        .send()
                        .await;
                    // A request cut off by its timeout is the measurement's business, not this
                    // loop's: it only keeps the pace.
                    if let Ok(response) = sent {
                        assert_eq!(response.status(), 200);
                        if response.bytes().await.is_ok() {
                            served.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    let measured = tokio::spawn({
        let (client, url, body, loaded) = (
            client.clone(),
            quiet_url.clone(),
            quiet_body.clone(),
            loaded.clone(),
        );
        async move {
            let (mut alone, mut busy) = (Vec::new(), Vec::new());
            for _ in 0..8 {
                loaded.store(false, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
                alone.extend(latencies(&client, &url, &body, 25).await);
                loaded.store(true, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
                busy.extend(latencies(&client, &url, &body, 25).await);
            }
            (median(alone), median(busy))
        }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let (baseline, under_load) = match measured {
        Ok(medians) => medians,
        Err(panic) => std::panic::resume_unwind(panic.into_panic()),
    };
    for task in load {
        task.await.unwrap();
    }
    let served = served.load(Ordering::Relaxed);
    println!(
        "quiet team's verify: median {baseline:?} alone, {under_load:?} while the busy license served {served} verifies"
    );
    assert!(served >= 50, "the load ran ({served} verifies)");
    // The bug this guards against multiplied the quiet team's latency by a hundred (1.9 to
    // 226 ms). Twice the baseline was too tight a bound on two cores shared with the load and
    // with other test binaries (a CI run saw 1.8 to 4.6 ms with nothing wrong), so the bound is
    // five times the baseline, and never under 25 ms: far below the bug, well above the noise.
    let bound = (baseline * 5).max(Duration::from_millis(25));
    assert!(
        under_load <= bound,
        "another team's verify went from {baseline:?} to {under_load:?} (bound {bound:?})"
    );
}
