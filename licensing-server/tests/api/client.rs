//! The client API: verify and heartbeat, every error code in the protocol's order, limits,
//! activation, blacklists, client IPs and countries, signatures.

use licensing_core::Timestamp;
use licensing_core::crypto::TeamPublicKeys;
use licensing_core::model::License;
use licensing_core::store::LicenseStore;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::helpers::{ClientAnswer, TestServer};

/// A device identifier of the valid length.
fn device(n: usize) -> String {
    format!("device-{n:010}")
}

/// A release upload's form: the `data` part and an optional file.
pub fn release_form(data: &Value, file: Option<(&str, Vec<u8>)>) -> Form {
    let form = Form::new().text("data", data.to_string());
    match file {
        Some((name, bytes)) => form.part("file", Part::bytes(bytes).file_name(name.to_owned())),
        None => form,
    }
}

/// Sends a release upload to `url` (create or update) with `key`; the raw answer.
pub async fn upload(
    s: &TestServer,
    method: reqwest::Method,
    url: &str,
    key: &str,
    form: Form,
) -> reqwest::Response {
    s.client
        .request(method, url)
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap()
}

/// Creates a release through the developer API (multipart), with an optional file.
pub async fn release(s: &TestServer, data: Value, file: Option<(&str, Vec<u8>)>) -> Value {
    let form = release_form(&data, file);
    let response = upload(s, reqwest::Method::POST, &s.dev("releases"), s.key(), form).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 201, "{body}");
    body["data"].clone()
}

async fn product(s: &TestServer, name: &str) -> String {
    s.post(&s.dev("products"), &json!({"name": name}).to_string())
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn customer(s: &TestServer, email: &str) -> String {
    s.post(&s.dev("customers"), &json!({"email": email}).to_string())
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn key_of(license: &Value) -> String {
    license["licenseKey"].as_str().unwrap().to_owned()
}

/// Sets a license's expiration date directly in the store (the API refuses past dates).
async fn expire(s: &TestServer, license: &Value) {
    let id = license["id"].as_str().unwrap().parse().unwrap();
    let mut l: License = s.store.get_license(s.team_id(), id).await.unwrap().unwrap();
    l.expiration_date = Some(Timestamp::from_millis(
        Timestamp::now().as_millis() - 86_400_000,
    ));
    s.store
        .update_license(&l, &licensing_core::store::Journal::NONE)
        .await
        .unwrap();
}

async fn hwid_count(s: &TestServer, license: &Value) -> u64 {
    let id = license["id"].as_str().unwrap();
    s.get(&s.dev(&format!("licenses/id/{id}/hwid?showForgotten=true")))
        .await
        .ok()["totalResults"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn verify_answers_every_member_signed_and_records_device_ip_and_country() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let p = s
        .post(
            &s.dev("products"),
            r#"{"name":"App","url":"https://example.com/app","metadata":[{"key":"tier","value":"pro","locked":true}]}"#,
        )
        .await
        .ok()
        .clone();
    let c = s
        .post(
            &s.dev("customers"),
            r#"{"email":"jane@example.com","fullName":"Jane Doe","username":"jane","metadata":[{"key":"vip","value":"yes"}]}"#,
        )
        .await
        .ok()
        .clone();
    let pid = p["id"].as_str().unwrap();
    let published = release(
        &s,
        json!({"version": "1.0.0", "productId": pid, "status": "PUBLISHED", "setAsLatest": true}),
        None,
    )
    .await;
    release(
        &s,
        json!({"version": "2.0.0-beta", "productId": pid, "status": "DRAFT"}),
        None,
    )
    .await;
    let expires = Timestamp::now().plus_days(30).to_string();
    let l = s
        .license(
            &json!({
                "expirationType": "DATE", "expirationDate": expires,
                "ipLimit": 5, "hwidLimit": 3,
                "customerIds": [c["id"]], "productIds": [pid],
                "metadata": [{"key": "seats", "value": "10", "locked": true}]
            })
            .to_string(),
        )
        .await;
    let challenge = "challenge-1234567890-abcdef";
    let body = json!({
        "licenseKey": key_of(&l), "hardwareIdentifier": device(1), "customerId": c["id"],
        "productId": pid, "challenge": challenge, "version": "1.0.0"
    });
    let a = s.client("verify", &body, Some("193.166.3.2")).await;
    let data = a.valid();
    assert_eq!(
        data,
        &json!({
            "license": {
                "ipLimit": 5, "hwidLimit": 3, "expirationType": "DATE",
                "expirationStart": l["expirationStart"], "expirationDate": l["expirationDate"],
                "expirationDays": null, "metadata": [{"key": "seats", "value": "10"}],
                "entitlements": [], "meters": []
            },
            "customers": [{
                "email": "jane@example.com", "fullName": "Jane Doe", "username": "jane",
                "metadata": [{"key": "vip", "value": "yes"}]
            }],
            "products": [{
                "name": "App", "url": "https://example.com/app",
                "latestRelease": {"version": "1.0.0", "createdAt": published["createdAt"]},
                "metadata": [{"key": "tier", "value": "pro"}]
            }]
        })
    );
    let result = &a.body["result"];
    assert_eq!(result["details"], "License is valid");
    let timestamp = result["timestamp"].as_str().unwrap();
    assert!(Timestamp::parse(timestamp).is_ok() && timestamp.ends_with('Z'));
    let response = result["challengeResponse"].as_str().unwrap();
    assert_eq!(response.len(), 512);
    keys.rsa.verify_challenge(challenge, response).unwrap();
    assert!(
        keys.rsa
            .verify_challenge("another-challenge", response)
            .is_err()
    );
    a.signed_by(&keys);
    // The signature covers the exact bytes: one changed byte of either side fails it.
    let signature = a.header("x-signature").unwrap();
    let mut changed = a.bytes.clone();
    let at = changed.len() / 2;
    changed[at] ^= 1;
    assert!(
        keys.signing
            .verify_response(&a.request, &changed, signature)
            .is_err()
    );
    assert!(
        keys.signing
            .verify_response(b"{}", &a.bytes, signature)
            .is_err()
    );

    // Recorded: the device, the address with its country, lastActiveAt.
    let id = l["id"].as_str().unwrap();
    let hwids = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(hwids.ok()["hwids"][0]["identifier"], device(1));
    let ips = s.get(&s.dev(&format!("licenses/id/{id}/ip-address"))).await;
    let ip = &ips.ok()["ipAddresses"][0];
    assert_eq!(
        (&ip["address"], &ip["country"], &ip["alpha2"], &ip["alpha3"]),
        (
            &json!("193.166.3.2"),
            &json!("Finland"),
            &json!("FI"),
            &json!("FIN")
        )
    );
    let after = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert!(after.ok()["lastActiveAt"].is_string());

    // The latest release follows the requested branch: none in a branch the product lacks.
    let in_branch = s
        .client(
            "verify",
            &json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1), "customerId": c["id"]}),
            Some("193.166.3.2"),
        )
        .await;
    assert_eq!(
        in_branch.valid()["products"][0]["latestRelease"]["version"],
        "1.0.0"
    );
    assert!(in_branch.body["result"].get("challengeResponse").is_none());
}

