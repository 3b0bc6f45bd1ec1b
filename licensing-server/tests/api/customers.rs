use serde_json::json;

use crate::helpers::TestServer;

#[tokio::test]
async fn create_search_update_and_delete() {
    let s = TestServer::start().await;
    let created = s
        .post(&s.dev("customers"), r#"{"email":"jane@example.com","fullName":"Jane Doe","address":{"city":"Helsinki"},"metadata":[{"key":"vip","value":"yes"}]}"#)
        .await;
    assert_eq!(created.status, 201);
    let jane = created.ok().clone();
    assert_eq!(jane["address"]["city"], "Helsinki");
    assert_eq!(jane["chatAccount"], serde_json::Value::Null);
    s.post(
        &s.dev("customers"),
        r#"{"username":"jroe","fullName":"John Roe"}"#,
    )
    .await
    .ok();
    let id = jane["id"].as_str().unwrap();

    let found = s.get(&s.dev("customers?search=EXAMPLE")).await;
    assert_eq!(found.ok()["totalResults"], 1);
    let sorted = s
        .get(&s.dev("customers?sortColumn=fullName&sortDirection=asc"))
        .await;
    assert_eq!(sorted.ok()["customers"][0]["fullName"], "Jane Doe");
    assert_eq!(s.get(&s.dev(&format!("customers/{id}"))).await.ok(), &jane);

    let updated = s
        .put(
            &s.dev(&format!("customers/{id}")),
            r#"{"fullName":"Jane Q. Doe","address":null}"#,
        )
        .await;
    let u = updated.ok();
    assert_eq!(
        (u["fullName"].as_str(), u["email"].as_str()),
        (Some("Jane Q. Doe"), Some("jane@example.com"))
    );
    assert_eq!(
        u["address"],
        json!({"street": null, "city": null, "state": null, "country": null, "postalCode": null})
    );

    // Attached to a license, then deleted: the license loses it.
    let l = s
        .license(&format!(
            r#"{{"expirationType":"NEVER","customerIds":["{id}"]}}"#
        ))
        .await;
    assert_eq!(
        s.delete(&s.dev(&format!("customers/{id}"))).await.ok(),
        &json!({"customerId": id, "deleted": true})
    );
    s.get(&s.dev(&format!("customers/{id}")))
        .await
        .err(404, "CUSTOMER_NOT_FOUND");
    let l = s
        .get(&s.dev(&format!("licenses/id/{}", l["id"].as_str().unwrap())))
        .await;
    assert_eq!(l.ok()["customers"], json!([]));
}

#[tokio::test]
async fn bad_customer_input_names_the_field() {
    let s = TestServer::start().await;
    for (body, field) in [
        (r#"{"email":"nope"}"#, "email"),
        (r#"{"email":"a@b.co","fullName":""}"#, "fullName"),
        (r#"{"email":"a@b.co","chatId":"123"}"#, "chatId"),
        (
            r#"{"email":"a@b.co","chatId":"12345678901234567"}"#,
            "chatId",
        ),
        (r#"{"email":"a@b.co","address":{"zip":"1"}}"#, "address.zip"),
        (r#"{}"#, "email"),
    ] {
        assert_eq!(
            s.post(&s.dev("customers"), body)
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field],
            "{body}"
        );
    }
    for (query, field) in [
        ("search=", "search"),
        ("sortColumn=age", "sortColumn"),
        ("pageSize=5", "pageSize"),
    ] {
        assert_eq!(
            s.get(&s.dev(&format!("customers?{query}")))
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field]
        );
    }
    let missing = uuid::Uuid::new_v4();
    s.put(
        &s.dev(&format!("customers/{missing}")),
        r#"{"fullName":"X"}"#,
    )
    .await
    .err(404, "CUSTOMER_NOT_FOUND");
    s.delete(&s.dev(&format!("customers/{missing}")))
        .await
        .err(404, "CUSTOMER_NOT_FOUND");
}
