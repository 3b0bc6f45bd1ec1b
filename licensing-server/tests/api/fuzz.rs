//! HTTP fuzzing: random requests to every documented operation of a live, seeded server, with
//! structure-aware bodies (JSON and multipart), query strings, path ids and credentials. No
//! answer may be a 5xx, and every refusal is the JSON envelope with details.
//!
//! `PROPTEST_CASES=20000 cargo test -p licensing-server --test api fuzz` searches longer.

use licensing_core::fuzz::{json_body, multipart_body, query_string};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::client::release;
use crate::helpers::TestServer;

const TOKEN: &str = "admin-token-for-the-fuzz-test-0123456789abcdef";

/// One documented operation: method, path template, and the kind of body it takes.
#[derive(Debug, Clone)]
struct Operation {
    method: String,
    path: String,
    body: Option<&'static str>,
}

/// What fills a path parameter.
#[derive(Debug, Clone)]
enum Id {
    /// One of the seeded records (whichever fits the parameter).
    Seeded,
    /// A well-formed id of nothing.
    Unknown,
    /// Any text, percent-encoded.
    Garbage(String),
}

#[derive(Debug, Clone, Copy)]
enum Credentials {
    Valid,
    None,
    Wrong,
}

#[test]
fn random_requests_to_every_operation_never_get_a_5xx() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (s, operations, seeded) = runtime.block_on(seed());
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let request = (
        prop::sample::select(operations),
        prop_oneof![
            6 => Just(Id::Seeded),
            2 => Just(Id::Unknown),
            1 => ".{0,12}".prop_map(Id::Garbage),
        ],
        prop_oneof![
            8 => Just(Credentials::Valid),
            1 => Just(Credentials::None),
            1 => Just(Credentials::Wrong),
        ],
        prop::option::weighted(0.3, query_string()),
        json_body(),
        multipart_body(),
    );
    let client = reqwest::Client::new();
    let statuses = std::cell::RefCell::new(std::collections::BTreeMap::<u16, usize>::new());
    runner
        .run(
            &request,
            |(operation, id, credentials, query, json, multipart)| {
                runtime.block_on(async {
                    let mut url = format!("{}{}", s.base, operation.path)
                        .replace("{teamId}", &s.team.team_id.to_string());
                    for (name, value) in &seeded {
                        let fill = match &id {
                            Id::Seeded => value.clone(),
                            Id::Unknown => uuid::Uuid::new_v4().to_string(),
                            Id::Garbage(text) => {
                                form_urlencoded::byte_serialize(text.as_bytes()).collect()
                            }
                        };
                        url = url.replace(&format!("{{{name}}}"), &fill);
                    }
                    if let Some(query) = &query {
                        url = format!("{url}?{query}");
                    }
                    let mut request = client.request(operation.method.parse().unwrap(), &url);
                    let token = if operation.path.starts_with("/api/v1/admin/") {
                        TOKEN
                    } else {
                        s.key()
                    };
                    request = match credentials {
                        Credentials::Valid => request.bearer_auth(token),
                        Credentials::None => request,
                        Credentials::Wrong => request.bearer_auth("lk_not-a-key"),
                    };
                    request = match operation.body {
                        Some("multipart") => request
                            .header("content-type", &multipart.0)
                            .body(multipart.1.clone()),
                        Some(_) => request
                            .header("content-type", "application/json")
                            .body(json.clone()),
                        None => request,
                    };
                    let response = request.send().await.unwrap();
                    let status = response.status().as_u16();
                    let bytes = response.bytes().await.unwrap();
                    *statuses.borrow_mut().entry(status).or_default() += 1;
                    prop_assert!(
                        status < 500,
                        "{} {url}: {status} {}",
                        operation.method,
                        String::from_utf8_lossy(&bytes)
                    );
                    if status >= 400 {
                        let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
                            TestCaseError::fail(format!(
                                "{} {url}: {status}, not JSON: {e}",
                                operation.method
                            ))
                        })?;
                        prop_assert_eq!(&body["result"]["valid"], &json!(false));
                        prop_assert!(
                            !body["result"]["details"].as_str().unwrap_or("").is_empty(),
                            "{} {url}: {body}",
                            operation.method
                        );
                    }
                    Ok(())
                })
            },
        )
        .unwrap();
    runtime.block_on(async move { drop(s) });
    // The cases reached the handlers: successes, validation refusals and lookups all happened.
    let statuses = statuses.into_inner();
    println!("statuses: {statuses:?}");
    for wanted in [200, 400, 401, 404] {
        assert!(
            statuses.contains_key(&wanted),
            "no {wanted} in {statuses:?}"
        );
    }
}

