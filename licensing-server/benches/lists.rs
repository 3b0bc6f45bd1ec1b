//! List pages from a large team: `cargo bench -p licensing-server --bench lists`.
//!
//! Seeds one team with `LICENSES` licenses (default 100,000; `LIST_BENCH_LICENSES` to change)
//! through the real sled store, then times pages of the license list as the API asks for them.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use licensing_core::api::requests::LicenseListQuery;
use licensing_core::store::{LicenseStore, StatsStore, testing};
use licensing_core::{TeamId, Timestamp};
use licensing_server::store::SledStore;

fn licenses() -> usize {
    std::env::var("LIST_BENCH_LICENSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

async fn seed(store: &SledStore, team: TeamId, n: usize) {
    let start = Timestamp::from_millis(1_700_000_000_000);
    let workers = 64;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..n).step_by(workers) {
                let license = testing::license(team, start.plus_seconds(i as u32));
                store
                    .create_license(&license, &licensing_core::store::Journal::NONE)
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    let n = licenses();
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let team = testing::team(&store, "Bench").await;
    let t = Instant::now();
    seed(&store, team.id, n).await;
    println!(
        "seeded {n} licenses in {:.1} s; store {:.1} MiB on disk",
        t.elapsed().as_secs_f64(),
        store.size_on_disk().unwrap() as f64 / 1048576.0
    );

    for query in [
        "",
        "page=2&pageSize=100",
        "page=400&pageSize=100&sortDirection=asc",
        "sortColumn=updatedAt&pageSize=50",
    ] {
        let q = LicenseListQuery::parse(query).unwrap();
        let mut samples = Vec::new();
        for _ in 0..50 {
            let t = Instant::now();
            let page = store.list_licenses(team.id, &q).await.unwrap();
            samples.push(t.elapsed());
            assert_eq!(page.total, n as u64);
        }
        println!(
            "licenses?{query:<45} median {:>8.3} ms",
            median(samples).as_secs_f64() * 1000.0
        );
    }
    // The first filtered list reads the team once into its table; the others read their page.
    let q = LicenseListQuery::parse("search=AAAA").unwrap();
    let t = Instant::now();
    let page = store.list_licenses(team.id, &q).await.unwrap();
    println!(
        "licenses?search=AAAA, the first (builds the table) {:>8.3} ms ({} found)",
        t.elapsed().as_secs_f64() * 1000.0,
        page.total
    );
    for query in [
        "search=AAAA",
        "search=A",
        "suspended=true",
        "status=ACTIVE&page=2",
    ] {
        let q = LicenseListQuery::parse(query).unwrap();
        let mut samples = Vec::new();
        let mut found = 0;
        for _ in 0..50 {
            let t = Instant::now();
            found = store.list_licenses(team.id, &q).await.unwrap().total;
            samples.push(t.elapsed());
        }
        println!(
            "licenses?{query:<45} median {:>8.3} ms ({found} found)",
            median(samples).as_secs_f64() * 1000.0
        );
    }
    let t = Instant::now();
    store.overview(team.id, Timestamp::now()).await.unwrap();
    println!(
        "statistics overview                               {:>8.3} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
}
