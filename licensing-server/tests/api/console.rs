//! The dashboard's edits of customers and products: prefilled forms, saved through the
//! developer API's operations (audited with the staff member), a refusal shown in words beside
//! what was sent, and the roles that may not change them see no form; both stores.

use licensing_core::model::Role;

use crate::dashboard::{Browser, staff};
use crate::helpers::TestServer;

#[tokio::test]
async fn a_customer_and_a_product_are_edited_from_their_pages() {
    let s = TestServer::start().await;
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"email":"ann@example.com","fullName":"Ann Old"}"#,
        )
        .await
        .ok()
        .clone();
    let product = s.product("Desk App").await;
    let customer_page = format!("/dashboard/customers/{}", customer["id"].as_str().unwrap());
    let product_page = format!("/dashboard/products/{}", product["id"].as_str().unwrap());

    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let page = b.get(&customer_page).await;
    page.has("value=\"Ann Old\"")
        .has("value=\"ann@example.com\"");
    let saved = b
        .submit(
            &page,
            &customer_page,
            &[
                ("fullName", "Ann New"),
                ("email", "ann.new@example.com"),
                ("username", ""),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    assert_eq!(
        saved.location(),
        format!("{customer_page}?notice=customer-updated")
    );
    let stored = s
        .get(&s.dev(&format!("customers/{}", customer["id"].as_str().unwrap())))
        .await;
    assert_eq!(stored.ok()["fullName"], "Ann New");
    assert_eq!(stored.ok()["email"], "ann.new@example.com");
    b.get(&format!("{customer_page}?notice=customer-updated"))
        .await
        .has("Customer saved.")
        .has("value=\"Ann New\"");
    // A refusal keeps what was sent and says what is wrong.
    let refused = b
        .submit(
            &page,
            &customer_page,
            &[("fullName", "Ann Typo"), ("email", "not an address")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused
        .has("value=\"Ann Typo\"")
        .has("value=\"not an address\"");
    assert_eq!(
        s.get(&s.dev(&format!("customers/{}", customer["id"].as_str().unwrap())))
            .await
            .ok()["fullName"],
        "Ann New"
    );

    let page = b.get(&product_page).await;
    page.has("value=\"Desk App\"");
    let saved = b
        .submit(
            &page,
            &product_page,
            &[
                ("name", "Desk App Pro"),
                ("url", "https://example.com/desk"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let stored = s
        .get(&s.dev(&format!("products/{}", product["id"].as_str().unwrap())))
        .await;
    assert_eq!(stored.ok()["name"], "Desk App Pro");
    assert_eq!(stored.ok()["url"], "https://example.com/desk");
    let refused = b
        .submit(&page, &product_page, &[("name", ""), ("url", "")])
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);

    // The audit log names the staff member.
    let log = s.get(&s.dev("audit-log?action=customer.updated")).await;
    assert_eq!(
        log.ok()["entries"][0]["actor"]["name"],
        "dev@vendor.example"
    );

    // Support reads both pages and sees no edit form.
    let mut desk = Browser::new(&s);
    staff(
        &s,
        &mut desk,
        s.team_id(),
        "desk@vendor.example",
        Role::Support,
    )
    .await;
    desk.get(&customer_page)
        .await
        .lacks(&format!("action=\"{customer_page}\""));
    desk.get(&product_page)
        .await
        .lacks(&format!("action=\"{product_page}\""));
}

#[tokio::test]
async fn a_webhook_endpoint_is_edited_disabled_enabled_and_given_a_new_secret() {
    let s = TestServer::start_with(|c| {
        c.webhook_allow_http = true;
        c.webhook_allow_private = true;
    })
    .await;
    let made = s
        .post(
            &s.dev("webhooks"),
            r#"{"url":"http://127.0.0.1:9/hook","eventTypes":["license.*"]}"#,
        )
        .await
        .ok()
        .clone();
    let (id, first_secret) = (
        made["id"].as_str().unwrap().to_owned(),
        made["secret"].as_str().unwrap().to_owned(),
    );
    let path = format!("/dashboard/webhooks/{id}");
    // An owner: an endpoint made with a key of every scope is seen by principals with as much.
    let mut b = Browser::new(&s);
    staff(&s, &mut b, s.team_id(), "own@vendor.example", Role::Owner).await;

    // The form lists the known event types, the endpoint's pattern checked.
    let page = b.get(&path).await;
    page.has(r#"value="license.*" checked"#)
        .has(r#"value="customer.created""#)
        .has(r#"value="device.limit_reached""#);
    let saved = b
        .submit(
            &page,
            &path,
            &[
                ("url", "http://127.0.0.1:9/other"),
                ("description", "Shop"),
                ("eventTypes", "customer.created"),
                ("eventTypes", "license.created"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let stored = s.get(&s.dev(&format!("webhooks/{id}"))).await.ok().clone();
    assert_eq!(stored["url"], "http://127.0.0.1:9/other");
    assert_eq!(stored["description"], "Shop");
    assert_eq!(
        stored["eventTypes"],
        serde_json::json!(["customer.created", "license.created"])
    );
    // No event chosen: refused in words, nothing changed.
    let refused = b
        .submit(&page, &path, &[("url", "http://127.0.0.1:9/third")])
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused.has("Choose at least one event");
    assert_eq!(
        s.get(&s.dev(&format!("webhooks/{id}"))).await.ok()["url"],
        "http://127.0.0.1:9/other"
    );

    // Disabled, then enabled again.
    let off = b.submit(&page, &format!("{path}/disable"), &[]).await;
    assert_eq!(off.location(), format!("{path}?notice=webhook-disabled"));
    assert_eq!(
        s.get(&s.dev(&format!("webhooks/{id}"))).await.ok()["enabled"],
        false
    );
    let page = b.get(&path).await;
    page.has(&format!(r#"action="{path}/enable""#));
    let on = b.submit(&page, &format!("{path}/enable"), &[]).await;
    assert_eq!(on.location(), format!("{path}?notice=webhook-enabled"));
    assert_eq!(
        s.get(&s.dev(&format!("webhooks/{id}"))).await.ok()["enabled"],
        true
    );

    // A new secret, shown once, after a confirmation.
    let confirm = b.get(&format!("{path}/rotate-secret")).await;
    confirm.has("Make a new signing secret?");
    let rotated = b
        .submit(&confirm, &format!("{path}/rotate-secret"), &[])
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let secret = crate::dashboard::text_after(&rotated, r#"id="new-secret">"#);
    assert!(
        secret.starts_with("whsec_") && secret != first_secret,
        "{secret}"
    );
    b.get(&path).await.lacks(&secret);
}
