//! Strict input (BUG-2 and smaller): nothing after a JSON value, well-formed percent-encoding,
//! a jar's main class checked before it could reach a header, and the HTTP layer's own errors
//! in the envelope.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::{release_form, upload};
use crate::helpers::{Answer, TestServer};
use crate::releases::jar;

const TOKEN: &str = "admin-token-for-tests-0123456789";

/// `{…} garbage` and `{}{}` were answered 2xx on products, settings, verify, admin team create
/// and the release `data` part.
#[tokio::test]
async fn a_body_with_anything_after_its_json_value_is_refused() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    let verify = json!({"licenseKey": key}).to_string();
    let cases: Vec<(reqwest::Method, String, Option<&str>, String)> = vec![
        (
            reqwest::Method::POST,
            s.dev("products"),
            Some(s.key()),
            r#"{"name":"App"} garbage"#.into(),
        ),
        (
            reqwest::Method::POST,
            s.dev("products"),
            Some(s.key()),
            r#"{"name":"App"}{}"#.into(),
        ),
        (
            reqwest::Method::PUT,
            s.dev("settings"),
            Some(s.key()),
            r#"{"strictCustomers":true}}"#.into(),
        ),
        (
            reqwest::Method::POST,
            s.dev("licenses"),
            Some(s.key()),
            r#"{"expirationType":"NEVER"} 1"#.into(),
        ),
        (
            reqwest::Method::POST,
            s.client_url("verify"),
            None,
            format!("{verify}{verify}"),
        ),
        (
            reqwest::Method::POST,
            format!("{}/api/v1/admin/teams", s.base),
            Some(TOKEN),
            r#"{"name":"Evil"} x"#.into(),
        ),
    ];
    for (method, url, key, body) in cases {
        let answer: Answer = s.send(method, &url, key, Some(&body)).await;
        answer.err(400, "BAD_REQUEST");
        assert_eq!(answer.fields(), ["body"], "{url}: {}", answer.body);
    }
    // Nothing was stored.
    assert_eq!(s.get(&s.dev("products")).await.ok()["totalResults"], 0);
    assert_eq!(s.get(&s.dev("licenses")).await.ok()["totalResults"], 1);
    assert_eq!(
        s.get(&s.dev("settings")).await.ok()["strictCustomers"],
        false
    );
    // The release `data` part too.
    let p = s.post(&s.dev("products"), r#"{"name":"App"}"#).await;
    let pid = p.ok()["id"].as_str().unwrap().to_owned();
    let form = reqwest::multipart::Form::new().text(
        "data",
        format!(r#"{{"version":"1.0.0","productId":"{pid}","status":"PUBLISHED"}} trailing"#),
    );
    let response = upload(&s, reqwest::Method::POST, &s.dev("releases"), s.key(), form).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"]["errors"][0]["field"], "body", "{body}");
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);
}

/// `?search=%ff%fe` was decoded leniently and answered 200.
#[tokio::test]
async fn invalid_percent_encoding_in_a_query_is_refused() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    for query in ["search=%ff%fe", "search=%", "search=%%%%", "search=%4"] {
        for path in [
            "licenses",
            "customers",
            "releases",
            "settings",
            &format!("licenses/id/{id}"),
        ] {
            let answer = s.get(&format!("{}?{query}", s.dev(path))).await;
            answer.err(400, "BAD_REQUEST");
            assert_eq!(answer.fields(), ["query"], "{path}?{query}");
        }
    }
    // Well-formed UTF-8 still searches.
    s.get(&format!("{}?search=j%C3%A4ni", s.dev("customers")))
        .await
        .ok();
}

/// A jar's `Main-Class` with control characters or over 255 characters was stored and sent back
/// in `X-Main-Class`.
#[tokio::test]
async fn a_jar_whose_main_class_is_not_a_class_name_is_refused() {
    let s = TestServer::start().await;
    let p = s.post(&s.dev("products"), r#"{"name":"App"}"#).await;
    let pid = p.ok()["id"].as_str().unwrap().to_owned();
    let long = format!("com.example.{}", "A".repeat(250));
    for (i, main_class) in [
        "com.example.Main\u{7}Bell",
        long.as_str(),
        "com.example Main",
    ]
    .iter()
    .enumerate()
    {
        let data = json!({"version": format!("1.0.{i}"), "productId": pid, "status": "PUBLISHED"});
        let form = release_form(&data, Some(("app.jar", jar(main_class))));
        let response = upload(&s, reqwest::Method::POST, &s.dev("releases"), s.key(), form).await;
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 400, "{main_class:?}: {body}");
        assert_eq!(body["data"]["errors"][0]["field"], "file", "{body}");
    }
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);
    assert_eq!(
        s.files.stored_keys().await.unwrap(),
        Vec::<String>::new(),
        "refused uploads leave no file behind"
    );
    // A proper class name is kept.
    let data = json!({"version": "2.0.0", "productId": pid, "status": "PUBLISHED"});
    let form = release_form(&data, Some(("app.jar", jar("com.example.Main$Inner"))));
    let response = upload(&s, reqwest::Method::POST, &s.dev("releases"), s.key(), form).await;
    assert_eq!(response.status(), 201);
}

fn host(s: &TestServer) -> &str {
    s.base.trim_start_matches("http://")
}

/// Sends raw bytes and reads the answer until the server closes the connection; the status line
/// and the body as JSON.
async fn raw(s: &TestServer, request: &[u8], limit: Duration) -> (String, Value) {
    let mut stream = TcpStream::connect(host(s)).await.unwrap();
    // The server may answer (and close) before it has read everything: a write error then is
    // part of the test, not a failure.
    stream.write_all(request).await.ok();
    let mut received = Vec::new();
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((started + limit).into(), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
            Err(_) => panic!("no close within {limit:?}"),
        }
    }
    let text = String::from_utf8_lossy(&received).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_owned();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let body = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
    (status, body)
}

/// hyper answers 400, 414 and 431 itself, and closed a half-sent head without a word; each now
/// carries the envelope.
#[tokio::test]
async fn errors_of_the_http_layer_carry_the_envelope() {
    let s = TestServer::start_with(|c| c.header_timeout_secs = 1).await;
    let long_uri = format!(
        "GET /healthz?{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    let big_header = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "b".repeat(200_000)
    );
    let cases: [(&[u8], &str); 4] = [
        (b"NOT A REQUEST\r\n\r\n", "HTTP/1.1 400"),
        (long_uri.as_bytes(), "HTTP/1.1 414"),
        (big_header.as_bytes(), "HTTP/1.1 431"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n", "HTTP/1.1 408"),
    ];
    for (request, status) in cases {
        let (line, body) = raw(&s, request, Duration::from_secs(5)).await;
        assert!(line.starts_with(status), "{line} instead of {status}");
        assert_eq!(body["result"]["code"], "BAD_REQUEST", "{body}");
        assert_eq!(body["result"]["valid"], false);
        assert!(!body["result"]["details"].as_str().unwrap().is_empty());
    }
    // The server still serves.
    let ok = s
        .client
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}
