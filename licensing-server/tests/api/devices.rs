use serde_json::json;

use crate::helpers::TestServer;

#[tokio::test]
async fn hwids_and_ips_list_forget_and_remember() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    // Distinct times, so that the orders below are fully determined.
    let t0 = licensing_core::Timestamp::now();
    s.activity_at(id, "device-aaaa-0001", 1, t0).await;
    s.activity_at(id, "device-bbbb-0002", 2, t0.plus_minutes(1))
        .await;
    s.activity_at(id, "device-cccc-0003", 2, t0.plus_minutes(2))
        .await;

    let hwids = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    let page = hwids.ok();
    assert_eq!(
        (page["totalResults"].as_u64(), page["hasNextPage"].as_bool()),
        (Some(3), Some(false))
    );
    let first = &page["hwids"][0];
    assert_eq!(first["identifier"], "device-cccc-0003", "last seen first");
    assert_eq!(first["status"], "active");
    assert_eq!(first["forgotten"], false);
    assert_eq!(first["licenseId"], id);
    for member in ["id", "teamId", "lastSeenAt", "createdAt", "updatedAt"] {
        assert!(first.get(member).is_some(), "{member}");
    }
    let ips = s
        .get(&s.dev(&format!(
            "licenses/id/{id}/ip-address?sortColumn=createdAt&sortDirection=asc"
        )))
        .await;
    let ips = ips.ok();
    assert_eq!(ips["totalResults"], 2);
    assert_eq!(ips["ipAddresses"][0]["address"], "203.0.113.1");

    let hwid_id = first["id"].as_str().unwrap();
    let patched = s
        .patch(
            &s.dev(&format!("licenses/id/{id}/hwid/{hwid_id}")),
            r#"{"forgotten":true}"#,
        )
        .await;
    assert_eq!(patched.ok(), &json!({"hwidId": hwid_id, "forgotten": true}));
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await.ok()["totalResults"],
        2
    );
    let all = s
        .get(&s.dev(&format!("licenses/id/{id}/hwid?showForgotten=true")))
        .await;
    let all = all.ok();
    assert_eq!(all["totalResults"], 3);
    let forgotten = all["hwids"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == hwid_id)
        .unwrap();
    assert_eq!(forgotten["status"], "forgotten");
    s.patch(
        &s.dev(&format!("licenses/id/{id}/hwid/{hwid_id}")),
        r#"{"forgotten":false}"#,
    )
    .await
    .ok();
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await.ok()["totalResults"],
        3
    );

    let ip_id = ips["ipAddresses"][0]["id"].as_str().unwrap();
    let patched = s
        .patch(
            &s.dev(&format!("licenses/id/{id}/ip-address/{ip_id}")),
            r#"{"forgotten":true}"#,
        )
        .await;
    assert_eq!(patched.ok(), &json!({"ipId": ip_id, "forgotten": true}));

    // Errors.
    let missing = uuid::Uuid::new_v4();
    s.patch(
        &s.dev(&format!("licenses/id/{id}/hwid/{missing}")),
        r#"{"forgotten":true}"#,
    )
    .await
    .err(404, "BAD_REQUEST");
    s.patch(
        &s.dev(&format!("licenses/id/{missing}/hwid/{hwid_id}")),
        r#"{"forgotten":true}"#,
    )
    .await
    .err(404, "LICENSE_NOT_FOUND");
    assert_eq!(
        s.patch(&s.dev(&format!("licenses/id/{id}/hwid/{hwid_id}")), r#"{}"#)
            .await
            .err(400, "BAD_REQUEST")
            .fields(),
        ["forgotten"]
    );
    assert_eq!(
        s.patch(
            &s.dev(&format!("licenses/id/{id}/hwid/nope")),
            r#"{"forgotten":true}"#
        )
        .await
        .err(400, "BAD_REQUEST")
        .fields(),
        ["hwidId"]
    );
    for (query, field) in [
        ("showForgotten=yes", "showForgotten"),
        ("sortColumn=name", "sortColumn"),
        ("page=-1", "page"),
    ] {
        assert_eq!(
            s.get(&s.dev(&format!("licenses/id/{id}/ip-address?{query}")))
                .await
                .err(400, "BAD_REQUEST")
                .fields(),
            [field]
        );
    }
}

