//! The classloader: encrypted downloads, decoded here by a frame reader written apart from the
//! server's own, the session-key rules, release selection and the order of checks.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use licensing_core::Timestamp;
use licensing_core::crypto::{SessionSecret, TeamPublicKeys};
use md5::{Digest, Md5};
use rand::RngCore;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::client::release;
use crate::helpers::{ClientAnswer, TestServer};
use crate::releases::jar;

const DEVICE: &str = "device-0000000001";

/// A fresh session: the secret, and the `sessionKey` text the server receives.
pub(crate) fn session(keys: &TeamPublicKeys) -> (Vec<u8>, String) {
    let mut secret = vec![0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    let text = keys
        .rsa
        .encrypt_session_secret(&SessionSecret::from_bytes(secret.clone()))
        .unwrap();
    (secret, text)
}

/// The AES key: SHA-256 of the ASCII of the secret's lower-case hex (protocol.md section 2).
pub(crate) fn aes_key(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(hex::encode(secret).as_bytes()).into()
}

/// Reads the frame stream: `u32` big-endian length, 12-byte nonce, 16-byte tag, ciphertext.
/// Written from the protocol text, apart from the server's decoder.
pub(crate) fn decode(body: &[u8], key: &[u8; 32]) -> (Vec<u8>, Vec<usize>) {
    let cipher = Aes256Gcm::new_from_slice(key).unwrap();
    let (mut plain, mut sizes) = (Vec::new(), Vec::new());
    let mut rest = body;
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let frame = &rest[4..4 + len];
        rest = &rest[4 + len..];
        let (nonce, tail) = frame.split_at(12);
        let (tag, ciphertext) = tail.split_at(16);
        // The aes-gcm crate takes the ciphertext followed by the tag.
        let mut sealed = ciphertext.to_vec();
        sealed.extend_from_slice(tag);
        let chunk = cipher
            .decrypt(Nonce::from_slice(nonce), sealed.as_ref())
            .expect("every frame authenticates");
        sizes.push(chunk.len());
        plain.extend_from_slice(&chunk);
    }
    (plain, sizes)
}

pub(crate) fn query(license: &str, product: &str, session: &str, extra: &str) -> String {
    format!(
        "licenseKey={license}&productId={product}&sessionKey={session}&hardwareIdentifier={DEVICE}{extra}"
    )
}

pub(crate) async fn setup(s: &TestServer, extra: Value) -> (String, Value) {
    let p = s.post(&s.dev("products"), r#"{"name":"Café App"}"#).await;
    let p = p.ok()["id"].as_str().unwrap().to_owned();
    let mut body = json!({"expirationType": "NEVER", "productIds": [p]});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let l = s.license(&body.to_string()).await;
    (p, l)
}

#[tokio::test]
async fn a_ten_mib_release_downloads_and_decrypts_to_the_original_bytes() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let (p, l) = setup(&s, json!({"hwidLimit": 1})).await;
    let mut data = vec![0u8; 10 * 1024 * 1024];
    rand::rngs::OsRng.fill_bytes(&mut data);
    let r = release(
        &s,
        json!({"version": "1.0.0", "productId": p, "status": "PUBLISHED", "setAsLatest": true}),
        Some(("payload.bin", data.clone())),
    )
    .await;
    let (secret, text) = session(&keys);
    let key = l["licenseKey"].as_str().unwrap();
    let a = s.classloader(&query(key, &p, &text, ""), None).await;
    assert_eq!(
        a.status,
        200,
        "{}",
        String::from_utf8_lossy(&a.bytes[..a.bytes.len().min(500)])
    );
    let (plain, sizes) = decode(&a.bytes, &aes_key(&secret));
    assert_eq!(plain.len(), data.len());
    assert!(plain == data, "the decrypted bytes are the original file");
    assert_eq!(sizes.len(), 160, "64 KiB frames");
    assert!(sizes.iter().all(|&n| n == 64 * 1024));
    let md5 = hex::encode(Md5::digest(&plain));
    let header = |name: &str| {
        a.header(name)
            .unwrap_or_else(|| panic!("{name}"))
            .to_owned()
    };
    assert_eq!(header("x-file-size"), data.len().to_string());
    assert_eq!(header("x-file-checksum"), md5);
    assert_eq!(header("x-version"), "1.0.0");
    assert_eq!(header("x-latest-version"), "1.0.0");
    assert_eq!(header("x-product-name"), "Caf%C3%A9 App");
    assert_eq!(header("x-release-status"), "PUBLISHED");
    assert_eq!(
        header("x-release-created-at"),
        r["createdAt"].as_str().unwrap()
    );
    assert_eq!(
        header("x-file-created-at"),
        r["file"]["createdAt"]
            .as_str()
            .unwrap_or(r["createdAt"].as_str().unwrap())
    );
    assert!(Timestamp::parse(&header("x-file-created-at")).is_ok());
    assert_eq!(header("content-type"), "application/octet-stream");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(header("content-security-policy"), "default-src 'none'");
    assert_eq!(
        header("content-length"),
        (data.len() + 160 * 32).to_string()
    );
    assert!(a.header("x-main-class").is_none());

    // The download recorded the device; a second device is over the limit.
    let id = l["id"].as_str().unwrap();
    let hwids = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(hwids.ok()["hwids"][0]["identifier"], DEVICE);
    let (_, text) = session(&keys);
    let other = query(key, &p, &text, "").replace(DEVICE, "device-0000000002");
    s.classloader(&other, None)
        .await
        .err(403, "HWID_LIMIT_REACHED")
        .signed_by(&keys);
}