#[tokio::test]
async fn heartbeat_answers_the_license_limits_and_needs_the_device() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","ipLimit":4,"hwidLimit":2}"#)
        .await;
    let a = s
        .client(
            "heartbeat",
            &json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1)}),
            None,
        )
        .await;
    assert_eq!(
        a.valid(),
        &json!({"license": {"ipLimit": 4, "hwidLimit": 2, "expirationType": "NEVER", "entitlements": [], "meters": []}})
    );
    assert_eq!(a.body["result"]["details"], "License heartbeat successful");
    assert!(a.body["result"].get("challengeResponse").is_none());
    a.signed_by(&keys);

    // With a challenge, a heartbeat answers it too; `deviceIdentifier` is an alias.
    let challenge = "heartbeat-challenge-42";
    let a = s
        .client(
            "heartbeat",
            &json!({"licenseKey": key_of(&l), "deviceIdentifier": device(1), "challenge": challenge}),
            None,
        )
        .await;
    a.valid();
    keys.rsa
        .verify_challenge(
            challenge,
            a.body["result"]["challengeResponse"].as_str().unwrap(),
        )
        .unwrap();

    // The device is required; the 400 names it and comes before the team lookup (unsigned).
    let a = s
        .client("heartbeat", &json!({"licenseKey": key_of(&l)}), None)
        .await;
    a.err(400, "BAD_REQUEST").unsigned();
    assert_eq!(a.body["data"]["errors"][0]["field"], "hardwareIdentifier");
}

#[tokio::test]
async fn rsa_runs_once_per_verify_with_a_challenge_and_never_without() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let signs = "licensing_rsa_private_key_operations_total{operation=\"sign_challenge\"}";
    let any = "licensing_rsa_private_key_operations_total";
    let base = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1)});
    let mut with = base.clone();
    with["challenge"] = json!("challenge-0123456789");

    let before = s.metric(any).await;
    s.client("verify", &base, None).await.valid();
    s.client("heartbeat", &base, None).await.valid();
    assert_eq!(s.metric(any).await, before, "no challenge, no RSA");
    s.client("verify", &with, None).await.valid();
    assert_eq!(s.metric(signs).await, before + 1.0);
    assert_eq!(
        s.metric(any).await,
        before + 1.0,
        "exactly one RSA operation"
    );
    s.client("heartbeat", &with, None).await.valid();
    assert_eq!(s.metric(any).await, before + 2.0);
    // Refusals sign nothing either.
    s.client(
        "verify",
        &json!({"licenseKey": "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA", "challenge": "challenge-0123456789"}),
        None,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    assert_eq!(s.metric(any).await, before + 2.0);
}

/// The fixture of the order-of-checks test.
struct Checks {
    s: TestServer,
    keys: TeamPublicKeys,
    p: String,
    q: String,
    c: String,
    d: String,
    limited: Value,
    suspended: Value,
    expired: Value,
}

