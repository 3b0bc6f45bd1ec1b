//! Update feeds, end to end: artifacts uploaded over the developer API, then read and
//! downloaded the way each updater does, and checked with the updaters' own code where it
//! installs here (Tauri's `minisign-verify`, Velopack's crate, electron-updater's and
//! feedparser's JavaScript).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use blake2::Digest as _;
use ed25519_dalek::Signer as _;
use licensing_core::crypto::updater::{Blake2b512, MinisignPublicKey, MinisignSignature};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::helpers::{Answer, TestServer};

/// A test file of `n` bytes (not all alike, so that a range is checked for its place).
fn file_of(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(u32::from(seed)) as u8)
        .collect()
}

/// `{client}/updates/{product}/{path}`.
fn updates(s: &TestServer, product: &str, path: &str) -> String {
    format!(
        "{}/api/v1/client/teams/{}/updates/{product}/{path}",
        s.base,
        s.team_id()
    )
}

/// A product with `settings` (its update members), by the developer API.
pub(crate) async fn product(s: &TestServer, name: &str, settings: Value) -> String {
    let mut body = json!({"name": name});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), settings.as_object()) {
        body.extend(extra.clone());
    }
    let p = s.post(&s.dev("products"), &body.to_string()).await;
    p.ok()["id"].as_str().unwrap().to_owned()
}

/// A release of `product` (published unless `extra` says otherwise).
pub(crate) async fn release(s: &TestServer, product: &str, version: &str, extra: Value) -> String {
    let mut data = json!({"version": version, "productId": product, "status": "PUBLISHED"});
    if let (Some(data), Some(extra)) = (data.as_object_mut(), extra.as_object()) {
        data.extend(extra.clone());
    }
    let form = Form::new().text("data", data.to_string());
    let response = s
        .client
        .post(s.dev("releases"))
        .bearer_auth(s.key())
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let body: Value = response.json().await.unwrap();
    body["data"]["id"].as_str().unwrap().to_owned()
}

