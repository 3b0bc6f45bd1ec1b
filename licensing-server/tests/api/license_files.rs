//! (ext) License files (protocol.md section 6): issued through the developer API and by the
//! client API's checkout, in exactly the documented format (checked here by an independent
//! implementation, Python's `cryptography`, as well as by ours).

use licensing_core::crypto::license_file::{LicenseFile, LicenseFileError};
use serde_json::{Value, json};

use crate::helpers::TestServer;

/// The payload of `certificate`, opened by our implementation.
pub(crate) fn opened(
    s_keys: &licensing_core::crypto::TeamPublicKeys,
    certificate: &str,
    key: &str,
    machine: Option<&str>,
) -> Value {
    let file = LicenseFile::parse(certificate).unwrap();
    serde_json::from_slice(&file.open(s_keys, key, machine).unwrap()).unwrap()
}

/// A file's `issuedAt` and `expiresAt`, as read from its view.
fn issued_and_expiry(file: &Value) -> (licensing_core::Timestamp, licensing_core::Timestamp) {
    (
        serde_json::from_value(file["issuedAt"].clone()).unwrap(),
        serde_json::from_value(file["expiresAt"].clone()).unwrap(),
    )
}

/// The payload of `certificate` as Python's `cryptography` reads it from the format's
/// description alone (armor, envelope, Ed25519 over the prefixed `enc`, AES-256-GCM under
/// SHA-256 of the license key and machine); `None` when the package is missing (a notice; a
/// failure under `CI`).
fn python_opens(
    certificate: &str,
    signing_key: &str,
    key: &str,
    machine: Option<&str>,
) -> Option<Value> {
    use std::io::Write as _;
    const SCRIPT: &str = r#"
import base64, hashlib, json, sys
try:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
except ImportError:
    sys.exit(3)
given = json.load(sys.stdin)
lines = given["certificate"].strip().split("\n")
machine = given["machine"]
# Keygen's convention: a machine file's armor says so, and its signature covers "machine/".
kind = "MACHINE" if machine else "LICENSE"
assert lines[0] == f"-----BEGIN {kind} FILE-----" and lines[-1] == f"-----END {kind} FILE-----", lines[0]
assert all(len(l) <= 76 for l in lines)
envelope = json.loads(base64.b64decode("".join(lines[1:-1]), validate=True))
prefix = b"machine/" if machine else b"license/"
public = Ed25519PublicKey.from_public_bytes(base64.b64decode(given["signingKey"]))
public.verify(base64.b64decode(envelope["sig"]), prefix + envelope["enc"].encode("ascii"))
kid = hashlib.sha256(base64.b64decode(given["signingKey"])).hexdigest()[:16]
assert envelope["kid"] == kid, (envelope["kid"], kid)
if envelope["alg"] == "base64+ed25519":
    payload = base64.b64decode(envelope["enc"])
else:
    assert envelope["alg"] == "aes-256-gcm+ed25519"
    ciphertext, iv, tag = (base64.b64decode(p) for p in envelope["enc"].split("."))
    assert len(iv) == 12 and len(tag) == 16
    key = hashlib.sha256((given["licenseKey"] + (machine or "")).encode("utf-8")).digest()
    payload = AESGCM(key).decrypt(iv, ciphertext + tag, None)
sys.stdout.write(payload.decode("utf-8"))
"#;
    let python = std::env::var("LICENSING_PYTHON").unwrap_or_else(|_| "python3".into());
    let input = json!({"certificate": certificate, "signingKey": signing_key, "licenseKey": key, "machine": machine}).to_string();
    let mut child = std::process::Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(input.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    match out.status.code() {
        Some(0) => Some(serde_json::from_slice(&out.stdout).unwrap()),
        Some(3) | None => {
            let notice = format!(
                "{python} lacks the cryptography package: the license file cross-check is skipped"
            );
            assert!(
                std::env::var_os("CI").is_none(),
                "{notice} (required when CI is set)"
            );
            eprintln!("{notice}");
            None
        }
        Some(_) => panic!(
            "Python refused the license file: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[tokio::test]
async fn license_files_are_issued_in_the_documented_format() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let code = s
        .post(
            &s.dev("entitlements"),
            r#"{"name":"Export","code":"EXPORT"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    let license = s
        .post(
            &s.dev("licenses"),
            &json!({"expirationType": "NEVER", "hwidLimit": 2, "entitlementIds": [code],
                    "metadata": [{"key": "tier", "value": "pro"}]})
            .to_string(),
        )
        .await
        .ok()
        .clone();
    let key = license["licenseKey"].as_str().unwrap();
    let url = s.dev(&format!(
        "licenses/id/{}/file",
        license["id"].as_str().unwrap()
    ));

    // An empty body: encrypted, for any machine, as long as the license.
    let issued = s.post(&url, "").await;
    assert_eq!(issued.status, 201, "{}", issued.body);
    let issued = issued.ok().clone();
    assert_eq!(issued["expiresAt"], Value::Null);
    assert_eq!(issued["hardwareIdentifier"], Value::Null);
    let certificate = issued["certificate"].as_str().unwrap();
    assert!(LicenseFile::parse(certificate).unwrap().is_encrypted());
    let payload = opened(&keys, certificate, key, None);
    assert_eq!(payload["meta"]["issued"], issued["issuedAt"]);
    assert_eq!(payload["meta"]["expiry"], Value::Null);
    assert_eq!(payload["meta"]["ttl"], Value::Null);
    assert_eq!(payload["meta"]["teamId"], s.team_id().to_string());
    assert_eq!(payload["meta"]["hardwareIdentifier"], Value::Null);
    let l = &payload["data"]["license"];
    assert_eq!(
        (&l["id"], &l["key"], &l["suspended"]),
        (&license["id"], &license["licenseKey"], &json!(false))
    );
    assert_eq!(l["entitlements"], json!(["EXPORT"]));
    assert_eq!(l["hwidLimit"], 2);
    assert_eq!(l["metadata"], json!([{"key": "tier", "value": "pro"}]));
    assert_eq!(payload["data"]["customers"], json!([]));
    if let Some(python) = python_opens(certificate, &s.team.signing_key, key, None) {
        assert_eq!(python, payload);
    }
    // A file for another license key does not open.
    assert_eq!(
        LicenseFile::parse(certificate)
            .unwrap()
            .open(&keys, "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA", None),
        Err(LicenseFileError::WrongKey)
    );

    // A machine file with a ttl.
    let machine = "machine-0000-0001";
    let issued = s
        .post(
            &url,
            &json!({"hardwareIdentifier": machine, "ttl": 7200}).to_string(),
        )
        .await
        .ok()
        .clone();
    let certificate = issued["certificate"].as_str().unwrap();
    assert_eq!(issued["hardwareIdentifier"], machine);
    let payload = opened(&keys, certificate, key, Some(machine));
    assert_eq!(payload["meta"]["ttl"], 7200);
    assert_eq!(payload["meta"]["hardwareIdentifier"], machine);
    let issued_at: licensing_core::Timestamp =
        serde_json::from_value(payload["meta"]["issued"].clone()).unwrap();
    assert_eq!(
        payload["meta"]["expiry"],
        serde_json::to_value(issued_at.plus_seconds(7200)).unwrap()
    );
    assert_eq!(payload["meta"]["expiry"], issued["expiresAt"]);
    let file = LicenseFile::parse(certificate).unwrap();
    assert_eq!(
        file.open(&keys, key, Some("machine-0000-0002")),
        Err(LicenseFileError::WrongKey)
    );
    // Its armor says it is a machine file: without the machine it does not open.
    assert!(file.is_machine_file());
    assert!(certificate.starts_with("-----BEGIN MACHINE FILE-----\n"));
    assert_eq!(file.open(&keys, key, None), Err(LicenseFileError::WrongKey));
    if let Some(python) = python_opens(certificate, &s.team.signing_key, key, Some(machine)) {
        assert_eq!(python, payload);
    }

    // In the clear.
    let plain = s.post(&url, r#"{"encrypt":false}"#).await.ok().clone();
    let certificate = plain["certificate"].as_str().unwrap();
    assert_eq!(
        LicenseFile::parse(certificate).unwrap().envelope().alg,
        "base64+ed25519"
    );
    let payload = opened(&keys, certificate, key, None);
    if let Some(python) = python_opens(certificate, &s.team.signing_key, key, None) {
        assert_eq!(python, payload);
    }

    // Refusals: the ttl's range, unknown members, a malformed machine, another license.
    for (body, field) in [
        (json!({"ttl": 3599}), "ttl"),
        (json!({"ttl": 315_360_001_i64}), "ttl"),
        (json!({"hardwareIdentifier": "short"}), "hardwareIdentifier"),
        (json!({"machine": "x"}), "machine"),
    ] {
        let refused = s.post(&url, &body.to_string()).await;
        assert_eq!(refused.err(400, "BAD_REQUEST").fields(), [field], "{body}");
    }
    s.post(
        &s.dev(&format!("licenses/id/{}/file", uuid::Uuid::new_v4())),
        "",
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    let reader = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"r","scopes":["licenses:read"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    s.send(reqwest::Method::POST, &url, Some(&reader), Some(""))
        .await
        .err(403, "FORBIDDEN");
    // A key that may write licenses but not read customers learns them only as ids: not in
    // the license's view, not in a file it issues.
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"email":"ann@example.com","fullName":"Ann"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    s.put(
        &s.dev(&format!("licenses/id/{}", license["id"].as_str().unwrap())),
        &json!({"customerIds": [customer]}).to_string(),
    )
    .await
    .ok();
    let writer = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"w","scopes":["licenses:read","licenses:write"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let view_url = s.dev(&format!("licenses/id/{}", license["id"].as_str().unwrap()));
    let seen = s
        .send(reqwest::Method::GET, &view_url, Some(&writer), None)
        .await;
    assert_eq!(seen.ok()["customerIds"], json!([customer]));
    assert_eq!(seen.ok()["customers"], json!([]));
    assert_eq!(
        s.get(&view_url).await.ok()["customers"][0]["email"],
        "ann@example.com",
        "a key with customers:read sees them"
    );
    let file = s
        .send(
            reqwest::Method::POST,
            &url,
            Some(&writer),
            Some(r#"{"encrypt":false}"#),
        )
        .await;
    let certificate = file.ok()["certificate"].as_str().unwrap().to_owned();
    let payload = opened(&keys, &certificate, key, None);
    assert_eq!(payload["data"]["customers"], json!([]));
    let file = s.post(&url, r#"{"encrypt":false}"#).await;
    let payload = opened(&keys, file.ok()["certificate"].as_str().unwrap(), key, None);
    assert_eq!(payload["data"]["customers"][0]["email"], "ann@example.com");

    // Audited, with what was issued.
    let audit = s
        .get(&s.dev("audit-log?action=license.file_issued"))
        .await
        .ok()
        .clone();
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 5);
    assert_eq!(entries[1]["resourceId"], license["id"]);
}

/// A file never outlives its license: a duration whose clock has not started ends `days` after
/// the file is issued (and the vendor's file does not start the clock), a date ends the file, a
/// longer `ttl` is cut to the license's end; a suspended or expired license gets no file.
#[tokio::test]
async fn a_file_ends_with_its_license() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let file_url = |license: &Value| {
        s.dev(&format!(
            "licenses/id/{}/file",
            license["id"].as_str().unwrap()
        ))
    };

    // A one-day license whose clock starts at activation, never used: its file ends a day
    // after it was issued, whatever the ttl asked, and the clock is still not started.
    let unstarted = s
        .license(
            r#"{"expirationType":"DURATION","expirationStart":"ACTIVATION","expirationDays":1}"#,
        )
        .await;
    let key = unstarted["licenseKey"].as_str().unwrap();
    for body in [json!({}), json!({"ttl": 315_360_000})] {
        let issued = s.post(&file_url(&unstarted), &body.to_string()).await;
        assert_eq!(issued.status, 201, "{}", issued.body);
        let issued = issued.ok().clone();
        let (at, expiry) = issued_and_expiry(&issued);
        assert_eq!(expiry, at.plus_days(1), "{body}");
        let payload = opened(&keys, issued["certificate"].as_str().unwrap(), key, None);
        assert_eq!(payload["meta"]["expiry"], issued["expiresAt"]);
    }
    let again = s
        .get(&s.dev(&format!(
            "licenses/id/{}",
            unstarted["id"].as_str().unwrap()
        )))
        .await;
    assert_eq!(
        again.ok()["expirationDate"],
        Value::Null,
        "the clock waits for the application"
    );
    // A shorter ttl stays shorter.
    let short = s
        .post(&file_url(&unstarted), r#"{"ttl":3600}"#)
        .await
        .ok()
        .clone();
    let (at, expiry) = issued_and_expiry(&short);
    assert_eq!(expiry, at.plus_seconds(3600));

    // A dated license: its date ends the file.
    let date = licensing_core::Timestamp::now().plus_days(3);
    let dated = s
        .license(&json!({"expirationType": "DATE", "expirationDate": date}).to_string())
        .await;
    let issued = s.post(&file_url(&dated), "").await.ok().clone();
    assert_eq!(issued["expiresAt"], dated["expirationDate"]);
    let issued = s
        .post(&file_url(&dated), r#"{"ttl":86400}"#)
        .await
        .ok()
        .clone();
    let (at, expiry) = issued_and_expiry(&issued);
    assert_eq!(expiry, at.plus_days(1));
    // A license that never expires, without a ttl: a file without an expiry.
    let never = s.license(r#"{"expirationType":"NEVER"}"#).await;
    assert_eq!(
        s.post(&file_url(&never), "").await.ok()["expiresAt"],
        Value::Null
    );

    // Suspended and expired licenses: the client API's refusals.
    s.put(
        &s.dev(&format!("licenses/id/{}", dated["id"].as_str().unwrap())),
        r#"{"suspended":true}"#,
    )
    .await
    .ok();
    s.post(&file_url(&dated), "")
        .await
        .err(403, "LICENSE_SUSPENDED");
    let ended = s
        .license(
            &json!({"expirationType": "DATE", "expirationDate": licensing_core::Timestamp::now().plus_seconds(2)})
                .to_string(),
        )
        .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let answer = s.post(&file_url(&ended), "").await;
        if answer.status == 403 {
            answer.err(403, "LICENSE_EXPIRED");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", answer.body);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Checkout: every verify check and the device recorded as by verify, then a machine file.
#[tokio::test]
async fn checkout_answers_a_verify_and_a_machine_file() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let license = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let key = license["licenseKey"].as_str().unwrap();
    let machine = "machine-0000-0001";
    let body = json!({"licenseKey": key, "hardwareIdentifier": machine, "ttl": 86400,
                      "challenge": "challenge-0123456789"});
    let answer = s.client("checkout", &body, None).await;
    let data = answer.valid().clone();
    answer.signed_by(&keys);
    assert_eq!(answer.body["result"]["details"], "License checked out");
    assert!(answer.body["result"]["challengeResponse"].is_string());
    assert_eq!(data["license"]["hwidLimit"], 1);
    assert_eq!(data["license"]["entitlements"], json!([]));
    let file = &data["licenseFile"];
    let certificate = file["certificate"].as_str().unwrap();
    let parsed = LicenseFile::parse(certificate).unwrap();
    assert!(parsed.is_encrypted());
    let payload = opened(&keys, certificate, key, Some(machine));
    assert_eq!(payload["meta"]["hardwareIdentifier"], machine);
    assert_eq!(payload["meta"]["ttl"], 86400);
    assert_eq!(payload["meta"]["expiry"], file["expiresAt"]);
    assert_eq!(payload["meta"]["issued"], file["issuedAt"]);
    assert_eq!(payload["data"]["license"]["key"], key);
    if let Some(python) = python_opens(certificate, &s.team.signing_key, key, Some(machine)) {
        assert_eq!(python, payload);
    }
    // The device was recorded: the limit of one holds against another machine, on checkout
    // and on verify alike.
    let devices = s
        .get(&s.dev(&format!(
            "licenses/id/{}/hwid",
            license["id"].as_str().unwrap()
        )))
        .await
        .ok()
        .clone();
    assert_eq!(devices["totalResults"], 1);
    let other = json!({"licenseKey": key, "hardwareIdentifier": "machine-0000-0002"});
    s.client("checkout", &other, None)
        .await
        .err(403, "HWID_LIMIT_REACHED")
        .signed_by(&keys);
    // Entitlements are checked as by verify.
    s.client(
        "checkout",
        &json!({"licenseKey": key, "hardwareIdentifier": machine, "entitlements": ["PRO"]}),
        None,
    )
    .await
    .err(403, "ENTITLEMENTS_MISSING")
    .signed_by(&keys);
    // A machine is required; ttl is checkout's alone and in range.
    s.client("checkout", &json!({"licenseKey": key}), None)
        .await
        .err(400, "BAD_REQUEST");
    let ttl_on_verify = s
        .client(
            "verify",
            &json!({"licenseKey": key, "hardwareIdentifier": machine, "ttl": 7200}),
            None,
        )
        .await;
    ttl_on_verify.err(400, "BAD_REQUEST");
    s.client(
        "checkout",
        &json!({"licenseKey": key, "hardwareIdentifier": machine, "ttl": 60}),
        None,
    )
    .await
    .err(400, "BAD_REQUEST");
    // Without a ttl: the team's longest checkout (30 days unless set), never forever; a longer
    // one is cut to it.
    for ttl in [Value::Null, json!(315_360_000)] {
        let answer = s
            .client(
                "checkout",
                &json!({"licenseKey": key, "hardwareIdentifier": machine, "ttl": ttl}),
                None,
            )
            .await;
        let file = &answer.valid()["licenseFile"];
        let (issued, expiry) = issued_and_expiry(file);
        assert_eq!(expiry, issued.plus_days(30), "{ttl}");
        let payload = opened(
            &keys,
            file["certificate"].as_str().unwrap(),
            key,
            Some(machine),
        );
        assert_eq!(payload["meta"]["ttl"], 2_592_000);
        assert!(
            payload["meta"].get("sessionId").is_none(),
            "no seat without a session limit"
        );
    }
    s.put(&s.dev("settings"), r#"{"checkoutMaxTtl":7200}"#)
        .await
        .ok();
    let answer = s
        .client(
            "checkout",
            &json!({"licenseKey": key, "hardwareIdentifier": machine, "ttl": 86400}),
            None,
        )
        .await;
    let (issued, expiry) = issued_and_expiry(&answer.valid()["licenseFile"]);
    assert_eq!(expiry, issued.plus_seconds(7200));
    // A team may turn checkout off.
    s.put(&s.dev("settings"), r#"{"checkoutEnabled":false}"#)
        .await
        .ok();
    s.client(
        "checkout",
        &json!({"licenseKey": key, "hardwareIdentifier": machine}),
        None,
    )
    .await
    .err(403, "FORBIDDEN")
    .signed_by(&keys);
    for bad in [
        json!({"checkoutMaxTtl": 3599}),
        json!({"checkoutMaxTtl": null}),
        json!({"checkoutEnabled": "no"}),
    ] {
        s.put(&s.dev("settings"), &bad.to_string())
            .await
            .err(400, "BAD_REQUEST");
    }
    s.put(&s.dev("settings"), r#"{"checkoutEnabled":true}"#)
        .await
        .ok();
    // Refused like a verify.
    s.put(
        &s.dev(&format!("licenses/id/{}", license["id"].as_str().unwrap())),
        r#"{"suspended":true}"#,
    )
    .await
    .ok();
    s.client(
        "checkout",
        &json!({"licenseKey": key, "hardwareIdentifier": machine}),
        None,
    )
    .await
    .err(403, "LICENSE_SUSPENDED");
    // GET is not a checkout.
    let got = s.client.get(s.client_url("checkout")).send().await.unwrap();
    assert_eq!(got.status(), 405);
}

/// A license with a `sessionLimit` lends a checked-out file a seat until the file expires:
/// none free, no file; the seat is listed and revocable like any session, and ending it gives
/// it back.
#[tokio::test]
async fn checkout_of_a_floating_license_borrows_a_seat() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let license = s
        .license(r#"{"expirationType":"NEVER","sessionLimit":1}"#)
        .await;
    let key = license["licenseKey"].as_str().unwrap();
    let sessions_url = s.dev(&format!(
        "licenses/id/{}/sessions",
        license["id"].as_str().unwrap()
    ));
    // The only seat is taken by a running copy: twenty other machines get no file.
    let running = s
        .client(
            "sessions/start",
            &json!({"licenseKey": key, "hardwareIdentifier": "machine-run-0001"}),
            None,
        )
        .await;
    let running_id = running.valid()["session"]["id"].clone();
    for i in 0..20 {
        s.client(
            "checkout",
            &json!({"licenseKey": key, "hardwareIdentifier": format!("machine-off-{i:04}")}),
            None,
        )
        .await
        .err(403, "SESSION_LIMIT_REACHED")
        .signed_by(&keys);
    }
    // The copy ends: a checkout borrows the seat until its file expires.
    s.client(
        "sessions/end",
        &json!({"licenseKey": key, "sessionId": running_id}),
        None,
    )
    .await
    .valid();
    let machine = "machine-off-0000";
    let answer = s
        .client(
            "checkout",
            &json!({"licenseKey": key, "hardwareIdentifier": machine, "ttl": 7200}),
            None,
        )
        .await;
    let file = answer.valid()["licenseFile"].clone();
    let payload = opened(
        &keys,
        file["certificate"].as_str().unwrap(),
        key,
        Some(machine),
    );
    let session = payload["meta"]["sessionId"].clone();
    assert!(session.is_string(), "{payload}");
    assert_eq!(file["sessionId"], session);
    assert_eq!(payload["meta"]["sessionLimit"], 1);
    let listed = s.get(&sessions_url).await.ok().clone();
    assert_eq!(listed["totalResults"], 1);
    assert_eq!(listed["sessions"][0]["id"], session);
    assert_eq!(listed["sessions"][0]["hardwareIdentifier"], machine);
    assert_eq!(listed["sessions"][0]["expiresAt"], file["expiresAt"]);
    // While it is out, no copy starts and no other machine checks out.
    s.client(
        "sessions/start",
        &json!({"licenseKey": key, "hardwareIdentifier": "machine-run-0001"}),
        None,
    )
    .await
    .err(403, "SESSION_LIMIT_REACHED");
    s.client(
        "checkout",
        &json!({"licenseKey": key, "hardwareIdentifier": "machine-off-0001"}),
        None,
    )
    .await
    .err(403, "SESSION_LIMIT_REACHED");
    // The vendor revokes the borrowed seat: it is free at once.
    s.delete(&format!("{sessions_url}/{}", session.as_str().unwrap()))
        .await
        .ok();
    s.client(
        "sessions/start",
        &json!({"licenseKey": key, "hardwareIdentifier": "machine-run-0001"}),
        None,
    )
    .await
    .valid();
}

/// A file the vendor issues for a machine records the machine as a checkout would: it counts
/// against the device limit, which refuses a machine it leaves no room for unless the vendor
/// overrides it (audited); a machine the license knows needs no room.
#[tokio::test]
async fn a_vendor_issued_machine_file_records_its_machine_within_the_device_limit() {
    let s = TestServer::start().await;
    let license = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":2}"#)
        .await;
    let (id, key) = (
        license["id"].as_str().unwrap(),
        license["licenseKey"].as_str().unwrap(),
    );
    let url = s.dev(&format!("licenses/id/{id}/file"));
    let devices = || async {
        let listed = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
        listed.ok()["hwids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["identifier"].as_str().unwrap().to_owned())
            .collect::<std::collections::BTreeSet<_>>()
    };
    s.client(
        "verify",
        &json!({"licenseKey": key, "hardwareIdentifier": "seen-machine-0001"}),
        None,
    )
    .await
    .valid();
    // A machine never seen takes the free seat.
    let issued = s
        .post(&url, r#"{"hardwareIdentifier":"air-gapped-0001"}"#)
        .await;
    assert_eq!(issued.ok()["deviceLimitOverridden"], false);
    assert!(devices().await.contains("air-gapped-0001"));
    // It counts: a third machine is refused, by the client API and by a file alike, and
    // nothing is recorded for it.
    let third = s
        .client(
            "verify",
            &json!({"licenseKey": key, "hardwareIdentifier": "third-machine-0001"}),
            None,
        )
        .await;
    third.err(403, "HWID_LIMIT_REACHED");
    let refused = s
        .post(&url, r#"{"hardwareIdentifier":"third-machine-0001"}"#)
        .await;
    let refusal = refused.err(403, "HWID_LIMIT_REACHED");
    assert!(
        refusal.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("override the limit"),
        "{}",
        refusal.body
    );
    assert_eq!(devices().await.len(), 2);
    // A machine the license knows gets its file again without room.
    s.post(&url, r#"{"hardwareIdentifier":"seen-machine-0001"}"#)
        .await
        .ok();
    // The vendor overrides the limit: recorded, answered and audited as such.
    let past = s
        .post(
            &url,
            r#"{"hardwareIdentifier":"third-machine-0001","overrideDeviceLimit":true}"#,
        )
        .await;
    assert_eq!(past.ok()["deviceLimitOverridden"], true);
    assert_eq!(devices().await.len(), 3);
    let audit = s
        .get(&s.dev("audit-log?action=license.file_issued"))
        .await
        .ok()
        .clone();
    let newest = audit["entries"][0].to_string();
    assert!(
        newest.contains(r#"{"field":"deviceLimitOverridden","new":true}"#),
        "{newest}"
    );
    assert!(
        newest.contains(r#"{"field":"deviceRecorded","new":true}"#),
        "{newest}"
    );
    // An override without a machine is a mistake, named.
    let e = s.post(&url, r#"{"overrideDeviceLimit":true}"#).await;
    assert_eq!(e.err(400, "BAD_REQUEST").fields(), ["overrideDeviceLimit"]);
}
