use crate::helpers::TestServer;

#[tokio::test]
async fn restarting_on_the_same_data_dir_keeps_everything() {
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":3}"#)
        .await;
    let c = s
        .post(&s.dev("customers"), r#"{"email":"keep@example.com"}"#)
        .await
        .ok()
        .clone();
    s.activity(l["id"].as_str().unwrap(), "device-aaaa-0001", 9)
        .await;
    s.put(&s.dev("settings"), r#"{"strictCustomers":true}"#)
        .await
        .ok();
    let p = s.post(&s.dev("products"), r#"{"name":"App"}"#).await.ok()["id"].clone();
    let data =
        serde_json::json!({"version": "1.0.0", "productId": p, "status": "PUBLISHED"}).to_string();
    let form = reqwest::multipart::Form::new().text("data", data).part(
        "file",
        reqwest::multipart::Part::bytes(b"release bytes".to_vec()).file_name("app.bin"),
    );
    let release: serde_json::Value = s
        .client
        .post(s.dev("releases"))
        .bearer_auth(s.key())
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let release_id = release["data"]["id"].as_str().unwrap().to_owned();

    let s = s.restart().await;
    let r = s.get(&s.dev(&format!("releases/{release_id}"))).await;
    let file = &r.ok()["file"];
    assert_eq!(file["size"], 13);
    assert_eq!(
        s.stored_file(file["key"].as_str().unwrap()).await.unwrap(),
        b"release bytes",
        "the file survives too"
    );
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{}", l["id"].as_str().unwrap())))
            .await
            .ok()["hwidLimit"],
        3
    );
    assert_eq!(
        s.get(&s.dev(&format!("customers/{}", c["id"].as_str().unwrap())))
            .await
            .ok(),
        &c
    );
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{}/hwid", l["id"].as_str().unwrap())))
            .await
            .ok()["totalResults"],
        1
    );
    assert_eq!(
        s.get(&s.dev("settings")).await.ok()["strictCustomers"],
        true
    );
    // The API key still works: it is stored, hashed.
    assert_eq!(s.get(&s.dev("licenses")).await.ok()["totalResults"], 1);
}
