//! Graceful shutdown under load: SIGTERM while writes stream in and a download is half sent.
//! The download completes, the process exits 0, and after a restart every write answered 2xx
//! is there.

use std::sync::Arc;
use std::time::{Duration, Instant};

use licensing_core::crypto::frames::FrameDecoder;
use licensing_core::crypto::{CryptoError, SessionSecret, TeamPublicKeys, md5_hex};
use rand::RngCore;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
    // A small receive buffer, so that the server cannot hand the whole answer to the kernel and
    // must still be sending when SIGTERM arrives.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let address: std::net::SocketAddr = api.base.trim_start_matches("http://").parse().unwrap();
    let mut stream = socket.connect(address).await.unwrap();
    let path = url.trim_start_matches(&api.base);
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await.unwrap());
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap();
    let mut decoder = FrameDecoder::new(&secret.derive_key());
    let mut plain = Vec::with_capacity(file.len());
    let (mut received, mut buf) = (0usize, vec![0u8; 16 * 1024]);
    let mut up_after_sigterm = None;
    let started = Instant::now();
    while received < length {
        let want = (length - received).min(buf.len());
        let n = stream.read(&mut buf[..want]).await.unwrap();
        assert!(
            n > 0,
            "the download was cut off at {received} of {length} bytes"
        );
        received += n;
        decoder
            .update::<CryptoError>(&buf[..n], &mut |p| {
                plain.extend_from_slice(p);
                Ok(())
            })
            .unwrap();
        if up_after_sigterm.is_none() && received > 1024 * 1024 {
            // A megabyte in, with writes streaming in: stop the server, give it a moment,
            // and see that the unfinished download keeps it running.
            server.terminate();
            tokio::time::sleep(Duration::from_millis(300)).await;
            up_after_sigterm = Some(server.is_running());
        }
        if up_after_sigterm.is_some() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(started.elapsed() < Duration::from_secs(120));
    }
    decoder.finish().unwrap();
    assert_eq!(
        up_after_sigterm,
        Some(true),
        "the server was still running, sending the download, after SIGTERM"
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
