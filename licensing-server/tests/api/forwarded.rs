//! BUG-7: the client address behind a trusted proxy, whatever bytes the client put in
//! `X-Forwarded-For`. A proxy like nginx passes the client's header through, bytes that are not
//! ASCII included, and appends the address it received the request from; that rightmost entry is
//! the client, and an odd header must never make the proxy itself the client (which bypassed
//! blacklists and IP limits and opened `/metrics` to everyone).

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::TestServer;

/// The headers a client sends through the proxy, as nginx forwards them with its own entry
/// (`$proxy_add_x_forwarded_for`) appended for `client`; and what they test.
fn forwarded_forms(client: &str) -> Vec<(Vec<Vec<u8>>, &'static str)> {
    let line = |text: &[u8]| {
        let mut bytes = text.to_vec();
        bytes.extend_from_slice(client.as_bytes());
        bytes
    };
    vec![
        (vec![line(b"\xff, ")], "a non-ASCII byte"),
        (
            vec![line(b"\xff\xfe\x80 garbage, ")],
            "several non-ASCII bytes",
        ),
        (
            vec![b"\xff".to_vec(), client.as_bytes().to_vec()],
            "a non-ASCII line before the proxy's",
        ),
        (vec![line(b", ")], "a lone comma"),
        (vec![line(b",,,, ")], "empty entries"),
        (vec![line(b"unknown, ")], "a word"),
        (
            vec![line(format!("{}, ", "1.2.3.4, ".repeat(4_000)).as_bytes())],
            "a long list of spoofed entries (36 KB)",
        ),
        (
            vec![line(b"127.0.0.1, ")],
            "the proxy's own address, spoofed",
        ),
    ]
}

