//! Rate limits: client endpoints per IP (and classloader per license key), developer and admin
//! endpoints per API key or token; exact under concurrency, with their headers.

use serde_json::{Value, json};

use crate::helpers::{ClientAnswer, TestServer};

fn header_u64(a: &ClientAnswer, name: &str) -> u64 {
    a.header(name)
        .unwrap_or_else(|| panic!("{name} missing on {} {}", a.status, a.body))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn the_31st_verify_within_a_minute_from_one_ip_is_429_also_when_all_arrive_at_once() {
    let s = TestServer::start_with(|c| c.rate_limit_per_minute = 30).await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let body = json!({"licenseKey": l["licenseKey"]});
    let ip = Some("193.166.3.2");
    for n in 0..30u64 {
        let a = s.client("verify", &body, ip).await;
        a.valid();
        assert_eq!(header_u64(&a, "x-ratelimit-limit"), 30);
        assert_eq!(header_u64(&a, "x-ratelimit-remaining"), 29 - n);
        assert!((1..=60).contains(&header_u64(&a, "x-ratelimit-reset")));
        assert!(a.header("retry-after").is_none());
    }
    let a = s.client("verify", &body, ip).await;
    a.err(429, "RATE_LIMIT");
    let retry = header_u64(&a, "retry-after");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(header_u64(&a, "x-ratelimit-remaining"), 0);
    // A malformed body is answered before the limit: a 400 with the client's standing.
    let bad = s.client("verify", &json!({}), ip).await;
    bad.err(400, "BAD_REQUEST");
    assert_eq!(header_u64(&bad, "x-ratelimit-remaining"), 0);
    // Heartbeat has its own budget, other addresses theirs.
    s.client(
        "heartbeat",
        &json!({"licenseKey": l["licenseKey"], "hardwareIdentifier": "device-0000000001"}),
        ip,
    )
    .await
    .valid();
    s.client("verify", &body, Some("193.166.3.3")).await.valid();

    // 31 at once from a fresh address: exactly 30 pass.
    let url = s.client_url("verify");
    let requests = (0..31).map(|_| {
        let (client, url, body) = (s.client.clone(), url.clone(), body.to_string());
        tokio::spawn(async move {
            client
                .post(url)
                .header("content-type", "application/json")
                .header("x-forwarded-for", "193.166.3.4")
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    });
    let statuses: Vec<u16> = futures_util::future::join_all(requests)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|&&s| s == 200).count(),
        30,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 1);
}

#[tokio::test]
async fn classloader_is_limited_per_ip_and_per_license_key() {
    let s = TestServer::start_with(|c| c.rate_limit_per_minute = 3).await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let key = l["licenseKey"].as_str().unwrap();
    let product = uuid::Uuid::new_v4();
    let garbage = "ab".repeat(256);
    let q = format!(
        "licenseKey={key}&productId={product}&sessionKey={garbage}&hardwareIdentifier=device-0000000001"
    );
    // Three addresses, one license key: the fourth request is over the key's budget.
    for n in 0..3 {
        s.classloader(&q, Some(&format!("193.166.3.{n}")))
            .await
            .err(400, "INVALID_SESSION_KEY");
    }
    let a = s.classloader(&q, Some("193.166.3.9")).await;
    a.err(429, "RATE_LIMIT");
    assert!(a.header("retry-after").is_some());
    // One address, other license keys: the address's budget.
    let other = |n: usize| q.replace(key, &format!("AAAAA-AAAAA-AAAAA-AAAAA-AAAA{n}"));
    for n in 0..3 {
        s.classloader(&other(n), Some("193.166.4.1"))
            .await
            .err(400, "INVALID_SESSION_KEY");
    }
    s.classloader(&other(4), Some("193.166.4.1"))
        .await
        .err(429, "RATE_LIMIT");
}

#[tokio::test]
async fn rate_limits_can_be_turned_off() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    for _ in 0..40 {
        let a = s
            .client("verify", &json!({"licenseKey": l["licenseKey"]}), None)
            .await;
        a.valid();
        assert!(a.header("x-ratelimit-limit").is_none());
    }
}

async fn dev_get(s: &TestServer, url: &str, key: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = s.client.get(url).bearer_auth(key).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.json().await.unwrap())
}

#[tokio::test]
async fn developer_and_admin_requests_are_limited_per_key_and_token() {
    const TOKEN: &str = "admin-token-for-tests-0123456789";
    let s = TestServer::start_with(|c| {
        c.dev_rate_limit_per_minute = 5;
        c.admin_token = Some(TOKEN.into());
    })
    .await;
    let second = s
        .post(&s.dev("api-keys"), r#"{"name":"second"}"#)
        .await
        .ok()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = s.dev("licenses");
    for remaining in (0..4).rev() {
        let (status, headers, _) = dev_get(&s, &url, s.key()).await;
        assert_eq!(status, 200);
        assert_eq!(headers["x-ratelimit-limit"], "5");
        assert_eq!(
            headers["x-ratelimit-remaining"],
            remaining.to_string().as_str()
        );
    }
    let (status, headers, body) = dev_get(&s, &url, s.key()).await;
    assert_eq!(
        (status, body["result"]["code"].as_str()),
        (429, Some("RATE_LIMIT")),
        "{body}"
    );
    assert!(headers.contains_key("retry-after"));
    assert_eq!(body["result"]["valid"], false);
    // Every route counts against the same key; another key has its own budget.
    let (status, _, _) = dev_get(&s, &s.dev("products"), s.key()).await;
    assert_eq!(status, 429);
    let (status, headers, _) = dev_get(&s, &url, &second).await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-ratelimit-remaining"], "4");
    // Requests without valid credentials are not counted: they are 401s.
    let (status, headers, _) = dev_get(&s, &url, "lsk_nope").await;
    assert_eq!(status, 401);
    assert!(!headers.contains_key("x-ratelimit-limit"));

    let teams = format!("{}/api/v1/admin/teams", s.base);
    for _ in 0..5 {
        assert_eq!(dev_get(&s, &teams, TOKEN).await.0, 200);
    }
    let (status, headers, _) = dev_get(&s, &teams, TOKEN).await;
    assert_eq!(status, 429);
    assert!(headers.contains_key("retry-after"));
}