/// A server with one of everything, its documented operations, and the seeded ids by
/// parameter name.
async fn seed() -> (TestServer, Vec<Operation>, Vec<(String, String)>) {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let product = s.product("Fuzz").await;
    let product_id = product["id"].as_str().unwrap().to_owned();
    let license = s
        .license(&json!({"expirationType": "NEVER", "productIds": [product_id]}).to_string())
        .await;
    let customer = s
        .post(&s.dev("customers"), r#"{"email":"fuzz@example.com"}"#)
        .await
        .ok()
        .clone();
    let release = release(
        &s,
        json!({"version": "1.0.0", "productId": product_id, "status": "PUBLISHED"}),
        Some(("app.bin", vec![1u8; 1024])),
    )
    .await;
    let branch = s
        .post(
            &s.dev(&format!("products/{product_id}/branches")),
            r#"{"name":"beta"}"#,
        )
        .await
        .ok()
        .clone();
    let blacklist = s
        .post(
            &s.dev("blacklist"),
            r#"{"type":"IP","value":"203.0.113.9"}"#,
        )
        .await
        .ok()
        .clone();
    let key = s
        .post(&s.dev("api-keys"), r#"{"name":"spare"}"#)
        .await
        .ok()
        .clone();
    let license_id = license["id"].as_str().unwrap().to_owned();
    s.activity(&license_id, "fuzz-device-0001", 7).await;
    let hwids = s
        .get(&s.dev(&format!("licenses/id/{license_id}/hwid")))
        .await;
    let ips = s
        .get(&s.dev(&format!("licenses/id/{license_id}/ip-address")))
        .await;
    let webhook = s
        .post(
            &s.dev("webhooks"),
            r#"{"url":"https://hooks.example.com/fuzz","enabled":false}"#,
        )
        .await
        .ok()
        .clone();
    let delivery = s
        .post(
            &s.dev(&format!(
                "webhooks/{}/test",
                webhook["id"].as_str().unwrap()
            )),
            "",
        )
        .await
        .ok()
        .clone();
    let id = |v: &Value| v["id"].as_str().unwrap().to_owned();
    let kid = s.get(&s.dev("public-key")).await.ok()["signingKeys"][0]["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    let entitlement = s
        .post(&s.dev("entitlements"), r#"{"name":"Fuzz","code":"FUZZ"}"#)
        .await
        .ok()
        .clone();
    let session = s
        .client(
            "sessions/start",
            &serde_json::json!({"licenseKey": license["licenseKey"], "hardwareIdentifier": "fuzz-session-01"}),
            None,
        )
        .await
        .valid()["session"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let policy = s
        .post(&s.dev("policies"), r#"{"name":"Fuzz","hwidLimit":2}"#)
        .await
        .ok()
        .clone();
    s.put(
        &s.dev("integrations/stripe"),
        r#"{"webhookSecret":"whsec_fuzz_0123456789"}"#,
    )
    .await
    .ok();
    let rule = s
        .post(
            &s.dev("integrations/stripe/rules"),
            &serde_json::json!({"match": {"priceId": "price_fuzz"}, "policyId": policy["id"]})
                .to_string(),
        )
        .await
        .ok()
        .clone();
    let ping = r#"{"id":"evt_fuzz","type":"customer.created","data":{"object":{"id":"cus_fuzz"}}}"#;
    assert_eq!(s.stripe_event("whsec_fuzz_0123456789", ping).await, 200);
    let event = s.get(&s.dev("integrations/events")).await.ok()["events"][0].clone();
    // An update artifact, and what the feeds' paths take.
    let artifact = {
        let form = reqwest::multipart::Form::new()
            .text("platform", "linux")
            .text("arch", "x86_64")
            .part(
                "file",
                reqwest::multipart::Part::bytes(vec![2u8; 2048]).file_name("Fuzz-1.0.0-full.nupkg"),
            );
        let response = s
            .client
            .post(s.dev(&format!("releases/{}/artifacts", id(&release))))
            .bearer_auth(s.key())
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
        let body: Value = response.json().await.unwrap();
        body["data"].clone()
    };
    let token = s
        .client
        .post(format!(
            "{}/api/v1/client/teams/{}/updates/{product_id}/token",
            s.base,
            s.team_id()
        ))
        .json(&serde_json::json!({"licenseKey": license["licenseKey"]}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["data"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let seeded = vec![
        ("artifactId".to_owned(), id(&artifact)),
        ("filename".to_owned(), "Fuzz-1.0.0-full.nupkg".to_owned()),
        ("fileName".to_owned(), "Fuzz-1.0.0-full.nupkg".to_owned()),
        ("token".to_owned(), token),
        ("target".to_owned(), "linux".to_owned()),
        ("arch".to_owned(), "x86_64".to_owned()),
        ("currentVersion".to_owned(), "0.9.0".to_owned()),
        ("channel".to_owned(), "stable".to_owned()),
        ("channelFile".to_owned(), "latest-linux.yml".to_owned()),
        ("provider".to_owned(), "stripe".to_owned()),
        ("meter".to_owned(), "EXPORTS".to_owned()),
        ("ruleId".to_owned(), id(&rule)),
        ("eventId".to_owned(), id(&event)),
        ("policyId".to_owned(), id(&policy)),
        ("kid".to_owned(), kid),
        ("sessionId".to_owned(), session),
        ("entitlementId".to_owned(), id(&entitlement)),
        ("webhookId".to_owned(), id(&webhook)),
        ("deliveryId".to_owned(), id(&delivery)),
        ("licenseId".to_owned(), id(&license)),
        (
            "licenseKey".to_owned(),
            license["licenseKey"].as_str().unwrap().to_owned(),
        ),
        ("customerId".to_owned(), id(&customer)),
        ("productId".to_owned(), product_id.clone()),
        ("releaseId".to_owned(), id(&release)),
        ("branchId".to_owned(), id(&branch)),
        ("blacklistId".to_owned(), id(&blacklist)),
        ("apiKeyId".to_owned(), id(&key)),
        ("hwidId".to_owned(), id(&hwids.ok()["hwids"][0])),
        ("ipId".to_owned(), id(&ips.ok()["ipAddresses"][0])),
    ];
    let document = s.openapi().await;
    let mut operations = Vec::new();
    for (path, methods) in document["paths"].as_object().unwrap() {
        for (method, operation) in methods.as_object().unwrap() {
            let content = operation["requestBody"]["content"].as_object();
            let body = content.map(|c| {
                if c.contains_key("multipart/form-data") {
                    "multipart"
                } else {
                    "json"
                }
            });
            operations.push(Operation {
                method: method.to_uppercase(),
                path: path.clone(),
                body,
            });
        }
    }
    let unfilled: Vec<_> = operations
        .iter()
        .flat_map(|o| {
            o.path
                .split('{')
                .skip(1)
                .map(|p| p.split('}').next().unwrap())
        })
        .filter(|name| *name != "teamId" && !seeded.iter().any(|(n, _)| n == name))
        .collect();
    assert!(unfilled.is_empty(), "no seeded id for {unfilled:?}");
    (s, operations, seeded)
}
