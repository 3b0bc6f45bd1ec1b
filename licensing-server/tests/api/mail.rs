//! License e-mails over SMTP, against a minimal SMTP server that the test runs on loopback.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::helpers::TestServer;

/// Accepts SMTP sessions and hands each received message (its DATA) to the channel.
pub(crate) async fn smtp_server(listener: TcpListener, received: mpsc::UnboundedSender<String>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        let received = received.clone();
        tokio::spawn(async move {
            let (reader, mut writer) = socket.into_split();
            let mut lines = BufReader::new(reader).lines();
            writer.write_all(b"220 localhost ESMTP test\r\n").await.ok();
            while let Ok(Some(line)) = lines.next_line().await {
                let command = line.to_ascii_uppercase();
                let reply: &[u8] = if command.starts_with("EHLO") || command.starts_with("HELO") {
                    b"250-localhost\r\n250 8BITMIME\r\n"
                } else if command.starts_with("MAIL FROM")
                    || command.starts_with("RCPT TO")
                    || command.starts_with("RSET")
                    || command.starts_with("NOOP")
                {
                    b"250 OK\r\n"
                } else if command == "DATA" {
                    writer
                        .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                        .await
                        .ok();
                    let mut data = String::new();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if line == "." {
                            break;
                        }
                        data.push_str(&line);
                        data.push('\n');
                    }
                    received.send(data).ok();
                    b"250 OK queued\r\n"
                } else if command == "QUIT" {
                    writer.write_all(b"221 Bye\r\n").await.ok();
                    return;
                } else {
                    b"502 Not implemented\r\n"
                };
                writer.write_all(reply).await.ok();
            }
        });
    }
}

async fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

async fn with_smtp(port: u16) -> TestServer {
    TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
    })
    .await
}

async fn customer(s: &TestServer, body: &str) -> Value {
    s.post(&s.dev("customers"), body).await.ok()["id"].clone()
}

async fn next_message(rx: &mut mpsc::UnboundedReceiver<String>, within: Duration) -> String {
    tokio::time::timeout(within, rx.recv())
        .await
        .expect("no e-mail arrived in time")
        .expect("server gone")
}

#[tokio::test]
async fn the_license_key_is_mailed_to_customers_with_an_address() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(smtp_server(listener, tx));
    let s = with_smtp(port).await;
    let jane = customer(&s, r#"{"email":"jane@example.com","fullName":"Jane Doe"}"#).await;
    let anon = customer(&s, r#"{"username":"no-mail"}"#).await;
    let product = s
        .post(&s.dev("products"), r#"{"name":"Editor"}"#)
        .await
        .ok()["id"]
        .clone();
    let body = serde_json::json!({"expirationType": "NEVER", "sendEmailDelivery": true, "customerIds": [jane, anon], "productIds": [product]});
    let l = s.license(&body.to_string()).await;
    let key = l["licenseKey"].as_str().unwrap();
    let message = next_message(&mut rx, Duration::from_secs(20)).await;
    assert!(message.contains(key), "{message}");
    assert!(message.contains("To: jane@example.com"), "{message}");
    assert!(
        message.contains("Subject: Your license key for Editor"),
        "{message}"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), rx.recv())
            .await
            .is_err(),
        "one e-mail only"
    );

    // A license whose customers have no address cannot be mailed.
    let refused = s
        .post(
            &s.dev("licenses"),
            &format!(
                r#"{{"expirationType":"NEVER","sendEmailDelivery":true,"customerIds":[{anon}]}}"#
            ),
        )
        .await;
    assert_eq!(
        refused.err(400, "BAD_REQUEST").fields(),
        ["sendEmailDelivery"]
    );
}

#[tokio::test]
async fn mail_waits_while_the_smtp_server_is_down_and_is_delivered_later() {
    let port = free_port().await;
    let s = with_smtp(port).await;
    let jane = customer(&s, r#"{"email":"jane@example.com"}"#).await;
    let l = s
        .license(&format!(
            r#"{{"expirationType":"NEVER","sendEmailDelivery":true,"customerIds":[{jane}]}}"#
        ))
        .await;
    // The API call succeeded although nothing listens on the SMTP port; let the worker fail once.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(smtp_server(listener, tx));
    let message = next_message(&mut rx, Duration::from_secs(40)).await;
    assert!(message.contains(l["licenseKey"].as_str().unwrap()));
}

#[tokio::test]
async fn at_most_fifty_mails_a_day_per_team() {
    let s = with_smtp(free_port().await).await;
    let jane = customer(&s, r#"{"email":"jane@example.com"}"#).await;
    let body =
        format!(r#"{{"expirationType":"NEVER","sendEmailDelivery":true,"customerIds":[{jane}]}}"#);
    for _ in 0..50 {
        s.license(&body).await;
    }
    let refused = s.post(&s.dev("licenses"), &body).await;
    refused.err(429, "RATE_LIMIT");
    assert_eq!(
        s.get(&s.dev("licenses")).await.ok()["totalResults"],
        50,
        "nothing created beyond the limit"
    );
    let response = s
        .client
        .post(s.dev("licenses"))
        .bearer_auth(s.key())
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=86_400).contains(&retry));
    // Without e-mail the team can still create licenses.
    s.license(r#"{"expirationType":"NEVER"}"#).await;
}

/// The operator sets the daily limit (`LICENSING_MAIL_DAILY_LIMIT`).
#[tokio::test]
async fn the_daily_mail_limit_is_the_operators() {
    let port = free_port().await;
    let s = TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
        c.mail_daily_limit = 2;
    })
    .await;
    let jane = customer(&s, r#"{"email":"jane@example.com"}"#).await;
    let body =
        format!(r#"{{"expirationType":"NEVER","sendEmailDelivery":true,"customerIds":[{jane}]}}"#);
    for _ in 0..2 {
        s.license(&body).await;
    }
    s.post(&s.dev("licenses"), &body)
        .await
        .err(429, "RATE_LIMIT");
}