/// Sends a verify through the trusted loopback proxy with these `X-Forwarded-For` lines.
async fn verify_through(s: &TestServer, key: &str, lines: &[Vec<u8>], hwid: &str) -> (u16, Value) {
    let mut request = s
        .client
        .post(s.client_url("verify"))
        .header("content-type", "application/json")
        .body(json!({"licenseKey": key, "hardwareIdentifier": hwid}).to_string());
    for line in lines {
        request = request.header(
            "x-forwarded-for",
            reqwest::header::HeaderValue::from_bytes(line).unwrap(),
        );
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The address the tests blacklist.
const BLACKLISTED: &str = "198.51.100.66";

/// A server whose team blacklists `address`, and a license of it.
async fn blacklisting(address: &str) -> (TestServer, Value) {
    let s = TestServer::start().await;
    s.post(
        &s.dev("blacklist"),
        &json!({"type": "IP", "value": address}).to_string(),
    )
    .await
    .ok();
    let license = s.license(r#"{"expirationType":"NEVER"}"#).await;
    (s, license)
}

#[tokio::test]
async fn odd_forwarded_bytes_never_make_the_proxy_the_client() {
    let (s, license) = blacklisting(BLACKLISTED).await;
    let key = license["licenseKey"].as_str().unwrap();
    for (lines, why) in forwarded_forms(BLACKLISTED) {
        let (status, body) = verify_through(&s, key, &lines, "device-0001").await;
        assert_eq!(
            (status, body["result"]["code"].as_str().unwrap()),
            (403, "IP_BLACKLISTED"),
            "{why}: {body}"
        );
    }
    // The blacklist counted every one of them.
    let entries = s.get(&s.dev("blacklist")).await;
    let hits = entries.ok()["blacklist"][0]["hits"].as_u64().unwrap();
    assert_eq!(hits, forwarded_forms("x").len() as u64);

    // An IP limit of 1 admits one address, however the others dress their header.
    let limited = s.license(r#"{"expirationType":"NEVER","ipLimit":1}"#).await;
    let key = limited["licenseKey"].as_str().unwrap();
    let (status, body) = verify_through(&s, key, &[b"198.51.100.1".to_vec()], "device-0001").await;
    assert_eq!(status, 200, "{body}");
    for (i, (lines, why)) in forwarded_forms("198.51.100.2").into_iter().enumerate() {
        let (status, body) = verify_through(&s, key, &lines, &format!("device-000{i}")).await;
        assert_eq!(
            (status, body["result"]["code"].as_str().unwrap()),
            (403, "IP_LIMIT_REACHED"),
            "{why}: {body}"
        );
    }
    let addresses = s
        .get(&s.dev(&format!(
            "licenses/id/{}/ip-address",
            limited["id"].as_str().unwrap()
        )))
        .await;
    let recorded: Vec<&str> = addresses.ok()["ipAddresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, ["198.51.100.1"]);
}

#[tokio::test]
async fn odd_forwarded_bytes_do_not_open_metrics_or_hide_the_audited_address() {
    let s = TestServer::start().await;
    for (lines, why) in forwarded_forms("203.0.113.9") {
        let mut request = s.client.get(format!("{}/metrics", s.base));
        for line in &lines {
            request = request.header(
                "x-forwarded-for",
                reqwest::header::HeaderValue::from_bytes(line).unwrap(),
            );
        }
        let status = request.send().await.unwrap().status();
        assert_eq!(status, 403, "{why}");
    }
    // A write through the proxy is audited with the client's address.
    let created = s
        .client
        .post(s.dev("customers"))
        .bearer_auth(s.key())
        .header(
            "x-forwarded-for",
            reqwest::header::HeaderValue::from_bytes(b"\xff, 203.0.113.77").unwrap(),
        )
        .header("content-type", "application/json")
        .body(r#"{"fullName":"Ann"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let log = s.get(&s.dev("audit-log?action=customer.created")).await;
    assert_eq!(log.ok()["entries"][0]["address"], "203.0.113.77");
}

/// Header bytes the HTTP layer refuses outright (a NUL, a head over its size), and a header
/// split over two lines: never an answer for the proxy's address.
#[tokio::test]
async fn forwarded_headers_the_http_layer_refuses_are_refused() {
    let (s, license) = blacklisting(BLACKLISTED).await;
    let body = json!({"licenseKey": license["licenseKey"], "hardwareIdentifier": "device-0001"})
        .to_string();
    let head = |forwarded: &[u8]| {
        let mut request = format!(
            "POST /api/v1/client/teams/{}/verification/verify HTTP/1.1\r\nHost: x\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            s.team.team_id,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(forwarded);
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body.as_bytes());
        request
    };
    let cases: [(Vec<u8>, &str, &str); 4] = [
        (
            b"X-Forwarded-For: \x00, 198.51.100.66\r\n".to_vec(),
            "HTTP/1.1 400",
            "a NUL byte",
        ),
        (
            [
                b"X-Forwarded-For: ".to_vec(),
                vec![b'9'; 200 * 1024],
                b", 198.51.100.66\r\n".to_vec(),
            ]
            .concat(),
            "HTTP/1.1 431",
            "a header over the head's size",
        ),
        (
            b"X-Forwarded-For: \xff\r\nX-Forwarded-For: 198.51.100.66\r\n".to_vec(),
            "HTTP/1.1 403",
            "two header lines",
        ),
        (
            b"X-Forwarded-For: \xff,\r\n 198.51.100.66\r\n".to_vec(),
            "HTTP/1.1 400",
            "a folded header line (obsolete)",
        ),
    ];
    for (forwarded, expected, why) in cases {
        let mut stream = TcpStream::connect(s.base.trim_start_matches("http://"))
            .await
            .unwrap();
        // The server may answer (and close) before a refused head is sent whole.
        stream.write_all(&head(&forwarded)).await.ok();
        let mut answer = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(30),
            stream.read_to_end(&mut answer),
        )
        .await
        .expect("an answer")
        .ok();
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with(expected), "{why}: {text}");
        assert!(!text.contains("\"VALID\""), "{why}: {text}");
    }
}
