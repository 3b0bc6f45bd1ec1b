//! (ext) Usage meters over HTTP: `POST {client}/usage` counts within a meter's limit per period
//! (exactly, under concurrency; across instances on PostgreSQL), answers a retried event once,
//! counts a late event in its own period, refuses bad input with nothing counted; verify and
//! heartbeat carry the meters; the developer API reads, adjusts and resets them, audited.

use chrono::{Datelike, Months, TimeZone, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{ClientAnswer, TestServer, on_postgres};

impl TestServer {
    /// `POST {client}/usage` with a JSON body.
    pub async fn usage(&self, body: &Value) -> ClientAnswer {
        let url = format!(
            "{}/api/v1/client/teams/{}/usage",
            self.base, self.team.team_id
        );
        self.client_raw(&url, &body.to_string(), None).await
    }
}

/// A license with a monthly meter `EXPORTS` of `limit` and an unlimited daily `SYNCS`: its id
/// and key.
async fn metered(s: &TestServer, limit: u64) -> (String, String) {
    let l = s
        .license(
            &json!({
                "expirationType": "NEVER",
                "meters": [
                    {"code": "EXPORTS", "limit": limit, "period": "month"},
                    {"code": "SYNCS", "period": "day"},
                ],
            })
            .to_string(),
        )
        .await;
    (
        l["id"].as_str().unwrap().to_owned(),
        l["licenseKey"].as_str().unwrap().to_owned(),
    )
}

/// Concurrent increments through `servers` (in turn): how many were counted; every other
/// answer is `USAGE_LIMIT_REACHED`.
async fn concurrent(servers: &[&TestServer], key: &str, requests: usize) -> usize {
    let mut tasks = Vec::new();
    for i in 0..requests {
        let server = servers[i % servers.len()];
        let url = format!(
            "{}/api/v1/client/teams/{}/usage",
            server.base, server.team.team_id
        );
        let client = server.client.clone();
        let body = json!({"licenseKey": key, "meter": "EXPORTS", "quantity": 1, "eventId": format!("concurrent-{i}")});
        tasks.push(tokio::spawn(async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            let answer: Value = response.json().await.unwrap();
            answer["result"]["code"].as_str().unwrap_or("").to_owned()
        }));
    }
    let mut counted = 0;
    for task in tasks {
        match task.await.unwrap().as_str() {
            "VALID" => counted += 1,
            "USAGE_LIMIT_REACHED" => {}
            other => panic!("unexpected answer {other}"),
        }
    }
    counted
}

#[tokio::test]
async fn usage_is_counted_exactly_to_the_limit_and_a_retried_event_once() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let (id, key) = metered(&s, 10).await;
    // 24 at once against 10: exactly 10.
    assert_eq!(concurrent(&[&s], &key, 24).await, 10);
    let full = s
        .usage(&json!({"licenseKey": key, "meter": "EXPORTS", "quantity": 1}))
        .await;
    full.err(403, "USAGE_LIMIT_REACHED").signed_by(&keys);
    let data = &full.body["data"];
    assert_eq!(
        (
            &data["meter"],
            &data["used"],
            &data["limit"],
            &data["remaining"]
        ),
        (&json!("EXPORTS"), &json!(10), &json!(10), &json!(0)),
        "{}",
        full.body
    );
    assert!(
        data["periodStart"]
            .as_str()
            .unwrap()
            .ends_with("-01T00:00:00.000Z")
    );
    assert!(data["resetsAt"].is_string());
    // Verify and heartbeat carry the meters and count nothing.
    let verified = s.client("verify", &json!({"licenseKey": key}), None).await;
    let meters = verified.valid()["license"]["meters"].clone();
    assert_eq!(meters[0]["code"], "EXPORTS");
    assert_eq!(
        (&meters[0]["used"], &meters[0]["remaining"]),
        (&json!(10), &json!(0))
    );
    assert_eq!(
        (&meters[1]["code"], &meters[1]["limit"]),
        (&json!("SYNCS"), &Value::Null)
    );
    let beat = s
        .client(
            "heartbeat",
            &json!({"licenseKey": key, "hardwareIdentifier": "usage-device-0001"}),
            None,
        )
        .await;
    assert_eq!(beat.valid()["license"]["meters"][0]["used"], 10);

    // A retried event answers its first answer and counts once.
    let sync =
        json!({"licenseKey": key, "meter": "SYNCS", "quantity": 5, "eventId": "sync-2026-0001"});
    let first = s.usage(&sync).await;
    first.valid();
    first.signed_by(&keys);
    let again = s.usage(&sync).await;
    assert_eq!(again.valid(), first.valid());
    let usage = s.get(&s.dev(&format!("licenses/id/{id}/usage"))).await;
    let meters = usage.ok()["meters"].clone();
    assert_eq!(meters[1]["used"], 5, "{meters}");
    assert_eq!(meters[0]["history"].as_array().unwrap().len(), 12);
    assert_eq!(meters[0]["period"], "month");

    // A license without meters answers `[]`.
    let plain = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let answer = s
        .client("verify", &json!({"licenseKey": plain["licenseKey"]}), None)
        .await;
    assert_eq!(answer.valid()["license"]["meters"], json!([]));
}

