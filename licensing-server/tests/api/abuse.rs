//! Hostile clients: slow heads and bodies, clients that stop reading, more connections than the
//! cap, oversize bodies on every operation, and upload floods.

use std::time::{Duration, Instant};

use rand::RngCore;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::classloader::{query, session, setup};
use crate::client::{release, release_form, upload};
use crate::helpers::TestServer;

fn host(s: &TestServer) -> &str {
    s.base.trim_start_matches("http://")
}

/// Reads until the server closes the connection (or `limit` after `started` passes); what it
/// sent, and when, counted from `started`.
async fn read_until_closed(
    stream: &mut TcpStream,
    started: Instant,
    limit: Duration,
) -> (Vec<u8>, Duration) {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((started + limit).into(), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return (received, started.elapsed()),
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
            Err(_) => panic!(
                "the server kept the connection open past {limit:?}; got {:?}",
                String::from_utf8_lossy(&received)
            ),
        }
    }
}

#[tokio::test]
async fn slow_or_silent_request_heads_are_cut_off() {
    let s = TestServer::start_with(|c| c.header_timeout_secs = 1).await;
    let started = Instant::now();
    // Half a head, then nothing.
    let mut slow = TcpStream::connect(host(&s)).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Nothing at all.
    let mut silent = TcpStream::connect(host(&s)).await.unwrap();
    for stream in [&mut slow, &mut silent] {
        let (_, after) = read_until_closed(stream, started, Duration::from_secs(5)).await;
        assert!(
            after >= Duration::from_millis(900),
            "closed after {after:?}"
        );
    }
    // An idle keep-alive connection is closed after the same time.
    let mut idle = TcpStream::connect(host(&s)).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (answer, after) =
        read_until_closed(&mut idle, Instant::now(), Duration::from_secs(5)).await;
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    assert!(
        after >= Duration::from_millis(900),
        "closed after {after:?}"
    );
}

#[tokio::test]
async fn slow_bodies_are_answered_408() {
    let s = TestServer::start_with(|c| c.body_timeout_secs = 1).await;
    let team = s.team.team_id;
    let verify = format!("/api/v1/client/teams/{team}/verification/verify");
    let licenses = format!("/api/v1/dev/teams/{team}/licenses");
    let releases = format!("/api/v1/dev/teams/{team}/releases");
    let cases = [
        (verify.as_str(), "application/json", &b"{\"licenseKey\":"[..]),
        (licenses.as_str(), "application/json", &b"{\"expiration"[..]),
        (
            releases.as_str(),
            "multipart/form-data; boundary=XyZ",
            &b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.jar\"\r\n\r\nPK"[..],
        ),
    ];
    for (path, content_type, start) in cases {
        let mut stream = TcpStream::connect(host(&s)).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
             Content-Type: {content_type}\r\nContent-Length: 100000\r\n\r\n",
            s.key()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(start).await.unwrap();
        let (answer, after) =
            read_until_closed(&mut stream, Instant::now(), Duration::from_secs(5)).await;
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 408"), "{path}: {text}");
        let body: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["result"]["code"], "BAD_REQUEST", "{path}: {text}");
        assert!(
            body["result"]["details"]
                .as_str()
                .unwrap()
                .contains("did not arrive in time")
        );
        assert!(after >= Duration::from_millis(900), "{path}: {after:?}");
    }
    // Nothing was created by the cut-off requests.
    assert_eq!(s.get(&s.dev("licenses")).await.ok()["totalResults"], 0);
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_one_to_close() {
    let s = TestServer::start_with(|c| c.max_connections = 2).await;
    let first = TcpStream::connect(host(&s)).await.unwrap();
    let _second = TcpStream::connect(host(&s)).await.unwrap();
    let health = format!("{}/healthz", s.base);
    let waiting = tokio::spawn(async move {
        let status = reqwest::Client::new()
            .get(health)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap()
            .status();
        (status, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!waiting.is_finished(), "a third connection was served");
    // Served once a connection closed, not before (compared with the moment it closed, so that
    // however late the waiting task started, this cannot pass early or fail late).
    let closed = Instant::now();
    drop(first);
    let (status, served) = waiting.await.unwrap();
    assert_eq!(status, 200);
    assert!(
        served >= closed,
        "served {:?} before the close",
        closed - served
    );
}

#[tokio::test]
async fn a_client_that_stops_reading_a_download_is_cut_off() {
    let s = TestServer::start_with(|c| {
        c.send_timeout_secs = 1;
        c.max_connections = 1;
    })
    .await;
    let keys = s.public_keys().await;
    let (p, l) = setup(&s, json!({})).await;
    let mut data = vec![0u8; 10 * 1024 * 1024];
    rand::rngs::OsRng.fill_bytes(&mut data);
    release(
        &s,
        json!({"version": "1.0.0", "productId": p, "status": "PUBLISHED", "setAsLatest": true}),
        Some(("payload.bin", data)),
    )
    .await;
    // The only connection asks for 10 MiB and reads none of it.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(host(&s).parse().unwrap()).await.unwrap();
    let (_, text) = session(&keys);
    let path = format!(
        "/api/v1/client/teams/{}/verification/classloader?{}",
        s.team.team_id,
        query(l["licenseKey"].as_str().unwrap(), &p, &text, "")
    );
    stalled
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    // The download starts (its head is read), then the client reads no more.
    let mut first = [0u8; 16];
    stalled.read_exact(&mut first).await.unwrap();
    assert_eq!(&first[..], b"HTTP/1.1 200 OK\r");
    // The server gives up on it after a second without progress, which frees the one slot.
    let started = Instant::now();
    let status = reqwest::Client::new()
        .get(format!("{}/healthz", s.base))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    assert!(started.elapsed() >= Duration::from_millis(900));
    drop(stalled);
}

#[tokio::test]
async fn uploads_are_limited_per_team() {
    let s = TestServer::start_with(|c| c.upload_rate_limit_per_minute = 2).await;
    let p = s.product("App").await;
    let p = p["id"].as_str().unwrap();
    for n in 1..=2 {
        release(
            &s,
            json!({"version": format!("1.0.{n}"), "productId": p, "status": "PUBLISHED"}),
            Some(("app.bin", vec![7u8; 1024 * 1024])),
        )
        .await;
    }
    let data = json!({"version": "1.0.3", "productId": p, "status": "PUBLISHED"});
    let form = release_form(&data, Some(("app.bin", vec![7u8; 1024 * 1024])));
    let response = upload(&s, reqwest::Method::POST, &s.dev("releases"), s.key(), form).await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    assert_eq!(response.headers()["x-ratelimit-limit"], "2");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["code"], "RATE_LIMIT");
    assert!(
        body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("release uploads")
    );
    // Refused before anything was stored; other developer requests still pass.
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 2);
}