#[tokio::test]
async fn releases_are_chosen_by_version_branch_and_latest() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let (p, l) = setup(&s, json!({})).await;
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    let beta = s
        .post(
            &s.dev(&format!("products/{p}/branches")),
            r#"{"name":"beta"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    for (version, extra, file) in [
        ("1.0.0", json!({}), Some(jar("com.example.One"))),
        (
            "2.0.0",
            json!({"setAsLatest": true}),
            Some(jar("com.example.Two")),
        ),
        (
            "2.1.0",
            json!({"status": "DRAFT"}),
            Some(jar("com.example.Draft")),
        ),
        ("0.1.0", json!({}), None),
        (
            "3.0.0",
            json!({"branchId": beta, "setAsLatest": true}),
            Some(jar("com.example.Beta")),
        ),
    ] {
        let mut data = json!({"version": version, "productId": p, "status": "PUBLISHED"});
        for (k, v) in extra.as_object().unwrap() {
            data[k] = v.clone();
        }
        release(&s, data, file.map(|f| ("app.jar", f))).await;
    }
    let fetch = |extra: &'static str| {
        let (secret, text) = session(&keys);
        let q = query(&key, &p, &text, extra);
        let s = &s;
        async move { (s.classloader(&q, None).await, secret) }
    };
    let main_class = |a: &ClientAnswer, secret: &[u8]| {
        let (plain, _) = decode(&a.bytes, &aes_key(secret));
        assert_eq!(
            hex::encode(Md5::digest(&plain)),
            a.header("x-file-checksum").unwrap()
        );
        a.header("x-main-class").unwrap().to_owned()
    };
    let (a, secret) = fetch("").await;
    assert_eq!(a.status, 200);
    assert_eq!(
        (a.header("x-version"), a.header("x-latest-version")),
        (Some("2.0.0"), Some("2.0.0"))
    );
    assert_eq!(main_class(&a, &secret), "com.example.Two");
    let (a, secret) = fetch("&version=1.0.0").await;
    assert_eq!(
        (a.header("x-version"), a.header("x-latest-version")),
        (Some("1.0.0"), Some("2.0.0"))
    );
    assert_eq!(main_class(&a, &secret), "com.example.One");
    let (a, secret) = fetch("&branch=beta").await;
    assert_eq!(a.header("x-version"), Some("3.0.0"));
    assert_eq!(main_class(&a, &secret), "com.example.Beta");

    fetch("&version=2.1.0")
        .await
        .0
        .err(403, "RELEASE_DRAFT")
        .signed_by(&keys);
    fetch("&version=0.1.0")
        .await
        .0
        .err(404, "RELEASE_NOT_FOUND")
        .signed_by(&keys);
    fetch("&version=9.9.9")
        .await
        .0
        .err(404, "RELEASE_NOT_FOUND");
    fetch("&version=1.0.0&branch=beta")
        .await
        .0
        .err(404, "RELEASE_NOT_FOUND");
    fetch("&branch=gamma").await.0.err(404, "RELEASE_NOT_FOUND");
    // Downloads are counted in the statistics.
    let stats = s.get(&s.dev("statistics")).await;
    assert_eq!(stats.ok()["requests"]["byType"]["DOWNLOAD"], 8);
    assert_eq!(stats.ok()["requests"]["successful"], 3);
}