/// Uploads an artifact: text parts `fields` and the file, if any.
pub(crate) async fn upload(
    s: &TestServer,
    release: &str,
    fields: &[(&'static str, &str)],
    file: Option<(&str, Vec<u8>)>,
) -> Answer {
    let mut form = Form::new();
    for (name, value) in fields {
        form = form.text(*name, (*value).to_owned());
    }
    if let Some((name, bytes)) = file {
        form = form.part("file", Part::bytes(bytes).file_name(name.to_owned()));
    }
    let response = s
        .client
        .post(s.dev(&format!("releases/{release}/artifacts")))
        .bearer_auth(s.key())
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap();
    Answer { status, body }
}

/// A license of `product` (its key and id).
async fn license_of(s: &TestServer, product: &str) -> (String, String) {
    let l = s
        .license(&json!({"productIds": [product], "expirationType": "NEVER"}).to_string())
        .await;
    (
        l["licenseKey"].as_str().unwrap().to_owned(),
        l["id"].as_str().unwrap().to_owned(),
    )
}

/// GETs `url` with the license key in `Authorization: License …` (when given).
async fn get(s: &TestServer, url: &str, key: Option<&str>) -> reqwest::Response {
    let mut request = s.client.get(url);
    if let Some(key) = key {
        request = request.header("authorization", format!("License {key}"));
    }
    request.send().await.unwrap()
}

/// The `result.code` of an enveloped refusal, with its status.
async fn refusal(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["valid"], false, "{body}");
    assert!(!body["result"]["details"].as_str().unwrap_or("").is_empty());
    (status, body["result"]["code"].as_str().unwrap().to_owned())
}

/// Suspends the license of `key`.
async fn suspend(s: &TestServer, key: &str) {
    let license = s.get(&s.dev(&format!("licenses/{key}"))).await;
    let id = license.ok()["id"].as_str().unwrap().to_owned();
    s.post(&s.dev(&format!("licenses/id/{id}/suspend")), "")
        .await
        .ok();
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[tokio::test]
async fn artifacts_are_uploaded_hashed_listed_deleted_and_refused_in_clear_words() {
    let s = TestServer::start().await;
    let p = product(&s, "Desk", json!({})).await;
    let r = release(
        &s,
        &p,
        "1.2.0",
        json!({"notes": "Faster", "rolloutPercent": 40}),
    )
    .await;
    let bytes = file_of(300_000, 1);
    let a = upload(
        &s,
        &r,
        &[("platform", "linux"), ("arch", "x86_64")],
        Some(("Desk_1.2.0_amd64.AppImage", bytes.clone())),
    )
    .await;
    assert_eq!(a.status, 201, "{}", a.body);
    let artifact = a.body["data"].clone();
    assert_eq!(artifact["kind"], "appimage");
    assert_eq!(artifact["size"], 300_000);
    assert_eq!(artifact["sha256"], sha256_hex(&bytes));
    {
        use sha2::Digest as _;
        assert_eq!(
            artifact["sha512"],
            hex::encode(sha2::Sha512::digest(&bytes))
        );
        assert_eq!(
            artifact["sha1"],
            hex::encode(<sha1::Sha1 as sha1::Digest>::digest(&bytes))
        );
    }
    assert_eq!(artifact["signature"], Value::Null);
    assert_eq!(artifact["serverSigned"], false);

    // The release shows its feed members and artifacts; the list has it.
    let shown = s.get(&s.dev(&format!("releases/{r}"))).await;
    assert_eq!(shown.ok()["rolloutPercent"], 40);
    assert_eq!(shown.ok()["notes"], "Faster");
    assert_eq!(shown.ok()["critical"], false);
    assert_eq!(shown.ok()["artifacts"][0]["id"], artifact["id"]);
    let listed = s.get(&s.dev(&format!("releases/{r}/artifacts"))).await;
    assert_eq!(listed.ok()["artifacts"].as_array().unwrap().len(), 1);

    // A second one in the same place: 409; a Velopack delta package apart from the full one.
    let again = upload(
        &s,
        &r,
        &[("platform", "linux"), ("arch", "x86_64")],
        Some(("Other.AppImage", b"x".to_vec())),
    )
    .await;
    again.err(409, "CONFLICT");
    for name in ["Desk-1.2.0-full.nupkg", "Desk-1.2.0-delta.nupkg"] {
        let a = upload(
            &s,
            &r,
            &[("platform", "windows"), ("arch", "x86_64")],
            Some((name, b"PK\x03\x04".to_vec())),
        )
        .await;
        assert_eq!(a.status, 201, "{}", a.body);
    }

    // Bad input: each a clear answer, nothing stored.
    type Case<'a> = (
        Vec<(&'static str, &'a str)>,
        Option<(&'a str, Vec<u8>)>,
        &'a str,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            vec![("platform", "beos"), ("arch", "x86_64")],
            Some(("a.zip", b"x".to_vec())),
            "platform",
        ),
        (
            vec![("platform", "linux"), ("arch", "mips")],
            Some(("a.zip", b"x".to_vec())),
            "arch",
        ),
        (
            vec![("arch", "x86_64")],
            Some(("a.zip", b"x".to_vec())),
            "platform",
        ),
        (
            vec![("platform", "linux"), ("arch", "aarch64")],
            None,
            "file",
        ),
        (
            vec![("platform", "linux"), ("arch", "aarch64")],
            Some(("a.zip", Vec::new())),
            "file",
        ),
        (
            vec![("platform", "linux"), ("arch", "aarch64")],
            Some(("notes.txt", b"x".to_vec())),
            "kind",
        ),
        (
            vec![("platform", "linux"), ("arch", "aarch64"), ("kind", "apk")],
            Some(("a.zip", b"x".to_vec())),
            "kind",
        ),
        (
            vec![
                ("platform", "linux"),
                ("arch", "aarch64"),
                ("signature", "not minisign"),
            ],
            Some(("a.zip", b"x".to_vec())),
            "signature",
        ),
        (
            vec![
                ("platform", "linux"),
                ("arch", "aarch64"),
                ("edSignature", "c2ln"),
            ],
            Some(("a.zip", b"x".to_vec())),
            "edSignature",
        ),
    ];
    for (fields, file, field) in cases {
        let a = upload(&s, &r, &fields, file).await;
        a.err(400, "BAD_REQUEST");
        assert!(
            a.fields().contains(&field.to_owned()),
            "{field}: {}",
            a.body
        );
    }
    // A version the updaters cannot compare.
    let odd = release(&s, &p, "build-77", json!({})).await;
    let a = upload(
        &s,
        &odd,
        &[("platform", "linux"), ("arch", "x86_64")],
        Some(("a.AppImage", b"x".to_vec())),
    )
    .await;
    a.err(400, "BAD_REQUEST");
    assert!(
        a.body.to_string().contains("semantic version"),
        "{}",
        a.body
    );
    let listed = s.get(&s.dev(&format!("releases/{r}/artifacts"))).await;
    assert_eq!(listed.ok()["artifacts"].as_array().unwrap().len(), 3);

    // Deleted with its file; deleted again: 404.
    let id = artifact["id"].as_str().unwrap();
    let key = artifact["key"].as_str().unwrap().to_owned();
    assert!(s.stored_file(&key).await.is_some());
    s.delete(&s.dev(&format!("releases/{r}/artifacts/{id}")))
        .await
        .ok();
    assert!(s.stored_file(&key).await.is_none(), "the file goes with it");
    s.delete(&s.dev(&format!("releases/{r}/artifacts/{id}")))
        .await
        .err(404, "ARTIFACT_NOT_FOUND");
    // Deleting the release removes its artifacts' files.
    let listed = s.get(&s.dev(&format!("releases/{r}/artifacts"))).await;
    let keys: Vec<String> = listed.ok()["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap().to_owned())
        .collect();
    s.delete(&s.dev(&format!("releases/{r}"))).await.ok();
    for key in keys {
        assert!(s.stored_file(&key).await.is_none());
    }
}

/// A vendor's own key pair: minisign (Tauri) and Sparkle's Ed25519.
struct VendorKeys {
    signing: ed25519_dalek::SigningKey,
    key_id: [u8; 8],
}

impl VendorKeys {
    fn new(seed: u8) -> Self {
        Self {
            signing: ed25519_dalek::SigningKey::from_bytes(&[seed; 32]),
            key_id: [seed; 8],
        }
    }

    /// Tauri's `pubkey` setting.
    fn minisign_public(&self) -> String {
        MinisignPublicKey::new(self.key_id, self.signing.verifying_key().as_bytes())
            .unwrap()
            .to_base64()
    }

    /// A `.sig` file's content, as a Tauri build writes it.
    fn minisign(&self, file: &[u8]) -> String {
        let digest: [u8; 64] = Blake2b512::digest(file).into();
        MinisignSignature::sign(
            self.key_id,
            &digest,
            "timestamp:1790000000\tfile:app",
            |m| self.signing.sign(m).to_bytes(),
        )
        .to_base64()
    }

    fn sparkle_public(&self) -> String {
        BASE64.encode(self.signing.verifying_key().as_bytes())
    }

    /// Sparkle's `edSignature`.
    fn sparkle(&self, file: &[u8]) -> String {
        BASE64.encode(self.signing.sign(file).to_bytes())
    }
}

#[tokio::test]
async fn vendor_signatures_must_verify_with_the_products_keys() {
    let s = TestServer::start().await;
    let vendor = VendorKeys::new(5);
    let stranger = VendorKeys::new(6);
    let p = product(
        &s,
        "Signed",
        json!({"updaterPublicKey": vendor.minisign_public(), "sparklePublicKey": vendor.sparkle_public()}),
    )
    .await;
    // Keys that are not keys are refused, naming the member.
    let bad = s
        .put(
            &s.dev(&format!("products/{p}")),
            &json!({"updaterPublicKey": "hello", "sparklePublicKey": "AAAA", "updateFeed": "everyone"}).to_string(),
        )
        .await;
    bad.err(400, "BAD_REQUEST");
    let mut fields = bad.fields();
    fields.sort();
    assert_eq!(
        fields,
        ["sparklePublicKey", "updateFeed", "updaterPublicKey"]
    );

    let r = release(&s, &p, "2.0.0", json!({})).await;
    let bytes = file_of(200_000, 2);
    // The right signatures are taken as given.
    let good_sig = vendor.minisign(&bytes);
    let good_ed = vendor.sparkle(&bytes);
    let a = upload(
        &s,
        &r,
        &[
            ("platform", "darwin"),
            ("arch", "universal"),
            ("signature", &good_sig),
            ("edSignature", &good_ed),
        ],
        Some(("Signed.app.tar.gz", bytes.clone())),
    )
    .await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.body["data"]["signature"], good_sig);
    assert_eq!(a.body["data"]["edSignature"], good_ed);
    assert_eq!(a.body["data"]["kind"], "tar.gz");
    // Another key's, or of another file: refused, nothing kept.
    let other = file_of(200_000, 3);
    for (field, fields) in [
        ("signature", vec![("signature", stranger.minisign(&bytes))]),
        ("signature", vec![("signature", vendor.minisign(&other))]),
        (
            "edSignature",
            vec![("edSignature", stranger.sparkle(&bytes))],
        ),
        ("edSignature", vec![("edSignature", vendor.sparkle(&other))]),
    ] {
        let mut parts: Vec<(&'static str, &str)> =
            vec![("platform", "windows"), ("arch", "x86_64")];
        parts.extend(fields.iter().map(|(n, v)| (*n, v.as_str())));
        let a = upload(&s, &r, &parts, Some(("Signed.msi", bytes.clone()))).await;
        a.err(400, "BAD_REQUEST");
        assert_eq!(a.fields(), [field], "{}", a.body);
    }
    let listed = s.get(&s.dev(&format!("releases/{r}/artifacts"))).await;
    assert_eq!(listed.ok()["artifacts"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_tauri_feed_is_gated_phased_and_signed_for_tauris_own_verifier() {
    let s = TestServer::start().await;
    let p = product(&s, "Tauri App", json!({"signUpdates": true})).await;
    let old = release(&s, &p, "1.0.0", json!({})).await;
    let new = release(&s, &p, "1.2.0", json!({"notes": "New *things*"})).await;
    let bytes = file_of(150_000, 4);
    for (r, name) in [
        (&old, "App_1.0.0.app.tar.gz"),
        (&new, "App_1.2.0.app.tar.gz"),
    ] {
        let a = upload(
            &s,
            r,
            &[("platform", "darwin"), ("arch", "aarch64")],
            Some((name, bytes.clone())),
        )
        .await;
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!(a.body["data"]["serverSigned"], true);
    }
    let (key, _) = license_of(&s, &p).await;
    let url = updates(&s, &p, "tauri/darwin/aarch64/1.0.0");

    // Tauri's own check: the signature the feed carries, against the key `GET public-key`
    // gives as Tauri's `pubkey`, over the bytes the feed's URL serves.
    let answer = get(&s, &url, Some(&key)).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["cache-control"].to_str().unwrap(),
        "private, no-store"
    );
    let update: Value = answer.json().await.unwrap();
    assert_eq!(update["version"], "1.2.0");
    assert_eq!(update["notes"], "New *things*");
    assert!(
        licensing_core::Timestamp::parse(update["pub_date"].as_str().unwrap()).is_ok(),
        "RFC 3339: {update}"
    );
    let keys = s.get(&s.dev("public-key")).await;
    let pubkey = keys.ok()["updaterKeys"]["minisign"]
        .as_str()
        .unwrap()
        .to_owned();
    let pubkey = String::from_utf8(BASE64.decode(pubkey).unwrap()).unwrap();
    let pubkey = minisign_verify::PublicKey::decode(&pubkey).unwrap();
    let signature = String::from_utf8(
        BASE64
            .decode(update["signature"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let signature = minisign_verify::Signature::decode(&signature).unwrap();
    assert!(
        signature.trusted_comment().contains("version:1.2.0"),
        "{}",
        signature.trusted_comment()
    );
    let downloaded = get(&s, update["url"].as_str().unwrap(), Some(&key)).await;
    assert_eq!(downloaded.status(), 200);
    let downloaded = downloaded.bytes().await.unwrap();
    assert_eq!(downloaded.as_ref(), bytes.as_slice());
    pubkey.verify(&downloaded, &signature, false).unwrap();
    assert!(pubkey.verify(b"another file", &signature, false).is_err());
    // The minisign key id is the first 8 bytes of the signing key's kid.
    let kid = keys.ok()["signingKeys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["state"] == "active")
        .unwrap()["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    let minisign_text = String::from_utf8(
        BASE64
            .decode(keys.ok()["updaterKeys"]["minisign"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let line = minisign_text.lines().nth(1).unwrap();
    assert_eq!(hex::encode(&BASE64.decode(line).unwrap()[2..10]), kid);

    // Nothing newer: 204; another architecture: 204.
    for path in [
        "tauri/darwin/aarch64/1.2.0",
        "tauri/darwin/x86_64/1.0.0",
        "tauri/windows/x86_64/1.0.0",
    ] {
        assert_eq!(
            get(&s, &updates(&s, &p, path), Some(&key)).await.status(),
            204,
            "{path}"
        );
    }

    // The gate: no credential 401, the key in the query 400 (before anything else), an
    // unknown key 404, a suspended license 403, another product's license 403.
    assert_eq!(
        refusal(get(&s, &url, None).await).await,
        (401, "UNAUTHORIZED".into())
    );
    assert_eq!(
        refusal(get(&s, &format!("{url}?licenseKey={key}"), Some(&key)).await).await,
        (400, "BAD_REQUEST".into())
    );
    assert_eq!(
        refusal(get(&s, &format!("{url}?key={key}"), None).await).await,
        (400, "BAD_REQUEST".into())
    );
    assert_eq!(
        refusal(get(&s, &url, Some("AAAAA-BBBBB-CCCCC-DDDDD-EEEEE")).await).await,
        (404, "LICENSE_NOT_FOUND".into())
    );
    let other = product(&s, "Other", json!({})).await;
    let (others, _) = license_of(&s, &other).await;
    assert_eq!(
        refusal(get(&s, &url, Some(&others)).await).await,
        (403, "NO_ACCESS_TO_RELEASE".into())
    );
    // X-License-Key is the same credential.
    let by_header = s
        .client
        .get(&url)
        .header("x-license-key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(by_header.status(), 200);
    suspend(&s, &key).await;
    let now = get(&s, &url, Some(&key)).await;
    assert_eq!(refusal(now).await, (403, "LICENSE_SUSPENDED".into()));
}

#[tokio::test]
async fn rollouts_are_phased_by_license_critical_releases_skip_them_and_yanked_ones_are_gone() {
    let s = TestServer::start().await;
    let p = product(&s, "Phased", json!({"signUpdates": true})).await;
    let r = release(&s, &p, "3.0.0", json!({"rolloutPercent": 0})).await;
    let a = upload(
        &s,
        &r,
        &[("platform", "windows"), ("arch", "x86_64")],
        Some(("Phased_3.0.0_x64-setup.exe", file_of(1000, 5))),
    )
    .await;
    let artifact = a.ok().clone();
    let (key, _) = license_of(&s, &p).await;
    let url = updates(&s, &p, "tauri/windows/x86_64/2.0.0");
    assert_eq!(
        get(&s, &url, Some(&key)).await.status(),
        204,
        "0% offers nothing"
    );
    // Critical: past the rollout.
    let update = |body: Value| {
        let s = &s;
        let r = r.clone();
        async move {
            let current = s.get(&s.dev(&format!("releases/{r}"))).await.ok().clone();
            let mut data = json!({
                "version": current["version"], "productId": current["productId"], "status": current["status"],
                "setAsLatest": false, "branchId": null, "metadata": [], "licenseIds": [], "keepExistingFile": true,
            });
            data.as_object_mut()
                .unwrap()
                .extend(body.as_object().unwrap().clone());
            let response = s
                .client
                .put(s.dev(&format!("releases/{r}")))
                .bearer_auth(s.key())
                .multipart(Form::new().text("data", data.to_string()))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
        }
    };
    update(json!({"critical": true})).await;
    let offered = get(&s, &url, Some(&key)).await;
    assert_eq!(offered.status(), 200);
    let offered: Value = offered.json().await.unwrap();
    assert_eq!(offered["version"], "3.0.0");
    // The update kept the artifact, the rollout and the notes it did not name.
    let shown = s.get(&s.dev(&format!("releases/{r}"))).await;
    assert_eq!(shown.ok()["artifacts"].as_array().unwrap().len(), 1);
    assert_eq!(shown.ok()["rolloutPercent"], 0);

    // At 50%, the same licenses are in every time, about half of them.
    update(json!({"critical": false, "rolloutPercent": 50})).await;
    let mut inside = 0;
    let mut keys = Vec::new();
    for _ in 0..24 {
        keys.push(license_of(&s, &p).await.0);
    }
    for key in &keys {
        let first = get(&s, &url, Some(key)).await.status();
        let second = get(&s, &url, Some(key)).await.status();
        assert_eq!(first, second, "deterministic");
        if first == 200 {
            inside += 1;
        }
    }
    assert!(
        (3..=21).contains(&inside),
        "{inside} of 24 in a 50% rollout"
    );

    // Deprecated: never a target; archived: yanked, its downloads 410.
    let download = offered["url"].as_str().unwrap().to_owned();
    update(json!({"status": "DEPRECATED", "rolloutPercent": 100})).await;
    assert_eq!(get(&s, &url, Some(&key)).await.status(), 204);
    assert_eq!(
        get(&s, &download, Some(&key)).await.status(),
        200,
        "still downloadable"
    );
    update(json!({"status": "ARCHIVED"})).await;
    assert_eq!(
        refusal(get(&s, &download, Some(&key)).await).await,
        (410, "RELEASE_YANKED".into())
    );
    let _ = artifact;
}

#[tokio::test]
async fn downloads_stream_with_ranges_and_are_recorded() {
    let s = TestServer::start().await;
    let p = product(&s, "Ranged", json!({})).await;
    let r = release(&s, &p, "1.0.0", json!({})).await;
    let bytes = file_of(1_000_000, 6);
    let a = upload(
        &s,
        &r,
        &[("platform", "linux"), ("arch", "x86_64")],
        Some(("Ranged.AppImage", bytes.clone())),
    )
    .await;
    let artifact = a.ok().clone();
    let (key, license_id) = license_of(&s, &p).await;
    // An endpoint that hears of downloads (its deliveries fail: nothing listens there).
    let hook = s
        .post(
            &s.dev("webhooks"),
            r#"{"url":"https://hooks.example.com/downloads","eventTypes":["release.downloaded"]}"#,
        )
        .await;
    let hook = hook.ok()["id"].as_str().unwrap().to_owned();
    let url = updates(
        &s,
        &p,
        &format!(
            "download/{}/Ranged.AppImage",
            artifact["id"].as_str().unwrap()
        ),
    );
    let whole = get(&s, &url, Some(&key)).await;
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.headers()["content-length"], "1000000");
    assert_eq!(whole.headers()["accept-ranges"], "bytes");
    let tag = whole.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(tag, format!("\"{}\"", sha256_hex(&bytes)));
    assert_eq!(whole.bytes().await.unwrap().as_ref(), bytes.as_slice());

    let ranged = |range: &'static str| {
        let s = &s;
        let url = url.clone();
        let key = key.clone();
        async move {
            s.client
                .get(&url)
                .header("authorization", format!("License {key}"))
                .header("range", range)
                .send()
                .await
                .unwrap()
        }
    };
    let part = ranged("bytes=1000-1999").await;
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], "bytes 1000-1999/1000000");
    assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[1000..2000]);
    // Ranges that begin past the first of the PostgreSQL store's 256 KiB chunks, and across.
    let across = ranged("bytes=262000-600000").await;
    assert_eq!(across.status(), 206);
    assert_eq!(
        across.bytes().await.unwrap().as_ref(),
        &bytes[262_000..=600_000]
    );
    let open = ranged("bytes=524288-").await;
    assert_eq!(open.status(), 206);
    assert_eq!(open.bytes().await.unwrap().as_ref(), &bytes[524_288..]);
    let tail = ranged("bytes=-10").await;
    assert_eq!(tail.status(), 206);
    assert_eq!(tail.bytes().await.unwrap().as_ref(), &bytes[999_990..]);
    let past = ranged("bytes=1000000-").await;
    assert_eq!(past.status(), 416);
    assert_eq!(past.headers()["content-range"], "bytes */1000000");
    // HEAD: the headers only; If-None-Match: 304.
    let head = s
        .client
        .head(&url)
        .header("authorization", format!("License {key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["content-length"], "1000000");
    let cached = s
        .client
        .get(&url)
        .header("authorization", format!("License {key}"))
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(cached.status(), 304);
    // Another name, another id: 404.
    let wrong = updates(
        &s,
        &p,
        &format!(
            "download/{}/other.AppImage",
            artifact["id"].as_str().unwrap()
        ),
    );
    assert_eq!(
        refusal(get(&s, &wrong, Some(&key)).await).await.1,
        "ARTIFACT_NOT_FOUND"
    );

    // Downloads raise `release.downloaded` (once per license, artifact and address in ten
    // minutes: the ranges above are the same download).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let page = s
            .get(&s.dev(&format!("webhooks/{hook}/deliveries?pageSize=100")))
            .await;
        let deliveries = page.ok()["deliveries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !deliveries.is_empty() {
            assert_eq!(deliveries.len(), 1, "{deliveries:?}");
            assert_eq!(deliveries[0]["eventType"], "release.downloaded");
            let payload: Value =
                serde_json::from_str(deliveries[0]["payload"].as_str().unwrap()).unwrap();
            assert_eq!(payload["data"]["artifactId"], artifact["id"], "{payload}");
            assert_eq!(payload["data"]["licenseKey"], key.as_str(), "{payload}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no release.downloaded event"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Each download is in the license's request history.
    let history = s.dev(&format!(
        "licenses/id/{license_id}/requests?endpoint=DOWNLOAD"
    ));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let page = s.get(&history).await;
        let entries = page.ok()["requests"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !entries.is_empty() {
            assert!(
                entries.iter().all(|e| e["endpoint"] == "DOWNLOAD"),
                "{entries:?}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no DOWNLOAD entry in {}",
            page.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn velopack_reads_its_feed_and_packages_under_a_feed_token() {
    let s = TestServer::start().await;
    let p = product(&s, "Velo App", json!({})).await;
    let r = release(&s, &p, "1.3.0", json!({"notes": "Now with *more*"})).await;
    let full = file_of(70_000, 7);
    let delta = file_of(9_000, 8);
    for (name, bytes) in [
        ("VeloApp-1.3.0-full.nupkg", &full),
        ("VeloApp-1.3.0-delta.nupkg", &delta),
    ] {
        let a = upload(
            &s,
            &r,
            &[("platform", "windows"), ("arch", "x86_64")],
            Some((name, bytes.clone())),
        )
        .await;
        assert_eq!(a.status, 201, "{}", a.body);
    }
    let (key, _) = license_of(&s, &p).await;
    let minted = s
        .client
        .post(updates(&s, &p, "token"))
        .json(&json!({"licenseKey": key}))
        .send()
        .await
        .unwrap();
    assert_eq!(minted.status(), 200);
    let minted: Value = minted.json().await.unwrap();
    let token = minted["data"]["token"].as_str().unwrap().to_owned();
    assert!(minted["data"]["expiresAt"].is_string());

    // Velopack's own HTTP source reads the feed (adding its own query) and downloads the full
    // package by its relative name; both are checked by its own code.
    let base = updates(&s, &p, &format!("t/{token}/velopack"));
    let (feed, downloaded) = tokio::task::spawn_blocking({
        let base = base.clone();
        move || {
            use velopack::sources::UpdateSource as _;
            let source = velopack::sources::HttpSource::new(&base);
            let app = velopack::bundle::Manifest {
                id: "VeloApp".into(),
                version: licensing_core::updates::SemVer::new(1, 0, 0),
                ..Default::default()
            };
            let feed = source.get_release_feed("win", &app, "").unwrap();
            let dir = tempfile::tempdir().unwrap();
            let target = dir.path().join("full.nupkg");
            let asset = feed
                .Assets
                .iter()
                .find(|a| a.Type == "Full")
                .unwrap()
                .clone();
            source
                .download_release_entry(&asset, &target, None)
                .unwrap();
            (feed, std::fs::read(target).unwrap())
        }
    })
    .await
    .unwrap();
    assert_eq!(feed.Assets.len(), 2);
    let full_asset = feed.Assets.iter().find(|a| a.Type == "Full").unwrap();
    assert_eq!(full_asset.Version, "1.3.0");
    assert_eq!(full_asset.FileName, "VeloApp-1.3.0-full.nupkg");
    assert_eq!(full_asset.PackageId, "VeloApp");
    assert_eq!(full_asset.Size, 70_000);
    assert!(full_asset.SHA256.eq_ignore_ascii_case(&sha256_hex(&full)));
    assert_eq!(full_asset.NotesMarkdown, "Now with *more*");
    assert_eq!(downloaded, full);
    // The legacy RELEASES file: SHA1, name and size per package.
    let legacy = get(&s, &format!("{base}/RELEASES"), None).await;
    assert_eq!(legacy.status(), 200);
    let legacy = legacy.text().await.unwrap();
    let line = legacy.lines().find(|l| l.contains("-full.nupkg")).unwrap();
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts[1..], ["VeloApp-1.3.0-full.nupkg", "70000"]);
    assert_eq!(
        parts[0],
        hex::encode(<sha1::Sha1 as sha1::Digest>::digest(&full)).to_uppercase()
    );

    // Tokens: tampered or of another product 401; suspending the license revokes it.
    // One character of the signature changed (to one it is not: the same one would leave the
    // token intact).
    let at = token.len() - 10;
    let swapped = if &token[at..=at] == "A" { "B" } else { "A" };
    let tampered = format!("{}{swapped}{}", &token[..at], &token[at + 1..]);
    assert_ne!(tampered, token);
    let other = product(&s, "Other", json!({})).await;
    for url in [
        updates(&s, &p, &format!("t/{tampered}/velopack/releases.win.json")),
        updates(&s, &p, "t/ft1_nonsense/velopack/releases.win.json"),
        updates(&s, &other, &format!("t/{token}/velopack/releases.win.json")),
    ] {
        assert_eq!(
            refusal(get(&s, &url, None).await).await,
            (401, "UNAUTHORIZED".into()),
            "{url}"
        );
    }
    let again = get(&s, &format!("{base}/releases.win.json"), None).await;
    assert_eq!(again.status(), 200);
    suspend(&s, &key).await;
    let suspended = get(&s, &format!("{base}/releases.win.json"), None).await;
    assert_eq!(refusal(suspended).await, (403, "LICENSE_SUSPENDED".into()));
    let minted = s
        .client
        .post(updates(&s, &p, "token"))
        .json(&json!({"licenseKey": key}))
        .send()
        .await
        .unwrap();
    assert_eq!(refusal(minted).await, (403, "LICENSE_SUSPENDED".into()));
}

/// What the updaters' JavaScript (electron-updater, feedparser with Node's Ed25519; from
/// `LICENSING_NODE_MODULES`, installed by `.ci/run`) says of a feed; `None` with a notice when it
/// is not installed (a failure under `CI`).
async fn javascript(args: &[&str]) -> Option<Value> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    // The server answers on this test's runtime: node runs beside it.
    tokio::task::spawn_blocking(move || run_javascript(&args))
        .await
        .unwrap()
}

fn run_javascript(args: &[String]) -> Option<Value> {
    let modules = std::env::var("LICENSING_NODE_MODULES").ok();
    let usable = modules
        .as_deref()
        .is_some_and(|m| std::path::Path::new(m).join("electron-updater").exists());
    if !usable {
        let notice = "LICENSING_NODE_MODULES does not name a node_modules with electron-updater and feedparser (.ci/run installs them): the check with the updaters' JavaScript is skipped";
        assert!(
            std::env::var_os("CI").is_none(),
            "{notice} (required when CI is set)"
        );
        eprintln!("{notice}");
        return None;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/updaters.js");
    let output = std::process::Command::new("node")
        .arg(script)
        .args(args)
        .env("NODE_PATH", modules.unwrap_or_default())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "node: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

#[tokio::test]
async fn sparkle_and_electron_read_their_feeds_with_their_own_parsers() {
    let s = TestServer::start().await;
    let p = product(&s, "Mac & Win", json!({"signUpdates": true})).await;
    let beta = s
        .post(
            &s.dev(&format!("products/{p}/branches")),
            r#"{"name":"beta"}"#,
        )
        .await;
    let beta = beta.ok()["id"].as_str().unwrap().to_owned();
    let stable = release(
        &s,
        &p,
        "1.1.0",
        json!({"notes": "<b>Bold</b> & co", "critical": true}),
    )
    .await;
    let preview = release(&s, &p, "1.2.0-beta.1", json!({"branchId": beta})).await;
    let zip = file_of(40_000, 9);
    let exe = file_of(50_000, 10);
    for r in [&stable, &preview] {
        for (platform, name, bytes) in [
            ("darwin", "Mac.zip", &zip),
            ("windows", "Win-Setup.exe", &exe),
        ] {
            let a = upload(
                &s,
                r,
                &[("platform", platform), ("arch", "universal")],
                Some((name, bytes.clone())),
            )
            .await;
            assert_eq!(a.status, 201, "{}", a.body);
        }
    }
    let (key, _) = license_of(&s, &p).await;
    let keys = s.get(&s.dev("public-key")).await;
    let sparkle_key = keys.ok()["updaterKeys"]["sparkle"]
        .as_str()
        .unwrap()
        .to_owned();

    // The appcast answers and is XML any parser reads.
    let appcast = updates(&s, &p, "sparkle/appcast.xml?channel=beta");
    let raw = get(&s, &appcast, Some(&key)).await;
    assert_eq!(raw.status(), 200);
    assert!(
        raw.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/rss+xml")
    );
    let text = raw.text().await.unwrap();
    assert!(text.contains("&lt;b&gt;Bold&lt;/b&gt; &amp; co"), "{text}");

    let Some(read) = javascript(&["sparkle", &appcast, &key, &sparkle_key]).await else {
        return;
    };
    let items = read["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{read}");
    assert_eq!(items[0]["version"], "1.2.0-beta.1");
    assert_eq!(items[0]["channel"], "beta");
    assert_eq!(items[1]["version"], "1.1.0");
    assert_eq!(items[1]["channel"], Value::Null);
    assert_eq!(items[1]["critical"], true);
    for item in items {
        assert_eq!(item["lengthMatches"], true, "{item}");
        assert_eq!(item["signatureVerifies"], true, "{item}");
    }
    // Under a feed token (no header): the appcast, and each enclosure's download.
    let minted = s
        .client
        .post(updates(&s, &p, "token"))
        .json(&json!({"licenseKey": key}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let token = minted["data"]["token"].as_str().unwrap().to_owned();
    let under_token = updates(
        &s,
        &p,
        &format!("t/{token}/sparkle/appcast.xml?channel=beta"),
    );
    let read = javascript(&["sparkle", &under_token, "-", &sparkle_key])
        .await
        .unwrap();
    let items = read["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{read}");
    for item in items {
        assert!(
            item["url"]
                .as_str()
                .unwrap()
                .contains(&format!("/t/{token}/download/"))
        );
        assert_eq!(item["signatureVerifies"], true, "{item}");
    }
    // The stable appcast lists the stable release only.
    let stable_read = javascript(&[
        "sparkle",
        &updates(&s, &p, "sparkle/appcast.xml"),
        &key,
        &sparkle_key,
    ])
    .await
    .unwrap();
    assert_eq!(stable_read["items"].as_array().unwrap().len(), 1);

    // electron-updater reads latest.yml (its default channel) and beta.yml, resolves the files
    // and the SHA-512 of each download matches.
    let latest = javascript(&["electron", &updates(&s, &p, "electron/latest.yml"), &key])
        .await
        .unwrap();
    assert_eq!(latest["version"], "1.1.0", "{latest}");
    let files = latest["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{latest}");
    assert_eq!(files[0]["sha512Matches"], true);
    assert_eq!(files[0]["sizeMatches"], true);
    let mac = javascript(&["electron", &updates(&s, &p, "electron/beta-mac.yml"), &key])
        .await
        .unwrap();
    assert_eq!(mac["version"], "1.2.0-beta.1", "{mac}");
    assert!(
        mac["files"][0]["url"]
            .as_str()
            .unwrap()
            .ends_with("/Mac.zip")
    );
    assert_eq!(mac["files"][0]["sha512Matches"], true);
}

#[tokio::test]
async fn public_feeds_need_no_license_are_cacheable_and_the_generic_feed_is_signed() {
    let s = TestServer::start().await;
    let p = product(&s, "Open", json!({"updateFeed": "public"})).await;
    let r = release(&s, &p, "4.0.0", json!({})).await;
    let restricted = release(&s, &p, "5.0.0", json!({})).await;
    for (r, name) in [
        (&r, "Open-4.0.0.AppImage"),
        (&restricted, "Open-5.0.0.AppImage"),
    ] {
        upload(
            &s,
            r,
            &[("platform", "linux"), ("arch", "x86_64")],
            Some((name, file_of(2_000, 11))),
        )
        .await
        .ok();
    }
    // 5.0.0 only for one license: anyone sees 4.0.0.
    let (key, license_id) = license_of(&s, &p).await;
    let current = s
        .get(&s.dev(&format!("releases/{restricted}")))
        .await
        .ok()
        .clone();
    let data = json!({
        "version": current["version"], "productId": p, "status": "PUBLISHED", "setAsLatest": false,
        "branchId": null, "metadata": [], "licenseIds": [license_id], "keepExistingFile": true,
    });
    let response = s
        .client
        .put(s.dev(&format!("releases/{restricted}")))
        .bearer_auth(s.key())
        .multipart(Form::new().text("data", data.to_string()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let latest = updates(&s, &p, "latest?version=1.0.0&platform=linux&arch=x86_64");
    let anyone = get(&s, &latest, None).await;
    assert_eq!(anyone.status(), 200);
    assert!(
        anyone.headers()["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("public")
    );
    let body: Value = anyone.json().await.unwrap();
    assert_eq!(body["data"]["release"]["version"], "4.0.0");

    // The license sees its own release, in an answer signed like verify's.
    let keys = s.public_keys().await;
    let answer = get(&s, &latest, Some(&key)).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["cache-control"], "private, no-store");
    let signature = answer.headers()["x-signature"].to_str().unwrap().to_owned();
    let kid = answer.headers()["x-signature-key-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let bytes = answer.bytes().await.unwrap();
    let query = "version=1.0.0&platform=linux&arch=x86_64";
    keys.verify_response(Some(&kid), query.as_bytes(), &bytes, &signature)
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["data"]["release"]["version"], "5.0.0");
    assert!(
        body["data"]["release"]["artifacts"][0]["url"]
            .as_str()
            .unwrap()
            .contains("/download/")
    );
    // Nothing newer: 204.
    assert_eq!(
        get(&s, &updates(&s, &p, "latest?version=5.0.0"), Some(&key))
            .await
            .status(),
        204
    );
    // A public feed's ETag answers 304.
    let tauri = updates(&s, &p, "tauri/linux/x86_64/1.0.0");
    let first = get(&s, &tauri, None).await;
    // Unsigned artifacts are not offered to Tauri (it needs a signature): 204.
    assert_eq!(first.status(), 204);
    let velopack = updates(&s, &p, "velopack/releases.linux.json");
    let first = get(&s, &velopack, None).await;
    assert_eq!(first.status(), 200);
    let tag = first.headers()["etag"].to_str().unwrap().to_owned();
    let again = s
        .client
        .get(&velopack)
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    // Another team's product is not found under this team's path.
    let theirs = s.other_team().await;
    let url = format!(
        "{}/api/v1/client/teams/{}/updates/{p}/latest",
        s.base, theirs.team_id
    );
    assert_eq!(
        refusal(get(&s, &url, None).await).await,
        (404, "PRODUCT_NOT_FOUND".into())
    );
}

/// An artifact whose client breaks off mid-file: its temporary file goes, no artifact is
/// recorded, and nothing is kept in the file store.
#[tokio::test]
async fn a_half_uploaded_artifact_leaves_nothing_behind() {
    let s = TestServer::start().await;
    let p = product(&s, "Half", json!({})).await;
    let r = release(&s, &p, "1.0.0", json!({})).await;
    let boundary = "artifact-boundary-7f3a";
    let head = format!(
        "--{boundary}\r\ncontent-disposition: form-data; name=\"platform\"\r\n\r\nlinux\r\n\
         --{boundary}\r\ncontent-disposition: form-data; name=\"arch\"\r\n\r\nx86_64\r\n\
         --{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"half.AppImage\"\r\n\
         content-type: application/octet-stream\r\n\r\n"
    );
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    sender.send(Ok(head.into_bytes())).await.unwrap();
    sender.send(Ok(vec![1; 512 * 1024])).await.unwrap();
    let body =
        reqwest::Body::wrap_stream(futures_util::stream::unfold(receiver, |mut r| async move {
            r.recv().await.map(|item| (item, r))
        }));
    let request = s
        .client
        .post(s.dev(&format!("releases/{r}/artifacts")))
        .bearer_auth(s.key())
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send();
    let request = tokio::spawn(request);
    let tmp = s.dir.path().join("files/tmp");
    let count = || std::fs::read_dir(&tmp).map_or(0, Iterator::count);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the upload never reached the file store"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sender
        .send(Err(std::io::Error::other("the client went away")))
        .await
        .unwrap();
    assert!(
        request.await.unwrap().is_err(),
        "the request was not completed"
    );
    while count() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "a temporary file was left behind"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let listed = s.get(&s.dev(&format!("releases/{r}/artifacts"))).await;
    assert_eq!(listed.ok()["artifacts"], json!([]));
    assert!(
        s.files.stored_keys().await.unwrap().is_empty(),
        "nothing stored"
    );
}

/// An export carries each artifact with its file; the import restores both, and the restored
/// server serves the same bytes.
#[tokio::test]
async fn archives_carry_artifacts_and_their_files() {
    let s = TestServer::start().await;
    let p = product(&s, "Archived", json!({})).await;
    let r = release(
        &s,
        &p,
        "1.5.0",
        json!({"notes": "kept", "rolloutPercent": 70}),
    )
    .await;
    let bytes = file_of(300_000, 12);
    let a = upload(
        &s,
        &r,
        &[("platform", "windows"), ("arch", "aarch64")],
        Some(("Archived-1.5.0-full.nupkg", bytes.clone())),
    )
    .await;
    let artifact = a.ok().clone();
    let mut archive = Vec::new();
    licensing_server::archive::export(&s.store, &s.files, &mut archive)
        .await
        .unwrap();
    let text = String::from_utf8(archive.clone()).unwrap();
    assert!(text.contains(r#""version":8"#));

    let dir = tempfile::tempdir().unwrap();
    let (restored, _) = crate::helpers::open_test_store(dir.path()).await;
    let files = licensing_server::files::FileStore::new(dir.path()).unwrap();
    let counts = licensing_server::archive::import(&restored, &files, archive.as_slice())
        .await
        .unwrap();
    assert!(counts.files >= 1);
    use licensing_core::store::ReleaseStore as _;
    let release = restored
        .get_release(s.team_id(), r.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(release.rollout_percent.get(), 70);
    assert_eq!(release.notes.as_deref(), Some("kept"));
    assert_eq!(release.artifacts.len(), 1);
    let key = artifact["key"].as_str().unwrap();
    assert_eq!(release.artifacts[0].key, key);
    assert_eq!(files.read(key).await.unwrap().unwrap(), bytes);
    let report = licensing_server::check::check(&restored, &files, dir.path())
        .await
        .unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(
        report
            .checked
            .get("release artifacts")
            .is_some_and(|n| *n == 1)
    );
}