async fn checks() -> Checks {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let p = product(&s, "App").await;
    let q = product(&s, "Other").await;
    let c = customer(&s, "c@example.com").await;
    let d = customer(&s, "d@example.com").await;
    let members = json!({"customerIds": [c], "productIds": [p]});
    let with = |extra: Value| {
        let mut body = members.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body.to_string()
    };
    let limited = s
        .license(&with(
            json!({"expirationType": "NEVER", "ipLimit": 1, "hwidLimit": 1}),
        ))
        .await;
    let suspended = s
        .license(&with(
            json!({"expirationType": "NEVER", "suspended": true, "hwidLimit": 1}),
        ))
        .await;
    let expired = s
        .license(&with(
            json!({"expirationType": "DURATION", "expirationDays": 5, "hwidLimit": 1}),
        ))
        .await;
    expire(&s, &expired).await;
    let other = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let beta = s
        .post(
            &s.dev(&format!("products/{p}/branches")),
            r#"{"name":"beta"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    for (version, status, extra) in [
        ("1.0.0", "PUBLISHED", json!({"setAsLatest": true})),
        ("0.9.0", "ARCHIVED", json!({})),
        ("1.1.0", "DRAFT", json!({})),
        ("0.8.0", "DEPRECATED", json!({})),
        ("1.2.0", "PUBLISHED", json!({"licenseIds": [other["id"]]})),
        ("3.0.0", "PUBLISHED", json!({"branchId": beta})),
    ] {
        let mut data = json!({"version": version, "productId": p, "status": status});
        for (k, v) in extra.as_object().unwrap() {
            data[k] = v.clone();
        }
        release(&s, data, None).await;
    }
    for (kind, value) in [
        ("IP", "198.51.100.7"),
        ("IP", "203.0.113.0/24"),
        ("IP", "2001:db8:bad::/48"),
        ("COUNTRY", "SWE"),
        ("HARDWARE_IDENTIFIER", "blacklisted-device-1"),
    ] {
        s.post(
            &s.dev("blacklist"),
            &json!({"type": kind, "value": value}).to_string(),
        )
        .await
        .ok();
    }
    Checks {
        s,
        keys,
        p,
        q,
        c,
        d,
        limited,
        suspended,
        expired,
    }
}

impl Checks {
    /// A verify (or heartbeat) body for `license` with the right customer and product, changed
    /// by `changes` (a `null` member removes it).
    fn body(&self, license: &Value, changes: Value) -> Value {
        let mut body = json!({
            "licenseKey": key_of(license), "hardwareIdentifier": device(1),
            "customerId": self.c, "productId": self.p
        });
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        body
    }

    /// Asserts the answer of `endpoint` for `body` from `ip`: status, code, signed.
    async fn expect(
        &self,
        endpoint: &str,
        body: Value,
        ip: &str,
        status: u16,
        code: &str,
    ) -> ClientAnswer {
        let a = self.s.client(endpoint, &body, Some(ip)).await;
        assert_eq!(
            (a.status, a.code()),
            (status, code),
            "{endpoint} {body} from {ip}: {}",
            a.body
        );
        if code == "VALID" {
            a.valid();
        } else {
            a.err(status, code);
        }
        a.signed_by(&self.keys);
        a
    }
}

const OK_IP: &str = "193.166.3.2";
const SWEDISH_IP: &str = "130.237.1.1";