/// Every documented operation that takes a body refuses one over its limit with 413, before
/// anything else about the request is looked at.
#[tokio::test]
async fn every_operation_with_a_body_refuses_an_oversize_one() {
    const TOKEN: &str = "admin-token-for-the-oversize-test-0123456789";
    // Artifacts are capped at 10 MiB here, as release files are, so that one file over both
    // limits checks every upload.
    let s = TestServer::start_with(|c| {
        c.admin_token = Some(TOKEN.into());
        c.max_artifact_mb = 10;
    })
    .await;
    let document = s.openapi().await;
    let json_body = format!(r#"{{"padding":"{}"}}"#, "x".repeat(1024 * 1024));
    let (mut checked, mut wrong) = (0, Vec::new());
    for (path, operations) in document["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            let Some(content) = operation["requestBody"]["content"].as_object() else {
                continue;
            };
            let url = format!("{}{path}", s.base)
                .replace("{teamId}", &s.team.team_id.to_string())
                .split('{')
                .enumerate()
                .map(|(i, part)| {
                    if i == 0 {
                        part.to_owned()
                    } else {
                        // Any other parameter: a well-formed id that names nothing.
                        let (name, rest) = part.split_once('}').unwrap();
                        if name == "provider" {
                            format!("stripe{rest}")
                        } else if name == "meter" {
                            format!("EXPORTS{rest}")
                        } else {
                            format!("{}{rest}", uuid::Uuid::new_v4())
                        }
                    }
                })
                .collect::<String>();
            let token = if path.starts_with("/api/v1/admin/") {
                TOKEN
            } else {
                s.key()
            };
            let request = s
                .client
                .request(method.to_uppercase().parse().unwrap(), &url)
                .bearer_auth(token);
            let request = if content.contains_key("multipart/form-data") {
                let file = reqwest::multipart::Part::bytes(vec![0u8; 10 * 1024 * 1024 + 1])
                    .file_name("app.jar");
                request.multipart(reqwest::multipart::Form::new().part("file", file))
            } else {
                request
                    .header("content-type", "application/json")
                    .body(json_body.clone())
            };
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            if (status, body["result"]["code"].as_str()) != (413, Some("BAD_REQUEST")) {
                wrong.push(format!("{method} {path}: {status} {}", body["result"]));
            }
            checked += 1;
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(checked >= 15, "only {checked} operations take a body?");
}

/// Connects to the server from `local` (a loopback address such as 127.0.0.2).
async fn connect_from(s: &TestServer, local: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    socket.connect(host(s).parse().unwrap()).await.unwrap()
}

/// A server with 24 connections, 8 per address, and no trusted proxy (127.0.0.1 is a client
/// like any other); and the head of a verify whose body never comes whole.
async fn small_connection_caps() -> (TestServer, String) {
    let s = TestServer::start_with(|c| {
        c.trusted_proxies = Default::default();
        c.max_connections = 24;
        c.max_connections_per_address = 8;
    })
    .await;
    let verify = format!(
        "POST /api/v1/client/teams/{}/verification/verify HTTP/1.1\r\nHost: x\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"licenseKey\":",
        s.team.team_id
    );
    (s, verify)
}

/// BUG-6: about 4,200 slow-body connections from one address filled the connection cap, and
/// `/healthz` stopped answering for everyone. Now one address holds at most its own share: the
/// connection past it is answered 429 and closed, and another address is served at once.
#[tokio::test]
async fn one_address_cannot_take_every_connection() {
    let (s, verify) = small_connection_caps().await;
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut stream = connect_from(&s, "127.0.0.1").await;
        // A request whose body never comes whole.
        stream.write_all(verify.as_bytes()).await.unwrap();
        held.push(stream);
    }
    // Past its share: refused with the envelope, at once.
    for _ in 0..24 {
        let mut extra = connect_from(&s, "127.0.0.1").await;
        let (answer, _) =
            read_until_closed(&mut extra, Instant::now(), Duration::from_secs(5)).await;
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 429"), "{text}");
        assert!(text.contains("\"RATE_LIMIT\""), "{text}");
    }
    // Another address is served while the first holds its maximum.
    for _ in 0..3 {
        assert!(
            healthz_from(&s, "127.0.0.2")
                .await
                .starts_with("HTTP/1.1 200")
        );
    }
    // Closing one frees a slot for the first address again (once the server has seen it
    // close: asked until it answers, for at most five seconds).
    drop(held.pop());
    let started = Instant::now();
    loop {
        let answer = healthz_from(&s, "127.0.0.1").await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{answer}");
        tokio::task::yield_now().await;
    }
}