#[tokio::test]
async fn a_batch_counts_each_event_in_its_own_period_and_bad_input_counts_nothing() {
    let s = TestServer::start().await;
    let (id, key) = metered(&s, 10).await;
    let now = Utc::now();
    let this_month = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .unwrap();
    let last_month = this_month.checked_sub_months(Months::new(1)).unwrap();
    let late = (last_month + chrono::Duration::days(3)).to_rfc3339();
    let batch = s
        .usage(&json!({"licenseKey": key, "events": [
            {"meter": "EXPORTS", "quantity": 4, "eventId": "late-1", "at": late},
            {"meter": "EXPORTS", "quantity": 8},
            {"meter": "EXPORTS", "quantity": 3},
            {"meter": "SYNCS", "quantity": 2},
        ]}))
        .await;
    let events = batch.valid()["events"].clone();
    let codes: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["VALID", "VALID", "USAGE_LIMIT_REACHED", "VALID"],
        "{events}"
    );
    assert_eq!(events[0]["eventId"], "late-1");
    assert_eq!(events[0]["used"], 4, "last month's own count");
    assert_eq!(events[2]["used"], 8);
    let usage = s.get(&s.dev(&format!("licenses/id/{id}/usage"))).await;
    let exports = usage.ok()["meters"][0].clone();
    assert_eq!(exports["used"], 8);
    assert_eq!(exports["history"][0]["used"], 4, "{exports}");

    // Bad input: a clear error and nothing counted.
    let url_usage = |body: Value| body;
    let future = (now + chrono::Duration::days(2)).to_rfc3339();
    let too_many: Vec<Value> = (0..1_001)
        .map(|_| json!({"meter": "SYNCS", "quantity": 1}))
        .collect();
    for (body, status, code, field) in [
        (
            json!({"licenseKey": key, "meter": "PRINTS", "quantity": 1}),
            404,
            "METER_NOT_FOUND",
            None,
        ),
        (
            json!({"licenseKey": key, "meter": "SYNCS", "quantity": 0}),
            400,
            "BAD_REQUEST",
            Some("quantity"),
        ),
        (
            json!({"licenseKey": key, "meter": "SYNCS", "quantity": 1_000_001}),
            400,
            "BAD_REQUEST",
            Some("quantity"),
        ),
        (
            json!({"licenseKey": key, "meter": "not a code", "quantity": 1}),
            400,
            "BAD_REQUEST",
            Some("meter"),
        ),
        (
            json!({"licenseKey": key, "meter": "SYNCS"}),
            400,
            "BAD_REQUEST",
            Some("quantity"),
        ),
        (
            json!({"licenseKey": key, "meter": "SYNCS", "quantity": 1, "eventId": "with space"}),
            400,
            "BAD_REQUEST",
            Some("eventId"),
        ),
        (
            json!({"licenseKey": key, "events": too_many}),
            400,
            "BAD_REQUEST",
            Some("events"),
        ),
        (
            json!({"licenseKey": key, "events": [{"meter": "SYNCS", "quantity": 1, "at": future}]}),
            400,
            "BAD_REQUEST",
            Some("events[0].at"),
        ),
        (
            json!({"licenseKey": key, "events": [{"meter": "SYNCS", "quantity": 1}, {"meter": "PRINTS", "quantity": 1}]}),
            404,
            "METER_NOT_FOUND",
            None,
        ),
        (
            json!({"licenseKey": key, "meter": "SYNCS", "quantity": 1, "events": []}),
            400,
            "BAD_REQUEST",
            Some("events"),
        ),
    ] {
        let answer = s.usage(&url_usage(body.clone())).await;
        answer.err(status, code);
        match field {
            Some(field) => assert_eq!(
                answer.body["data"]["errors"][0]["field"], field,
                "{body}: {}",
                answer.body
            ),
            None => assert!(
                answer.body["result"]["details"]
                    .as_str()
                    .unwrap()
                    .contains("PRINTS"),
                "{}",
                answer.body
            ),
        }
    }
    let after = s.get(&s.dev(&format!("licenses/id/{id}/usage"))).await;
    assert_eq!(after.ok()["meters"][0]["used"], 8);
    assert_eq!(
        after.ok()["meters"][1]["used"],
        2,
        "nothing counted by refusals"
    );
    // Verify's members and checks hold: an unknown key is not found, a suspended license
    // refused.
    s.usage(
        &json!({"licenseKey": "ABCDE-12345-FGHIJ-67890-KLMNO", "meter": "SYNCS", "quantity": 1}),
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    s.post(&s.dev(&format!("licenses/id/{id}/suspend")), "")
        .await
        .ok();
    s.usage(&json!({"licenseKey": key, "meter": "SYNCS", "quantity": 1}))
        .await
        .err(403, "LICENSE_SUSPENDED");
}

