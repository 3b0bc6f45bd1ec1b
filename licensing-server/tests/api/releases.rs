use std::io::Write;

use licensing_core::model::TeamFeatures;
use licensing_core::store::TeamStore;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::helpers::{Answer, TestServer};

pub fn jar(main_class: &str) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        zip.start_file(
            "META-INF/MANIFEST.MF",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        write!(zip, "Manifest-Version: 1.0\r\nMain-Class: {main_class}\r\n").unwrap();
        zip.start_file(
            "com/example/Main.class",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(&[0xCA, 0xFE, 0xBA, 0xBE]).unwrap();
        zip.finish().unwrap();
    }
    out.into_inner()
}

async fn send(
    s: &TestServer,
    method: reqwest::Method,
    url: &str,
    data: &Value,
    file: Option<(&str, Vec<u8>)>,
) -> Answer {
    let mut form = Form::new().text("data", data.to_string());
    if let Some((name, bytes)) = file {
        form = form.part("file", Part::bytes(bytes).file_name(name.to_owned()));
    }
    let response = s
        .client
        .request(method, url)
        .bearer_auth(s.key())
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap();
    Answer { status, body }
}

#[tokio::test]
async fn create_with_a_jar_then_the_three_file_rules() {
    let s = TestServer::start().await;
    let p = s
        .post(&s.dev("products"), r#"{"name":"App"}"#)
        .await
        .ok()
        .clone();
    let pid = p["id"].as_str().unwrap();
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let bytes = jar("com.example.Main");
    let data = json!({"version": "1.0.0", "productId": pid, "status": "PUBLISHED", "setAsLatest": true, "licenseIds": [l["id"]], "metadata": [{"key": "notes", "value": "first"}]});
    let created = send(
        &s,
        reqwest::Method::POST,
        &s.dev("releases"),
        &data,
        Some(("app.jar", bytes.clone())),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let r = created.ok().clone();
    assert_eq!(
        (
            r["version"].as_str(),
            r["status"].as_str(),
            r["latest"].as_bool()
        ),
        (Some("1.0.0"), Some("PUBLISHED"), Some(true))
    );
    assert_eq!(r["product"], json!({"id": pid, "name": "App"}));
    assert_eq!(r["branch"], Value::Null);
    assert_eq!(
        r["allowedLicenses"],
        json!([{"id": l["id"], "licenseKey": l["licenseKey"]}])
    );
    let file = &r["file"];
    assert_eq!(file["name"], "app.jar");
    assert_eq!(file["size"], bytes.len());
    assert_eq!(file["checksum"], licensing_core::crypto::md5_hex(&bytes));
    assert_eq!(file["mainClassName"], "com.example.Main");
    let stored_key = file["key"].as_str().unwrap().to_owned();
    assert_eq!(
        s.stored_file(&stored_key).await.unwrap(),
        bytes,
        "stored in the file store"
    );

    let rid = r["id"].as_str().unwrap();
    let url = s.dev(&format!("releases/{rid}"));
    let update = |keep: bool| json!({"version": "1.0.0", "productId": pid, "status": "DEPRECATED", "setAsLatest": true, "branchId": null, "metadata": [], "licenseIds": [], "keepExistingFile": keep});
    // Keep: no file part, keepExistingFile true.
    let kept = send(&s, reqwest::Method::PUT, &url, &update(true), None).await;
    assert_eq!(kept.ok()["file"], *file);
    assert_eq!(kept.ok()["status"], "DEPRECATED");
    // Replace: a file part.
    let replaced = send(
        &s,
        reqwest::Method::PUT,
        &url,
        &update(true),
        Some(("notes.txt", b"hello".to_vec())),
    )
    .await;
    let new_file = replaced.ok()["file"].clone();
    assert_eq!(
        (
            new_file["name"].as_str(),
            new_file["size"].as_u64(),
            &new_file["mainClassName"]
        ),
        (Some("notes.txt"), Some(5), &Value::Null)
    );
    assert!(
        s.stored_file(&stored_key).await.is_none(),
        "the replaced file is removed"
    );
    // Remove: no file part, keepExistingFile false.
    let removed = send(&s, reqwest::Method::PUT, &url, &update(false), None).await;
    assert_eq!(removed.ok()["file"], Value::Null);
    assert!(
        s.stored_file(new_file["key"].as_str().unwrap())
            .await
            .is_none()
    );

    assert_eq!(s.get(&url).await.ok()["status"], "DEPRECATED");
    assert_eq!(
        s.delete(&url).await.ok(),
        &json!({"id": rid, "deleted": true})
    );
    s.get(&url).await.err(404, "RELEASE_NOT_FOUND");
}

#[tokio::test]
async fn exactly_ten_mib_is_accepted_and_one_byte_more_is_413() {
    let s = TestServer::start().await;
    let p = s
        .post(&s.dev("products"), r#"{"name":"App"}"#)
        .await
        .ok()
        .clone();
    let data = |v: &str| json!({"version": v, "productId": p["id"], "status": "PUBLISHED"});
    let ten = vec![7u8; 10 * 1024 * 1024];
    let ok = send(
        &s,
        reqwest::Method::POST,
        &s.dev("releases"),
        &data("1.0.0"),
        Some(("big.bin", ten.clone())),
    )
    .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    assert_eq!(ok.ok()["file"]["size"], 10 * 1024 * 1024);
    let mut over = ten;
    over.push(0);
    let too_big = send(
        &s,
        reqwest::Method::POST,
        &s.dev("releases"),
        &data("1.0.1"),
        Some(("big.bin", over)),
    )
    .await;
    too_big.err(413, "BAD_REQUEST");
    let list = s.get(&s.dev("releases")).await;
    assert_eq!(
        list.ok()["totalResults"],
        1,
        "the refused upload stored nothing"
    );
    let tmp = std::fs::read_dir(s.dir.path().join("files/tmp"))
        .unwrap()
        .count();
    assert_eq!(tmp, 0, "no temporary file left behind");
}

#[tokio::test]
async fn bad_uploads_are_refused_with_their_reasons() {
    let s = TestServer::start().await;
    let p = s
        .post(&s.dev("products"), r#"{"name":"App"}"#)
        .await
        .ok()
        .clone();
    let data = json!({"version": "1.0.0", "productId": p["id"], "status": "PUBLISHED"});
    let post = |data: Value, file: Option<(&'static str, Vec<u8>)>| {
        let s = &s;
        async move { send(s, reqwest::Method::POST, &s.dev("releases"), &data, file).await }
    };
    assert_eq!(
        post(data.clone(), Some(("noextension", b"x".to_vec())))
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["file"]
    );
    assert_eq!(
        post(json!({"productId": p["id"], "status": "PUBLISHED"}), None)
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["version"]
    );
    assert_eq!(
        post(
            json!({"version": "1.0.0", "productId": p["id"], "status": "LIVE"}),
            None
        )
        .await
        .err(400, "BAD_REQUEST")
        .fields(),
        ["status"]
    );
    let unknown_product =
        json!({"version": "1.0.0", "productId": uuid::Uuid::new_v4(), "status": "PUBLISHED"});
    post(unknown_product, None)
        .await
        .err(404, "PRODUCT_NOT_FOUND");
    post(data.clone(), None).await.ok();
    assert_eq!(
        post(data.clone(), None)
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["version"],
        "version taken"
    );

    // No data part; an unknown part; not multipart at all.
    let form = Form::new().part("file", Part::bytes(b"x".to_vec()).file_name("a.jar"));
    let r = s
        .client
        .post(s.dev("releases"))
        .bearer_auth(s.key())
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let form = Form::new()
        .text("data", data.to_string())
        .text("extra", "1");
    let r = s
        .client
        .post(s.dev("releases"))
        .bearer_auth(s.key())
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = s
        .client
        .post(s.dev("releases"))
        .bearer_auth(s.key())
        .json(&data)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);

    // The classloader feature is needed for a file, not for a release without one.
    s.store
        .update_features(
            s.team_id(),
            TeamFeatures { classloader: false },
            licensing_core::Timestamp::now(),
            &licensing_core::store::Journal::NONE,
        )
        .await
        .unwrap();
    let v2 = json!({"version": "2.0.0", "productId": p["id"], "status": "PUBLISHED"});
    post(v2.clone(), Some(("app.jar", b"x".to_vec())))
        .await
        .err(403, "FORBIDDEN");
    post(v2, None).await.ok();
}

#[tokio::test]
async fn release_lists_filter_and_sort() {
    let s = TestServer::start().await;
    let a = s
        .post(&s.dev("products"), r#"{"name":"A"}"#)
        .await
        .ok()
        .clone();
    let b = s
        .post(&s.dev("products"), r#"{"name":"B"}"#)
        .await
        .ok()
        .clone();
    let beta = s
        .post(
            &s.dev(&format!("products/{}/branches", a["id"].as_str().unwrap())),
            r#"{"name":"beta"}"#,
        )
        .await
        .ok()
        .clone();
    for (i, status) in ["PUBLISHED", "DRAFT", "ARCHIVED", "PUBLISHED"]
        .iter()
        .enumerate()
    {
        let data = json!({"version": format!("1.{i}.0"), "productId": a["id"], "status": status, "setAsLatest": i == 3});
        send(&s, reqwest::Method::POST, &s.dev("releases"), &data, None)
            .await
            .ok();
    }
    let on_beta = json!({"version": "1.0.0-beta", "productId": a["id"], "status": "PUBLISHED", "branchId": beta["id"]});
    let r = send(
        &s,
        reqwest::Method::POST,
        &s.dev("releases"),
        &on_beta,
        None,
    )
    .await;
    assert_eq!(r.ok()["branch"], json!({"id": beta["id"], "name": "beta"}));
    send(
        &s,
        reqwest::Method::POST,
        &s.dev("releases"),
        &json!({"version": "9.9.9", "productId": b["id"], "status": "PUBLISHED"}),
        None,
    )
    .await
    .ok();

    let of_a = s
        .get(&s.dev(&format!("releases?productId={}", a["id"].as_str().unwrap())))
        .await;
    assert_eq!(of_a.ok()["totalResults"], 5);
    assert_eq!(
        s.get(&s.dev("releases?status=DRAFT")).await.ok()["totalResults"],
        1
    );
    assert_eq!(
        s.get(&s.dev("releases?search=BETA")).await.ok()["totalResults"],
        1
    );
    let latest = s.get(&s.dev("releases?sortColumn=latest")).await;
    assert_eq!(latest.ok()["releases"][0]["version"], "1.3.0");
    let by_version = s
        .get(&s.dev("releases?sortColumn=version&sortDirection=asc&pageSize=10"))
        .await;
    assert_eq!(by_version.ok()["releases"][0]["version"], "1.0.0");
    for (query, field) in [
        ("status=GONE", "status"),
        ("productId=x", "productId"),
        ("sortColumn=name", "sortColumn"),
        ("search=", "search"),
    ] {
        assert_eq!(
            s.get(&s.dev(&format!("releases?{query}")))
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field]
        );
    }
}

/// The operator sets the largest release file (`LICENSING_MAX_UPLOAD_MB`); the 413 says it.
#[tokio::test]
async fn the_upload_cap_is_the_operators() {
    let s = TestServer::start_with(|c| c.max_upload_mb = 1).await;
    let p = s
        .post(&s.dev("products"), r#"{"name":"App"}"#)
        .await
        .ok()
        .clone();
    let data = |v: &str| json!({"version": v, "productId": p["id"], "status": "PUBLISHED"});
    let one = vec![7u8; 1024 * 1024];
    let ok = send(
        &s,
        reqwest::Method::POST,
        &s.dev("releases"),
        &data("1.0.0"),
        Some(("one.bin", one.clone())),
    )
    .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    let mut over = one;
    over.push(0);
    let too_big = send(
        &s,
        reqwest::Method::POST,
        &s.dev("releases"),
        &data("1.0.1"),
        Some(("one.bin", over)),
    )
    .await;
    too_big.err(413, "BAD_REQUEST");
    let details = too_big.body["result"]["details"].as_str().unwrap();
    assert!(details.contains("1 MiB"), "{details}");
}

/// A client that goes away in the middle of its file leaves nothing behind: the temporary file
/// the upload was streaming into is removed, and no release is stored.
#[tokio::test]
async fn an_upload_broken_off_leaves_no_temporary_file() {
    let s = TestServer::start().await;
    let p = s
        .post(&s.dev("products"), r#"{"name":"App"}"#)
        .await
        .ok()
        .clone();
    let boundary = "broken-off";
    let data = json!({"version": "1.0.0", "productId": p["id"], "status": "PUBLISHED"});
    let head = format!(
        "--{boundary}\r\ncontent-disposition: form-data; name=\"data\"\r\n\r\n{data}\r\n\
         --{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"app.bin\"\r\n\
         content-type: application/octet-stream\r\n\r\n"
    );
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    sender.send(Ok(head.into_bytes())).await.unwrap();
    sender.send(Ok(vec![1; 256 * 1024])).await.unwrap();
    let body =
        reqwest::Body::wrap_stream(futures_util::stream::unfold(receiver, |mut r| async move {
            r.recv().await.map(|item| (item, r))
        }));
    let request = s
        .client
        .post(s.dev("releases"))
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
    // The client breaks off: its body fails, and its connection closes.
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
    assert_eq!(s.get(&s.dev("releases")).await.ok()["totalResults"], 0);
}
