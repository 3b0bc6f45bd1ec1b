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

/// The license list's boxes: the licenses chosen are named on one confirmation page, then each
/// is suspended, unsuspended or deleted through its own operation; another team's license is
/// neither named nor changed; a role sees only the actions it may take.
#[tokio::test]
async fn licenses_chosen_on_the_list_are_suspended_and_deleted_after_one_confirmation() {
    let s = TestServer::start().await;
    let made =
        futures_util::future::join_all((0..3).map(|_| s.license(r#"{"expirationType":"NEVER"}"#)))
            .await;
    let ids: Vec<String> = made
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect();
    let keys: Vec<String> = made
        .iter()
        .map(|l| l["licenseKey"].as_str().unwrap().to_owned())
        .collect();
    let (k0, k1, k2) = (&keys[0], &keys[1], &keys[2]);
    // The confirmation names each license's customers.
    let ada = s
        .post(&s.dev("customers"), r#"{"fullName":"Ada Lovelace"}"#)
        .await
        .ok()["id"]
        .clone();
    s.put(
        &s.dev(&format!("licenses/id/{}", ids[0])),
        &serde_json::json!({"customerIds": [ada]}).to_string(),
    )
    .await
    .ok();
    let other = s.other_team().await;
    let theirs = s
        .send(
            reqwest::Method::POST,
            &format!("{}/api/v1/dev/teams/{}/licenses", s.base, other.team_id),
            Some(&other.api_key),
            Some(r#"{"expirationType":"NEVER"}"#),
        )
        .await;
    let theirs_id = theirs.ok()["id"].as_str().unwrap().to_owned();

    let mut desk = Browser::new(&s);
    staff(
        &s,
        &mut desk,
        s.team_id(),
        "desk@vendor.example",
        Role::Support,
    )
    .await;
    let list = desk.get("/dashboard/licenses").await;
    list.has("type=\"checkbox\" name=\"id\"")
        .has("data-select-all=\"id\"")
        .has("<option value=\"suspend\"")
        .lacks("<option value=\"delete\"");
    let back = "/dashboard/licenses?pageSize=50&page=1";
    let ask = desk
        .submit(
            &list,
            "/dashboard/licenses/bulk",
            &[
                ("action", "suspend"),
                ("id", &ids[0]),
                ("id", &ids[1]),
                ("id", &theirs_id),
                ("back", back),
            ],
        )
        .await;
    assert_eq!(ask.status, 200, "{}", ask.text);
    ask.has("Suspend 2 licenses?")
        .has(k0)
        .has(k1)
        .lacks(k2)
        .has("Ada Lovelace")
        .has("name=\"reason\"");
    // Nothing changed yet.
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{}", ids[0]))).await.ok()["suspended"],
        false
    );
    let done = desk
        .submit(
            &ask,
            "/dashboard/licenses/bulk",
            &[
                ("action", "suspend"),
                ("confirmed", "yes"),
                ("id", &ids[0]),
                ("id", &ids[1]),
                ("back", back),
                ("reason", "Seat audit"),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{}", ids[1]))).await.ok()["suspensionReason"],
        "Seat audit"
    );
    assert_eq!(done.location(), format!("{back}&notice=licenses-suspended"));
    for (i, suspended) in [(0, true), (1, true), (2, false)] {
        assert_eq!(
            s.get(&s.dev(&format!("licenses/id/{}", ids[i]))).await.ok()["suspended"],
            suspended,
            "license {i}"
        );
    }
    // Another team's license, sent anyway with a confirmation: refused, unchanged.
    let sneaky = desk
        .submit(
            &ask,
            "/dashboard/licenses/bulk",
            &[
                ("action", "suspend"),
                ("confirmed", "yes"),
                ("id", &theirs_id),
            ],
        )
        .await;
    assert_eq!(sneaky.status, 200, "{}", sneaky.text);
    sneaky.has("0 of 1 license done");
    let theirs_now = s
        .send(
            reqwest::Method::GET,
            &format!(
                "{}/api/v1/dev/teams/{}/licenses/id/{theirs_id}",
                s.base, other.team_id
            ),
            Some(&other.api_key),
            None,
        )
        .await;
    assert_eq!(theirs_now.ok()["suspended"], false);
    // Support may not delete, even by posting the form.
    let refused = desk
        .submit(
            &ask,
            "/dashboard/licenses/bulk",
            &[("action", "delete"), ("confirmed", "yes"), ("id", &ids[2])],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    refused.has("may not create, change or delete licenses");
    // Nothing chosen: said in words.
    let empty = desk
        .submit(&ask, "/dashboard/licenses/bulk", &[("action", "suspend")])
        .await;
    assert_eq!(empty.status, 400);
    empty.has("No license was chosen");

    // A developer unsuspends one and deletes two; each is audited as theirs.
    let mut dev = Browser::new(&s);
    staff(
        &s,
        &mut dev,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let list = dev.get("/dashboard/licenses").await;
    list.has("<option value=\"delete\"");
    let done = dev
        .submit(
            &list,
            "/dashboard/licenses/bulk",
            &[
                ("action", "unsuspend"),
                ("confirmed", "yes"),
                ("id", &ids[0]),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    let ask = dev
        .submit(
            &list,
            "/dashboard/licenses/bulk",
            &[("action", "delete"), ("id", &ids[1]), ("id", &ids[2])],
        )
        .await;
    ask.has("Delete 2 licenses?").has("cannot be undone");
    let done = dev
        .submit(
            &ask,
            "/dashboard/licenses/bulk",
            &[
                ("action", "delete"),
                ("confirmed", "yes"),
                ("id", &ids[1]),
                ("id", &ids[2]),
                ("back", "https://evil.example/"),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert_eq!(
        done.location(),
        "/dashboard/licenses?notice=licenses-deleted"
    );
    s.get(&s.dev(&format!("licenses/id/{}", ids[1])))
        .await
        .err(404, "LICENSE_NOT_FOUND");
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{}", ids[0]))).await.ok()["suspended"],
        false
    );
    let log = s.get(&s.dev("audit-log?action=license.deleted")).await;
    assert_eq!(log.ok()["entries"].as_array().unwrap().len(), 2);
    assert_eq!(
        log.ok()["entries"][0]["actor"]["name"],
        "dev@vendor.example"
    );
}

/// The license list as CSV: every license its filters find (more than one list page), with
/// customers and products by name, a customer's name that looks like a formula defused; the
/// search finds by customer as the list does; a role that may not read customers gets ids.
#[tokio::test]
async fn the_filtered_license_list_is_exported_as_csv() {
    let s = TestServer::start().await;
    let product = s.product("Desk App").await;
    let customer = s
        .post(
            &s.dev("customers"),
            r#"{"email":"ann@example.com","fullName":"=HYPERLINK(\"x\")"}"#,
        )
        .await
        .ok()
        .clone();
    let body = format!(
        r#"{{"expirationType":"NEVER","customerIds":["{}"],"productIds":["{}"],"hwidLimit":2}}"#,
        customer["id"].as_str().unwrap(),
        product["id"].as_str().unwrap()
    );
    let suspended: Vec<String> = futures_util::future::join_all((0..120).map(|_| s.license(&body)))
        .await
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect();
    let urls: Vec<String> = suspended
        .iter()
        .map(|id| s.dev(&format!("licenses/id/{id}/suspend")))
        .collect();
    for chunk in urls.chunks(20) {
        futures_util::future::join_all(chunk.iter().map(|url| s.post(url, ""))).await;
    }
    let plain = s.license(r#"{"expirationType":"NEVER"}"#).await;

    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "desk@vendor.example",
        Role::Support,
    )
    .await;
    b.get("/dashboard/licenses?suspended=true&pageSize=10")
        .await
        .has("href=\"/dashboard/licenses/export?suspended=true&amp;sort=createdAt&amp;direction=desc&amp;pageSize=10\"");
    let csv = b
        .get("/dashboard/licenses/export?suspended=true&pageSize=10")
        .await;
    assert_eq!(csv.status, 200, "{}", csv.text);
    assert!(csv.header("content-type").starts_with("text/csv"));
    assert!(
        csv.header("content-disposition")
            .starts_with("attachment; filename=\"licenses-")
    );
    let lines: Vec<&str> = csv.text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("key,id,status,suspended,customers,products"));
    assert_eq!(lines.len(), 121, "a header and every suspended license");
    assert!(!csv.text.contains(plain["id"].as_str().unwrap()));
    let row = lines[1];
    assert!(row.contains(",Suspended,true,"), "{row}");
    assert!(
        row.contains("\"'=HYPERLINK(\"\"x\"\") <ann@example.com>\""),
        "{row}"
    );
    assert!(row.contains(",Desk App,NEVER,Never,2,,"), "{row}");
    // Oldest first, each license once.
    let created: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(10).unwrap())
        .collect();
    assert!(created.is_sorted(), "{created:?}");
    let mut seen: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 120);
    // The search finds by customer, as the list does.
    let by_customer = b
        .get("/dashboard/licenses/export?search=ann%40example")
        .await;
    assert_eq!(by_customer.text.matches("\r\n").count(), 121);

    // A viewer of licenses who may not read customers gets their ids instead of names.
    let viewer_scopes_hide_customers =
        !licensing_core::model::Role::Viewer
            .scopes()
            .allows(licensing_core::model::Scope::read(
                licensing_core::model::Resource::Customers,
            ));
    if viewer_scopes_hide_customers {
        let mut v = Browser::new(&s);
        staff(&s, &mut v, s.team_id(), "view@vendor.example", Role::Viewer).await;
        let csv = v.get("/dashboard/licenses/export?suspended=true").await;
        assert!(csv.text.contains(customer["id"].as_str().unwrap()));
    }
}

/// A refused form speaks the form's words, not the API's: fields as their labels name them and
/// values as the form offers them, in the summary and beside the field.
#[tokio::test]
async fn a_refused_form_names_fields_and_values_in_words() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s);
    staff(
        &s,
        &mut b,
        s.team_id(),
        "dev@vendor.example",
        Role::Developer,
    )
    .await;
    let form = b.get("/dashboard/licenses/new").await;
    let refused = b
        .submit(
            &form,
            "/dashboard/licenses",
            &[("expirationType", "DURATION"), ("expirationDays", "")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    refused
        .has("is required when the license expires after a duration")
        .lacks("expirationType is")
        .lacks("<code>expirationDays</code>");
}
