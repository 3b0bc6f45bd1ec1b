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

/// A license e-mail read back through a standard MIME parser: UTF-8 text and the same words
/// as HTML, the team's name as the sender's, the date in words in the customer's language.
#[tokio::test]
async fn license_mails_are_mime_in_utf8_in_the_customers_language() {
    use mail_parser::{MessageParser, MimeHeaders};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(smtp_server(listener, tx));
    let s = with_smtp(port).await;
    let zoe = customer(
        &s,
        r#"{"email":"zoe@example.com","fullName":"Zoë Müller-Šťastná","metadata":[{"key":"language","value":"de-AT"}]}"#,
    )
    .await;
    let product = s
        .post(&s.dev("products"), r#"{"name":"Éditeur Pro"}"#)
        .await
        .ok()["id"]
        .clone();
    let body = serde_json::json!({"expirationType": "DATE", "expirationDate": "2027-03-01T12:00:00Z",
        "sendEmailDelivery": true, "customerIds": [zoe], "productIds": [product]});
    let key = s.license(&body.to_string()).await["licenseKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let raw = next_message(&mut rx, Duration::from_secs(20)).await;
    let raw = raw.replace("\n..", "\n.");
    let mail = MessageParser::default()
        .parse(raw.as_bytes())
        .expect("a MIME message");

    let from = mail.from().and_then(|a| a.first()).expect("a sender");
    assert_eq!(from.name(), Some("Team A"), "the team's name: {raw}");
    assert_eq!(from.address(), Some("noreply@example.com"));
    assert_eq!(mail.subject(), Some("Ihr Lizenzschlüssel für Éditeur Pro"));

    let text_part = mail.text_part(0).expect("a text part");
    let text_type = text_part.content_type().expect("its content type");
    assert_eq!(
        (text_type.ctype(), text_type.subtype()),
        ("text", Some("plain"))
    );
    assert_eq!(text_type.attribute("charset"), Some("utf-8"));
    let text = mail.body_text(0).unwrap();
    assert!(text.contains("Zoë Müller-Šťastná"), "{text}");
    assert!(text.contains(&key), "{text}");
    assert!(
        text.contains("Er gilt bis 1. März 2027."),
        "the date in words, in German: {text}"
    );

    let html_part = mail.html_part(0).expect("an HTML part");
    let html_type = html_part.content_type().unwrap();
    assert_eq!(html_type.subtype(), Some("html"));
    assert_eq!(html_type.attribute("charset"), Some("utf-8"));
    let html = mail.body_html(0).unwrap();
    assert!(html.contains(r#"<html lang="de">"#), "{html}");
    assert!(html.contains("Zoë Müller-Šťastná"), "{html}");
    assert!(html.contains(&key), "{html}");
    assert!(html.contains("1. März 2027"), "{html}");
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