#[tokio::test]
async fn every_error_code_answers_in_the_documented_order() {
    let k = checks().await;
    let s = &k.s;
    let l = &k.limited;

    // 1. Team id, body, team: 400s and the 404 come before the team is known (unsigned).
    let bad_team = format!(
        "{}/api/v1/client/teams/not-a-uuid/verification/verify",
        s.base
    );
    let a = s.client_raw(&bad_team, "{", None).await;
    a.err(400, "BAD_REQUEST").unsigned();
    assert_eq!(a.body["data"]["errors"][0]["field"], "teamId");
    let a = s
        .client("verify", &json!({"licenseKey": "nope"}), None)
        .await;
    a.err(400, "BAD_REQUEST").unsigned();
    let unknown = format!(
        "{}/api/v1/client/teams/{}/verification/verify",
        s.base,
        uuid::Uuid::new_v4()
    );
    s.client_raw(&unknown, r#"{"licenseKey":"x"}"#, None)
        .await
        .err(400, "BAD_REQUEST");
    s.client_raw(&unknown, &k.body(l, json!({})).to_string(), None)
        .await
        .err(404, "TEAM_NOT_FOUND")
        .unsigned();

    // 2. License (before the blacklists).
    let missing =
        json!({"licenseKey": "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", "hardwareIdentifier": device(1)});
    k.expect("verify", missing.clone(), OK_IP, 404, "LICENSE_NOT_FOUND")
        .await;
    k.expect(
        "verify",
        missing.clone(),
        "198.51.100.7",
        404,
        "LICENSE_NOT_FOUND",
    )
    .await;
    k.expect("heartbeat", missing, OK_IP, 404, "LICENSE_NOT_FOUND")
        .await;

    // 3. Blacklists: IP (exact, CIDR, IPv6), then country, then hardware identifier.
    let bad_device = json!({"hardwareIdentifier": "blacklisted-device-1"});
    for ip in ["198.51.100.7", "203.0.113.99", "2001:db8:bad:1::5"] {
        k.expect("verify", k.body(l, json!({})), ip, 403, "IP_BLACKLISTED")
            .await;
    }
    k.expect(
        "verify",
        k.body(l, bad_device.clone()),
        "198.51.100.7",
        403,
        "IP_BLACKLISTED",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, json!({})),
        SWEDISH_IP,
        403,
        "COUNTRY_BLACKLISTED",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, bad_device.clone()),
        SWEDISH_IP,
        403,
        "COUNTRY_BLACKLISTED",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, bad_device.clone()),
        OK_IP,
        403,
        "HARDWARE_IDENTIFIER_BLACKLISTED",
    )
    .await;
    // ...and before the customer check.
    let mut both = bad_device.clone();
    both["customerId"] = json!(k.d);
    k.expect(
        "heartbeat",
        k.body(l, both),
        OK_IP,
        403,
        "HARDWARE_IDENTIFIER_BLACKLISTED",
    )
    .await;

    // 4. Customer, then product.
    k.expect(
        "verify",
        k.body(l, json!({"customerId": k.d})),
        OK_IP,
        404,
        "CUSTOMER_NOT_FOUND",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, json!({"customerId": k.d, "productId": k.q})),
        OK_IP,
        404,
        "CUSTOMER_NOT_FOUND",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, json!({"productId": k.q})),
        OK_IP,
        404,
        "PRODUCT_NOT_FOUND",
    )
    .await;
    // Product before release, suspension and expiry.
    k.expect(
        "verify",
        k.body(&k.suspended, json!({"productId": k.q, "version": "0.9.0"})),
        OK_IP,
        404,
        "PRODUCT_NOT_FOUND",
    )
    .await;

    // 5. Release: branch, version, status, allowed licenses; deprecated passes.
    for (changes, status, code) in [
        (json!({"branch": "nope"}), 404, "RELEASE_NOT_FOUND"),
        (json!({"version": "9.9.9"}), 404, "RELEASE_NOT_FOUND"),
        (
            json!({"version": "1.0.0", "branch": "beta"}),
            404,
            "RELEASE_NOT_FOUND",
        ),
        (json!({"version": "0.9.0"}), 403, "RELEASE_ARCHIVED"),
        (json!({"version": "1.1.0"}), 403, "RELEASE_DRAFT"),
        (json!({"version": "1.2.0"}), 403, "NO_ACCESS_TO_RELEASE"),
    ] {
        k.expect("verify", k.body(l, changes.clone()), OK_IP, status, code)
            .await;
        k.expect("heartbeat", k.body(l, changes), OK_IP, status, code)
            .await;
    }
    // Release before suspension.
    k.expect(
        "verify",
        k.body(&k.suspended, json!({"version": "0.9.0"})),
        OK_IP,
        403,
        "RELEASE_ARCHIVED",
    )
    .await;

    // 6. Suspended before expired; expired before the limits.
    k.expect(
        "verify",
        k.body(&k.suspended, json!({})),
        OK_IP,
        403,
        "LICENSE_SUSPENDED",
    )
    .await;
    k.expect(
        "heartbeat",
        k.body(&k.suspended, json!({})),
        OK_IP,
        403,
        "LICENSE_SUSPENDED",
    )
    .await;
    k.expect(
        "verify",
        k.body(&k.expired, json!({})),
        OK_IP,
        403,
        "LICENSE_EXPIRED",
    )
    .await;
    s.activity(k.expired["id"].as_str().unwrap(), &device(7), 7)
        .await;
    k.expect(
        "verify",
        k.body(&k.expired, json!({"hardwareIdentifier": device(8)})),
        OK_IP,
        403,
        "LICENSE_EXPIRED",
    )
    .await;

    // 7. Deprecated passes and records the first device and address; then the IP limit comes
    // before the device limit.
    k.expect(
        "verify",
        k.body(l, json!({"version": "0.8.0"})),
        OK_IP,
        200,
        "VALID",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, json!({"version": "3.0.0", "branch": "beta"})),
        OK_IP,
        200,
        "VALID",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, json!({"hardwareIdentifier": device(2)})),
        OK_IP,
        403,
        "HWID_LIMIT_REACHED",
    )
    .await;
    k.expect(
        "heartbeat",
        k.body(l, json!({})),
        "193.166.3.3",
        403,
        "IP_LIMIT_REACHED",
    )
    .await;
    k.expect(
        "verify",
        k.body(l, json!({"hardwareIdentifier": device(2)})),
        "193.166.3.3",
        403,
        "IP_LIMIT_REACHED",
    )
    .await;
    // An absent identifier never bypasses a device limit: on this full license it is the
    // limit's refusal (with room, the 400 that asks for it:
    // `without_a_hardware_identifier_a_full_license_answers_its_limit`).
    k.expect(
        "verify",
        k.body(l, json!({"hardwareIdentifier": null})),
        OK_IP,
        403,
        "HWID_LIMIT_REACHED",
    )
    .await;
    // Refusals recorded nothing.
    assert_eq!(hwid_count(s, l).await, 1);

    // Strict settings: the customer, the product, the version become required.
    for (setting, changes, code) in [
        (
            "strictCustomers",
            json!({"customerId": null}),
            "CUSTOMER_NOT_FOUND",
        ),
        (
            "strictProducts",
            json!({"productId": null}),
            "PRODUCT_NOT_FOUND",
        ),
        ("strictReleases", json!({}), "RELEASE_NOT_FOUND"),
    ] {
        k.expect("verify", k.body(l, changes.clone()), OK_IP, 200, "VALID")
            .await;
        let setting_to = |on: bool| {
            let mut body = json!({});
            body[setting] = json!(on);
            body.to_string()
        };
        s.put(&s.dev("settings"), &setting_to(true)).await.ok();
        k.expect("verify", k.body(l, changes.clone()), OK_IP, 404, code)
            .await;
        s.put(&s.dev("settings"), &setting_to(false)).await.ok();
    }

    // Every blacklist entry counted its hits.
    let list = s.get(&s.dev("blacklist")).await;
    let hits: Vec<(String, u64)> = list.ok()["blacklist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["value"].as_str().unwrap().to_owned(),
                e["hits"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hits,
        [
            ("198.51.100.7".to_owned(), 2),
            ("203.0.113.0/24".to_owned(), 1),
            ("2001:db8:bad::/48".to_owned(), 1),
            ("SWE".to_owned(), 2),
            ("blacklisted-device-1".to_owned(), 2),
        ]
    );
}

