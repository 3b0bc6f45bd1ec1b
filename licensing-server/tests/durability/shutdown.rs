//! Graceful shutdown under load: SIGTERM while writes stream in and a download is half sent.
//! The download completes, the process exits 0, and after a restart every write answered 2xx
//! is there.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use licensing_core::crypto::frames::FrameDecoder;
use licensing_core::crypto::{CryptoError, SessionSecret, TeamPublicKeys, md5_hex};
use rand::RngCore;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::child::{Api, ChildServer, create_team};

/// Creates licenses until the server stops answering; the ids it answered 2xx for.
async fn create_until_refused(api: Arc<Api>, acknowledged: Arc<Mutex<Vec<String>>>) {
    // A fresh connection per request, so each one meets the server in whatever state it is in.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    loop {
        let sent = client
            .post(api.dev("licenses"))
            .bearer_auth(&api.team.api_key)
            .json(&json!({"expirationType": "NEVER"}))
            .send()
            .await;
        let Ok(response) = sent else { return };
        let status = response.status().as_u16();
        let Ok(body) = response.json::<Value>().await else {
            return;
        };
        assert!(status < 500, "{status} {body}");
        assert_eq!(status, 200, "{body}");
        acknowledged
            .lock()
            .await
            .push(body["data"]["id"].as_str().unwrap().to_owned());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_finishes_downloads_and_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let team = create_team(dir.path());
    let mut server = ChildServer::start(dir.path(), &[("LICENSING_SHUTDOWN_TIMEOUT_SECS", "60")]);
    let api = Arc::new(Api::new(&server, &team));

    // A product with an 8 MiB release, and a license for it.
    let mut file = vec![0u8; 8 * 1024 * 1024];
    rand::rngs::OsRng.fill_bytes(&mut file);
    let (product, license_key) = api.product_with_release(file.clone()).await;

    // Writers, running until the server refuses them.
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..4)
        .map(|_| tokio::spawn(create_until_refused(api.clone(), acknowledged.clone())))
        .collect();

    // A download, read slowly so that it is in flight when SIGTERM arrives.
    let keys = TeamPublicKeys::parse(&team.public_key, &team.signing_key).unwrap();
    let secret = SessionSecret::generate();
    let session_key = keys.rsa.encrypt_session_secret(&secret).unwrap();
    let url = api.classloader(&license_key, &product, &session_key);
    let response = api.client.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut decoder = FrameDecoder::new(&secret.derive_key());
    let mut plain = Vec::with_capacity(file.len());
    let mut received = 0usize;
    let mut terminated_at = None;
    let started = Instant::now();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.expect("the download is cut off");
        received += chunk.len();
        decoder
            .update::<CryptoError>(&chunk, &mut |p| {
                plain.extend_from_slice(p);
                Ok(())
            })
            .unwrap();
        if terminated_at.is_none() && received > 1024 * 1024 {
            // A megabyte in, and with writes streaming in: stop the server.
            tokio::time::sleep(Duration::from_millis(200)).await;
            server.terminate();
            terminated_at = Some(received);
        }
        if terminated_at.is_some() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert!(started.elapsed() < Duration::from_secs(120));
    }
    decoder.finish().unwrap();
    let terminated_at = terminated_at.expect("SIGTERM was sent");
    assert!(
        terminated_at < file.len(),
        "SIGTERM came after the download"
    );
    assert_eq!(plain.len(), file.len());
    assert_eq!(
        md5_hex(&plain),
        md5_hex(&file),
        "the download completed intact"
    );

    let status = server.wait(Duration::from_secs(60));
    assert!(status.success(), "exit status {status}");
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().await.clone();
    assert!(!acknowledged.is_empty(), "no write was acknowledged");

    // Every acknowledged write is there after a restart.
    let server = server.start_again();
    let api = Api::new(&server, &team);
    for id in &acknowledged {
        let response = api
            .client
            .get(api.dev(&format!("licenses/id/{id}")))
            .bearer_auth(&api.team.api_key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "license {id} was lost");
    }
    println!(
        "{} licenses acknowledged during the shutdown, all present",
        acknowledged.len()
    );
}
