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

    let s = s.restart().await;
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
