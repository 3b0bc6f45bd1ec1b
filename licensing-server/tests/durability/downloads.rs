//! Memory under 1,000 concurrent classloader downloads that all stall after their first bytes:
//! each download holds a bounded window of the file, never the whole of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use licensing_core::crypto::{SessionSecret, TeamPublicKeys};
use rand::RngCore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::child::{Api, ChildServer, create_team};

const DOWNLOADS: usize = 1_000;
const FILE_MIB: usize = 4;
/// What one stalled download may hold in the server, at most: a few 64 KiB frames (about 310
/// KiB measured: the plaintext frame, the file's read buffer, the two frames queued in hyper and
/// the one being sealed), never the file (4,096 KiB).
const PER_DOWNLOAD_KIB: u64 = 512;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_stalled_downloads_use_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let team = create_team(dir.path());
    // All thousand come from one address: lift the per-address cap (its own test is in
    // `api::abuse`), as a deployment behind a proxy would.
    let server = ChildServer::start(
        dir.path(),
        &[("LICENSING_MAX_CONNECTIONS_PER_ADDRESS", "2000")],
    );
    let api = Api::new(&server, &team);
    let mut file = vec![0u8; FILE_MIB * 1024 * 1024];
    rand::rngs::OsRng.fill_bytes(&mut file);
    let (product, license_key) = api.product_with_release(file).await;

    // One session key per download (they are single-use), made on the blocking pool.
    let keys = TeamPublicKeys::parse(&team.public_key, &team.signing_key).unwrap();
    let session_keys = tokio::task::spawn_blocking(move || {
        (0..=DOWNLOADS)
            .map(|_| {
                keys.rsa
                    .encrypt_session_secret(&SessionSecret::generate())
                    .unwrap()
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let url = |session_key: &str| api.classloader(&license_key, &product, session_key);

    // Warm up with one whole download, then take the baseline.
    let whole = api.client.get(url(&session_keys[0])).send().await.unwrap();
    assert_eq!(whole.status(), 200);
    assert!(whole.bytes().await.unwrap().len() > FILE_MIB * 1024 * 1024);
    let baseline = server.rss_kib();

    // A thousand downloads that read their answer's head and then nothing.
    // Small receive buffers, so that the server's writes stall after a few kilobytes instead of
    // filling megabytes of kernel buffers.
    let (release, released) = tokio::sync::watch::channel(false);
    let started = Arc::new(AtomicUsize::new(0));
    let address: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let mut downloads = Vec::with_capacity(DOWNLOADS);
    for session_key in &session_keys[1..] {
        let target = url(session_key);
        let path = target.trim_start_matches(&server.base).to_owned();
        let mut released = released.clone();
        let started = started.clone();
        downloads.push(tokio::spawn(async move {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_recv_buffer_size(4096).unwrap();
            let mut stream = socket.connect(address).await.unwrap();
            stream
                .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).await.unwrap();
            started.fetch_add(1, Ordering::SeqCst);
            released.wait_for(|r| *r).await.ok();
            drop(stream);
            std::str::from_utf8(&head[9..12])
                .unwrap()
                .parse::<u16>()
                .unwrap()
        }));
    }
    // Wait (bounded) until every head has arrived, then sample the server's memory for a
    // second while all of them are open and stalled.
    let mut peak = baseline;
    let since = Instant::now();
    while started.load(Ordering::SeqCst) < DOWNLOADS {
        assert!(
            since.elapsed() < Duration::from_secs(90),
            "only {} of {DOWNLOADS} downloads started",
            started.load(Ordering::SeqCst)
        );
        peak = peak.max(server.rss_kib());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..10 {
        peak = peak.max(server.rss_kib());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    release.send(true).unwrap();
    let mut ok = 0;
    for download in downloads {
        if download.await.unwrap() == 200 {
            ok += 1;
        }
    }
    assert_eq!(ok, DOWNLOADS, "every download started");
    let growth = peak.saturating_sub(baseline);
    println!(
        "{DOWNLOADS} stalled downloads of {FILE_MIB} MiB: RSS {baseline} KiB before, \
         peak {peak} KiB (+{} KiB, {} KiB each)",
        growth,
        growth / DOWNLOADS as u64
    );
    assert!(
        growth < PER_DOWNLOAD_KIB * DOWNLOADS as u64,
        "RSS grew by {growth} KiB for {DOWNLOADS} downloads"
    );
    // The server still answers, and the files are whole for a new reader.
    let status = api
        .client
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
}
