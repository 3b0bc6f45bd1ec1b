//! What a license may hold (BUG-5): a cap on stored device and address records, and the record
//! of used session keys, per team and kept across restarts.

use serde_json::{Value, json};

use crate::classloader::{query, session, setup};
use crate::client::release;
use crate::helpers::TestServer;
use crate::releases::jar;

fn key_of(l: &Value) -> String {
    l["licenseKey"].as_str().unwrap().to_owned()
}

async fn addresses(s: &TestServer, l: &Value) -> Vec<String> {
    let id = l["id"].as_str().unwrap();
    let page = s
        .get(&s.dev(&format!(
            "licenses/id/{id}/ip-address?pageSize=100&showForgotten=true"
        )))
        .await;
    page.ok()["ipAddresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap().to_owned())
        .collect()
}

/// A license without limits accepted addresses from anyone holding its key, without end. Now it
/// keeps at most the cap, dropping the least recently seen; a license whose records all count
/// refuses new ones with its limit's code.
#[tokio::test]
async fn a_license_keeps_at_most_the_cap_of_records() {
    let s = TestServer::start_with(|c| c.max_records_per_license = 10).await;
    let open = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let body = json!({"licenseKey": key_of(&open)});
    for i in 0..10 {
        s.client("verify", &body, Some(&format!("198.51.100.{i}")))
            .await
            .valid();
    }
    // The first address comes back, so the second is now the least recently seen.
    s.client("verify", &body, Some("198.51.100.0"))
        .await
        .valid();
    s.client("verify", &body, Some("198.51.100.200"))
        .await
        .valid();
    let kept = addresses(&s, &open).await;
    assert_eq!(kept.len(), 10, "{kept:?}");
    assert!(!kept.contains(&"198.51.100.1".to_owned()), "{kept:?}");
    assert!(kept.contains(&"198.51.100.0".to_owned()));
    assert!(kept.contains(&"198.51.100.200".to_owned()));

    // Every address of this license counts (its limit is above the cap): the eleventh is
    // refused, and nothing is dropped.
    let counted = s
        .license(r#"{"expirationType":"NEVER","ipLimit":50}"#)
        .await;
    let body = json!({"licenseKey": key_of(&counted)});
    for i in 0..10 {
        s.client("verify", &body, Some(&format!("203.0.113.{i}")))
            .await
            .valid();
    }
    let refused = s.client("verify", &body, Some("203.0.113.99")).await;
    refused.err(403, "IP_LIMIT_REACHED");
    assert!(
        refused.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("most IP addresses the server keeps"),
        "{}",
        refused.body
    );
    assert_eq!(addresses(&s, &counted).await.len(), 10);
    // A known address still passes.
    s.client("verify", &body, Some("203.0.113.3")).await.valid();
}

/// A session key was remembered in memory only, so it was served again after a restart.
#[tokio::test]
async fn a_session_key_stays_used_across_a_restart() {
    let mut s = TestServer::start().await;
    let keys = s.public_keys().await;
    let (p, l) = setup(&s, json!({})).await;
    release(
        &s,
        json!({"version": "1.0.0", "productId": p, "status": "PUBLISHED", "setAsLatest": true}),
        Some(("app.jar", jar("com.example.Main"))),
    )
    .await;
    let (_, text) = session(&keys);
    let q = query(&key_of(&l), &p, &text, "");
    assert_eq!(s.classloader(&q, None).await.status, 200);
    s = s.restart().await;
    let again = s.classloader(&q, None).await;
    again.err(400, "INVALID_SESSION_KEY");
    assert!(
        again.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("already used")
    );
    // A fresh key is served.
    let (_, fresh) = session(&keys);
    assert_eq!(
        s.classloader(&query(&key_of(&l), &p, &fresh, ""), None)
            .await
            .status,
        200
    );
}