#[tokio::test]
async fn status_is_inactive_past_the_team_timeout() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let id = l["id"].as_str().unwrap();
    let two_minutes_ago = licensing_core::Timestamp::now().plus(-chrono::TimeDelta::minutes(2));
    s.activity_at(id, "device-old-00001", 1, two_minutes_ago)
        .await;
    s.activity(id, "device-new-00002", 1).await;
    let status = |page: &serde_json::Value, device: &str| {
        page["hwids"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["identifier"] == device)
            .unwrap()["status"]
            .clone()
    };
    // Without a timeout every record is active.
    let page = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(status(page.ok(), "device-old-00001"), "active");
    // With a one-minute timeout, the one seen two minutes ago is inactive.
    s.put(&s.dev("settings"), r#"{"hwidTimeout":1}"#).await.ok();
    let page = s.get(&s.dev(&format!("licenses/id/{id}/hwid"))).await;
    assert_eq!(status(page.ok(), "device-old-00001"), "inactive");
    assert_eq!(status(page.ok(), "device-new-00002"), "active");
}

/// The support desk's scopes: `licenses:devices` forgets a device and `licenses:suspend`
/// suspends, each with `licenses:read` and nothing more; a verify sees both at once; the audit
/// log names the key.
#[tokio::test]
async fn a_support_key_frees_a_seat_and_suspends_but_changes_nothing_else() {
    use reqwest::Method;
    let s = TestServer::start().await;
    let l = s
        .license(r#"{"expirationType":"NEVER","hwidLimit":1}"#)
        .await;
    let (id, key) = (l["id"].as_str().unwrap(), l["licenseKey"].as_str().unwrap());
    let support = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"desk","scopes":["licenses:devices","licenses:suspend"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let as_support = |method: Method, path: String, body: Option<&'static str>| {
        let (s, support) = (&s, &support);
        async move { s.send(method, &s.dev(&path), Some(support), body).await }
    };
    let verify = |device: &'static str| {
        let s = &s;
        async move {
            s.client(
                "verify",
                &json!({"licenseKey": key, "hardwareIdentifier": device}),
                None,
            )
            .await
        }
    };

    verify("device-aaaa-0001").await.valid();
    verify("device-bbbb-0002")
        .await
        .err(403, "HWID_LIMIT_REACHED");
    // It reads, and frees the seat.
    let hwids = as_support(Method::GET, format!("licenses/id/{id}/hwid"), None).await;
    let hwid_id = hwids.ok()["hwids"][0]["id"].as_str().unwrap().to_owned();
    as_support(
        Method::PATCH,
        format!("licenses/id/{id}/hwid/{hwid_id}"),
        Some(r#"{"forgotten":true}"#),
    )
    .await
    .ok();
    verify("device-bbbb-0002").await.valid();

    // It suspends (twice: the second changes nothing), and a verify is refused; then unsuspends.
    for _ in 0..2 {
        let suspended = as_support(Method::POST, format!("licenses/id/{id}/suspend"), None).await;
        assert_eq!(suspended.ok()["suspended"], true);
    }
    verify("device-bbbb-0002")
        .await
        .err(403, "LICENSE_SUSPENDED");
    let back = as_support(Method::POST, format!("licenses/id/{id}/unsuspend"), None).await;
    assert_eq!(back.ok()["suspended"], false);
    verify("device-bbbb-0002").await.valid();

    // Nothing else: no other change to the license, no delete, no other resource.
    for (method, path, body) in [
        (
            Method::PUT,
            format!("licenses/id/{id}"),
            Some(r#"{"hwidLimit":5}"#),
        ),
        (Method::DELETE, format!("licenses/id/{id}"), None),
        (
            Method::POST,
            "licenses".to_owned(),
            Some(r#"{"expirationType":"NEVER"}"#),
        ),
        (Method::GET, "customers".to_owned(), None),
    ] {
        let refused = as_support(method.clone(), path.clone(), body).await;
        refused.err(403, "FORBIDDEN");
    }
    assert_eq!(
        s.get(&s.dev(&format!("licenses/id/{id}"))).await.ok()["hwidLimit"],
        1
    );

    // One entry per change, each naming the key; the repeated suspend wrote none.
    let log = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&sortDirection=asc")))
        .await;
    let entries = log.ok()["entries"].as_array().unwrap().clone();
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "license.created",
            "license.suspended",
            "license.unsuspended"
        ]
    );
    assert_eq!(entries[1]["actor"]["name"], "desk");
}

/// The support desk's `licenses:extend`: the expiry moves later and nothing else changes; an
/// expired license is valid again; a license that never expires, a day count out of range and
/// every other change are refused; the audit log names the key with the old and new expiry.
#[tokio::test]
async fn a_support_key_extends_an_expiry_and_changes_nothing_else() {
    use reqwest::Method;
    let s = TestServer::start().await;
    let support = s
        .post(
            &s.dev("api-keys"),
            r#"{"name":"desk","scopes":["licenses:extend"]}"#,
        )
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let extend = |id: String, body: &'static str| {
        let (s, support) = (&s, &support);
        async move {
            s.send(
                Method::POST,
                &s.dev(&format!("licenses/id/{id}/extend")),
                Some(support),
                Some(body),
            )
            .await
        }
    };
    // Expired yesterday (written to the store as if time had passed: the API takes only
    // future dates): extended from now, and valid again.
    let tomorrow = (chrono::Utc::now() + chrono::TimeDelta::days(1)).to_rfc3339();
    let l = s
        .license(
            &json!({"expirationType": "DATE", "expirationDate": tomorrow, "hwidLimit": 2})
                .to_string(),
        )
        .await;
    let (id, key) = (
        l["id"].as_str().unwrap().to_owned(),
        l["licenseKey"].as_str().unwrap().to_owned(),
    );
    {
        use licensing_core::store::{Journal, LicenseStore};
        let license_id = licensing_core::LicenseId::parse(&id).unwrap();
        let mut stored = s
            .store
            .get_license(s.team_id(), license_id)
            .await
            .unwrap()
            .unwrap();
        stored.expiration_date =
            Some(licensing_core::Timestamp::now().plus(-chrono::TimeDelta::days(1)));
        s.store
            .update_license(&stored, &Journal::NONE)
            .await
            .unwrap();
    }
    let verify = || {
        let (s, key) = (&s, key.clone());
        async move {
            s.client(
                "verify",
                &json!({"licenseKey": key, "hardwareIdentifier": "device-aaaa-0001"}),
                None,
            )
            .await
        }
    };
    verify().await.err(403, "LICENSE_EXPIRED");
    let extended = extend(id.clone(), r#"{"days":30}"#).await;
    let date = extended.ok()["expirationDate"].as_str().unwrap().to_owned();
    let until = chrono::DateTime::parse_from_rfc3339(&date).unwrap();
    let days = (until.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_hours();
    assert!((29 * 24..=30 * 24).contains(&days), "{date}");
    assert_eq!(extended.ok()["hwidLimit"], 2, "nothing else changed");
    verify().await.valid();

    // A duration lasts longer.
    let lasting = s
        .license(r#"{"expirationType":"DURATION","expirationDays":10}"#)
        .await;
    let lasting_id = lasting["id"].as_str().unwrap().to_owned();
    let longer = extend(lasting_id, r#"{"days":5}"#).await;
    assert_eq!(longer.ok()["expirationDays"], 15);

    // What is refused, and why.
    let never = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let never_id = never["id"].as_str().unwrap().to_owned();
    for (id, body, field) in [
        (never_id, r#"{"days":30}"#, "days"),
        (id.clone(), r#"{"days":0}"#, "days"),
        (id.clone(), r#"{"days":3651}"#, "days"),
        (id.clone(), r#"{}"#, "days"),
        (id.clone(), r#"{"days":30,"hwidLimit":9}"#, "hwidLimit"),
    ] {
        let refused = extend(id, body).await;
        refused.err(400, "BAD_REQUEST");
        assert_eq!(refused.fields(), [field], "{body}: {}", refused.body);
    }
    for (method, path, body) in [
        (
            Method::PUT,
            format!("licenses/id/{id}"),
            Some(r#"{"hwidLimit":5}"#),
        ),
        (Method::POST, format!("licenses/id/{id}/suspend"), None),
        (Method::POST, format!("licenses/id/{id}/email"), None),
    ] {
        let refused = s.send(method, &s.dev(&path), Some(&support), body).await;
        refused.err(403, "FORBIDDEN");
    }

    let log = s
        .get(&s.dev(&format!("audit-log?resourceId={id}&action=license.updated")))
        .await;
    let entry = log.ok()["entries"][0].clone();
    assert_eq!(entry["actor"]["name"], "desk", "{entry}");
    let change = entry["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "expirationDate")
        .cloned()
        .unwrap_or_else(|| panic!("{entry}"));
    assert_eq!(change["new"], date.as_str());
}