#[tokio::test]
async fn staff_adjust_and_reset_counters_with_a_reason_audited() {
    let s = TestServer::start().await;
    let (id, key) = metered(&s, 10).await;
    s.usage(&json!({"licenseKey": key, "meter": "EXPORTS", "quantity": 10}))
        .await
        .valid();
    let adjust = s.dev(&format!("licenses/id/{id}/usage/EXPORTS/adjust"));
    let adjusted = s
        .post(
            &adjust,
            r#"{"delta":-3,"reason":"Three exports failed on our side"}"#,
        )
        .await;
    assert_eq!(
        (&adjusted.ok()["used"], &adjusted.ok()["remaining"]),
        (&json!(7), &json!(3))
    );
    // Room again for the client.
    s.usage(&json!({"licenseKey": key, "meter": "EXPORTS", "quantity": 3}))
        .await
        .valid();
    let reset = s
        .post(
            &s.dev(&format!("licenses/id/{id}/usage/EXPORTS/reset")),
            r#"{"reason":"New contract"}"#,
        )
        .await;
    assert_eq!(reset.ok()["used"], 0);
    let audit = s
        .get(&s.dev(&format!(
            "audit-log?resourceId={id}&action=license.usage_changed"
        )))
        .await;
    let entries = audit.ok()["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "{entries:?}");
    let text = serde_json::to_string(&entries).unwrap();
    assert!(text.contains("Three exports failed on our side") && text.contains("New contract"));
    // Bad changes are refused, naming what to fix.
    let refused = s.post(&adjust, r#"{"delta":0}"#).await;
    assert_eq!(refused.status, 400);
    let fields: Vec<&str> = refused.body["data"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["delta", "reason"]);
    let unknown = s
        .post(
            &s.dev(&format!("licenses/id/{id}/usage/PRINTS/adjust")),
            r#"{"delta":1,"reason":"x"}"#,
        )
        .await;
    assert_eq!(
        (unknown.status, unknown.body["result"]["code"].as_str()),
        (404, Some("METER_NOT_FOUND"))
    );
    // A license file carries the meters as they stood when it was issued.
    let issued = s
        .post(
            &s.dev(&format!("licenses/id/{id}/file")),
            r#"{"encrypt":false}"#,
        )
        .await;
    let certificate = issued.ok()["certificate"].as_str().unwrap().to_owned();
    let file = crate::license_files::opened(&s.public_keys().await, &certificate, &key, None);
    let meters = &file["data"]["license"]["meters"];
    assert_eq!(
        (&meters[0]["code"], &meters[0]["used"]),
        (&json!("EXPORTS"), &json!(0)),
        "{file}"
    );
    // Scopes: `usage:read` reads, `usage:write` changes; another team sees nothing.
    let reader = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"meters","scopes":["licenses:read","usage:read"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = s
        .send(
            Method::GET,
            &s.dev(&format!("licenses/id/{id}/usage")),
            Some(&reader),
            None,
        )
        .await;
    assert_eq!(read.status, 200, "{}", read.body);
    let write = s
        .send(
            Method::POST,
            &adjust,
            Some(&reader),
            Some(r#"{"delta":1,"reason":"x"}"#),
        )
        .await;
    assert_eq!(write.status, 403, "{}", write.body);
    let other = s.other_team().await;
    let theirs = s
        .send(
            Method::GET,
            &format!(
                "{}/api/v1/dev/teams/{}/licenses/id/{id}/usage",
                s.base, other.team_id
            ),
            Some(&other.api_key),
            None,
        )
        .await;
    assert_eq!(theirs.status, 404, "{}", theirs.body);
}

/// 40 increments at once, half through each of two instances, against a limit of 15:
/// exactly 15 (the counter's row decides, not a process).
#[tokio::test]
async fn usage_through_two_instances_never_passes_the_limit() {
    if !on_postgres() {
        eprintln!("usage_through_two_instances: runs on PostgreSQL only (the api_postgres suite)");
        return;
    }
    let a = TestServer::start().await;
    let b = a.second_instance().await;
    let (id, key) = metered(&a, 15).await;
    assert_eq!(concurrent(&[&a, &b], &key, 40).await, 15);
    let usage = b.get(&b.dev(&format!("licenses/id/{id}/usage"))).await;
    assert_eq!(usage.ok()["meters"][0]["used"], 15);
}

/// Batches touching the same two counters in opposite orders, many at once: each is answered
/// (on PostgreSQL a batch's counters are taken in one order, so two batches never wait for
/// each other's) and every event counts.
#[tokio::test]
async fn batches_in_opposite_orders_all_count() {
    let s = TestServer::start().await;
    let (id, key) = metered(&s, 1_000_000).await;
    let url = format!("{}/api/v1/client/teams/{}/usage", s.base, s.team.team_id);
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (first, second) = if i % 2 == 0 {
            ("EXPORTS", "SYNCS")
        } else {
            ("SYNCS", "EXPORTS")
        };
        let body = json!({"licenseKey": key, "events": [
            {"meter": first, "quantity": 1, "eventId": format!("order-{i}-a")},
            {"meter": second, "quantity": 1, "eventId": format!("order-{i}-b")},
        ]});
        let (client, url) = (s.client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap();
            (status, answer)
        }));
    }
    for task in tasks {
        let (status, answer) = task.await.unwrap();
        assert_eq!(status, 200, "{answer}");
        let codes: Vec<&Value> = answer["data"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["code"])
            .collect();
        assert_eq!(codes, [&json!("VALID"), &json!("VALID")], "{answer}");
    }
    let usage = s.get(&s.dev(&format!("licenses/id/{id}/usage"))).await;
    let meters = usage.ok()["meters"].clone();
    assert_eq!(meters[0]["used"], 40, "{meters}");
    assert_eq!(meters[1]["used"], 40, "{meters}");
}

/// An archive carries each license's counters (its meters with them), and the restored store
/// counts on from them.
#[tokio::test]
async fn archives_carry_the_usage_counters() {
    use licensing_core::store::UsageStore;
    let s = TestServer::start().await;
    let (id, key) = metered(&s, 10).await;
    s.usage(&json!({"licenseKey": key, "meter": "EXPORTS", "quantity": 6}))
        .await
        .valid();
    let files = tempfile::tempdir().unwrap();
    let file_store = licensing_server::files::FileStore::new(files.path()).unwrap();
    let mut archive = Vec::new();
    licensing_server::archive::export(&s.store, &file_store, &mut archive)
        .await
        .unwrap();
    let text = String::from_utf8(archive.clone()).unwrap();
    assert!(text.contains(r#""kind":"meters""#), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let (restored, _) = crate::helpers::open_test_store(dir.path()).await;
    let restored_files = licensing_server::files::FileStore::new(dir.path()).unwrap();
    licensing_server::archive::import(&restored, &restored_files, archive.as_slice())
        .await
        .unwrap();
    let license: licensing_core::LicenseId = id.parse().unwrap();
    let mut before = s.store.list_usage(s.team_id(), license).await.unwrap();
    let mut after = restored.list_usage(s.team_id(), license).await.unwrap();
    before.sort_by(|a, b| a.meter.cmp(&b.meter));
    after.sort_by(|a, b| a.meter.cmp(&b.meter));
    assert_eq!(after, before);
    assert_eq!(after[0].used, 6);
}
