//! The client API keeps the licenses it reads in memory: every change to a license or to its
//! devices' standing takes effect on the next request through the same instance and, on
//! PostgreSQL, within moments through another one. Each change is made after the license was
//! read and answered from memory, so that the request after it would be answered from memory
//! too if the change had not reached it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{ClientAnswer, TestServer, on_postgres};

const DEVICE_A: &str = "device-cache-0001";
const DEVICE_B: &str = "device-cache-0002";

async fn heartbeat(s: &TestServer, key: &str, device: &str) -> ClientAnswer {
    s.client(
        "heartbeat",
        &json!({"licenseKey": key, "hardwareIdentifier": device}),
        None,
    )
    .await
}

/// Heartbeats of `device` answer `code` until one of a valid license is answered from memory
/// (the cache's hits grow; the first may record the device, the second reads it counting, and
/// on PostgreSQL the announcement of an earlier change may still drop what they read).
async fn settled(s: &TestServer, key: &str, device: &str, code: &str) {
    for _ in 0..20 {
        let hits = s.metric("licensing_license_cache_hits_total").await;
        let answer = heartbeat(s, key, device).await;
        assert_eq!(answer.code(), code, "{:?}", answer.body);
        if code != "VALID" || s.metric("licensing_license_cache_hits_total").await > hits {
            return;
        }
    }
    panic!("20 heartbeats in a row read the store: the license is never cached");
}

/// The changes, each made through `writer` while `reader` holds the license, and what a heartbeat
/// through `reader` must answer after each (`seen` waits for it).
async fn every_change<F, Fut>(writer: &TestServer, reader: &TestServer, seen: F)
where
    F: Fn(String, &'static str, &'static str, Option<(&'static str, Value)>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let l = writer
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let id = l["id"].as_str().unwrap().to_owned();
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    let license = |path: &str| writer.dev(&format!("licenses/id/{id}{path}"));

    // Suspension, and its end.
    settled(reader, &key, DEVICE_A, "VALID").await;
    writer.post(&license("/suspend"), "").await.ok();
    seen(key.clone(), DEVICE_A, "LICENSE_SUSPENDED", None).await;
    writer.post(&license("/unsuspend"), "").await.ok();
    seen(key.clone(), DEVICE_A, "VALID", None).await;

    // A changed limit: the answer shows it.
    settled(reader, &key, DEVICE_A, "VALID").await;
    writer.put(&license(""), r#"{"hwidLimit":3}"#).await.ok();
    seen(
        key.clone(),
        DEVICE_A,
        "VALID",
        Some(("hwidLimit", json!(3))),
    )
    .await;
    writer.put(&license(""), r#"{"hwidLimit":1}"#).await.ok();
    seen(
        key.clone(),
        DEVICE_A,
        "VALID",
        Some(("hwidLimit", json!(1))),
    )
    .await;

    // A forgotten device: another takes its seat, and it is refused from then on.
    settled(reader, &key, DEVICE_A, "VALID").await;
    let hwids = writer.get(&license("/hwid")).await;
    let hwid = hwids.ok()["hwids"][0]["id"].as_str().unwrap().to_owned();
    writer
        .patch(&license(&format!("/hwid/{hwid}")), r#"{"forgotten":true}"#)
        .await
        .ok();
    // The other device takes the seat through the writer, so that the reader learns of the
    // forgotten record alone.
    heartbeat(writer, &key, DEVICE_B).await.valid();
    seen(key.clone(), DEVICE_A, "HWID_LIMIT_REACHED", None).await;

    // A new key: the old one is no longer found, the new one is.
    settled(reader, &key, DEVICE_B, "VALID").await;
    let new_key = "CACHE-TESTS-NEWKY-00000-00001";
    writer
        .put(&license(""), &json!({"licenseKey": new_key}).to_string())
        .await
        .ok();
    seen(key.clone(), DEVICE_B, "LICENSE_NOT_FOUND", None).await;
    settled(reader, new_key, DEVICE_B, "VALID").await;

    // Deletion.
    writer.delete(&license("")).await.ok();
    seen(new_key.to_owned(), DEVICE_B, "LICENSE_NOT_FOUND", None).await;
}

/// Through one instance (either store): the request right after each change's answer sees it.
#[tokio::test]
async fn every_change_to_a_cached_license_holds_from_the_next_request() {
    let s = TestServer::start().await;
    every_change(&s, &s, |key, device, code, shown| {
        let s = &s;
        async move {
            let answer = heartbeat(s, &key, device).await;
            assert_eq!(answer.code(), code, "{:?}", answer.body);
            if let Some((field, value)) = shown {
                assert_eq!(answer.body["data"]["license"][field], value);
            }
        }
    })
    .await;
}

/// Through another instance on PostgreSQL: each change reaches the reader's memory by the
/// database's announcement, well before entries expire on their own.
#[tokio::test]
async fn every_change_through_another_instance_reaches_the_cached_license() {
    if !on_postgres() {
        eprintln!("every_change_through_another_instance: runs on PostgreSQL only");
        return;
    }
    let writer = TestServer::start().await;
    let reader = writer.second_instance().await;
    // Well within the 30 seconds after which an entry is read again anyway: an announcement
    // that never came fails this.
    let bound = Duration::from_secs(15);
    every_change(&writer, &reader, |key, device, code, shown| {
        let reader = &reader;
        async move {
            let start = Instant::now();
            loop {
                let answer = heartbeat(reader, &key, device).await;
                let shows = shown
                    .as_ref()
                    .is_none_or(|(field, value)| &answer.body["data"]["license"][*field] == value);
                if answer.code() == code && shows {
                    return;
                }
                assert!(
                    start.elapsed() < bound,
                    "still {:?} after {bound:?}, expected {code}",
                    answer.body
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    })
    .await;
}