/// `GET /healthz` on a connection of its own from `local`; the answer's text.
async fn healthz_from(s: &TestServer, local: &str) -> String {
    let mut stream = connect_from(s, local).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .ok();
    let (answer, _) = read_until_closed(&mut stream, Instant::now(), Duration::from_secs(10)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// NIT-9: 32 addresses holding 128 slow connections each filled the cap of 4,096, and
/// `/healthz` timed out for everyone. Now the last eighth of the cap is kept for addresses that
/// hold at most one connection: a few heavy addresses fill the rest, and a light client is
/// still served.
#[tokio::test]
async fn a_few_addresses_cannot_take_the_last_connections() {
    let (s, verify) = small_connection_caps().await;
    // Three addresses, eight slow connections each: the whole cap, before.
    let mut streams = Vec::new();
    for local in ["127.0.0.1", "127.0.0.2", "127.0.0.3"] {
        for _ in 0..8 {
            let mut stream = connect_from(&s, local).await;
            stream.write_all(verify.as_bytes()).await.ok();
            streams.push(stream);
        }
    }
    // A light client is served from the reserve. The server accepts in order, so by its
    // answer every connection above was admitted or refused (a refusal is written at once).
    for local in ["127.0.0.4", "127.0.0.5"] {
        let answer = healthz_from(&s, local).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let mut refused = Vec::new();
    for (i, stream) in streams.iter().enumerate() {
        let mut first = [0u8; 12];
        match stream.try_read(&mut first) {
            Ok(n) if n > 0 => {
                assert!(first.starts_with(b"HTTP/1.1 429"), "{first:?}");
                refused.push(i);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("connection {i}: {other:?}"),
        }
    }
    // The cap less its reserve of three is held; the third address's last three are refused.
    assert_eq!(refused, [21, 22, 23]);
}
