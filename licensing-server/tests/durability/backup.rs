//! Data that outlives a running server: `backup` while the server serves and writes go on,
//! `restore` into an empty data directory, `check` on the result (and on damage).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::child::{Api, ChildServer, create_team, run};

const ADMIN_TOKEN: &str = "backup-test-admin-token-0123456789abcdef";

/// The ids of a list's items.
fn ids(list: &Value, field: &str) -> Vec<String> {
    let mut ids: Vec<String> = list[field]
        .as_array()
        .unwrap_or_else(|| panic!("no {field} in {list}"))
        .iter()
        .map(|x| x["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

/// The ids of every entry of the audit log, page by page.
async fn all_audit(api: &Api) -> Vec<String> {
    let mut all = Vec::new();
    for page in 1.. {
        let list = api
            .get(&format!("audit-log?pageSize=100&page={page}"))
            .await;
        all.extend(ids(&list, "entries"));
        if !list["hasNextPage"].as_bool().unwrap_or(false) {
            break;
        }
    }
    all
}

/// The ids of every license, page by page.
async fn all_licenses(api: &Api) -> Vec<String> {
    let mut all = Vec::new();
    for page in 1.. {
        let list = api
            .get(&format!(
                "licenses?pageSize=100&page={page}&sortColumn=createdAt&sortDirection=asc"
            ))
            .await;
        all.extend(ids(&list, "licenses"));
        if !list["hasNextPage"].as_bool().unwrap_or(false) {
            break;
        }
    }
    all
}

fn check(data_dir: &Path) -> std::process::Output {
    run(&["check", "--data-dir", data_dir.to_str().unwrap()], &[])
}

/// A backup taken through the admin API while licenses are created and deleted restores, into
/// an empty data directory, every record that existed before it started (and no more than
/// existed during it), the release file byte for byte, the webhook endpoint, the audit log, the
/// API key and the public keys; `check`
/// finds both stores sound, then finds a damaged and a missing release file.
#[tokio::test]
async fn a_backup_taken_while_serving_restores_everything() {
    let (dir, restored_dir, out) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let team = create_team(dir.path());
    let mut server = ChildServer::start(dir.path(), &[("LICENSING_ADMIN_TOKEN", ADMIN_TOKEN)]);
    let api = Api::new(&server, &team);
    let file: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    let (product, license_key) = api.product_with_release(file.clone()).await;
    let customer = api
        .post(
            "customers",
            json!({"fullName": "Ada", "email": "ada@example.com"}),
        )
        .await;
    for n in 0..150 {
        api.post(
            "licenses",
            json!({"expirationType": "NEVER", "productIds": [product],
                   "customerIds": [customer["id"]], "metadata": [{"key": "n", "value": n.to_string()}]}),
        )
        .await;
    }
    let verified: Value = api
        .client
        .post(format!(
            "{}/api/v1/client/teams/{}/verification/verify",
            server.base, team.id
        ))
        .json(&json!({"licenseKey": license_key, "hardwareIdentifier": "backup-device-1"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(verified["result"]["code"], "VALID", "{verified}");
    let webhook = api
        .post(
            "webhooks",
            json!({"url": "https://hooks.example.com/licensing", "eventTypes": ["release.*"]}),
        )
        .await;
    let before = all_licenses(&api).await;
    let audit_before = all_audit(&api).await;
    assert!(audit_before.len() >= 153, "{}", audit_before.len());
    assert_eq!(before.len(), 151);

    // A writer creates licenses, and deletes every third, while the backup runs.
    let stop = Arc::new(AtomicBool::new(false));
    let created = Arc::new(Mutex::new(Vec::<String>::new()));
    let writer = {
        let (api, stop, created) = (Api::new(&server, &team), stop.clone(), created.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) && n < 2_000 {
                n += 1;
                let license = api
                    .post("licenses", json!({"expirationType": "NEVER"}))
                    .await;
                let id = license["id"].as_str().unwrap().to_owned();
                created.lock().unwrap().push(id.clone());
                if n % 3 == 0 {
                    let key = license["licenseKey"].as_str().unwrap();
                    let deleted = api
                        .client
                        .delete(api.dev(&format!("licenses/{key}")))
                        .bearer_auth(&api.team.api_key)
                        .send()
                        .await
                        .unwrap();
                    assert!(deleted.status().is_success());
                }
            }
        })
    };
    let target = out.path().join("backup.jsonl");
    let backup = {
        let (target, base) = (target.clone(), server.base.clone());
        tokio::task::spawn_blocking(move || {
            run(
                &["backup", "--to", target.to_str().unwrap(), "--url", &base],
                &[("LICENSING_ADMIN_TOKEN", ADMIN_TOKEN)],
            )
        })
        .await
        .unwrap()
    };
    stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();
    assert!(
        backup.status.success(),
        "backup: {}",
        String::from_utf8_lossy(&backup.stderr)
    );
    assert!(target.exists(), "the backup has its name");

    // A second backup into the same name is refused; a wrong token is refused.
    let again = run(
        &[
            "backup",
            "--to",
            target.to_str().unwrap(),
            "--url",
            &server.base,
        ],
        &[("LICENSING_ADMIN_TOKEN", ADMIN_TOKEN)],
    );
    assert!(!again.status.success(), "never overwrites");
    let wrong = run(
        &[
            "backup",
            "--to-dir",
            out.path().to_str().unwrap(),
            "--url",
            &server.base,
        ],
        &[(
            "LICENSING_ADMIN_TOKEN",
            "not-the-admin-token-0123456789abcdef",
        )],
    );
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("401"));

    server.terminate();
    assert!(server.wait(std::time::Duration::from_secs(30)).success());
    let original = check(dir.path());
    assert!(
        original.status.success(),
        "the served store is sound: {}",
        String::from_utf8_lossy(&original.stdout)
    );

    let restore = run(
        &[
            "restore",
            "--in",
            target.to_str().unwrap(),
            "--data-dir",
            restored_dir.path().to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        restore.status.success(),
        "restore: {}",
        String::from_utf8_lossy(&restore.stderr)
    );
    let checked = check(restored_dir.path());
    let said = String::from_utf8_lossy(&checked.stdout).into_owned();
    assert!(
        checked.status.success(),
        "the restored store is sound: {said}"
    );
    assert!(said.contains("1 release files"), "{said}");

    let restored = ChildServer::start(restored_dir.path(), &[]);
    let api = Api::new(&restored, &team);
    // Every license that existed before the backup is back, with the same records.
    let all = all_licenses(&api).await;
    for id in &before {
        assert!(
            all.contains(id),
            "license {id} of before the backup is restored"
        );
    }
    let created = created.lock().unwrap().clone();
    // Nothing that did not exist: only licenses of before, or created while it ran.
    for id in &all {
        assert!(
            before.contains(id) || created.contains(id),
            "license {id} restored from nowhere"
        );
    }
    println!(
        "{} licenses restored: {} of before, {} kept of those created while the backup ran",
        all.len(),
        before.len(),
        created.iter().filter(|c| all.contains(c)).count()
    );
    let customers = api.get("customers").await;
    assert_eq!(
        ids(&customers, "customers"),
        vec![customer["id"].as_str().unwrap().to_owned()]
    );
    let releases = api.get("releases").await;
    let checksum = releases["releases"][0]["file"]["checksum"].clone();
    assert_eq!(
        checksum.as_str().unwrap(),
        licensing_core::crypto::md5_hex(&file),
        "{releases}"
    );
    // The audit log: every entry of before the backup, each once.
    let audit = all_audit(&api).await;
    for id in &audit_before {
        assert!(
            audit.contains(id),
            "audit entry {id} of before the backup is restored"
        );
    }
    let unique: std::collections::HashSet<&String> = audit.iter().collect();
    assert_eq!(unique.len(), audit.len(), "each entry once");
    // The webhook endpoint.
    let webhooks = api.get("webhooks").await;
    assert_eq!(webhooks["webhooks"][0]["id"], webhook["id"], "{webhooks}");
    assert_eq!(
        webhooks["webhooks"][0]["url"],
        "https://hooks.example.com/licensing"
    );
    let public: Value = api.get("public-key").await;
    assert_eq!(
        public["signingKey"].as_str().unwrap(),
        team.signing_key,
        "the same keys"
    );
    drop(restored);

    // Damage: a release file's bytes changed, then the file gone.
    let files = restored_dir.path().join("files").join(&team.id);
    let stored = std::fs::read_dir(&files)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&stored).unwrap();
    bytes[1000] ^= 0xff;
    std::fs::write(&stored, &bytes).unwrap();
    let damaged = check(restored_dir.path());
    let said = String::from_utf8_lossy(&damaged.stdout).into_owned();
    assert!(!damaged.status.success(), "{said}");
    assert!(said.contains("is damaged"), "{said}");
    std::fs::remove_file(&stored).unwrap();
    let missing = check(restored_dir.path());
    let said = String::from_utf8_lossy(&missing.stdout).into_owned();
    assert!(!missing.status.success(), "{said}");
    assert!(said.contains("is missing"), "{said}");
}