#[tokio::test]
async fn an_activation_license_starts_its_clock_on_the_first_success_only() {
    let s = TestServer::start().await;
    let p = product(&s, "App").await;
    let l = s
        .license(
            &json!({"expirationType": "DURATION", "expirationStart": "ACTIVATION",
                    "expirationDays": 10, "productIds": [p]})
            .to_string(),
        )
        .await;
    assert!(l["expirationDate"].is_null());
    let id = l["id"].as_str().unwrap();
    // A refusal does not start it.
    s.client(
        "verify",
        &json!({"licenseKey": key_of(&l), "productId": uuid::Uuid::new_v4()}),
        None,
    )
    .await
    .err(404, "PRODUCT_NOT_FOUND");
    assert!(s.get(&s.dev(&format!("licenses/id/{id}"))).await.ok()["expirationDate"].is_null());

    let before = Timestamp::now();
    let a = s
        .client("verify", &json!({"licenseKey": key_of(&l)}), None)
        .await;
    let after = Timestamp::now();
    let date = a.valid()["license"]["expirationDate"]
        .as_str()
        .unwrap()
        .to_owned();
    let date = Timestamp::parse(&date).unwrap();
    assert!(date >= before.plus_days(10) && date <= after.plus_days(10));
    let stored = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(
        stored.ok()["expirationDate"].as_str().unwrap(),
        date.to_string()
    );
    // Later successes keep it.
    let again = s
        .client("verify", &json!({"licenseKey": key_of(&l)}), None)
        .await;
    assert_eq!(
        again.valid()["license"]["expirationDate"].as_str().unwrap(),
        date.to_string()
    );
}

/// Sends all `requests` (body, client IP) to verify at once; returns the result codes.
async fn verify_all_at_once(s: &TestServer, requests: Vec<(Value, Option<String>)>) -> Vec<String> {
    let url = s.client_url("verify");
    let tasks = requests.into_iter().map(|(body, ip)| {
        let (client, url) = (s.client.clone(), url.clone());
        tokio::spawn(async move {
            let mut request = client
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(ip) = ip {
                request = request.header("x-forwarded-for", ip);
            }
            let json: Value = request.send().await.unwrap().json().await.unwrap();
            json["result"]["code"].as_str().unwrap().to_owned()
        })
    });
    futures_util::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect()
}

#[tokio::test]
async fn concurrent_new_devices_and_addresses_are_admitted_exactly_up_to_the_limits() {
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":50}"#)
        .await;
    let key = key_of(&l);
    let devices = (0..60)
        .map(|n| {
            (
                json!({"licenseKey": key, "hardwareIdentifier": device(n)}),
                None,
            )
        })
        .collect();
    let codes = verify_all_at_once(&s, devices).await;
    let valid = codes.iter().filter(|c| *c == "VALID").count();
    let refused = codes.iter().filter(|c| *c == "HWID_LIMIT_REACHED").count();
    assert_eq!((valid, refused), (50, 10), "{codes:?}");
    assert_eq!(hwid_count(&s, &l).await, 50);

    // The same for addresses: 30 clients at once against an IP limit of 20.
    let l = s
        .license(r#"{"expirationType":"NEVER","ipLimit":20}"#)
        .await;
    let key = key_of(&l);
    let addresses = (0..30)
        .map(|n| (json!({"licenseKey": key}), Some(format!("193.166.4.{n}"))))
        .collect();
    let codes = verify_all_at_once(&s, addresses).await;
    let valid = codes.iter().filter(|c| *c == "VALID").count();
    let refused = codes.iter().filter(|c| *c == "IP_LIMIT_REACHED").count();
    assert_eq!((valid, refused), (20, 10), "{codes:?}");
    let id = l["id"].as_str().unwrap();
    let ips = s.get(&s.dev(&format!("licenses/id/{id}/ip-address"))).await;
    assert_eq!(ips.ok()["totalResults"], 20);
}

#[tokio::test]
async fn forgotten_and_timed_out_records_do_not_count() {
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let id = l["id"].as_str().unwrap();
    let verify = |n: usize| {
        let body = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(n)});
        let s = &s;
        async move { s.client("verify", &body, None).await }
    };
    verify(1).await.valid();
    verify(2).await.err(403, "HWID_LIMIT_REACHED");
    // Forgetting device 1 frees its place.
    let hwids = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    let first = hwids.ok()["hwids"][0]["id"].as_str().unwrap().to_owned();
    s.patch(
        &s.dev(&format!("licenses/id/{id}/hwid/{first}")),
        r#"{"forgotten":true}"#,
    )
    .await
    .ok();
    verify(2).await.valid();
    // Device 1 comes back: device 2 counts now.
    verify(1).await.err(403, "HWID_LIMIT_REACHED");

    // With a timeout, a device not seen within it no longer counts.
    let l2 = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let id2 = l2["id"].as_str().unwrap();
    s.activity_at(
        id2,
        &device(5),
        5,
        Timestamp::from_millis(Timestamp::now().as_millis() - 120 * 60_000),
    )
    .await;
    let body = json!({"licenseKey": key_of(&l2), "hardwareIdentifier": device(6)});
    s.client("verify", &body, None)
        .await
        .err(403, "HWID_LIMIT_REACHED");
    s.put(&s.dev("settings"), r#"{"hwidTimeout":60}"#)
        .await
        .ok();
    s.client("verify", &body, None).await.valid();
    // A returning device is un-forgotten and refreshed, not duplicated.
    assert_eq!(hwid_count(&s, &l).await, 2);
}