#[tokio::test]
async fn classloader_checks_in_order_and_session_keys_are_single_use() {
    const TOKEN: &str = "admin-token-for-tests-0123456789";
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let keys = s.public_keys().await;
    let (p, l) = setup(&s, json!({})).await;
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    release(
        &s,
        json!({"version": "1.0.0", "productId": p, "status": "PUBLISHED", "setAsLatest": true}),
        Some(("app.jar", jar("com.example.Main"))),
    )
    .await;

    // Query problems are 400s naming every parameter, before the team is known.
    let a = s.classloader("", None).await;
    a.err(400, "BAD_REQUEST").unsigned();
    let fields: Vec<&str> = a.body["data"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "licenseKey",
            "productId",
            "sessionKey",
            "hardwareIdentifier"
        ]
    );

    // The feature switch comes before the session key.
    let features = format!("{}/api/v1/admin/teams/{}/features", s.base, s.team_id());
    let off = s
        .send(
            reqwest::Method::PUT,
            &features,
            Some(TOKEN),
            Some(r#"{"classloader":false}"#),
        )
        .await;
    off.ok();
    let garbage = "ab".repeat(256);
    s.classloader(&query(&key, &p, &garbage, ""), None)
        .await
        .err(403, "FORBIDDEN")
        .signed_by(&keys);
    s.send(
        reqwest::Method::PUT,
        &features,
        Some(TOKEN),
        Some(r#"{"classloader":true}"#),
    )
    .await
    .ok();

    // The session key comes before the license: undecryptable, not hex, reused.
    let missing = "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ";
    for bad in [garbage.as_str(), "not-hex-at-all-0123", &"AB".repeat(255)] {
        let a = s.classloader(&query(missing, &p, bad, ""), None).await;
        a.err(400, "INVALID_SESSION_KEY").signed_by(&keys);
    }
    let (_, text) = session(&keys);
    s.classloader(&query(missing, &p, &text, ""), None)
        .await
        .err(404, "LICENSE_NOT_FOUND")
        .signed_by(&keys);
    // A key is taken only once the license and product pass: the refused request above did not
    // spend it (so nobody without a license can fill the team's record of used keys) ...
    let a = s.classloader(&query(&key, &p, &text, ""), None).await;
    assert_eq!(a.status, 200);
    // ... and the download did.
    let a = s.classloader(&query(&key, &p, &text, ""), None).await;
    a.err(400, "INVALID_SESSION_KEY");
    assert!(
        a.body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("already used")
    );
    // The same secret encrypted again (OAEP is randomized) or in upper-case hex is still spent.
    let (secret, text) = session(&keys);
    assert_eq!(
        s.classloader(&query(&key, &p, &text, ""), None)
            .await
            .status,
        200
    );
    let again = keys
        .rsa
        .encrypt_session_secret(&SessionSecret::from_bytes(secret.clone()))
        .unwrap();
    assert_ne!(again, text);
    s.classloader(&query(&key, &p, &again, ""), None)
        .await
        .err(400, "INVALID_SESSION_KEY");
    s.classloader(&query(&key, &p, &text.to_uppercase(), ""), None)
        .await
        .err(400, "INVALID_SESSION_KEY");

    // The product must be on the license.
    let (_, text) = session(&keys);
    let other = uuid::Uuid::new_v4().to_string();
    s.classloader(&query(&key, &other, &text, ""), None)
        .await
        .err(404, "PRODUCT_NOT_FOUND")
        .signed_by(&keys);
}

#[tokio::test]
async fn classloader_refusals_share_the_verify_checks() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let c = s
        .post(&s.dev("customers"), r#"{"email":"c@example.com"}"#)
        .await
        .ok()["id"]
        .clone();
    let (p, l) = setup(&s, json!({"customerIds": [c]})).await;
    let suspended = s
        .license(
            &json!({"expirationType": "NEVER", "productIds": [p], "suspended": true}).to_string(),
        )
        .await;
    let other = s.license(r#"{"expirationType":"NEVER"}"#).await;
    for (version, status, extra) in [
        ("1.0.0", "PUBLISHED", json!({"setAsLatest": true})),
        ("0.9.0", "ARCHIVED", json!({})),
        ("1.1.0", "PUBLISHED", json!({"licenseIds": [other["id"]]})),
    ] {
        let mut data = json!({"version": version, "productId": p, "status": status});
        for (k, v) in extra.as_object().unwrap() {
            data[k] = v.clone();
        }
        release(&s, data, Some(("app.jar", jar("com.example.Main")))).await;
    }
    s.post(
        &s.dev("blacklist"),
        r#"{"type":"IP","value":"198.51.100.0/24"}"#,
    )
    .await
    .ok();
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    let cases: [(&str, &str, Option<&str>, u16, &str); 7] = [
        (&key, "", Some("198.51.100.1"), 403, "IP_BLACKLISTED"),
        (
            &key,
            "&customerId=00000000-0000-4000-8000-000000000000",
            None,
            404,
            "CUSTOMER_NOT_FOUND",
        ),
        (&key, "&version=0.9.0", None, 403, "RELEASE_ARCHIVED"),
        (&key, "&version=1.1.0", None, 403, "NO_ACCESS_TO_RELEASE"),
        (
            suspended["licenseKey"].as_str().unwrap(),
            "",
            None,
            403,
            "LICENSE_SUSPENDED",
        ),
        // Suspension comes after the release checks.
        (
            suspended["licenseKey"].as_str().unwrap(),
            "&version=0.9.0",
            None,
            403,
            "RELEASE_ARCHIVED",
        ),
        (&key, "", None, 200, ""),
    ];
    for (license, extra, ip, status, code) in cases {
        let (_, text) = session(&keys);
        let a = s.classloader(&query(license, &p, &text, extra), ip).await;
        if status == 200 {
            assert_eq!(a.status, 200);
        } else {
            a.err(status, code).signed_by(&keys);
        }
    }
}

#[tokio::test]
async fn oversized_bodies_wrong_methods_and_unknown_client_paths() {
    let s = TestServer::start().await;
    let big = format!(r#"{{"licenseKey":"{}"}}"#, "A".repeat(1024 * 1024));
    s.client_raw(&s.client_url("verify"), &big, None)
        .await
        .err(413, "BAD_REQUEST")
        .unsigned();
    let get_verify = s
        .send(reqwest::Method::GET, &s.client_url("verify"), None, None)
        .await;
    get_verify.err(405, "BAD_REQUEST");
    let post_download = s
        .send(
            reqwest::Method::POST,
            &s.client_url("classloader"),
            None,
            Some("{}"),
        )
        .await;
    post_download.err(405, "BAD_REQUEST");
    s.send(
        reqwest::Method::POST,
        &s.client_url("verifyy"),
        None,
        Some("{}"),
    )
    .await
    .err(404, "BAD_REQUEST");
}

/// Verify's `latestRelease` and a download without a version follow one rule, so they name
/// the same release (here: none is marked latest without a branch, so the newest published one
/// there, not the branch's latest); and what clients written for Lukittu send passes: unknown
/// and empty query parameters are ignored, both names of the device with one value are
/// accepted (two values are not), and a verify without a device on a license with a device
/// limit says which setting lets it through.
#[tokio::test]
async fn verify_and_download_agree_on_the_latest_release_and_client_quirks_pass() {
    let s = TestServer::start().await;
    let keys = s.public_keys().await;
    let (p, l) = setup(&s, json!({"hwidLimit": 3})).await;
    let key = l["licenseKey"].as_str().unwrap().to_owned();
    let beta = s
        .post(
            &s.dev(&format!("products/{p}/branches")),
            r#"{"name":"beta"}"#,
        )
        .await
        .ok()["id"]
        .clone();
    for (version, extra) in [
        ("3.0.0", json!({})),
        ("4.0.0", json!({})),
        ("2.0.0", json!({"branchId": beta, "setAsLatest": true})),
    ] {
        let mut data = json!({"version": version, "productId": p, "status": "PUBLISHED"});
        for (k, v) in extra.as_object().unwrap() {
            data[k] = v.clone();
        }
        let main = format!("com.example.V{}", version.replace('.', ""));
        release(&s, data, Some(("app.jar", jar(&main)))).await;
    }
    let verified = s
        .client(
            "verify",
            &json!({"licenseKey": key, "hardwareIdentifier": DEVICE, "productId": p}),
            None,
        )
        .await;
    let latest = verified.valid()["products"][0]["latestRelease"]["version"].clone();
    assert_eq!(latest, "4.0.0");
    let download = |extra: String| {
        let (_, text) = session(&keys);
        let q = query(&key, &p, &text, &extra);
        let s = &s;
        async move { s.classloader(&q, None).await }
    };
    let a = download(String::new()).await;
    assert_eq!(a.status, 200);
    assert_eq!(
        (a.header("x-version"), a.header("x-latest-version")),
        (Some("4.0.0"), Some("4.0.0"))
    );
    // A tracking parameter, empty optional values, and both names of the device.
    let a = download(format!(
        "&utm_source=launcher&foo=bar&branch=&customerId=&version=&deviceIdentifier={DEVICE}"
    ))
    .await;
    assert_eq!(a.status, 200, "{:?}", String::from_utf8_lossy(&a.bytes));
    assert_eq!(a.header("x-version"), Some("4.0.0"));
    let refused = download("&deviceIdentifier=another-device-01".into()).await;
    refused.err(400, "BAD_REQUEST");
    assert!(String::from_utf8_lossy(&refused.bytes).contains("deviceIdentifier"));
    // The branch's own latest, when it is named.
    let a = download("&branch=beta".into()).await;
    assert_eq!(a.header("x-version"), Some("2.0.0"));
    // Where answers differ from Lukittu's (README, "Compatibility notes"): a two-character
    // branch is a name like any other, and a HEAD cannot spend a session key.
    download("&branch=xy".into())
        .await
        .err(404, "RELEASE_NOT_FOUND");
    let (_, text) = session(&keys);
    let head = s
        .client
        .head(format!(
            "{}?{}",
            s.client_url("classloader"),
            query(&key, &p, &text, "")
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 405);

    // Verify with both names of the device.
    let both = json!({"licenseKey": key, "hardwareIdentifier": DEVICE, "deviceIdentifier": DEVICE});
    assert_eq!(s.client("verify", &both, None).await.code(), "VALID");
    assert_eq!(s.client("heartbeat", &both, None).await.code(), "VALID");
    let differ = json!({"licenseKey": key, "hardwareIdentifier": DEVICE, "deviceIdentifier": "device-0000000002"});
    s.client("verify", &differ, None)
        .await
        .err(400, "BAD_REQUEST");
    // Without a device, on the default settings: the setting that allows it is named.
    let without = s.client("verify", &json!({"licenseKey": key}), None).await;
    without.err(400, "BAD_REQUEST");
    let details = without.body["result"]["details"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(details.contains("requireHardwareIdentifier"), "{details}");
    s.put(&s.dev("settings"), r#"{"requireHardwareIdentifier":false}"#)
        .await
        .ok();
    let passed = s.client("verify", &json!({"licenseKey": key}), None).await;
    assert_eq!(passed.code(), "VALID");
    assert_eq!(passed.valid()["hardwareIdentifierChecked"], false);
}
