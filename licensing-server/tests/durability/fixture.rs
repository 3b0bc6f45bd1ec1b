//! Stores written by earlier versions open in this one: `tests/fixtures/sled-format-N.zip` is a
//! data directory written by the server of store format N (its team, customer, product, release
//! file, license and device are named in `sled-format-N.json`). Each fixture is unpacked,
//! checked, served and read back. Write the fixture of a new format with
//! `cargo test -p licensing-server --test durability write_format_fixture -- --ignored` when
//! the format changes, and commit it beside the older ones.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::child::{Api, ChildServer, Team, create_team, run};

/// The store format the server writes.
const CURRENT_FORMAT: u32 = licensing_server::store::sled::FORMAT;

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub(crate) fn unzip(zip: &Path, into: &Path) {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let Some(name) = entry.enclosed_name() else {
            panic!("unsafe path in {}", zip.display())
        };
        let path = into.join(name);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).unwrap();
            continue;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
}

async fn verify(server: &ChildServer, team: &str, key: &str, device: &str) -> Value {
    verify_body(
        server,
        team,
        &json!({"licenseKey": key, "hardwareIdentifier": device}),
    )
    .await
}

async fn verify_body(server: &ChildServer, team: &str, body: &Value) -> Value {
    reqwest::Client::new()
        .post(format!(
            "{}/api/v1/client/teams/{team}/verification/verify",
            server.base
        ))
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Every fixture (the current format's among them) opens: `check` finds it sound, the server
/// serves its license to its device, and its records and release file are as written.
#[tokio::test]
async fn stores_of_every_known_format_open() {
    let mut formats = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(n) = name
            .strip_prefix("sled-format-")
            .and_then(|n| n.strip_suffix(".zip"))
        {
            formats.push(n.parse::<u32>().unwrap());
        }
    }
    formats.sort_unstable();
    assert!(
        formats.contains(&CURRENT_FORMAT),
        "no fixture of the current format {CURRENT_FORMAT}: write it (see this file's docs)"
    );
    for format in formats {
        let dir = tempfile::tempdir().unwrap();
        unzip(
            &fixtures().join(format!("sled-format-{format}.zip")),
            dir.path(),
        );
        let facts: Value = serde_json::from_slice(
            &std::fs::read(fixtures().join(format!("sled-format-{format}.json"))).unwrap(),
        )
        .unwrap();
        let data = dir.path().to_str().unwrap();
        let checked = run(&["check", "--data-dir", data], &[]);
        assert!(
            checked.status.success(),
            "format {format}: {}{}",
            String::from_utf8_lossy(&checked.stdout),
            String::from_utf8_lossy(&checked.stderr)
        );
        let server = ChildServer::start(dir.path(), &[]);
        let team = Team {
            id: facts["teamId"].as_str().unwrap().to_owned(),
            api_key: facts["apiKey"].as_str().unwrap().to_owned(),
            public_key: String::new(),
            signing_key: facts["signingKey"].as_str().unwrap().to_owned(),
        };
        let api = Api::new(&server, &team);
        let key = facts["licenseKey"].as_str().unwrap();
        let verified = verify(&server, &team.id, key, facts["device"].as_str().unwrap()).await;
        assert_eq!(
            verified["result"]["code"], "VALID",
            "format {format}: {verified}"
        );
        // What the license grants (formats before 6 had no entitlements: none).
        let granted = match facts["entitlementCode"].as_str() {
            Some(code) => json!([code]),
            None => json!([]),
        };
        assert_eq!(
            verified["data"]["license"]["entitlements"], granted,
            "format {format}: {verified}"
        );
        let license = api.get(&format!("licenses/{key}")).await;
        assert_eq!(
            license["customerIds"][0], facts["customerId"],
            "format {format}: {license}"
        );
        assert_eq!(license["productIds"][0], facts["productId"]);
        assert_eq!(license["hwidLimit"], 1, "{license}");
        // The session members (formats before 7 had none: null).
        let sessions = if format >= 7 {
            json!([2, 600])
        } else {
            json!([null, null])
        };
        assert_eq!(
            json!([license["sessionLimit"], license["sessionTtl"]]),
            sessions,
            "format {format}: {license}"
        );
        // The device's name and platform (formats from 11; none before).
        let hwids = api
            .get(&format!(
                "licenses/id/{}/hwid",
                license["id"].as_str().unwrap()
            ))
            .await;
        let label = if format >= 11 {
            json!(["Fixture laptop", "linux x86_64"])
        } else {
            json!([null, null])
        };
        assert_eq!(
            json!([hwids["hwids"][0]["name"], hwids["hwids"][0]["platform"]]),
            label,
            "format {format}: {hwids}"
        );
        // The limit of one device holds: the stored device still counts.
        let other = verify(&server, &team.id, key, "fixture-device-2").await;
        assert_eq!(other["result"]["code"], "HWID_LIMIT_REACHED", "{other}");
        let releases = api.get("releases").await;
        assert_eq!(
            releases["releases"][0]["file"]["checksum"], facts["fileChecksum"],
            "format {format}: {releases}"
        );
        let public = api.get("public-key").await;
        assert_eq!(public["signingKey"], facts["signingKey"]);
        // A license on a policy (formats from 8): it inherits the policy's limit and keeps its
        // override.
        if let Some(key) = facts["policyLicenseKey"].as_str() {
            let on_policy = api.get(&format!("licenses/{key}")).await;
            assert_eq!(on_policy["policyId"], facts["policyId"], "{on_policy}");
            assert_eq!(on_policy["hwidLimit"], 2, "{on_policy}");
            assert_eq!(on_policy["ipLimit"], 5, "{on_policy}");
            assert_eq!(on_policy["overrides"], json!(["ipLimit"]), "{on_policy}");
            let verified = verify(&server, &team.id, key, "fixture-device-3").await;
            assert_eq!(verified["result"]["code"], "VALID", "{verified}");
        } else {
            // Older licenses are on no policy.
            assert_eq!(license["policyId"], serde_json::Value::Null);
            assert_eq!(license["overrides"], json!([]));
        }
    }
}

/// Writes `tests/fixtures/sled-format-<CURRENT_FORMAT>.zip` and `.json` from this server.
#[tokio::test]
#[ignore = "writes the fixture of the current store format; run it when the format changes"]
async fn write_format_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let team = create_team(dir.path());
    let mut server = ChildServer::start(dir.path(), &[]);
    let api = Api::new(&server, &team);
    let file = b"fixture release file\n".repeat(100);
    let (product, _) = api.product_with_release(file.clone()).await;
    let customer = api
        .post(
            "customers",
            json!({"fullName": "Fixture Customer", "email": "fixture@example.com"}),
        )
        .await;
    let entitlement = api
        .post(
            "entitlements",
            json!({"name": "Fixture", "code": "FIXTURE"}),
        )
        .await;
    let license = api
        .post(
            "licenses",
            json!({"expirationType": "NEVER", "productIds": [product], "customerIds": [customer["id"]], "hwidLimit": 1, "entitlementIds": [entitlement["id"]], "sessionLimit": 2, "sessionTtl": 600}),
        )
        .await;
    let plan = api
        .post(
            "policies",
            json!({"name": "Fixture plan", "hwidLimit": 2, "graceDays": 3}),
        )
        .await;
    let on_policy = api
        .post("licenses", json!({"policyId": plan["id"], "ipLimit": 5}))
        .await;
    let key = license["licenseKey"].as_str().unwrap();
    let device = "fixture-device-1";
    let verified = verify_body(
        &server,
        &team.id,
        &json!({"licenseKey": key, "hardwareIdentifier": device, "deviceName": "Fixture laptop", "platform": "linux x86_64"}),
    )
    .await;
    assert_eq!(verified["result"]["code"], "VALID", "{verified}");
    server.terminate();
    assert!(server.wait(std::time::Duration::from_secs(30)).success());

    let zip_path = fixtures().join(format!("sled-format-{CURRENT_FORMAT}.zip"));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut stack = vec![dir.path().to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        let name = path.strip_prefix(dir.path()).unwrap().to_str().unwrap();
        if name.ends_with(".txt") || name.starts_with("files/tmp") {
            continue;
        }
        zip.start_file(name, options).unwrap();
        zip.write_all(&std::fs::read(&path).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    let facts = json!({
        "format": CURRENT_FORMAT,
        "writtenBy": env!("CARGO_PKG_VERSION"),
        "teamId": team.id,
        "apiKey": team.api_key,
        "signingKey": team.signing_key,
        "customerId": customer["id"],
        "productId": product,
        "licenseKey": key,
        "device": device,
        "entitlementCode": "FIXTURE",
        "policyId": plan["id"],
        "policyLicenseKey": on_policy["licenseKey"],
        "fileChecksum": licensing_core::crypto::md5_hex(&file),
    });
    std::fs::write(
        fixtures().join(format!("sled-format-{CURRENT_FORMAT}.json")),
        serde_json::to_string_pretty(&facts).unwrap() + "\n",
    )
    .unwrap();
}