#[tokio::test]
async fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
    let s = TestServer::start_with(|c| c.trusted_proxies = Default::default()).await;
    s.post(
        &s.dev("blacklist"),
        r#"{"type":"IP","value":"198.51.100.7"}"#,
    )
    .await
    .ok();
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    s.client(
        "verify",
        &json!({"licenseKey": key_of(&l)}),
        Some("198.51.100.7"),
    )
    .await
    .valid();
    let id = l["id"].as_str().unwrap();
    let ips = s.get(&s.dev(&format!("licenses/id/{id}/ip-address"))).await;
    let ip = &ips.ok()["ipAddresses"][0];
    assert_eq!(ip["address"], "127.0.0.1");
    assert_eq!(ip["country"], Value::Null, "loopback has no country");

    // Through a trusted proxy, the entries are read from the right: the first untrusted one is
    // the client. The leftmost entry is the client's own word and cannot hide it.
    let t = TestServer::start_with(|c| {
        c.trusted_proxies = "127.0.0.1/32,10.0.0.0/8".parse().unwrap();
    })
    .await;
    t.post(
        &t.dev("blacklist"),
        r#"{"type":"IP","value":"198.51.100.7"}"#,
    )
    .await
    .ok();
    let l = t.license(r#"{"expirationType":"NEVER"}"#).await;
    let body = json!({"licenseKey": key_of(&l)});
    for (forwarded, code) in [
        // BUG-1: the leftmost entry was believed, so this passed as 1.2.3.4.
        ("1.2.3.4, 198.51.100.7", "IP_BLACKLISTED"),
        // Through a chain of trusted proxies.
        (
            "1.2.3.4, 198.51.100.7, 10.0.0.9, 10.1.2.3",
            "IP_BLACKLISTED",
        ),
        // With a port, and as IPv4-mapped IPv6 in brackets.
        ("198.51.100.7:4711", "IP_BLACKLISTED"),
        ("[::ffff:198.51.100.7]:80", "IP_BLACKLISTED"),
        // The blacklisted address to the left of the real client is only words.
        ("198.51.100.7, 203.0.113.9", "VALID"),
        // Garbage at the right stops the walk at the peer (127.0.0.1), whatever is left of it.
        ("198.51.100.7, not-an-address", "VALID"),
    ] {
        let answer = t.client("verify", &body, Some(forwarded)).await;
        assert_eq!(answer.code(), code, "X-Forwarded-For: {forwarded}");
    }
    let id = l["id"].as_str().unwrap();
    let ips = t.get(&t.dev(&format!("licenses/id/{id}/ip-address"))).await;
    let mut addresses: Vec<&str> = ips.ok()["ipAddresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap())
        .collect();
    addresses.sort_unstable();
    assert_eq!(addresses, ["127.0.0.1", "203.0.113.9"]);
}

/// BUG-1: rotating the leftmost `X-Forwarded-For` entry made every request a new client, so the
/// per-address rate limit never filled (60 requests, 60 x 200).
#[tokio::test]
async fn rotating_the_leftmost_forwarded_entry_does_not_escape_the_rate_limit() {
    let s = TestServer::start_with(|c| c.rate_limit_per_minute = 30).await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let body = json!({"licenseKey": key_of(&l)});
    let mut valid = 0;
    let mut limited = 0;
    for i in 0..60 {
        let forwarded = format!(
            "10.{}.{}.{}, 198.51.100.77",
            i / 65536,
            (i / 256) % 256,
            i % 256
        );
        let answer = s.client("verify", &body, Some(&forwarded)).await;
        match answer.code() {
            "VALID" => valid += 1,
            "RATE_LIMIT" => limited += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((valid, limited), (30, 30));
}

#[tokio::test]
async fn countries_come_from_a_configured_mmdb_database() {
    let db = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/geo-whois-asn-country-ipv4.mmdb");
    let s = TestServer::start_with(|c| c.geoip_db = Some(db)).await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let body = json!({"licenseKey": key_of(&l)});
    s.client("verify", &body, Some("8.8.8.8")).await.valid();
    let id = l["id"].as_str().unwrap();
    let ips = s.get(&s.dev(&format!("licenses/id/{id}/ip-address"))).await;
    let ip = &ips.ok()["ipAddresses"][0];
    assert_eq!(
        (&ip["country"], &ip["alpha2"], &ip["alpha3"]),
        (&json!("United States"), &json!("US"), &json!("USA"))
    );
    // A country blacklist (alpha-2 here) matches through the database.
    s.post(&s.dev("blacklist"), r#"{"type":"COUNTRY","value":"FI"}"#)
        .await
        .ok();
    s.client("verify", &body, Some("193.166.3.2"))
        .await
        .err(403, "COUNTRY_BLACKLISTED");
    s.client("verify", &body, Some("8.8.4.4")).await.valid();
}

#[tokio::test]
async fn statistics_count_client_requests_by_type_outcome_and_country() {
    let mut s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let body = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1)});
    for _ in 0..3 {
        s.client("verify", &body, Some(OK_IP)).await.valid();
    }
    s.client("heartbeat", &body, Some("8.8.8.8")).await.valid();
    s.client(
        "verify",
        &json!({"licenseKey": "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ"}),
        Some(OK_IP),
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    // Requests before the team is known are not counted.
    s.client("verify", &json!({}), Some(OK_IP))
        .await
        .err(400, "BAD_REQUEST");
    // The counts survive a restart (they are written at shutdown).
    s = s.restart().await;
    let stats = s.get(&s.dev("statistics")).await;
    let stats = stats.ok();
    assert_eq!(
        stats["requests"],
        json!({"total": 5, "successful": 4, "failed": 1, "successRate": 80.0,
               "byType": {"VERIFY": 4, "HEARTBEAT": 1, "DOWNLOAD": 0}})
    );
    assert_eq!(stats["overview"]["totalRequests"], 5);
    assert_eq!(stats["overview"]["activeLicenses"], 1);
    assert_eq!(
        stats["recentActivity"],
        json!({"last24h": 5, "last7d": 5, "last30d": 5})
    );
    assert_eq!(
        stats["topCountries"],
        json!([
            {"country": "Finland", "alpha3": "FIN", "alpha2": "FI", "requests": 4},
            {"country": "United States", "alpha3": "USA", "alpha2": "US", "requests": 1}
        ])
    );
    // Client outcomes are in the metrics too.
    assert_eq!(
        s.metric("licensing_client_outcomes_total{endpoint=\"verify\",code=\"VALID\"}")
            .await,
        0.0,
        "metrics are per process"
    );
    s.client("verify", &body, None).await.valid();
    assert_eq!(
        s.metric("licensing_client_outcomes_total{endpoint=\"verify\",code=\"VALID\"}")
            .await,
        1.0
    );
}

/// Existing clients send no hardware identifier: 400 on a license with an `hwidLimit` by
/// default; with `requireHardwareIdentifier: false` such a verify passes the hardware limit,
/// records no device, and says so. A heartbeat still needs one.
#[tokio::test]
async fn a_team_may_accept_verifies_without_a_hardware_identifier() {
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let bare = json!({"licenseKey": key_of(&l)});
    let answer = s.client("verify", &bare, None).await;
    answer.err(400, "BAD_REQUEST");
    assert_eq!(
        answer.body["data"]["errors"][0]["field"],
        "hardwareIdentifier"
    );
    s.put(&s.dev("settings"), r#"{"requireHardwareIdentifier":false}"#)
        .await
        .ok();
    let passed = s.client("verify", &bare, None).await;
    passed.valid();
    assert_eq!(passed.body["data"]["hardwareIdentifierChecked"], false);
    let id = l["id"].as_str().unwrap();
    let hwids = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(hwids.ok()["totalResults"], 0, "no device recorded");
    // With an identifier the limit holds as ever, and the answer says nothing more.
    let first = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1)});
    let named = s.client("verify", &first, None).await;
    named.valid();
    assert!(
        named.body["data"]
            .get("hardwareIdentifierChecked")
            .is_none()
    );
    let second = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(2)});
    s.client("verify", &second, None)
        .await
        .err(403, "HWID_LIMIT_REACHED");
    s.client("heartbeat", &bare, None)
        .await
        .err(400, "BAD_REQUEST");
}

/// A verify without a hardware identifier of a license whose limits are full is refused with
/// the limit's 403, as a client written for the hosted service expects (one of them turns
/// itself off on a 400); with room it is still the 400 that asks for the identifier.
#[tokio::test]
async fn without_a_hardware_identifier_a_full_license_answers_its_limit() {
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1,"ipLimit":1}"#)
        .await;
    let bare = json!({"licenseKey": key_of(&l)});
    s.client("verify", &bare, Some("203.0.113.1"))
        .await
        .err(400, "BAD_REQUEST");
    let first = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1)});
    s.client("verify", &first, Some("203.0.113.1"))
        .await
        .valid();
    s.client("verify", &bare, Some("203.0.113.1"))
        .await
        .err(403, "HWID_LIMIT_REACHED");
    s.client("verify", &bare, Some("203.0.113.2"))
        .await
        .err(403, "IP_LIMIT_REACHED");
}

/// Clients that send a version but no branch got 404 when the product's releases are all on
/// branches. The version is now looked up among releases without a branch first, then among
/// every branch; the classloader's latest likewise.
#[tokio::test]
async fn a_version_without_a_branch_is_found_on_a_branch() {
    let s = TestServer::start().await;
    let p = s.post(&s.dev("products"), r#"{"name":"App"}"#).await;
    let pid = p.ok()["id"].as_str().unwrap().to_owned();
    s.post(
        &s.dev(&format!("products/{pid}/branches")),
        r#"{"name":"stable"}"#,
    )
    .await
    .ok();
    let b = s.get(&s.dev(&format!("products/{pid}/branches"))).await;
    let branch = b.ok()["branches"][0]["id"].as_str().unwrap().to_owned();
    release(
        &s,
        json!({"version": "1.4.0", "productId": pid, "branchId": branch, "status": "PUBLISHED", "setAsLatest": true}),
        Some(("app.jar", crate::releases::jar("com.example.Main"))),
    )
    .await;
    let l = s
        .license(&json!({"expirationType": "NEVER", "productIds": [pid]}).to_string())
        .await;
    let body = json!({"licenseKey": key_of(&l), "productId": pid, "version": "1.4.0"});
    s.client("verify", &body, None).await.valid();
    let unknown = json!({"licenseKey": key_of(&l), "productId": pid, "version": "9.9.9"});
    s.client("verify", &unknown, None)
        .await
        .err(404, "RELEASE_NOT_FOUND");
    // The classloader without a branch serves the branch's latest release.
    let keys = s.public_keys().await;
    let (_, text) = crate::classloader::session(&keys);
    let download = s
        .classloader(
            &crate::classloader::query(&key_of(&l), &pid, &text, ""),
            None,
        )
        .await;
    assert_eq!(download.status, 200, "{}", download.body);
    assert_eq!(download.header("x-version"), Some("1.4.0"));
}

#[tokio::test]
async fn devices_keep_the_names_and_platforms_their_clients_send() {
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":3}"#)
        .await;
    let id = l["id"].as_str().unwrap();
    let hwids = || async {
        let listed = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
        let mut by_identifier = std::collections::BTreeMap::new();
        for h in listed.ok()["hwids"].as_array().unwrap() {
            by_identifier.insert(
                h["identifier"].as_str().unwrap().to_owned(),
                (h["name"].clone(), h["platform"].clone()),
            );
        }
        by_identifier
    };
    // A new device is recorded with its label, as sent (markup is text, escaped where shown).
    let named = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1),
        "deviceName": "Ana's <b>laptop</b>", "platform": "windows 11"});
    s.client("verify", &named, None).await.valid();
    assert_eq!(
        hwids().await[&device(1)],
        (json!("Ana's <b>laptop</b>"), json!("windows 11"))
    );
    // A request without a label keeps it; one with another name replaces the name alone
    // (`hostname` is an alias), at once.
    let plain = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1)});
    s.client("heartbeat", &plain, None).await.valid();
    s.client("verify", &plain, None).await.valid();
    assert_eq!(hwids().await[&device(1)].0, json!("Ana's <b>laptop</b>"));
    let renamed =
        json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(1), "hostname": "ANA-PC"});
    s.client("heartbeat", &renamed, None).await.valid();
    assert_eq!(
        hwids().await[&device(1)],
        (json!("ANA-PC"), json!("windows 11"))
    );
    s.client("heartbeat", &renamed, None).await.valid();
    // A platform alone labels a second device; a third sends nothing.
    let second = json!({"licenseKey": key_of(&l), "deviceIdentifier": device(2), "platform": "macos aarch64"});
    s.client("verify", &second, None).await.valid();
    let third = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(3)});
    s.client("verify", &third, None).await.valid();
    let all = hwids().await;
    assert_eq!(all[&device(2)], (json!(null), json!("macos aarch64")));
    assert_eq!(all[&device(3)], (json!(null), json!(null)));

    // Bad labels are refused before anything is recorded, each naming its member.
    let long = "n".repeat(101);
    let cases = [
        (
            json!({"deviceName": ""}),
            "deviceName",
            "must be 1 to 100 characters long (got 0)",
        ),
        (
            json!({"deviceName": long}),
            "deviceName",
            "must be 1 to 100 characters long (got more than 100)",
        ),
        (
            json!({"deviceName": "line\nbreak"}),
            "deviceName",
            "must not contain control characters",
        ),
        (
            json!({"platform": "p".repeat(65)}),
            "platform",
            "must be 1 to 64 characters long (got more than 64)",
        ),
        (
            json!({"deviceName": "A", "hostname": "B"}),
            "hostname",
            "differs from deviceName, of which it is an alias: send one of them",
        ),
    ];
    for (extra, field, message) in cases {
        let mut body = json!({"licenseKey": key_of(&l), "hardwareIdentifier": device(4)});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let a = s.client("verify", &body, None).await;
        a.err(400, "BAD_REQUEST");
        assert_eq!(
            (
                &a.body["data"]["errors"][0]["field"],
                &a.body["data"]["errors"][0]["message"]
            ),
            (&json!(field), &json!(message)),
            "{body}"
        );
    }
    let unbound = json!({"licenseKey": key_of(&l), "deviceName": "Somebody's PC"});
    let a = s.client("verify", &unbound, None).await;
    a.err(400, "BAD_REQUEST");
    assert_eq!(
        a.body["data"]["errors"][0]["message"],
        "labels a device: send hardwareIdentifier with it"
    );
    assert_eq!(
        hwids().await.len(),
        3,
        "no refused request recorded a device"
    );
}
